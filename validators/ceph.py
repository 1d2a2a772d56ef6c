"""Ceph's own account of itself, as acceptance reads it: ``ceph status -f json`` (health, its checks and mutes, PG
states, OSD counts) and ``ceph osd pool ls detail -f json`` (each pool's size, min_size, EC profile, pg_num,
autoscale mode and flags). Recorded real output: tests/fixtures/ceph (its README says how)."""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from validators.errors import parse_error

# Pools Ceph makes for itself (the devicehealth manager module's pool: Pacific names it device_health_metrics,
# Quincy and later .mgr); they are not the plan's, and their presence is no departure from it.
CEPH_OWN_POOLS = frozenset({"device_health_metrics", ".mgr"})
POOL_TYPES = {1: "replicated", 3: "erasure"}  # pg_pool_t::TYPE_REPLICATED, TYPE_ERASURE (src/osd/osd_types.h)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class HealthCheck(_Frozen):
    code: str
    severity: str
    summary: str


class PgState(_Frozen):
    state: str
    count: int


class CephStatus(_Frozen):
    health: str = Field(description="HEALTH_OK, HEALTH_WARN or HEALTH_ERR")
    checks: tuple[HealthCheck, ...]
    mutes: tuple[str, ...] = Field(description="Health checks someone muted (`ceph health mute`)")
    pgs: tuple[PgState, ...]
    num_pgs: int
    num_osds: int
    num_up_osds: int
    num_in_osds: int

    def not_clean(self) -> tuple[PgState, ...]:
        return tuple(p for p in self.pgs if p.state != "active+clean")


class PoolState(_Frozen):
    name: str
    type: str = Field(description="replicated or erasure")
    size: int
    min_size: int
    pg_num: int
    pg_autoscale_mode: str
    erasure_code_profile: str = Field(description="Empty for a replicated pool")
    flags: tuple[str, ...] = Field(description="flags_names, e.g. hashpspool, ec_overwrites")
    crush_rule: int


def _doc(text: str, source: str, what: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise parse_error(source, what, f"(line {exc.lineno})", f"expected JSON ({what} -f json): {exc.msg}") from None


def _get(data: object, source: str, what: str, *path: str) -> object:
    here = data
    for i, key in enumerate(path):
        if not isinstance(here, dict) or key not in here:
            raise parse_error(source, what, ".".join(path[: i + 1]), "expected this key", type(here).__name__)
        here = here[key]
    return here


def parse_status(text: str, source: str = "<ceph status>") -> CephStatus:
    what = "ceph status"
    doc = _doc(text, source, what)
    checks = _get(doc, source, what, "health", "checks")
    if not isinstance(checks, dict):
        raise parse_error(source, what, "health.checks", "expected an object of health checks", checks)
    health = _get(doc, source, what, "health")
    mutes = health.get("mutes", []) if isinstance(health, dict) else []
    pgmap = _get(doc, source, what, "pgmap")
    osdmap = _get(doc, source, what, "osdmap")
    raw_pgs = pgmap.get("pgs_by_state", []) if isinstance(pgmap, dict) else []
    try:
        return CephStatus(
            health=str(_get(doc, source, what, "health", "status")),
            checks=tuple(HealthCheck(code=code, severity=str(c.get("severity", "")),
                                     summary=str((c.get("summary") or {}).get("message", "")))
                         for code, c in checks.items() if isinstance(c, dict)),
            mutes=tuple(str(m.get("code", m)) if isinstance(m, dict) else str(m) for m in mutes or []),
            pgs=tuple(PgState(state=str(p["state_name"]), count=int(p["count"])) for p in raw_pgs),
            num_pgs=int(_get(doc, source, what, "pgmap", "num_pgs")),  # type: ignore[call-overload]
            num_osds=int(_get(doc, source, what, "osdmap", "num_osds")),  # type: ignore[call-overload]
            num_up_osds=int(_get(doc, source, what, "osdmap", "num_up_osds")),  # type: ignore[call-overload]
            num_in_osds=int(_get(doc, source, what, "osdmap", "num_in_osds")),  # type: ignore[call-overload]
        )
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise parse_error(source, what, "pgmap/osdmap", f"unexpected shape: {exc}", osdmap) from None


def parse_pools(text: str, source: str = "<ceph osd pool ls detail>") -> tuple[PoolState, ...]:
    what = "ceph osd pool ls detail"
    doc = _doc(text, source, what)
    if not isinstance(doc, list):
        raise parse_error(source, what, "(document)", "expected a JSON array of pools", type(doc).__name__)
    pools = []
    for i, p in enumerate(doc):
        try:
            pools.append(PoolState(
                name=str(p["pool_name"]), type=POOL_TYPES.get(int(p["type"]), f"type {p['type']}"),
                size=int(p["size"]), min_size=int(p["min_size"]), pg_num=int(p["pg_num"]),
                pg_autoscale_mode=str(p["pg_autoscale_mode"]),
                erasure_code_profile=str(p.get("erasure_code_profile", "")),
                flags=tuple(f for f in str(p.get("flags_names", "")).split(",") if f), crush_rule=int(p["crush_rule"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise parse_error(source, what, f"[{i}]", f"expected a pool with {exc}", p) from None
    return tuple(pools)
