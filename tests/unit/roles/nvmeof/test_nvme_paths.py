"""nvme_paths: one path per shared rail, the Blueprint's timers on each, the multipath I/O policy."""

from __future__ import annotations

import pytest

from tests.roles.library import load

paths = load("nvmeof", "nvme_paths.py")
NQN = "nqn.2026-11.io.clustersmith:lab:hot-1"
CLIENT = [{"index": 0, "name": "rail0", "netdev": "rail0", "address": "10.77.0.2"},
          {"index": 1, "name": "rail1", "netdev": "rail1", "address": "10.77.1.2"}]
TARGET = [{"index": 0, "name": "rail0", "netdev": "rail0", "address": "10.77.0.1"},
          {"index": 1, "name": "rail1", "netdev": "rail1", "address": "10.77.1.1"}]
SUBS = [{"nqn": NQN, "tier": "hot", "target_host": "storage-1"}]
TIMERS = paths.Timers(ctrl_loss_tmo=-1, reconnect_delay=10, fast_io_fail_tmo=-1, keep_alive_tmo=5, tos=106)


def wanted() -> list[object]:
    return paths.plan_paths(CLIENT, {"storage-1": TARGET}, SUBS, 2, "client-1")


def controller(name: str, traddr: str, **changes: object) -> object:
    values = {"name": name, "transport": "rdma", "nqn": NQN, "traddr": traddr, "trsvcid": "4420", "state": "live",
              "ctrl_loss_tmo": -1, "reconnect_delay": 10, "fast_io_fail_tmo": -1, "kato": 5}
    values.update(changes)
    return paths.Controller(**values)


def test_each_rail_pairs_with_the_targets_nic_of_the_same_index() -> None:
    planned = wanted()
    assert [(p.rail, p.traddr, p.host_traddr, p.host_iface) for p in planned] == [
        (0, "10.77.0.1", "10.77.0.2", "rail0"), (1, "10.77.1.1", "10.77.1.2", "rail1")]


def test_missing_paths_are_connected_and_the_policy_set() -> None:
    actions = paths.decide(wanted(), [], TIMERS, "rdma", {}, "round-robin")
    assert [a.kind for a in actions] == ["connect", "connect", "set_iopolicy"]
    assert actions[2].describe() == f"set_iopolicy {NQN} (not connected yet -> round-robin)"


def test_a_converged_host_needs_nothing() -> None:
    live = [controller("nvme0", "10.77.0.1"), controller("nvme1", "10.77.1.1")]
    assert paths.decide(wanted(), live, TIMERS, "rdma", {NQN: "round-robin"}, "round-robin") == []


def test_drifted_timers_are_set_in_place_and_a_wrong_keep_alive_reconnects_that_path_only() -> None:
    have = [controller("nvme0", "10.77.0.1", reconnect_delay=2, ctrl_loss_tmo=600),
            controller("nvme1", "10.77.1.1", kato=10)]
    actions = paths.decide(wanted(), have, TIMERS, "rdma", {NQN: "numa"}, "round-robin")
    assert [a.describe() for a in actions] == [
        "set_timer nvme0 (ctrl_loss_tmo 600 -> -1)",
        "set_timer nvme0 (reconnect_delay 2 -> 10)",
        f"reconnect {NQN} via 10.77.1.1 (nvme1 keep-alive 10 s, wanted 5 s)",
        f"set_iopolicy {NQN} (numa -> round-robin)",
    ]


def test_a_path_still_reconnecting_after_a_rail_cut_is_left_alone() -> None:
    have = [controller("nvme0", "10.77.0.1", state="connecting"), controller("nvme1", "10.77.1.1")]
    assert paths.decide(wanted(), have, TIMERS, "rdma", {NQN: "round-robin"}, "round-robin") == []


def test_tcp_paths_are_not_mistaken_for_rdma_ones() -> None:
    have = [controller("nvme0", "10.77.0.1", transport="tcp"), controller("nvme1", "10.77.1.1", transport="tcp")]
    assert [a.kind for a in paths.decide(wanted(), have, TIMERS, "rdma", {}, "numa")][:2] == ["connect", "connect"]


def test_connect_carries_every_blueprint_timer_and_the_source_address() -> None:
    argv = paths.connect_argv(wanted()[0], "rdma", 4420, TIMERS)
    for flag in ("--transport=rdma", "--traddr=10.77.0.1", "--trsvcid=4420", f"--nqn={NQN}", "--ctrl-loss-tmo=-1",
                 "--reconnect-delay=10", "--keep-alive-tmo=5", "--tos=106", "--host-traddr=10.77.0.2"):
        assert flag in argv
    assert not any("fast_io_fail" in a for a in argv), "nvme-cli 2.3 (Debian bookworm) has no such option"
    assert "--host-iface=rail0" in paths.connect_argv(wanted()[0], "tcp", 4420, TIMERS)


@pytest.mark.parametrize(("text", "value"), [("off", -1), ("600", 600), ("10\n", 10), ("", None)])
def test_sysfs_timers_read_off_as_minus_one(text: str, value: int | None) -> None:
    assert paths.parse_timer(text) == value


def test_sysfs_address_is_split_into_its_fields() -> None:
    assert paths.parse_address("traddr=10.77.0.1,trsvcid=4420,src_addr=10.77.0.2\n") == {
        "traddr": "10.77.0.1", "trsvcid": "4420", "src_addr": "10.77.0.2"}


@pytest.mark.parametrize(("targets", "subs", "need", "message"), [
    ({}, SUBS, 2, "served by storage-1, which is not in the inventory's storage_targets"),
    ({"storage-1": TARGET[:1]}, SUBS, 2, r"2 paths wanted \(one per rail\), but client-1 and storage-1 share only "
                                         r"rails \[0\]"),
    ({"storage-1": [dict(r, address=None) for r in TARGET]}, SUBS, 1, "share only rails none"),
    ({"storage-1": [dict(TARGET[0], address="CHANGE_ME")]}, SUBS, 1, "storage-1 rail 0: address 'CHANGE_ME' is not"),
])
def test_bad_inputs_say_what_was_expected(targets: dict[str, list[dict[str, object]]], subs: list[dict[str, str]],
                                          need: int, message: str) -> None:
    with pytest.raises(paths.PathsError, match=message):
        paths.plan_paths(CLIENT, targets, subs, need, "client-1")


def test_absent_disconnects_only_the_planned_paths() -> None:
    other = controller("nvme2", "10.99.0.1", nqn="nqn.2014-08.org.example:other")
    have = [controller("nvme0", "10.77.0.1"), controller("nvme1", "10.77.1.1"), other]
    assert [a.controller for a in paths.decide_absent(wanted(), have, "rdma")] == ["nvme0", "nvme1"]


HOSTNQN = "nqn.2026-11.io.clustersmith:lab:host:client-1"
SECRET, CTRL_SECRET = "DHHC-1:00:" + "A" * 48 + ":", "DHHC-1:00:" + "C" * 48 + ":"
ME = paths.Identity(hostnqn=HOSTNQN, hostid="d542d99d-9135-5c7b-a358-1d802e21f987")
ME_AUTH = paths.Identity(hostnqn=HOSTNQN, hostid=ME.hostid, dhchap_secret=SECRET,
                         dhchap_ctrl_secrets=(("storage-1", CTRL_SECRET),))


def test_discover_and_connect_name_the_blueprints_host_nqn_and_id() -> None:
    path = wanted()[0]
    for argv in (paths.connect_argv(path, "rdma", 4420, TIMERS, ME), paths.discover_argv(path, "rdma", 4420, ME)):
        assert f"--hostnqn={HOSTNQN}" in argv and f"--hostid={ME.hostid}" in argv
    assert not any(a.startswith("--dhchap") for a in paths.connect_argv(path, "rdma", 4420, TIMERS, ME))


def test_dhchap_connects_with_the_hosts_secret_and_the_serving_targets_and_messages_mask_them() -> None:
    argv = paths.connect_argv(wanted()[0], "rdma", 4420, TIMERS, ME_AUTH)
    assert f"--dhchap-secret={SECRET}" in argv and f"--dhchap-ctrl-secret={CTRL_SECRET}" in argv
    text = paths.shown(argv)
    assert "--dhchap-secret=(secret)" in text and SECRET not in text and CTRL_SECRET not in text


def test_a_path_made_as_another_host_or_with_another_secret_is_reconnected() -> None:
    foreign = [controller("nvme0", "10.77.0.1", hostnqn="nqn.2014-08.org.nvmexpress:uuid:1234"),
               controller("nvme1", "10.77.1.1", hostnqn=HOSTNQN)]
    actions = paths.decide(wanted(), foreign, TIMERS, "rdma", {NQN: "round-robin"}, "round-robin", ME)
    assert [(a.kind, a.controller) for a in actions] == [("reconnect", "nvme0")]
    assert "connected as nqn.2014-08.org.nvmexpress:uuid:1234" in actions[0].detail
    rotated = [controller("nvme0", "10.77.0.1", hostnqn=HOSTNQN, dhchap_secret="DHHC-1:00:old:",
                          dhchap_ctrl_secret=CTRL_SECRET),
               controller("nvme1", "10.77.1.1", hostnqn=HOSTNQN, dhchap_secret=SECRET, dhchap_ctrl_secret=CTRL_SECRET)]
    actions = paths.decide(wanted(), rotated, TIMERS, "rdma", {NQN: "round-robin"}, "round-robin", ME_AUTH)
    assert [(a.kind, a.controller) for a in actions] == [("reconnect", "nvme0")]
    assert "old" not in actions[0].describe() and SECRET not in actions[0].describe()


def test_a_kernel_that_shows_no_secret_is_not_reconnected_forever() -> None:
    live = [controller("nvme0", "10.77.0.1", hostnqn=HOSTNQN), controller("nvme1", "10.77.1.1", hostnqn=HOSTNQN)]
    assert paths.decide(wanted(), live, TIMERS, "rdma", {NQN: "round-robin"}, "round-robin", ME_AUTH) == []
