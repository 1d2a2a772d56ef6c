"""nvmet_volumes' decisions (pure): the namespaces' LVM volumes on a target's pool, never built on a device that
holds something else, never resized or removed. The real LVM runs in the nvmeof molecule scenario on the lab."""

from __future__ import annotations

import pytest

from tests.roles.library import load

nv = load("nvmeof", "nvmet_volumes.py")
GIB = 1 << 30
W = nv.Wanted(pool="/dev/vdb", vg="clustersmith-nvmeof", volumes=("ns-client-1", "ns-client-2"), size=2 * GIB)
BLANK = nv.State(pool_vg=None, pool_signature="", vg_pvs=(), vg_free=0, extent=4 << 20, volumes={})


def made(**changes: object) -> object:
    return nv.State(**{**BLANK.__dict__, "vg_pvs": ("/dev/vdb",), "pool_vg": "clustersmith-nvmeof",
                       "vg_free": 4 * GIB, **changes})


def test_an_empty_pool_gets_the_group_and_one_volume_per_namespace() -> None:
    assert nv.decide(W, BLANK) == [
        ["vgcreate", "--yes", "clustersmith-nvmeof", "/dev/vdb"],
        *(["lvcreate", "--yes", "--wipesignatures", "y", "--zero", "y", "--size", f"{2 * GIB}b", "--name", n,
           "clustersmith-nvmeof"] for n in ("ns-client-1", "ns-client-2")),
    ]


def test_a_second_run_changes_nothing_and_a_new_owner_gets_only_its_volume() -> None:
    assert nv.decide(W, made(volumes={"ns-client-1": 2 * GIB, "ns-client-2": 2 * GIB}, vg_free=0)) == []
    cmds = nv.decide(W, made(volumes={"ns-client-1": 2 * GIB}))
    assert [c[-2] for c in cmds] == ["ns-client-2"]


def test_volumes_no_namespace_plans_are_left_alone() -> None:
    assert nv.decide(W, made(volumes={"ns-client-1": 2 * GIB, "ns-client-2": 2 * GIB, "ns-gone": GIB})) == []


@pytest.mark.parametrize(("state", "message"), [
    (nv.State(**{**BLANK.__dict__, "pool_signature": "ext4"}),
     "pool /dev/vdb holds a ext4 signature; clustersmith builds the namespaces only on an empty device"),
    (nv.State(**{**BLANK.__dict__, "pool_vg": "data"}), "pool /dev/vdb is in volume group data"),
    (made(vg_pvs=("/dev/vdc",)), "volume group clustersmith-nvmeof is on /dev/vdc, not on the pool /dev/vdb"),
    (made(volumes={"ns-client-1": GIB}), "volume clustersmith-nvmeof/ns-client-1 is 1073741824 bytes; the plan says "
                                         "2147483648: a namespace in use is never resized"),
    (made(vg_free=GIB), "has 1073741824 bytes free; 2 new volume(s) of 2147483648 bytes need 4294967296"),
])
def test_what_it_must_not_touch_is_an_error_naming_it(state: object, message: str) -> None:
    with pytest.raises(nv.VolumeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        nv.decide(W, state)


def test_sizes_and_names_are_checked() -> None:
    with pytest.raises(nv.VolumeError, match="multiple of the 4194304-byte extent"):
        nv.decide(nv.Wanted(**{**W.__dict__, "size": GIB + 1}), BLANK)
    with pytest.raises(nv.VolumeError, match="name 'ns client' is not an LVM name"):
        nv.decide(nv.Wanted(**{**W.__dict__, "volumes": ("ns client",)}), BLANK)
