"""The ceph role's cluster step (roles/ceph/library/ceph_cluster.py) decides on real Ceph 16.2.15 state: ``report``,
``auth ls`` and ``mgr dump`` recorded by tests/fixtures/ceph/record.sh, ``fresh/`` right after the monitor and
manager, ``healthy/`` at HEALTH_OK with the lab plan's pools (the hot pool at its planned 16 PGs, autoscale warn)
and ``osd-down/``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from blueprints.cli import plan_file
from blueprints.rolevars.ceph import CephVars, role_vars
from tests.roles.library import load

REPO = Path(__file__).resolve().parents[4]
FIXTURES = REPO / "tests" / "fixtures" / "ceph"
FS_CAPS = {"mon": "allow r fsname=cephfs", "mds": "allow rw fsname=cephfs", "osd": "allow rw tag cephfs data=cephfs"}
STORED_KEY = "AQBKfSdpAAAAABAAkb1GNPhM2x55bSDNc6bp2w=="  # a cephx key made by blueprints.secrets.cephx_key()
cluster = load("ceph", "ceph_cluster.py")


def fixture(state: str, name: str) -> Any:
    return json.loads((FIXTURES / state / name).read_text())


def state(name: str) -> Any:
    return cluster.State(report=fixture(name, "report.json"), auth=fixture(name, "auth-ls.json")["auth_dump"],
                         mgr=fixture(name, "mgr-dump.json"))


def recorded_host() -> str:
    (host,) = {m["hostname"] for m in fixture("healthy", "report.json")["osd_metadata"]}
    return str(host)


def params(hot_pg_num: int | None = None, entities: list[dict[str, Any]] | None = None,
           host_class: str = "nvme") -> dict[str, Any]:
    """The lab Blueprint's ceph role variables as the role passes them (``hot_pg_num``: another hot pool pg_num)."""
    v = role_vars(plan_file(REPO / "examples" / "lab.yaml"))["storage_targets"]
    assert isinstance(v, CephVars)
    pools = [p.model_dump() for p in v.ceph_pools]
    if hot_pg_num is not None:
        pools = [{**p, "pg_num": hot_pg_num} if p["name"] == "cephfs_hot" else p for p in pools]
    return {"fs_name": v.ceph_fs_name, "osds": v.ceph_osds, "host_classes": {recorded_host(): host_class},
            "ec_profiles": [e.model_dump() for e in v.ceph_ec_profiles], "pools": pools,
            "max_mds": v.ceph_max_mds, "standby_count_wanted": v.ceph_standby_count_wanted,
            "mgr_modules": list(v.ceph_mgr_modules), "entities": entities or []}


def recorded_entities(name: str) -> list[dict[str, Any]]:
    return [e for e in fixture(name, "auth-ls.json")["auth_dump"] if e["entity"] == "client.admin"]


def test_a_fresh_cluster_gets_every_planned_object_in_order() -> None:
    wanted = [*recorded_entities("fresh"), {"entity": "client.fs-client-1", "key": STORED_KEY, "caps": FS_CAPS}]
    actions = cluster.decide(params(entities=wanted), state("fresh"))
    assert [a.why for a in actions] == [
        "EC profile hot_k2m1",
        "CRUSH rule replicated_nvme",
        "pool cephfs_metadata: create (replicated, 16 PGs)",
        "pool cephfs_metadata: size None -> 3",
        "pool cephfs_metadata: min_size None -> 2",
        "pool cephfs_metadata: pg_autoscale_mode None -> warn",
        "pool cephfs_data: create (replicated, 8 PGs)",
        "pool cephfs_data: size None -> 3",
        "pool cephfs_data: min_size None -> 2",
        "pool cephfs_data: pg_autoscale_mode None -> warn",
        "pool cephfs_hot: create (erasure, 16 PGs)",
        "pool cephfs_hot: min_size None -> 2",
        "pool cephfs_hot: pg_autoscale_mode None -> warn",
        "pool cephfs_hot: allow_ec_overwrites (CephFS data)",
        "file system cephfs: create",
        "file system cephfs: data pool cephfs_hot",
        "file system cephfs: standby_count_wanted 0",
        "manager module prometheus",
        "cephx client.fs-client-1: import the stored key and planned caps",
    ]
    by_prefix = {a.command["prefix"]: a.command for a in actions}
    assert by_prefix["osd erasure-code-profile set"]["profile"] == [
        "k=2", "m=1", "crush-failure-domain=osd", "crush-device-class=nvme", "plugin=jerasure",
        "technique=reed_sol_van"]
    assert by_prefix["osd crush rule create-replicated"] == {
        "prefix": "osd crush rule create-replicated", "name": "replicated_nvme", "root": "default", "type": "osd",
        "class": "nvme"}
    assert by_prefix["fs new"] == {"prefix": "fs new", "fs_name": "cephfs", "metadata": "cephfs_metadata",
                                   "data": "cephfs_data"}
    hot = next(a.command for a in actions if a.command.get("pool") == "cephfs_hot")
    assert hot == {"prefix": "osd pool create", "pool": "cephfs_hot", "pg_num": 16, "pgp_num": 16,
                   "pool_type": "erasure", "erasure_code_profile": "hot_k2m1"}


def test_the_converged_cluster_needs_no_command() -> None:
    """HEALTH_OK with the lab plan's pools, classes, file system and module: nothing to send."""
    assert cluster.decide(params(entities=recorded_entities("healthy")), state("healthy")) == []


def test_a_planned_pg_num_that_differs_is_set_with_pgp_num() -> None:
    actions = cluster.decide(params(hot_pg_num=64, entities=recorded_entities("healthy")), state("healthy"))
    assert [(a.command["var"], a.command["val"]) for a in actions] == [("pg_num", "64"), ("pgp_num", "64")]


def test_an_osd_of_another_class_is_cleared_then_set() -> None:
    actions = cluster.decide(params(entities=recorded_entities("healthy"), host_class="qlc"),
                             state("healthy"))
    osds = ["osd.0", "osd.1", "osd.2", "osd.3"]
    assert [a.command for a in actions] == [
        {"prefix": "osd crush rm-device-class", "ids": osds},
        {"prefix": "osd crush set-device-class", "class": "qlc", "ids": osds}]


def test_a_pool_of_the_wrong_type_is_refused_by_name() -> None:
    wrong = params(entities=recorded_entities("healthy"))
    wrong["pools"] = [{**p, "type": "replicated"} if p["name"] == "cephfs_hot" else p for p in wrong["pools"]]
    with pytest.raises(cluster.CephPlanError, match="pool cephfs_hot is erasure, planned replicated"):
        cluster.decide(wrong, state("healthy"))


def test_a_changed_key_or_caps_is_one_import_that_never_shows_the_key() -> None:
    (admin,) = recorded_entities("healthy")
    wanted = [{**admin, "key": STORED_KEY},
              {"entity": "client.fs-client-2", "key": STORED_KEY, "caps": FS_CAPS}]
    (action,) = cluster.decide(params(entities=wanted), state("healthy"))
    assert action.command == {"prefix": "auth import"}
    assert STORED_KEY not in action.why and "client.admin, client.fs-client-2" in action.why
    assert action.inbuf.count(f"key = {STORED_KEY}") == 2
    assert '\tcaps osd = "allow rw tag cephfs data=cephfs"\n' in action.inbuf


def test_health_names_every_check_raised() -> None:
    assert cluster.health_problems(fixture("healthy", "health-detail.json")) == []
    problems = cluster.health_problems(fixture("osd-down", "health-detail.json"))
    assert [p.split(":")[0] for p in problems] == ["OSD_DOWN", "PG_DEGRADED"]


def test_osds_and_mds_readiness_read_from_the_maps() -> None:
    healthy = fixture("healthy", "report.json")
    assert cluster.osds_ready(healthy["osdmap"], 4) and not cluster.osds_ready(healthy["osdmap"], 5)
    assert not cluster.osds_ready(fixture("fresh", "report.json")["osdmap"], 1)
    assert cluster.active_mds(healthy["fsmap"], "cephfs")
    assert not cluster.active_mds(fixture("fresh", "report.json")["fsmap"], "cephfs")
