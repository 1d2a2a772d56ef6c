"""lvm_cache: the LVM commands from the devices' state to a cached, tuned, formatted volume."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.roles.library import load

lc = load("storage_tiering", "lvm_cache.py")
MIB = 1 << 20
FAST, SLOW = "/dev/vdb", "/dev/vdc"
W = lc.Wanted(vg="clustersmith", fast=FAST, slow=SLOW, cache_size=256 * MIB, mode="writethrough", policy="smq",
              read_ahead_kb=4096)


def blank() -> object:
    return lc.State(pvs={}, extent_size=None, lvs={}, signatures={FAST: "", SLOW: ""},
                    device_sizes={FAST: 1024 * MIB, SLOW: 4096 * MIB}, filesystem=None)


def built(mode: str = "writethrough", pool: int = 256 * MIB, read_ahead: str = str(4096 * 1024)) -> object:
    pvs = {FAST: lc.Pv(FAST, "clustersmith", 1020 * MIB), SLOW: lc.Pv(SLOW, "clustersmith", 4092 * MIB)}
    lvs = {"data": lc.Lv("data", "clustersmith", "cache", 4092 * MIB, mode, "smq", read_ahead),
           "data_cache_cpool": lc.Lv("data_cache_cpool", "clustersmith", "cache-pool", pool, mode, "smq", "auto")}
    return lc.State(pvs=pvs, extent_size=4 * MIB, lvs=lvs, signatures={}, device_sizes={}, filesystem="ext4")


def test_blank_devices_become_a_cached_formatted_volume() -> None:
    assert [" ".join(c) for c in lc.decide(W, blank())] == [
        f"pvcreate --yes {FAST}", f"pvcreate --yes {SLOW}", f"vgcreate --yes clustersmith {FAST} {SLOW}",
        f"lvcreate --yes --name data --extents 100%PVS clustersmith {SLOW}",
        "lvcreate --yes --type cache --cachemode writethrough --cachepolicy smq --size 268435456b --name data_cache "
        f"clustersmith/data {FAST}",
        "lvchange --yes --readahead 8192 clustersmith/data",
        "mkfs.ext4 -q -E nodiscard -L clustersmith /dev/clustersmith/data"]


def test_a_built_volume_needs_nothing() -> None:
    assert lc.decide(W, built()) == []


def test_a_new_mode_is_switched_in_place() -> None:
    assert [" ".join(c) for c in lc.decide(W, built(mode="writeback"))] == [
        "lvchange --yes --cachemode writethrough clustersmith/data"]


def test_a_new_cache_size_rebuilds_the_pool_only() -> None:
    cmds = [c[:3] for c in lc.decide(W, built(pool=128 * MIB))]
    assert cmds == [["lvconvert", "--yes", "--uncache"], ["lvcreate", "--yes", "--type"]]


def test_the_cache_size_is_rounded_down_to_whole_extents() -> None:
    odd = lc.Wanted(**{**W.__dict__, "cache_size": 268_435_456 + 1_000_000})
    assert "268435456b" in " ".join(lc.decide(odd, blank())[4])


def test_read_ahead_is_set_in_sectors() -> None:
    assert [" ".join(c) for c in lc.decide(W, built(read_ahead="auto"))] == [
        "lvchange --yes --readahead 8192 clustersmith/data"]


@pytest.mark.parametrize(("state", "wanted", "message"), [
    (lc.State(pvs={FAST: lc.Pv(FAST, "vg0", 1)}, extent_size=None, lvs={}, signatures={SLOW: ""},
              device_sizes={}, filesystem=None), W,
     "fast device /dev/vdb belongs to volume group vg0; expected a free device or one already in clustersmith"),
    (lc.State(pvs={}, extent_size=None, lvs={}, signatures={FAST: "", SLOW: "xfs"}, device_sizes={},
              filesystem=None), W,
     "slow device /dev/vdc holds a xfs signature; storage_tiering never overwrites data"),
    (blank(), lc.Wanted(**{**W.__dict__, "slow": FAST}), "fast and slow device are the same"),
    (blank(), lc.Wanted(**{**W.__dict__, "cache_size": 2048 * MIB}),
     "cache size 2147483648 bytes does not fit the fast device /dev/vdb"),
    (blank(), lc.Wanted(**{**W.__dict__, "cache_size": 1000}), "cache size 1000 bytes is below one extent"),
])
def test_devices_it_must_not_touch_are_refused(state: object, wanted: object, message: str) -> None:
    with pytest.raises(lc.CacheError, match=message):
        lc.decide(wanted, state)


def test_a_foreign_file_system_on_the_volume_is_refused() -> None:
    state = built()
    state = lc.State(**{**state.__dict__, "filesystem": "xfs"})
    with pytest.raises(lc.CacheError, match="/dev/clustersmith/data holds a xfs file system; expected ext4"):
        lc.decide(W, state)


def test_absent_removes_volume_group_and_labels() -> None:
    assert [c[0] for c in lc.decide_absent(W, built())] == ["lvremove", "vgremove", "pvremove", "pvremove"]
    assert lc.decide_absent(W, blank()) == []


FIXTURES = Path(__file__).resolve().parents[3] / "roles" / "fixtures"


def recorded_state() -> object:
    pvs = lc.parse_pvs((FIXTURES / "pvs-cached.json").read_text())
    lvs = lc.parse_lvs((FIXTURES / "lvs-cached.json").read_text(), "clustersmith")
    vgs = lc.report((FIXTURES / "vgs-cached.json").read_text(), "vg")
    return lc.State(pvs=pvs, extent_size=int(vgs[0]["vg_extent_size"]), lvs=lvs, signatures={}, device_sizes={},
                    filesystem="ext4")


def test_recorded_reports_parse_into_the_cached_volume() -> None:
    state = recorded_state()
    assert {(p.name, p.vg) for p in state.pvs.values()} == {("/dev/vda", "clustersmith"), ("/dev/vdb", "clustersmith")}
    data = state.lvs["data"]
    assert (data.segtype, data.cache_mode, data.cache_policy, data.read_ahead) == (
        "cache", "writethrough", "smq", str(4096 * 1024))
    pool = lc.pool_lv(state)
    assert pool is not None and pool.name == "data_cache_cpool" and pool.size == 256 * MIB


def test_the_recorded_volume_is_what_the_lab_blueprint_asks_for() -> None:
    lab = lc.Wanted(vg="clustersmith", fast="/dev/vda", slow="/dev/vdb", cache_size=268_435_456,
                    mode="writethrough", policy="smq", read_ahead_kb=4096)
    assert lc.decide(lab, recorded_state()) == []
    assert [" ".join(c) for c in lc.decide(lc.Wanted(**{**lab.__dict__, "mode": "writeback"}), recorded_state())] == [
        "lvchange --yes --cachemode writeback clustersmith/data"]
