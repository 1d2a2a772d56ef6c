"""promtool inputs for the Ceph alerts, shaped exactly like what Ceph 16.2.15's mgr prometheus module served.

The series are the recordings' own (tests/fixtures/ceph/{healthy,osd-down,just-enabled}/mgr-prometheus.txt, see its
README): every name, label and value as recorded, held constant, with the labels the ceph scrape job adds
(``instance`` the serving manager, ``role``, ``exporter``). Where an alert needs a state the recordings lack, one
recorded value is changed and the builder says which. ``just-enabled`` is what the module served right after it was
enabled on a healthy cluster (an earlier recording, 153 PGs): every PG ``unknown``, its collection from before the PGs
had reported (``ceph_cluster_total_bytes`` 0).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from blueprints.blueprint import AlertRule, Blueprint

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ceph"
_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
# What each whole recording must raise, read off the recordings (osd.3 killed on host "vm"; the PG counts per pool
# of osd-down/mgr-prometheus.txt: pools 2, 3, 4 have fewer clean than total PGs, pool 2 has 8 degraded).
_POOLS = {"1": "device_health_metrics", "2": "cephfs_metadata", "3": "cephfs_data", "4": "cephfs_hot"}
OSD_DOWN_FIRES: dict[str, list[dict[str, str]]] = {
    "CephHealthWarning": [{}],
    "CephOsdDown": [{"ceph_daemon": "osd.3", "hostname": "vm"}],
    "CephPgsNotClean": [{"pool_id": p, "name": _POOLS[p]} for p in ("2", "3", "4")],
    "CephPgsDegraded": [{"pool_id": "2", "name": "cephfs_metadata"}],
}
JUST_ENABLED_FIRES: dict[str, list[dict[str, str]]] = {
    "CephPgsInactive": [{"pool_id": p, "name": n} for p, n in _POOLS.items()],
    "CephPgsNotClean": [{"pool_id": p, "name": n} for p, n in _POOLS.items()],
}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def with_value(self, value: float) -> Sample:
        return Sample(self.name, self.labels, value)

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)


def recording(state: str) -> list[Sample]:
    """Every sample of ``<state>/mgr-prometheus.txt``."""
    found = []
    for line in (FIXTURES / state / "mgr-prometheus.txt").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        assert match, f"{state}: unparsed exposition line {line!r}"
        name, body, value = match.groups()
        found.append(Sample(name, tuple(_LABEL.findall(body or "")), float(value)))
    return found


def healthy() -> list[Sample]:
    """The healthy recording, whose PG counts are those of ``status.json`` of the same moment: all active+clean."""
    status = json.loads((FIXTURES / "healthy" / "status.json").read_text())["pgmap"]
    assert status["pgs_by_state"] == [{"state_name": "active+clean", "count": status["num_pgs"]}], status
    samples = recording("healthy")
    for name in ("ceph_pg_total", "ceph_pg_active", "ceph_pg_clean"):
        assert sum(s.value for s in samples if s.name == name) == status["num_pgs"], name
    return samples


def changed(samples: list[Sample], name: str, match: dict[str, str], value: float | None) -> list[Sample]:
    """``samples`` with the series ``name`` whose labels include ``match`` set to ``value`` (None: left out)."""
    hits = [s for s in samples if s.name == name and all(s.label(k) == v for k, v in match.items())]
    assert hits, f"the recording has no {name}{match}"
    if value is None:
        return [s for s in samples if s not in hits]
    return [s.with_value(value) if s in hits else s for s in samples]


def used_names(alerts: list[AlertRule]) -> set[str]:
    return {n for a in alerts for n in re.findall(r"\bceph_[a-z_]+\b", a.expr)}


def series(bp: Blueprint, samples: list[Sample], steps: int, names: set[str]) -> list[dict[str, str]]:
    """promtool input series: each sample the rules read, constant for ``steps``, as the ceph job scrapes it from the
    first planned manager (the active one)."""
    job = next(j for j in bp.monitoring.scrape if j.exporter == "ceph-mgr")
    scrape = {"job": job.name, "instance": job.hosts[0], "role": job.role, "exporter": job.exporter}
    out = []
    for s in samples:
        if s.name not in names:
            continue
        body = ", ".join(f'{k}="{v}"' for k, v in (*s.labels, *scrape.items()))
        out.append({"series": f"{s.name}{{{body}}}", "values": f"{s.value:.12g}x{steps}"})
    return out


def standby_only(bp: Blueprint, steps: int) -> list[dict[str, str]]:
    """What Prometheus holds when every manager is a standby: each target up (an empty 200 answer), no Ceph series."""
    job = next(j for j in bp.monitoring.scrape if j.exporter == "ceph-mgr")
    return [{"series": f'up{{job="{job.name}", instance="{h}", role="{job.role}", exporter="{job.exporter}"}}',
             "values": f"1x{steps}"} for h in job.hosts]


def quorum(bp: Blueprint, out_of_quorum: int, steps: int) -> list[dict[str, str]]:
    """The planned monitors' ceph_mon_quorum_status, shaped like the recorded ``{ceph_daemon="mon.a"}``."""
    assert bp.storage.ceph is not None
    mons = bp.storage.ceph.daemons.monitors.value
    samples = [Sample("ceph_mon_quorum_status", (("ceph_daemon", f"mon.{chr(ord('a') + i)}"),),
                      0.0 if i < out_of_quorum else 1.0) for i in range(mons)]
    return series(bp, samples, steps, {"ceph_mon_quorum_status"})
