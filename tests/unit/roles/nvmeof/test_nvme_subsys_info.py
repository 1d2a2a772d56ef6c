"""nvme_subsys_info on output recorded from the lab: one subsystem, a live path per rail, the timers and policy."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.roles.library import load

info = load("nvmeof", "nvme_subsys_info.py")
FIXTURES = Path(__file__).resolve().parents[3] / "roles" / "fixtures"
NQN = "nqn.2026-11.io.clustersmith:lab:hot-1"


def sysfs_tree(root: Path) -> Path:
    """The recorded controller and subsystem attributes, laid out as /sys has them."""
    lines = (FIXTURES / "nvme-sysfs.txt").read_text().splitlines()
    for line in lines:
        words = line.split()
        if words[0].startswith("nvme"):
            ctrl = root / "class" / "nvme" / words[0]
            ctrl.mkdir(parents=True)
            for attr, value in zip(("state", "ctrl_loss_tmo", "reconnect_delay", "fast_io_fail_tmo", "kato"),
                                   words[1:], strict=True):
                (ctrl / attr).write_text(value + "\n")
    sub = root / "class" / "nvme-subsystem" / "nvme-subsys0"
    sub.mkdir(parents=True)
    entries = next(line for line in lines if line.startswith("entries")).split()[1:]
    for entry in (e for e in entries if e.startswith(("nvme", "ng"))):
        (sub / entry).mkdir()
    (sub / "iopolicy").write_text(next(line for line in lines if line.startswith("iopolicy")).split()[1] + "\n")
    return root


def test_list_subsys_shows_one_subsystem_with_a_live_path_per_rail() -> None:
    subs = info.parse_list_subsys((FIXTURES / "nvme-list-subsys.json").read_text())
    assert [(s.name, s.nqn) for s in subs] == [("nvme-subsys0", NQN)]
    assert [(p.name, p.transport, p.traddr, p.trsvcid, p.state) for p in subs[0].paths] == [
        ("nvme0", "rdma", "10.77.0.1", "4420", "live"), ("nvme1", "rdma", "10.77.1.1", "4420", "live")]
    assert subs[0].live_paths == 2


def test_sysfs_adds_policy_timers_and_the_one_multipath_head(tmp_path: Path) -> None:
    sub = info.parse_list_subsys((FIXTURES / "nvme-list-subsys.json").read_text())[0]
    full = info.with_sysfs(sub, sysfs_tree(tmp_path))
    assert full.iopolicy == "round-robin"
    assert full.namespaces == ("/dev/nvme0n1",), "paths (nvme0c0n1) and char devices (ng0n1) are not heads"
    assert {(p.ctrl_loss_tmo, p.reconnect_delay, p.fast_io_fail_tmo, p.kato) for p in full.paths} == {(-1, 10, -1, 5)}


def test_sysfs_attributes_that_cannot_be_read_are_unknown_not_a_failure(tmp_path: Path) -> None:
    """Controllers gone between list-subsys and the sysfs read (nvme_sysfs.read_attribute reads ""): their timers
    are unknown, and the policy list-subsys showed is kept."""
    recorded = info.parse_list_subsys((FIXTURES / "nvme-list-subsys.json").read_text())[0]
    sub = dataclasses.replace(recorded, iopolicy="numa")  # list-subsys's IOPolicy, when it shows one
    full = info.with_sysfs(sub, tmp_path)
    assert full.iopolicy == "numa"
    assert {(p.ctrl_loss_tmo, p.reconnect_delay, p.fast_io_fail_tmo, p.kato) for p in full.paths} == {
        (None, None, None, None)}
    assert full.namespaces == ()


def test_dhchap_is_reported_as_set_or_not_never_as_the_secret(tmp_path: Path) -> None:
    """The kernel prints "none" for a controller without a secret (drivers/nvme/host/sysfs.c,
    nvme_ctrl_dhchap_secret_show) and has no attribute at all without CONFIG_NVME_HOST_AUTH (Debian's 6.1): the path
    says whether it authenticates, and the secret stays out of the result."""
    sub = info.parse_list_subsys((FIXTURES / "nvme-list-subsys.json").read_text())[0]
    root = sysfs_tree(tmp_path)
    (root / "class" / "nvme" / "nvme0" / "dhchap_secret").write_text("DHHC-1:00:c2VjcmV0:\n")
    (root / "class" / "nvme" / "nvme0" / "dhchap_ctrl_secret").write_text("none\n")
    full = info.with_sysfs(sub, root)
    assert [(p.name, p.host_authenticated, p.target_authenticated) for p in full.paths] == [
        ("nvme0", True, False), ("nvme1", None, None)]
    assert "DHHC-1" not in str(info.as_dict(full))
