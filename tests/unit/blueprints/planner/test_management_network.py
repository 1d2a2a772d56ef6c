"""Where monitoring listens, per target: the spec's management network, the clouds' own network, the lab's last
rail; and the spec's errors for a bad or missing management network, each naming the field (exit 2 from the CLI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.errors import SpecError
from blueprints.loader import parse_requirements
from blueprints.planner import plan
from tests.promtool.support import REPO

BAREMETAL = yaml.safe_load((REPO / "examples" / "cv-training-500tb.yaml").read_text())
TARGETS: dict[str, dict[str, Any]] = {
    "aws": {"provider": "aws", "region": "us-east-1", "availability_zone": "us-east-1a"},
    "gcp": {"provider": "gcp", "region": "us-central1", "zone": "us-central1-a", "project": "p"},
    "azure": {"provider": "azure", "region": "eastus"},
    "baremetal": {"provider": "baremetal", "fabric": "roce", "management_network": "10.0.0.0/16"},
}


def _spec(target: dict[str, Any]) -> str:
    """The baremetal example on ``target``, scaled down so that every cloud's managed file system fits it."""
    doc = {**BAREMETAL, "target": target, "compute": {"accelerator": "H100-SXM", "gpus": 256},
           "data": {"training_set": "50TB", "validation_set": "1TB", "hot_fraction": "20%"},
           "performance": {**BAREMETAL["performance"], "storage": {
               **BAREMETAL["performance"]["storage"], "read_throughput": ">=50GB/s", "write_throughput": ">=10GB/s"}}}
    if target["provider"] == "gcp":  # the gcp stack builds a3-ultragpu (H200) only
        doc = {**doc, "compute": {"accelerator": "H200", "gpus": 256}}
    return yaml.safe_dump(doc, sort_keys=False)


@pytest.mark.parametrize(("provider", "cidr", "rule", "spec"), [
    ("aws", "10.0.0.0/16", "network.cloud_default", ("target.provider",)),
    ("gcp", "10.0.0.0/9", "network.cloud_default", ("target.provider",)),
    ("azure", "10.0.0.0/16", "network.cloud_default", ("target.provider",)),
    ("baremetal", "10.0.0.0/16", "network.management_from_spec", ("target.management_network",)),
])
def test_monitoring_listens_on_the_planned_network(provider: str, cidr: str, rule: str, spec: tuple[str]) -> None:
    bp = plan(parse_requirements(_spec(TARGETS[provider])))
    assert bp.target.management_network is not None
    assert bp.monitoring.listen_cidr == bp.target.management_network
    assert bp.monitoring.listen_cidr.value == cidr
    assert bp.monitoring.listen_cidr.derived_from.rule == rule
    assert bp.monitoring.listen_cidr.derived_from.spec == spec


@pytest.mark.parametrize("provider", ["aws", "gcp", "azure"])
def test_a_cloud_takes_the_spec_network(provider: str) -> None:
    bp = plan(parse_requirements(_spec({**TARGETS[provider], "management_network": "172.20.0.0/16"})))
    assert bp.monitoring.listen_cidr.value == "172.20.0.0/16"
    assert bp.monitoring.listen_cidr.derived_from.spec == ("target.management_network",)


def test_the_lab_listens_on_its_last_rail_and_has_no_management_network() -> None:
    bp = plan(parse_requirements((REPO / "examples" / "lab.yaml").read_text()))
    assert bp.target.management_network is None
    assert bp.lab is not None and bp.monitoring.listen_cidr.value == bp.lab.rails[-1].subnet


@pytest.mark.parametrize(("target", "message"), [
    ({"provider": "baremetal"}, "management_network is missing; expected the network your hosts' management "
                                "interfaces are on (e.g. 10.0.0.0/16)"),
    ({**TARGETS["baremetal"], "management_network": "mgmt"},
     "management_network 'mgmt' is not an IPv4 network; expected one such as 10.0.0.0/16"),
    ({**TARGETS["baremetal"], "management_network": "10.0.0.0/33"},
     "management_network '10.0.0.0/33' is not an IPv4 network"),
    ({**TARGETS["baremetal"], "management_network": "10.1.2.3"},
     "management_network '10.1.2.3' has no prefix length; expected a network such as 10.1.2.3/16"),
    ({**TARGETS["baremetal"], "management_network": "10.1.2.3/16"},
     "management_network '10.1.2.3/16' has host bits set; expected its network address 10.1.0.0/16"),
    ({**TARGETS["baremetal"], "management_network": "0.0.0.0/0"},
     "management_network 0.0.0.0/0 is not a private network; expected an RFC 1918 range"),
    ({**TARGETS["baremetal"], "management_network": "8.8.0.0/16"},
     "management_network 8.8.0.0/16 is not a private network"),
    ({**TARGETS["baremetal"], "management_network": "127.0.0.0/8"},
     "management_network 127.0.0.0/8 is not a private network"),
    ({**TARGETS["aws"], "management_network": "10.0.0.0/8"},
     "management_network 10.0.0.0/8: /8 on aws; expected /16 to /20 (an AWS VPC is /16 to /28"),
    ({**TARGETS["azure"], "management_network": "10.0.0.0/24"},
     "management_network 10.0.0.0/24: /24 on azure; expected /8 to /20"),
    ({**TARGETS["gcp"], "management_network": "192.168.0.0/28"},
     "management_network 192.168.0.0/28: /28 on gcp; expected /8 to /20"),
    ({"provider": "lab", "management_network": "10.0.0.0/16"}, "unknown key 'management_network'"),
])
def test_bad_management_network_names_the_field(target: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_requirements(_spec(target), "spec.yaml")
    problems = [p for p in info.value.problems if p.path == "target.management_network"]
    assert problems, str(info.value)
    assert message in problems[0].message
    assert problems[0].line is not None


def test_validate_exits_2_naming_the_field(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(_spec({**TARGETS["baremetal"], "management_network": "0.0.0.0/0"}))
    done = subprocess.run([sys.executable, "-m", "blueprints", "validate", str(spec)], capture_output=True, text=True,
                          check=False, cwd=REPO)
    assert done.returncode == 2
    said = done.stdout + done.stderr
    assert "target.management_network: management_network 0.0.0.0/0 is not a private network" in said
    assert "Traceback" not in done.stderr
