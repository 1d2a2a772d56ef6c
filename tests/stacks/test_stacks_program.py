"""`clustersmith build` on every example writes a Pulumi project whose program imports and constructs
under mocks, with the stack's own config file plus what a user must add (SSH key, GCP project, machines)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from stacks import inventory
from stacks.model import StackError
from stacks.outputs import StackOutputs
from tests.stacks.conftest import SSH_KEY, Constructed, run_program
from tests.stacks.test_stacks_baremetal import machines_file


def test_aws_example_program(llm16k_stack: Constructed) -> None:
    out = StackOutputs.parse(llm16k_stack.outputs)
    assert out.provider == "aws" and len(out.hosts) == 1
    assert [(f.name, f.size) for f in out.fleets] == [("gpu-fleet-1", 2048)]


def test_gcp_example_program(built_examples: Path) -> None:
    built = run_program(built_examples / "recsys-inference" / "pulumi",
                        {"clustersmith:sshPublicKey": SSH_KEY, "clustersmith:project": "clustersmith-test"})
    out = StackOutputs.parse(built.outputs)
    assert out.provider == "gcp" and len(out.hosts) + sum(f.size for f in out.fleets) == 33
    assert out.file_system is not None and out.file_system.capacity_gib == 108000


def test_static_example_program_needs_the_racks_filled_in(built_examples: Path, tmp_path: Path) -> None:
    src = built_examples / "cv-training-500tb"
    work = tmp_path / "cv-training-500tb"
    shutil.copytree(src, work)
    with pytest.raises(StackError, match="'CHANGE_ME' is not an IP address"):
        run_program(work / "pulumi")
    from blueprints.blueprint import load_blueprint

    machines_file(load_blueprint(work), work / "pulumi" / "machines.yaml")
    built = run_program(work / "pulumi")
    out = StackOutputs.parse(built.outputs)
    bp = load_blueprint(work)
    planned = sum(len(names) for names in bp.hosts_by_role().values())
    assert out.provider == "baremetal" and len(out.hosts) == planned == 85  # 64 GPU, 12 + 4 + 4 Ceph, 1 monitoring
    assert [r.typ for r in built.mocks.resources] == ["clustersmith:baremetal:StaticCluster"]


def test_stack_outputs_become_the_ansible_inventory(llm16k_stack: Constructed, tmp_path: Path) -> None:
    from stacks.fleet_inventory import resolve
    from tests.stacks.fleet_fakes import FakeFleets

    outputs = StackOutputs.parse(llm16k_stack.outputs)
    resolved = resolve(outputs, FakeFleets.launched(outputs), "test")
    path = inventory.write(resolved, tmp_path)
    # libyaml reads the 2048 hosts' 65,536 rails as Ansible does (its pure-Python loader took 25 s of this test's 45)
    doc = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    children = doc["all"]["children"]
    assert set(children) == {"storage_targets", "gpu_clients", "monitoring"}
    assert list(children["gpu_clients"]["hosts"]) == [f"gpu-{i}" for i in range(1, 2049)]
    assert list(children["monitoring"]["hosts"]) == ["mon-1"]
    gpu = children["gpu_clients"]["hosts"]["gpu-1"]
    assert gpu["ansible_host"].startswith("10.") and gpu["ansible_user"] == "ubuntu"
    assert gpu["rails"][5] == {"index": 5, "name": "rail5", "kind": "efa-only", "network_card": 5}
    assert doc["all"]["vars"]["ansible_python_interpreter"] == "/usr/bin/python3"
    assert doc["all"]["vars"]["clustersmith_file_system"]["capacity_gib"] == 1920000
