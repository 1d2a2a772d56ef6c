"""rdma_links: what changes on each rail (MTU, rxe device, RoCE mode), and the checks' messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.roles.library import load

rl = load("rdma", "rdma_links.py")
RAILS = [{"index": 0, "name": "rail0", "netdev": "rail0", "address": "10.77.0.2"},
         {"index": 1, "name": "rail1", "netdev": "rail1", "address": "10.77.1.2", "mtu": 4200}]


def state(devices: dict[str, str | None], mtu: int = 1500, mode: str | None = "RoCE v2",
          netdevs: tuple[str, ...] = ("lo", "mgmt0", "rail0", "rail1")) -> object:
    nics = {n: rl.NicState(n, mtu, devices.get(n), mode if devices.get(n) else None)
            for n in ("rail0", "rail1") if n in netdevs}
    links = tuple(rl.Link(device=d, port=1, state="ACTIVE", netdev=n) for n, d in devices.items() if d)
    return rl.HostState(netdevs=netdevs, nics=nics, links=links)


def rails() -> list[object]:
    return rl.parse_rails(RAILS, 1500)


def test_a_fresh_lab_host_gets_an_rxe_device_per_rail_and_the_rail_mtu() -> None:
    actions = rl.decide(rails(), state({}), soft_roce=True, roce_mode="RoCE v2")
    assert [a.describe() for a in actions] == [
        "rail0: rdma link add rxe0 type rxe", "rxe0: default_roce_mode RoCE v2",
        "rail1: mtu 4200", "rail1: rdma link add rxe1 type rxe", "rxe1: default_roce_mode RoCE v2"]


def test_a_converged_host_needs_nothing() -> None:
    done = state({"rail0": "rxe0", "rail1": "rxe1"})
    done.nics["rail1"] = rl.NicState("rail1", 4200, "rxe1", "RoCE v2")
    assert rl.decide(rails(), done, soft_roce=True, roce_mode="RoCE v2") == []


def test_a_hardware_nic_keeps_its_own_rdma_device() -> None:
    have = state({"rail0": "mlx5_0", "rail1": "mlx5_1"}, mode="IB/RoCE v1")
    actions = rl.decide(rails(), have, soft_roce=False, roce_mode="RoCE v2")
    assert [a.describe() for a in actions] == ["mlx5_0: default_roce_mode RoCE v2", "rail1: mtu 4200",
                                               "mlx5_1: default_roce_mode RoCE v2"]


def test_the_rdma_cm_tos_is_set_where_it_differs_and_left_where_it_holds() -> None:
    fresh = rl.decide(rails(), state({}), soft_roce=True, roce_mode="RoCE v2", roce_tos=106)
    assert [a.describe() for a in fresh if a.kind == "set_roce_tos"] == ["rxe0: default_roce_tos 106",
                                                                         "rxe1: default_roce_tos 106"]
    have = state({"rail0": "rxe0", "rail1": "rxe1"})
    have.nics["rail0"] = rl.NicState("rail0", 1500, "rxe0", "RoCE v2", 106)
    have.nics["rail1"] = rl.NicState("rail1", 4200, "rxe1", "RoCE v2", 0)  # the kernel's default
    assert [a.describe() for a in rl.decide(rails(), have, soft_roce=True, roce_mode="RoCE v2", roce_tos=106)] == [
        "rxe1: default_roce_tos 106"]
    assert rl.decide(rails(), have, soft_roce=True, roce_mode="RoCE v2") == []  # no ToS asked: left alone


def test_infiniband_sets_no_roce_mode() -> None:
    actions = rl.decide(rails(), state({"rail0": "mlx5_0", "rail1": "mlx5_1"}, mtu=4200), soft_roce=False,
                        roce_mode=None)
    assert [a.describe() for a in actions] == ["rail0: mtu 1500"]


def test_a_rail_nic_missing_from_the_host_is_refused_by_name() -> None:
    with pytest.raises(rl.RailsError) as caught:
        rl.decide(rails(), state({}, netdevs=("lo", "mgmt0", "rail0")), soft_roce=True, roce_mode="RoCE v2")
    assert str(caught.value) == ("rail NIC rail1 (rail rail1) named in the inventory does not exist on this host; "
                                 "its network interfaces are: lo, mgmt0, rail0")


def test_a_nic_without_rdma_needs_soft_roce() -> None:
    with pytest.raises(rl.RailsError, match="rail NIC rail0 \\(rail rail0\\) has no RDMA device"):
        rl.decide(rails(), state({}), soft_roce=False, roce_mode="RoCE v2")


def test_an_rxe_name_taken_by_another_nic_is_refused() -> None:
    with pytest.raises(rl.RailsError, match="RDMA device rxe1 already exists on mgmt0, not on rail NIC rail1"):
        have = state({"rail0": "rxe0"})
        have = rl.HostState(have.netdevs, have.nics, (*have.links, rl.Link("rxe1", 1, "ACTIVE", "mgmt0")))
        rl.decide(rails(), have, soft_roce=True, roce_mode="RoCE v2")


@pytest.mark.parametrize(("raw", "message"), [
    ([], "no rails: the inventory gives this host an empty `rails` list"),
    ([{"index": 0, "name": "rail0"}], "has no netdev; each rail needs index, name and netdev"),
    ([RAILS[0], dict(RAILS[1], netdev="rail0")], "rail NIC rail0 is named by more than one rail"),
    ([RAILS[0], dict(RAILS[1], index=0)], r"rail indexes repeat: \[0, 0\]"),
    ([dict(RAILS[0], mtu=100)], "rail rail0: mtu 100 is outside 576..9216"),
])
def test_bad_rail_lists_say_what_was_expected(raw: list[dict[str, object]], message: str) -> None:
    with pytest.raises(rl.RailsError, match=message):
        rl.parse_rails(raw, 1500)


def test_the_roce_v2_gid_of_an_ipv4_address_is_its_mapped_ipv6_form() -> None:
    assert rl.expected_gid("10.77.0.2") == "0000:0000:0000:0000:0000:ffff:0a4d:0002"


def test_a_gid_index_pointing_elsewhere_is_reported_with_the_table() -> None:
    rail = rails()[0]
    gids = {0: ("fe80:0000:0000:0000:5054:76ff:fe00:0101", "RoCE v2"),
            1: ("0000:0000:0000:0000:0000:ffff:0a4d:0002", "RoCE v2")}
    assert rl.check_gid(rail, "rxe0", 1, gids, "RoCE v2") is None
    message = rl.check_gid(rail, "rxe0", 3, gids, "RoCE v2")
    assert message is not None
    assert message.startswith("rxe0 on rail0: GID index 3 is unset, expected 0000:0000:0000:0000:0000:ffff:0a4d:0002")
    assert "1: 0000:0000:0000:0000:0000:ffff:0a4d:0002 (RoCE v2)" in message


FIXTURES = Path(__file__).resolve().parents[3] / "roles" / "fixtures"


def test_recorded_rdma_link_output_maps_each_rail_to_its_rxe_device() -> None:
    links = rl.parse_links((FIXTURES / "rdma-link-show.json").read_text())
    assert [(link.device, link.port, link.state, link.netdev) for link in links] == [
        ("rxe0", 1, "ACTIVE", "rail0"), ("rxe1", 1, "ACTIVE", "rail1")]


def test_recorded_gid_table_holds_the_rails_roce_v2_gid_at_index_1(tmp_path: Path) -> None:
    port = tmp_path / "class" / "infiniband" / "rxe1" / "ports" / "1"
    (port / "gids").mkdir(parents=True)
    (port / "gid_attrs" / "types").mkdir(parents=True)
    for line in (FIXTURES / "rxe1-gids.txt").read_text().splitlines():
        index, gid, kind = line.split(" ", 2)
        (port / "gids" / index).write_text(gid + "\n")
        if kind != "-":  # the kernel refuses to read the type of an empty slot
            (port / "gid_attrs" / "types" / index).write_text(kind + "\n")
    gids = rl.System(str(tmp_path)).gids("rxe1")
    assert sorted(gids) == [0, 1]
    rail = rl.parse_rails([{"index": 1, "name": "rail1", "netdev": "rail1", "address": "10.77.1.3"}], 1500)[0]
    assert rl.check_gid(rail, "rxe1", 1, gids, "RoCE v2") is None


def test_the_recorded_lab_links_give_each_rail_its_device_and_port_from_the_netdev() -> None:
    """client-2's ``rdma -j link show`` (tests/roles/fixtures): Soft-RoCE has no device folder under the NIC, so the
    device behind each rail is the link reported on that netdev, whatever its name."""
    links = rl.parse_links((FIXTURES / "rdma-link-show.json").read_text())
    assert rl.device_of("rail0", [], links) == ("rxe0", 1)
    assert rl.device_of("rail1", [], links) == ("rxe1", 1)
    assert rl.device_of("mgmt0", [], links) is None
    swapped = tuple(rl.Link(device=x.device, port=x.port, state=x.state,
                            netdev={"rail0": "rail1", "rail1": "rail0"}[x.netdev or ""]) for x in links)
    assert rl.device_of("rail0", [], swapped) == ("rxe1", 1)  # never a name made from the rail index


def test_a_device_sysfs_lists_under_the_nic_wins_over_the_rail_index() -> None:
    """Real NICs: /sys/class/net/<netdev>/device/infiniband/ names the device (mlx5_3 on the first compute rail of
    a host whose storage NICs come first); the port comes from the link of that device."""
    links = (rl.Link(device="mlx5_3", port=1, state="ACTIVE", netdev="ens1f0np0"),)
    assert rl.device_of("ens1f0np0", ["mlx5_3"], links) == ("mlx5_3", 1)


def test_the_recorded_gid_table_gives_the_index_nccl_would_pick(tmp_path: Path) -> None:
    test_recorded_gid_table_holds_the_rails_roce_v2_gid_at_index_1(tmp_path)  # lays out the recorded table
    gids = rl.System(str(tmp_path)).gids("rxe1")
    rail = rl.parse_rails([{"index": 1, "name": "rail1", "netdev": "rail1", "address": "10.77.1.3"}], 1500)[0]
    assert rl.find_gid(rail.address, gids, "RoCE v2") == 1
    assert rl.gid_problem(rail, "rxe1", -1, gids, "RoCE v2") == (None, 1)
    problem, index = rl.gid_problem(rail, "rxe1", -1, gids, "IB/RoCE v1")
    assert index is None and problem is not None and "no IB/RoCE v1 GID for 10.77.1.3" in problem


def test_the_rails_record_is_written_once_and_read_back(tmp_path: Path) -> None:
    found = [rl.RailDevice(0, "rail0", "rail0", "rxe0", 1, 1), rl.RailDevice(1, "rail1", "rail1", "rxe1", 1, 1)]
    path = tmp_path / "facts.d" / "rdma.fact"
    assert rl.write_facts(path, rl.facts_text(found)) is True
    assert rl.write_facts(path, rl.facts_text(found)) is False
    import json
    assert json.loads(path.read_text())["rails"][1] == {"index": 1, "name": "rail1", "netdev": "rail1",
                                                        "device": "rxe1", "port": 1, "gid_index": 1}
