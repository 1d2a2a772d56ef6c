"""Issue 18 item 5: Ceph's own account of itself, judged against the lab's CephPlan. Each case is a recording of
a real Ceph 16.2.15 cluster (tests/fixtures/ceph, its README says how) or a copy with the edit the test names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint, Check, Provenance
from blueprints.loader import load_requirements
from blueprints.planner import plan
from validators.ceph import parse_pools, parse_status
from validators.checks.ceph import ceph_health
from validators.coverage import Planned
from validators.errors import ParseError
from validators.outcome import Measurement
from validators.results import Results

REPO = Path(__file__).resolve().parents[2]
CEPH = REPO / "tests" / "fixtures" / "ceph"
CHECK = Check(id="storage.ceph_health", tool="ceph", metric="Ceph health, PGs, OSDs and pools as planned", op="==",
              threshold=1, unit="bool", severity="error", scope="cluster",
              derived_from=Provenance(spec=("data.training_set",), rule="test", formula="test"))


@pytest.fixture(scope="module")
def lab() -> Blueprint:
    return plan(load_requirements(REPO / "examples" / "lab.yaml"))


def results(tmp_path: Path, state: str = "healthy", pools: list[dict[str, object]] | None = None,
            status: dict[str, object] | None = None) -> Results:
    folder = tmp_path / "ceph"
    folder.mkdir()
    shutil.copy(CEPH / state / "status.json", folder / "status.json")
    shutil.copy(CEPH / "healthy" / "osd-pool-ls-detail.json", folder / "osd-pool-ls-detail.json")
    if pools is not None:
        (folder / "osd-pool-ls-detail.json").write_text(json.dumps(pools))
    if status is not None:
        (folder / "status.json").write_text(json.dumps(status))
    return Results(tmp_path)


def judged(lab: Blueprint, found: Results) -> Measurement:
    return ceph_health(CHECK, found, Planned.of(lab))


def recorded_pools() -> list[dict[str, object]]:
    return json.loads((CEPH / "healthy" / "osd-pool-ls-detail.json").read_text())  # type: ignore[no-any-return]


def test_the_healthy_recording_is_the_lab_plan(lab: Blueprint, tmp_path: Path) -> None:
    got = judged(lab, results(tmp_path))
    assert got.violations == () and got.value == 1.0, got.violations
    assert got.coverage[0].seen == got.coverage[0].planned == 4
    assert "Ceph's own pool(s): device_health_metrics" in got.notes


def test_an_osd_down_fails_in_cephs_words(lab: Blueprint, tmp_path: Path) -> None:
    got = judged(lab, results(tmp_path, "osd-down"))
    text = " | ".join(got.violations)
    assert got.value == 0.0
    assert "health HEALTH_WARN: OSD_DOWN: 1 osds down; PG_DEGRADED: Degraded data redundancy" in text
    assert "PGs not active+clean:" in text and "active+undersized+degraded" in text
    assert "OSDs: 4 exist, 3 up, 4 in; planned 4, all up and in" in text
    assert got.coverage[0].seen == 3


def test_a_muted_check_is_never_a_pass(lab: Blueprint, tmp_path: Path) -> None:
    """Edit: the healthy status with a mute entry, as `ceph health mute OSD_DOWN` lists it in health.mutes."""
    status = json.loads((CEPH / "healthy" / "status.json").read_text())
    status["health"]["mutes"] = [{"code": "OSD_DOWN", "sticky": False, "summary": "1 osds down", "count": 1}]
    got = judged(lab, results(tmp_path, status=status))
    assert got.value == 0.0 and "muted health check(s): OSD_DOWN" in " ".join(got.violations)


@pytest.mark.parametrize(("edit", "expected"), [
    ({"flags_names": "hashpspool"}, "pool cephfs_hot: allow_ec_overwrites is off (flags: hashpspool), planned true"),
    ({"pg_autoscale_mode": "on"}, "pool cephfs_hot: pg_autoscale_mode 'on', planned 'warn'"),
    ({"pg_num": 32}, "pool cephfs_hot: pg_num 32, planned 128"),
    ({"min_size": 3}, "pool cephfs_hot: min_size 3, planned 2"),
])
def test_a_pool_set_otherwise_than_planned_fails(lab: Blueprint, tmp_path: Path, edit: dict[str, object],
                                                 expected: str) -> None:
    pools = [p | edit if p["pool_name"] == "cephfs_hot" else p for p in recorded_pools()]
    got = judged(lab, results(tmp_path, pools=pools))
    assert got.value == 0.0 and expected in got.violations, got.violations


def test_a_missing_pool_fails_and_an_unplanned_one_is_named(lab: Blueprint, tmp_path: Path) -> None:
    pools = [p for p in recorded_pools() if p["pool_name"] != "cephfs_hot"]
    pools.append({**recorded_pools()[1], "pool_name": "scratch"})
    got = judged(lab, results(tmp_path, pools=pools))
    assert "pool cephfs_hot is planned and does not exist" in got.violations
    assert "pool(s) the plan does not name: scratch" in got.notes


def test_missing_output_is_a_setup_error(lab: Blueprint, tmp_path: Path) -> None:
    got = judged(lab, Results(tmp_path))
    assert got.setup_error == "no ceph status output in the results (ceph/status.json)"
    assert got.coverage[0].seen == 0 and got.coverage[0].planned == 4


def test_clouds_plan_no_ceph(tmp_path: Path) -> None:
    bp = plan(load_requirements(REPO / "examples" / "llm-training-16k.yaml"))
    assert bp.storage.ceph is None
    assert judged(bp, Results(tmp_path)).not_applicable == "the Blueprint plans no Ceph cluster"


def test_the_parsers_read_the_recordings_and_refuse_other_json() -> None:
    status = parse_status((CEPH / "osd-down" / "status.json").read_text())
    assert status.health == "HEALTH_WARN" and {c.code for c in status.checks} == {"OSD_DOWN", "PG_DEGRADED"}
    pools = parse_pools((CEPH / "healthy" / "osd-pool-ls-detail.json").read_text())
    hot = next(p for p in pools if p.name == "cephfs_hot")
    assert (hot.type, hot.size, hot.erasure_code_profile) == ("erasure", 3, "hot_k2m1") and "ec_overwrites" in hot.flags
    with pytest.raises(ParseError, match="health"):
        parse_status('{"fsid": "x"}', "status.json")
    with pytest.raises(ParseError, match="expected a JSON array of pools"):
        parse_pools('{"pools": []}', "pools.json")
