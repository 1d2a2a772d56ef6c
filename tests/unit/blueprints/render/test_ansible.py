"""The ansible renderer: group_vars hold exactly the Blueprint's values, site.yml applies the roles in order,
the inventory has every planned host, and a rebuild keeps a running lab's inventory."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from blueprints.render import build
from blueprints.render.ansible import PLAYS, group_vars, plays, render
from blueprints.rolevars.rdma import InventoryRail
from tests.conftest import BIN
from tests.roles.blueprints import REPO, example


def ansible(tool: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run([str(BIN / tool), *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


@pytest.mark.parametrize("name", ["lab", "cv-training-500tb"])
def test_group_vars_are_exactly_what_the_role_modules_derive(name: str, tmp_path: Path) -> None:
    bp = example(name)
    render(bp, tmp_path)
    expected = {(role, group): values.model_dump(mode="json", exclude_unset=True)
                for role, by_group in group_vars(bp).items() for group, values in by_group.items()}
    written = {(p.stem, p.parent.name): yaml.safe_load(p.read_text())
               for p in (tmp_path / "ansible" / "group_vars").glob("*/*.yml")}
    assert written == expected
    assert ("rdma", "all") in written and ("storage_tiering", "gpu_clients") in written
    assert ("nvmeof", "storage_targets") in written and ("nvmeof", "gpu_clients") in written


def test_group_vars_leave_role_defaults_and_host_facts_out(tmp_path: Path) -> None:
    render(example("lab"), tmp_path)
    tiering = yaml.safe_load((tmp_path / "ansible/group_vars/gpu_clients/storage_tiering.yml").read_text())
    assert "storage_tiering_fast_device" not in tiering and "storage_tiering_volume_group" not in tiering
    assert "rdma_rails" not in yaml.safe_load((tmp_path / "ansible/group_vars/all/rdma.yml").read_text())


def test_site_applies_the_roles_in_the_fixed_order(tmp_path: Path) -> None:
    bp = example("lab")
    render(bp, tmp_path)
    site = yaml.safe_load((tmp_path / "ansible" / "site.yml").read_text())
    roles = [play["roles"][0]["role"] for play in site]
    order = [p.role for p in PLAYS]
    assert roles == [r for r in order if r in roles]
    assert {"rdma", "nvmeof", "storage_tiering"} <= set(roles)
    by_role = {play["roles"][0]["role"]: play["hosts"] for play in site}
    assert by_role["storage_tiering"] == "gpu_clients"
    assert by_role["nvmeof"] == "storage_targets:gpu_clients"


def test_only_roles_present_in_the_repository_get_a_play(tmp_path: Path) -> None:
    for role in ("storage_tiering", "rdma"):
        (tmp_path / role).mkdir()
    assert [p.role for p in plays(example("lab"), roles_dir=tmp_path)] == ["rdma", "storage_tiering"]


def test_no_nvmeof_play_where_the_blueprint_has_no_nvmeof() -> None:
    assert "nvmeof" not in [p.role for p in plays(example("recsys-inference"))]
    assert "nvmeof" in [p.role for p in plays(example("lab"))]


def test_generated_site_passes_ansible_syntax_check(tmp_path: Path) -> None:
    render(example("lab"), tmp_path)
    done = ansible("ansible-playbook", "--syntax-check", "-i", "localhost,", tmp_path / "ansible" / "site.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_non_lab_inventory_has_every_planned_host_in_its_group(tmp_path: Path) -> None:
    bp = example("cv-training-500tb")
    render(bp, tmp_path)
    done = ansible("ansible-inventory", "-i", tmp_path / "ansible" / "inventory.yml", "--list")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    groups = {"storage_target": "storage_targets", "gpu_client": "gpu_clients", "monitoring": "monitoring"}
    for host_group in bp.hosts:
        names = {f"{host_group.name_prefix}{i + 1}" for i in range(host_group.count)}
        assert names <= set(listed[groups[host_group.role]]["hosts"])
    hostvars = listed["_meta"]["hostvars"]
    assert len(hostvars["gpu-1"]["rails"]) == bp.compute.rails.value
    assert len(hostvars["hot-1"]["rails"]) == bp.compute.storage_nics
    for rails in (hostvars["gpu-1"]["rails"], hostvars["hot-6"]["rails"]):
        assert [InventoryRail.model_validate(r).index for r in rails] == list(range(len(rails)))
    assert hostvars["hot-1"]["ansible_host"] == "CHANGE_ME"
    assert set(hostvars["gpu-64"]["disks"]) == {"fast", "slow"}


def test_the_lab_inventory_is_left_to_lab_up(tmp_path: Path) -> None:
    render(example("lab"), tmp_path)
    assert not (tmp_path / "ansible" / "inventory.yml").exists()


def test_rebuilding_a_running_lab_keeps_its_inventory(tmp_path: Path) -> None:
    bp = example("lab")
    folder, _ = build(bp, tmp_path)
    inventory = folder / "ansible" / "inventory.yml"
    (folder / "lab").mkdir()
    (folder / "lab" / "state.json").write_text("{}")
    inventory.write_text("# written by lab up\nall: {children: {storage_targets: {hosts: {storage-1: {}}}}}\n")
    folder, files = build(bp, tmp_path)
    assert inventory.read_text().startswith("# written by lab up")
    assert inventory not in files, "build never rewrites what lab up wrote"
    (folder / "lab" / "state.json").unlink()
    build(bp, tmp_path)
    assert inventory.read_text().startswith("# written by lab up"), "nor removes it: `lab down` does"


def test_lab_down_removes_only_the_inventory_lab_up_wrote(tmp_path: Path) -> None:
    from stacks.lab import inventory

    path = tmp_path / "ansible" / "inventory.yml"
    path.parent.mkdir()
    path.write_text(f"{inventory.HEADER} 'lab'; ports change per boot.\nall: {{}}\n")
    assert inventory.remove(path) and not path.exists()
    path.write_text("# my own inventory\nall: {}\n")
    assert not inventory.remove(path) and path.exists()
    assert not inventory.remove(tmp_path / "absent.yml")
