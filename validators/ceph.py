"""Ceph's own account of itself, as acceptance reads it: ``ceph status -f json`` (health, its checks and mutes, PG
states, OSD counts), ``ceph osd pool ls detail -f json`` (each pool's size, min_size, EC profile, pg_num,
autoscale mode and flags) and ``ceph osd tree -f json`` (each OSD's CRUSH host, device class, up/down, in/out).
Recorded real output: tests/fixtures/ceph (its README says how)."""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel, Field, ValidationError

from blueprints.model import Parsed
from validators.errors import ParseError, parse_error
from validators.source import json_loads

# Pools Ceph makes for itself (the devicehealth manager module's pool: Pacific names it device_health_metrics,
# Quincy and later .mgr); they are not the plan's, and their presence is no departure from it.
CEPH_OWN_POOLS = frozenset({"device_health_metrics", ".mgr"})
POOL_TYPES = {1: "replicated", 3: "erasure"}  # pg_pool_t::TYPE_REPLICATED, TYPE_ERASURE (src/osd/osd_types.h)


class HealthCheck(Parsed):
    code: str
    severity: str
    summary: str


class PgState(Parsed):
    state: str
    count: int


class CephStatus(Parsed):
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


class PoolState(Parsed):
    name: str
    type: str = Field(description="replicated or erasure")
    size: int
    min_size: int
    pg_num: int
    pg_autoscale_mode: str
    erasure_code_profile: str = Field(description="Empty for a replicated pool")
    flags: tuple[str, ...] = Field(description="flags_names, e.g. hashpspool, ec_overwrites")
    crush_rule: int


class OsdState(Parsed):
    """One OSD as the OSD map has it: ``host`` is its CRUSH host bucket (None for a stray OSD, in no bucket)."""

    id: int
    name: str
    host: str | None
    device_class: str = Field(description="CRUSH device class; empty when none is set")
    up: bool
    in_: bool = Field(description="reweight > 0: `ceph osd out` sets it to 0")

    @property
    def where(self) -> str:
        return f"{self.name} on {self.host}" if self.host else f"{self.name} (in no CRUSH host)"


# The documents as Ceph 16.2.15 writes them (tests/fixtures/ceph): only the fields acceptance reads.
class _Summary(Parsed):
    message: str = ""


class _Check(Parsed):
    severity: str
    summary: _Summary = _Summary()


class _Mute(Parsed):
    code: str


class _Health(Parsed):
    status: str
    checks: dict[str, _Check]
    mutes: tuple[_Mute, ...] = ()


class _PgsByState(Parsed):
    state_name: str
    count: int


class _PgMap(Parsed):
    num_pgs: int
    pgs_by_state: tuple[_PgsByState, ...] = ()


class _OsdMap(Parsed):
    num_osds: int
    num_up_osds: int
    num_in_osds: int


class _Status(Parsed):
    health: _Health
    pgmap: _PgMap
    osdmap: _OsdMap


class _TreeNode(Parsed):
    id: int
    name: str
    type: str
    children: tuple[int, ...] = ()
    device_class: str = ""
    status: str = ""
    reweight: float = 0.0


class _Tree(Parsed):
    nodes: tuple[_TreeNode, ...]
    stray: tuple[_TreeNode, ...] = ()


M = TypeVar("M", bound=BaseModel)


def _json(text: str, source: str, what: str) -> object:
    try:
        return json_loads(text)
    except json.JSONDecodeError as exc:
        raise parse_error(source, what, f"(line {exc.lineno})", f"expected JSON ({what} -f json): {exc.msg}") from None


def _read(model: type[M], text: str, source: str, what: str) -> M:
    """``text`` as ``model``, or a parse error naming the first field that is absent or of the wrong type."""
    doc = _json(text, source, what)
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        if not first["loc"]:
            raise parse_error(source, what, "(document)", f"expected a JSON object ({what} -f json)",
                              type(doc).__name__) from None
        field = ".".join(str(p) for p in first["loc"])
        raise parse_error(source, what, field, f"expected {what} -f json: {first['msg']}", first.get("input")) \
            from None


def parse_status(text: str, source: str = "<ceph status>") -> CephStatus:
    doc = _read(_Status, text, source, "ceph status")
    return CephStatus(
        health=doc.health.status,
        checks=tuple(HealthCheck(code=code, severity=c.severity, summary=c.summary.message)
                     for code, c in doc.health.checks.items()),
        mutes=tuple(m.code for m in doc.health.mutes),
        pgs=tuple(PgState(state=p.state_name, count=p.count) for p in doc.pgmap.pgs_by_state),
        num_pgs=doc.pgmap.num_pgs, num_osds=doc.osdmap.num_osds, num_up_osds=doc.osdmap.num_up_osds,
        num_in_osds=doc.osdmap.num_in_osds)


def parse_pools(text: str, source: str = "<ceph osd pool ls detail>") -> tuple[PoolState, ...]:
    what = "ceph osd pool ls detail"
    doc = _json(text, source, what)
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


def parse_osd_tree(text: str, source: str = "<ceph osd tree>") -> tuple[OsdState, ...]:
    """Every OSD of the tree and the stray list, each with the CRUSH host bucket that holds it."""
    doc = _read(_Tree, text, source, "ceph osd tree")
    host_of = {child: n.name for n in doc.nodes if n.type == "host" for child in n.children}
    return tuple(OsdState(id=n.id, name=n.name, host=host_of.get(n.id), device_class=n.device_class,
                          up=n.status == "up", in_=n.reweight > 0)
                 for n in (*doc.nodes, *doc.stray) if n.type == "osd")


def parses(what: str, text: str, source: str) -> str | None:
    """None when ``text`` is the output of ``what`` (a key of ``PARSERS``), else why not, in the parser's words."""
    try:
        PARSERS[what](text, source)
    except ParseError as exc:
        return str(exc).replace("\n", " ")
    return None


PARSERS = {"status": parse_status, "osd-pool-ls-detail": parse_pools, "osd-tree": parse_osd_tree}
