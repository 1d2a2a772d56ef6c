"""Issue 43 item 2: specs that were accepted and built, then bound to fail at `pulumi up` or on the hosts, are
refused before anything is built, naming the field and the numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from blueprints.errors import ClusterSmithError
from blueprints.loader import parse_requirements
from blueprints.planner import plan
from tests.unit.blueprints.test_spec_bounds import REPO

EXAMPLES = {name: (REPO / "examples" / f"{name}.yaml").read_text()
            for name in ("cv-training-500tb", "llm-training-16k", "recsys-inference")}


def _refusal(example: str, old: str, new: str) -> str:
    text = EXAMPLES[example]
    assert old in text
    with pytest.raises(ClusterSmithError) as info:
        plan(parse_requirements(text.replace(old, new, 1), "s.yaml"))
    return "\n".join(p.render("s.yaml") for p in info.value.problems)


@pytest.mark.parametrize(("example", "old", "new", "message"), [
    ("llm-training-16k", "availability_zone: us-east-1a", "availability_zone: us-west-2a",
     "s.yaml:30: target.availability_zone: availability_zone 'us-west-2a' is not a zone of region 'us-east-1'; "
     "expected one such as 'us-east-1a'"),
    ("recsys-inference", "zone: us-central1-a", "zone: europe-west4-a",
     "s.yaml:32: target.zone: zone 'europe-west4-a' is not a zone of region 'us-central1'; expected one such as "
     "'us-central1-a'"),
    ("cv-training-500tb", "10.0.0.0/16", "10.0.0.0/26",
     "target.management_network: 10.0.0.0/26 has 64 addresses and the plan makes 85 hosts (with the network's own, "
     "broadcast and gateway addresses: 88); expected a network of /25 or larger"),
    ("llm-training-16k", "region: us-east-1\n", "region: us-east-1\n  management_network: 10.0.0.0/20\n",
     "target.management_network: 10.0.0.0/20 cannot hold the subnets the aws stack carves for 2049 hosts (/20, /22, "
     "/24); expected a network of /19 or larger"),
    ("cv-training-500tb", "gpus: 512", "gpus: 500",
     "compute.gpus: 500 GPUs do not fill whole nodes: dgx-h100 holds 8, so the plan would build 63 nodes, 504 GPUs; "
     "expected a multiple of 8, such as 496 or 504"),
    ("cv-training-500tb", "gpus: 512", "gpus: 4",
     "compute.gpus: 4 GPUs do not fill whole nodes: dgx-h100 holds 8, so the plan would build 1 node, 8 GPUs; "
     "expected a multiple of 8, such as 8"),
])
def test_refused_before_anything_is_built(example: str, old: str, new: str, message: str) -> None:
    assert message in _refusal(example, old, new)


def test_the_same_specs_within_bounds_plan() -> None:
    for example, old, new in (("llm-training-16k", "availability_zone: us-east-1a", "availability_zone: us-east-1f"),
                              ("cv-training-500tb", "10.0.0.0/16", "10.0.0.0/25")):
        plan(parse_requirements(EXAMPLES[example].replace(old, new, 1), "s.yaml"))


def test_the_cli_refuses_with_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(EXAMPLES["cv-training-500tb"].replace("gpus: 512", "gpus: 500", 1))
    done = subprocess.run([sys.executable, "-m", "blueprints", "build", str(spec), "-o", str(tmp_path / "out")],
                          cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "compute.gpus: 500 GPUs do not fill whole nodes" in done.stderr
    assert not (tmp_path / "out").exists()
