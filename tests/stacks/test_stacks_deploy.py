"""`clustersmith deploy` steps are skippable and resumable through deploy/state.json. The stack outputs the
inventory step reads are the real outputs of the generated program under mocks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from blueprints.errors import ClusterSmithError
from stacks import fleet_clients
from stacks.deploy import DeployOptions, deploy
from stacks.outputs import StackOutputs
from tests.stacks.conftest import SSH_KEY, blueprint_of, construct, example
from tests.stacks.fleet_fakes import FakeFleets


def launch_fleets(monkeypatch: pytest.MonkeyPatch, outputs: Path) -> None:
    """The inventory step reads the fleets' instances from the provider: here an in-memory one, every fleet at its
    planned size."""
    parsed = StackOutputs.parse(json.loads(outputs.read_text())["clustersmith"])
    monkeypatch.setattr(fleet_clients, "client_for", lambda provider: FakeFleets.launched(parsed))


def small_aws_outputs(path: Path) -> Path:
    doc = example("llm-training-16k.yaml", compute__gpus=16, performance__storage__read_throughput=">=50GB/s",
                  performance__storage__write_throughput=">=10GB/s", data__training_set="20TB")
    from stacks.config import StackConfig

    built = construct(blueprint_of(doc), StackConfig(ssh_public_key=SSH_KEY))
    path.write_text(json.dumps({"clustersmith": built.outputs}))
    return path


def test_skip_then_resume_then_redo(built_examples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "llm-training-16k"
    shutil.copytree(built_examples / "llm-training-16k", work)
    outputs = small_aws_outputs(tmp_path / "outputs.json")
    launch_fleets(monkeypatch, outputs)
    log: list[str] = []

    state = deploy(work, DeployOptions(skip=("up", "site", "accept"), outputs=outputs), log.append)
    assert {k: v.status for k, v in state.steps.items()} == {
        "up": "skipped", "inventory": "done", "site": "skipped", "accept": "skipped"}
    inventory = work / "ansible" / "inventory.yml"
    first = inventory.read_text()
    assert "gpu-2:" in first
    saved = json.loads((work / "deploy" / "state.json").read_text())
    assert saved["steps"]["inventory"]["status"] == "done"

    inventory.write_text("# changed by hand\n")
    log.clear()
    deploy(work, DeployOptions(skip=("up", "site", "accept"), outputs=outputs), log.append)
    assert any(line.startswith("inventory: done earlier") for line in log)
    assert inventory.read_text() == "# changed by hand\n"  # resumed: the finished step did not run again

    # issue 43 item 4: a redo does not replace an inventory the user edited; moved aside, it is written again
    with pytest.raises(ClusterSmithError) as refused:
        deploy(work, DeployOptions(skip=("up", "site", "accept"), redo=("inventory",), outputs=outputs), log.append)
    said = " ".join(str(refused.value).split())
    assert str(inventory) in said and "is yours" in said and "inventory.mine.yml" in said
    assert inventory.read_text() == "# changed by hand\n"
    inventory.rename(inventory.with_name("inventory.mine.yml"))
    deploy(work, DeployOptions(skip=("up", "site", "accept"), redo=("inventory",), outputs=outputs), log.append)
    assert inventory.read_text() == first
    deploy(work, DeployOptions(skip=("up", "site", "accept"), redo=("inventory",), outputs=outputs), log.append)
    assert inventory.read_text() == first  # its own file, rewritten


def test_inventory_without_outputs_fails_and_says_how(built_examples: Path, tmp_path: Path) -> None:
    work = tmp_path / "llm-training-16k"
    shutil.copytree(built_examples / "llm-training-16k", work)
    try:
        deploy(work, DeployOptions(skip=("up",)), lambda _: None)
    except Exception as exc:
        assert "no stack outputs at" in str(exc) and "--outputs FILE" in str(exc)
    else:
        raise AssertionError("the inventory step ran without outputs")
    state = json.loads((work / "deploy" / "state.json").read_text())
    assert state["steps"]["inventory"]["status"] == "failed"
    assert "site" not in state["steps"]
