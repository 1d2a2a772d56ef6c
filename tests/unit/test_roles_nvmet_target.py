"""nvmet_target: the steps from a configfs tree to the wanted target, and that applying them converges.

The tree is a folder laid out like ``/sys/kernel/config/nvmet`` (subsystems/, ports/, attribute files,
port -> subsystem links); the real configfs is exercised by the nvmeof molecule scenario on the lab.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.roles.library import load

nvmet = load("nvmeof", "nvmet_target.py")
NQN = "nqn.2026-11.io.clustersmith:lab:hot-1"
RAILS = [{"index": 0, "name": "rail0", "netdev": "rail0", "address": "10.77.0.1"},
         {"index": 1, "name": "rail1", "netdev": "rail1", "address": "10.77.1.1"}]


def configfs(tmp_path: Path) -> Path:
    root = tmp_path / "nvmet"
    (root / "subsystems").mkdir(parents=True)
    (root / "ports").mkdir()
    return root


DEFAULT_GROUPS = {"subsystems": ("namespaces", "allowed_hosts"), "ports": ("subsystems", "referrals")}


def apply_like_configfs(root: Path, steps: list[object]) -> None:
    """Apply step by step, doing what configfs does on its own: a new subsystem or port comes with its
    default child groups, and removing a group removes them and its attribute files."""
    for step in steps:
        path = root / step.path
        parts = Path(step.path).parts
        if step.op == "rmdir":
            for attribute in (p for p in path.iterdir() if p.is_file()):
                attribute.unlink()
            for child in DEFAULT_GROUPS[parts[0]] if len(parts) == 2 else ():
                (path / child).rmdir()
        nvmet.apply(root, [step])
        if step.op == "mkdir" and len(parts) == 2:
            for child in DEFAULT_GROUPS[parts[0]]:
                (path / child).mkdir()


def wanted(device: str = "/dev/vdb", rails: list[dict[str, object]] = RAILS, transport: str = "rdma") -> object:
    return nvmet.parse_wanted([{"nqn": NQN}], rails, transport, 4420, device)


def converge(root: Path, target: object) -> list[object]:
    have = nvmet.read_state(root, list(target.subsystems), list(target.ports))
    steps = nvmet.decide(target, have)
    apply_like_configfs(root, steps)
    return steps


def test_an_empty_target_gets_subsystem_namespace_and_one_port_per_rail(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    steps = [s.describe() for s in converge(root, wanted())]
    assert f"mkdir subsystems/{NQN}/namespaces/1" in steps
    assert f"subsystems/{NQN}/namespaces/1/device_path = /dev/vdb" in steps
    assert "ports/1/addr_traddr = 10.77.0.1" in steps and "ports/2/addr_traddr = 10.77.1.1" in steps
    assert "ports/2/addr_trtype = rdma" in steps
    assert (root / "ports" / "1" / "subsystems" / NQN).resolve() == (root / "subsystems" / NQN).resolve()
    assert (root / "subsystems" / NQN / "namespaces" / "1" / "enable").read_text() == "1"


def test_a_converged_target_needs_no_step(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge(root, wanted())
    assert converge(root, wanted()) == []


def test_a_moved_port_is_unlinked_before_its_address_changes(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge(root, wanted())
    moved = [dict(RAILS[0], address="10.77.0.9"), RAILS[1]]
    steps = [s.describe() for s in converge(root, wanted(rails=moved))]
    assert steps == [f"unlink ports/1/subsystems/{NQN} -> subsystems/{NQN}", "ports/1/addr_traddr = 10.77.0.9",
                     f"link ports/1/subsystems/{NQN} -> subsystems/{NQN}"]


def test_a_new_backing_device_disables_the_namespace_first(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge(root, wanted())
    steps = [s.describe() for s in converge(root, wanted(device="/dev/vdc"))]
    base = f"subsystems/{NQN}/namespaces/1"
    assert steps == [f"{base}/enable = 0", f"{base}/device_path = /dev/vdc", f"{base}/enable = 1"]


def test_transport_tcp_is_a_blueprint_option(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge(root, wanted())
    steps = [s.describe() for s in converge(root, wanted(transport="tcp"))]
    assert "ports/1/addr_trtype = tcp" in steps and "ports/2/addr_trtype = tcp" in steps


def test_absent_removes_only_what_it_made(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge(root, wanted())
    other = "nqn.2014-08.org.example:other"
    apply_like_configfs(root, [nvmet.Step("mkdir", f"subsystems/{other}")])
    (root / "ports" / "2" / "subsystems" / other).symlink_to(root / "subsystems" / other)
    target = wanted()
    have = nvmet.read_state(root, list(target.subsystems), list(target.ports))
    apply_like_configfs(root, nvmet.decide_absent(target, have))
    assert not (root / "subsystems" / NQN).exists() and not (root / "ports" / "1").exists()
    assert (root / "ports" / "2" / "subsystems" / other).is_symlink(), "a port another subsystem uses stays"


@pytest.mark.parametrize(("rails", "device", "message"), [
    ([dict(RAILS[0], address=None)], "/dev/vdb", "rail rail0 (rail0): address None is not an IPv4 address"),
    ([dict(RAILS[0], address="CHANGE_ME")], "/dev/vdb", "address 'CHANGE_ME' is not an IPv4 address"),
    (RAILS, "vdb", "device 'vdb' is not a /dev path"),
    (RAILS, "", "device '' is not a /dev path"),
])
def test_bad_inputs_name_the_field_and_what_was_expected(rails: list[dict[str, object]], device: str,
                                                         message: str) -> None:
    with pytest.raises(nvmet.TargetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        nvmet.parse_wanted([{"nqn": NQN}], rails, "rdma", 4420, device)


def test_a_missing_namespace_device_is_refused_before_any_change(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    params = {"subsystems": [{"nqn": NQN}], "rails": RAILS, "transport": "rdma", "trsvcid": 4420,
              "namespace_device": "/dev/clustersmith-no-such-disk"}
    with pytest.raises(nvmet.TargetError, match="namespace device /dev/clustersmith-no-such-disk does not exist"):
        nvmet.converge(params, check_mode=False, root=root)
    assert list((root / "subsystems").iterdir()) == []


def test_check_mode_reports_without_touching_the_tree(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    params = {"subsystems": [{"nqn": NQN}], "rails": RAILS, "transport": "rdma", "trsvcid": 4420,
              "namespace_device": "/dev/null"}
    result = nvmet.converge(params, check_mode=True, root=root)
    assert result["changed"] and f"port 1 rdma 10.77.0.1:4420 -> {NQN}" in result["diff"]["after"]
    assert list((root / "subsystems").iterdir()) == []
