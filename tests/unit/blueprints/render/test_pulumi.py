"""`clustersmith build` writes out/<name>/pulumi/: project, stack config (plain values only), a three-line
program; nothing for the lab."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from blueprints.cli import plan_file
from blueprints.render import build

REPO = Path(__file__).resolve().parents[4]
CLOUD_EXAMPLES = ["cv-training-500tb", "llm-training-16k", "recsys-inference"]


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("out")
    for spec in sorted((REPO / "examples").glob("*.yaml")):
        build(plan_file(spec), root)
    return root


@pytest.mark.parametrize("name", CLOUD_EXAMPLES)
def test_project_stack_and_program_are_written(out: Path, name: str) -> None:
    folder = out / name / "pulumi"
    project = yaml.safe_load((folder / "Pulumi.yaml").read_text())
    assert project["name"] == f"clustersmith-{name}"
    assert project["runtime"]["name"] == "python"
    stack = yaml.safe_load((folder / f"Pulumi.{name}.yaml").read_text())
    assert isinstance(stack["config"], dict)
    main = [line for line in (folder / "__main__.py").read_text().splitlines() if not line.startswith("#")]
    assert len(main) == 3
    assert main[1] == "from stacks.program import run"
    assert '"blueprint.yaml"' in main[2] and ".resolve()" not in main[2]  # the user's machines.yaml is beside the link
    compile("\n".join(main), "__main__.py", "exec")


def test_config_values_come_from_the_blueprint(out: Path) -> None:
    aws = yaml.safe_load((out / "llm-training-16k/pulumi/Pulumi.llm-training-16k.yaml").read_text())["config"]
    assert aws == {"aws:region": "us-east-1", "clustersmith:zone": "us-east-1a"}
    gcp = yaml.safe_load((out / "recsys-inference/pulumi/Pulumi.recsys-inference.yaml").read_text())["config"]
    assert gcp["gcp:zone"] == "us-central1-a" and gcp["gcp:region"] == "us-central1"
    static = yaml.safe_load((out / "cv-training-500tb/pulumi/Pulumi.cv-training-500tb.yaml").read_text())["config"]
    assert static == {"clustersmith:machinesFile": "machines.yaml"}


def test_static_machines_file_lists_every_planned_host(out: Path) -> None:
    doc = yaml.safe_load((out / "cv-training-500tb/pulumi/machines.yaml").read_text())
    bp = yaml.safe_load((out / "cv-training-500tb/blueprint.yaml").read_text())
    assert len(doc["machines"]) == sum(g["count"] for g in bp["hosts"])
    gpu = next(m for m in doc["machines"] if m["name"] == "gpu-1")
    assert len(gpu["rails"]) == bp["compute"]["rails"]["value"]


SECRET_PATTERNS = [r"secure:", r"(?i)api[_-]?key\s*:", r"(?i)password", r"PRIVATE KEY", r"(?i)secret\s*:"]


@pytest.mark.parametrize("name", CLOUD_EXAMPLES)
def test_no_secret_in_plain_files(out: Path, name: str) -> None:
    for path in (out / name / "pulumi").iterdir():
        text = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))
        for pattern in SECRET_PATTERNS:
            assert not re.search(pattern, text), f"{path.name} matches {pattern}"


def test_maas_notes_say_to_set_the_key_as_a_secret(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / "examples/cv-training-500tb.yaml").read_text())
    doc["target"]["machines"] = "maas"
    spec = tmp_path / "maas.yaml"
    spec.write_text(yaml.safe_dump(doc))
    folder, _ = build(plan_file(spec), tmp_path / "out")
    text = (folder / "pulumi" / "Pulumi.cv-training-500tb.yaml").read_text()
    assert "pulumi config set --secret clustersmith:maasApiKey" in text
    assert yaml.safe_load(text)["config"] == {}
    assert not (folder / "pulumi" / "machines.yaml").exists()


def test_lab_gets_no_pulumi_project(out: Path) -> None:
    assert not (out / "lab" / "pulumi").exists()
