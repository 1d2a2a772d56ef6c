"""Ceph on the example lab as its tests read it: the ceph CLI and librados in the monitor's guest, over SSH; what a
fresh clean state is; and a recovery an earlier test left running. test_ceph_lab stops an OSD and brings it back; the
cluster's return to HEALTH_OK then runs beside the external-NFS proof (61-91 s alone under TCG, 200-263 s beside
it), and the acceptance module, whose ceph check must read HEALTH_OK, waits for it first (``settled``) and records
how long it took."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from stacks.lab import Lab
from tests.lab.conftest import TIMINGS

# How long the cluster may take to re-protect the data after an OSD is marked out, and to be healthy after it returns
# (TCG: peering and recovery of the lab's PGs on the storage VM's one vCPU).
RECOVERY_BOUND_S = 1200


def ssh_out(lab: Lab, host: str, command: str, timeout: float = 600) -> str:
    done = lab.ssh(host, command, timeout=timeout)
    assert done.returncode == 0, f"{host}: `{command}` exited {done.returncode}: {done.stderr or done.stdout}"
    return done.stdout


def ceph_json(lab: Lab, host: str, command: str) -> object:
    return json.loads(ssh_out(lab, host, f"ceph --connect-timeout 120 {command} -f json"))


# mgr stats period and osd mon report interval are 30 s in the lab (LAB_SETTINGS): PG states reach `ceph pg stat` up to
# 30 s late. A clean state is therefore read fresh, as Ceph's own test suite does (teuthology's ceph_manager
# flush_pg_stats): every up OSD is told to send its PG stats now (`ceph tell osd.N flush_pg_stats` returns a sequence
# number), and the read waits until the monitor has each OSD's stats of at least that sequence (`ceph osd last-stat-seq
# osd.N`). One process in the guest makes every call through librados (a ceph CLI call costs 3-6 s under TCG):
# 5-8 s for a fresh read on the lab, 2026-12-06, where a clean state used to count only on two reads 40 s apart. Two
# fresh reads SETTLE_S apart still guard the moment after `osd in`, before the OSDs have acted on the new map.
SETTLE_S = 10
POLL_S = 5
FRESH_PG_STATES = """
import json, rados, time
cluster = rados.Rados(conffile="/etc/ceph/ceph.conf")
cluster.connect(timeout=120)
def call(send, prefix, plain=False, **args):
    ret, out, err = send(json.dumps({"prefix": prefix, **args, **({} if plain else {"format": "json"})}), b"",
                         timeout=120)
    assert ret == 0, (prefix, args, ret, err)
    return out.decode() if plain else json.loads(out)
dump = call(cluster.mon_command, "osd dump")
seqs = {o["osd"]: int(call(lambda *a, osd=o["osd"], **k: cluster.osd_command(osd, *a, **k), "flush_pg_stats",
                             plain=True))
        for o in dump["osds"] if o["up"]}
deadline = time.monotonic() + 120
for osd, seq in seqs.items():
    while int(call(cluster.mon_command, "osd last-stat-seq", plain=True, id=osd).strip()) < seq:
        assert time.monotonic() < deadline, f"osd.{osd}'s PG stats did not reach the monitor within 120 s"
        time.sleep(0.5)
stat = call(cluster.mgr_command, "pg stat")
print(json.dumps({"health": call(cluster.mon_command, "health")["status"],
                  "up_and_in": all(o["up"] == 1 and o["in"] == 1 for o in dump["osds"]),
                  "states": {s["name"]: s["num"] for s in stat["pg_summary"]["num_pg_by_state"]}}))
"""


def wait_for(what: str, bound_s: float, ready: Callable[[], bool]) -> float:
    started = time.monotonic()
    while not ready():
        assert time.monotonic() - started < bound_s, f"{what}: not within {bound_s:.0f} s"
        time.sleep(POLL_S)
    return time.monotonic() - started


@dataclass(frozen=True)
class FreshRead:
    """One FRESH_PG_STATES read: the health status, whether every OSD of the map is up and in, PG counts by state."""

    health: str
    up_and_in: bool
    states: dict[str, int]

    @property
    def clean(self) -> bool:
        return set(self.states) == {"active+clean"}


def fresh_read(lab: Lab, host: str) -> FreshRead:
    """The cluster as every up OSD reports it now (FRESH_PG_STATES), read on ``host`` in one librados process."""
    got = json.loads(ssh_out(lab, host, f"python3 - <<'EOF'\n{FRESH_PG_STATES}EOF"))
    assert isinstance(got, dict)
    return FreshRead(str(got["health"]), bool(got["up_and_in"]), dict(got["states"]))


def clean(lab: Lab, host: str, first: FreshRead | None = None) -> bool:
    """Every PG active+clean on two fresh reads SETTLE_S apart (``first``: the first, already read)."""
    if not (first or fresh_read(lab, host)).clean:
        return False
    time.sleep(SETTLE_S)
    return fresh_read(lab, host).clean


def all_up_and_in(lab: Lab, mon: str) -> bool:
    """Every OSD of ``ceph osd dump`` up and in."""
    dump = ceph_json(lab, mon, "osd dump")
    assert isinstance(dump, dict)
    return all(o["up"] == 1 and o["in"] == 1 for o in dump["osds"])


def healthy(lab: Lab, mon: str) -> bool:
    """HEALTH_OK, every OSD up and in, every PG active+clean (``clean``): the first read has all three (one librados
    process where a `ceph health` and a `ceph osd dump` call cost 6 s each under TCG, on top of it)."""
    first = fresh_read(lab, mon)
    return first.health == "HEALTH_OK" and first.up_and_in and clean(lab, mon, first)


@dataclass(frozen=True)
class Returning:
    """An OSD a test stopped and brought back (started, marked in) at ``since`` (time.monotonic()), read on ``mon``;
    the cluster's return to HEALTH_OK is left to run on."""

    osd: int
    mon: str
    since: float


RETURNING: list[Returning] = []


def settled(lab: Lab) -> None:
    """Until the cluster is healthy again after every OSD a test brought back (none: at once), within
    RECOVERY_BOUND_S of its return; the time from its return to HEALTH_OK goes to the "lab timings" summary."""
    while RETURNING:
        back = RETURNING[0]
        waited = wait_for(f"HEALTH_OK with osd.{back.osd} back", RECOVERY_BOUND_S - (time.monotonic() - back.since),
                          functools.partial(healthy, lab, back.mon))
        TIMINGS[f"ceph: osd.{back.osd} back in to HEALTH_OK (lab, emulated)"] = time.monotonic() - back.since
        TIMINGS[f"ceph: osd.{back.osd} HEALTH_OK waited for by the next Ceph reader"] = waited
        RETURNING.pop(0)
