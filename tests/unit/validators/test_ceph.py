"""Issue 18 item 5: Ceph's own account of itself, judged against the lab's CephPlan. Each case is a recording of
a real Ceph 16.2.15 cluster (tests/fixtures/ceph, its README says how) or a copy with the edit the test names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from blueprints.blueprint import Blueprint, Check, Provenance
from blueprints.blueprint.check_args import CephArgs
from blueprints.loader import load_requirements
from blueprints.planner import plan
from validators.ceph import parse_osd_tree, parse_pools, parse_status
from validators.checks.ceph import ceph_health
from validators.coverage import Planned
from validators.errors import ParseError
from validators.outcome import Measurement, exit_code, judge
from validators.results import Results

REPO = Path(__file__).resolve().parents[3]
CEPH = REPO / "tests" / "fixtures" / "ceph"
FILES = ("status.json", "osd-pool-ls-detail.json", "osd-tree.json")


@pytest.fixture(scope="module")
def lab() -> Blueprint:
    return plan(load_requirements(REPO / "examples" / "lab.yaml"))


def planned_check(bp: Blueprint) -> Check:
    return next(c for c in bp.acceptance.checks if c.id == "storage.ceph_health")


def results(tmp_path: Path, state: str = "healthy", pools: list[dict[str, object]] | None = None,
            status: dict[str, object] | None = None, tree: dict[str, object] | None = None) -> Results:
    """The recording of ``state`` as the runner lays it out (ceph/<file>), each edit written over its file."""
    folder = tmp_path / "ceph"
    folder.mkdir()
    for name in FILES:
        shutil.copy(CEPH / state / name, folder / name)
    for name, edit in zip(FILES, (status, pools, tree), strict=True):
        if edit is not None:
            (folder / name).write_text(json.dumps(edit))
    return Results(tmp_path)


def judged(bp: Blueprint, found: Results) -> Measurement:
    check = planned_check(bp) if bp.storage.ceph is not None else CLOUD_CHECK
    return ceph_health(check, found, Planned.of(bp))


# The check as a Blueprint without Ceph would carry it, had it been planned: the rule must say not applicable
CLOUD_CHECK = Check(id="storage.ceph_health", tool="ceph", metric="Ceph health", op="==", threshold=1, unit="bool",
                    severity="error", scope="cluster", args=CephArgs(monitor="none"),
                    derived_from=Provenance(spec=("target.provider",), rule="test", formula="test"))


def recorded_pools() -> list[dict[str, object]]:
    return json.loads((CEPH / "healthy" / "osd-pool-ls-detail.json").read_text())  # type: ignore[no-any-return]


def test_the_healthy_recording_is_the_lab_plan(lab: Blueprint, tmp_path: Path) -> None:
    got = judged(lab, results(tmp_path))
    assert got.failures == () and got.value == 1.0, got.failures
    cov = got.coverage[0]
    assert (cov.what, cov.seen, cov.planned) == ("clusters (read on monitor storage-1)", 1, 1)
    assert "Ceph's own pool(s): device_health_metrics" in got.notes
    assert [d.note for d in got.details if d.where == "osds"] == ["up and in of 4 planned, on CRUSH host(s) storage-1"]


def test_an_osd_down_fails_in_cephs_words(lab: Blueprint, tmp_path: Path) -> None:
    got = judged(lab, results(tmp_path, "osd-down"))
    text = " | ".join(got.failures)
    assert got.value == 0.0
    assert "health HEALTH_WARN: OSD_DOWN: 1 osds down; PG_DEGRADED: Degraded data redundancy" in text
    assert "PGs not active+clean:" in text and "active+undersized+degraded" in text
    assert "OSDs: 4 exist, 3 up, 4 in; planned 4, all up and in" in text
    assert "osd.3 on storage-1 is down" in got.failures  # the bad node, named from ceph osd tree
    assert got.coverage[0].seen == got.coverage[0].planned == 1  # the cluster was read: a down OSD is a miss


def healthy_tree() -> dict[str, Any]:
    return json.loads((CEPH / "healthy" / "osd-tree.json").read_text())  # type: ignore[no-any-return]


def failed_with(lab: Blueprint, tmp_path: Path, tree: dict[str, Any]) -> set[str]:
    """The violations of the healthy recording with ``tree`` as its OSD tree, which must fail."""
    got = judged(lab, results(tmp_path, tree=tree))
    assert got.value == 0.0
    return set(got.failures)


def test_an_osd_out_and_one_of_an_unplanned_class_are_named_with_their_host(lab: Blueprint, tmp_path: Path) -> None:
    """Edit: the healthy tree with osd.2 out (reweight 0, as `ceph osd out 2` leaves it) and osd.1 of class ssd."""
    tree = healthy_tree()
    for node in tree["nodes"]:
        node |= {"osd.2": {"reweight": 0}, "osd.1": {"device_class": "ssd"}}.get(node["name"], {})
    assert {"osd.2 on storage-1 is out", "osd.1 on storage-1 has device class 'ssd', planned 'nvme'"} <= \
        failed_with(lab, tmp_path, tree)


def test_osds_on_a_host_the_plan_does_not_name_are_foreign(lab: Blueprint, tmp_path: Path) -> None:
    """Edit: the healthy tree with osd.3 moved to a CRUSH host bucket "spare" (`ceph osd crush move`)."""
    tree = healthy_tree()
    storage = next(n for n in tree["nodes"] if n["name"] == "storage-1")
    storage["children"] = [c for c in storage["children"] if c != 3]
    tree["nodes"].append({"id": -9, "name": "spare", "type": "host", "type_id": 1, "children": [3]})
    assert {"osd.3 on spare: the plan gives spare no OSDs", "host storage-1 has 3 OSD(s) in the OSD tree, planned 4"} \
        <= failed_with(lab, tmp_path, tree)


def test_a_muted_check_is_never_a_pass(lab: Blueprint, tmp_path: Path) -> None:
    """Edit: the healthy status with a mute entry, as `ceph health mute OSD_DOWN` lists it in health.mutes."""
    status = json.loads((CEPH / "healthy" / "status.json").read_text())
    status["health"]["mutes"] = [{"code": "OSD_DOWN", "sticky": False, "summary": "1 osds down", "count": 1}]
    got = judged(lab, results(tmp_path, status=status))
    assert got.value == 0.0 and "muted health check(s): OSD_DOWN" in " ".join(got.failures)


@pytest.mark.parametrize(("edit", "expected"), [
    ({"flags_names": "hashpspool"}, "pool cephfs_hot: allow_ec_overwrites is off (flags: hashpspool), planned true"),
    ({"pg_autoscale_mode": "on"}, "pool cephfs_hot: pg_autoscale_mode 'on', planned 'warn'"),
    ({"pg_num": 32}, "pool cephfs_hot: pg_num 32, planned 16"),
    ({"min_size": 3}, "pool cephfs_hot: min_size 3, planned 2"),
])
def test_a_pool_set_otherwise_than_planned_fails(lab: Blueprint, tmp_path: Path, edit: dict[str, object],
                                                 expected: str) -> None:
    pools = [p | edit if p["pool_name"] == "cephfs_hot" else p for p in recorded_pools()]
    got = judged(lab, results(tmp_path, pools=pools))
    assert got.value == 0.0 and expected in got.failures, got.failures


def test_a_missing_pool_fails_and_an_unplanned_one_is_named(lab: Blueprint, tmp_path: Path) -> None:
    pools = [p for p in recorded_pools() if p["pool_name"] != "cephfs_hot"]
    pools.append({**recorded_pools()[1], "pool_name": "scratch"})
    got = judged(lab, results(tmp_path, pools=pools))
    assert "pool cephfs_hot is planned and does not exist" in got.failures
    assert "pool(s) the plan does not name: scratch" in got.notes


@pytest.mark.parametrize(("file", "what"), [("status.json", "ceph status output"),
                                            ("osd-pool-ls-detail.json", "ceph osd pool ls detail output"),
                                            ("osd-tree.json", "ceph osd tree output")])
def test_each_missing_output_is_a_setup_error(lab: Blueprint, tmp_path: Path, file: str, what: str) -> None:
    """Beside healthy recordings a missing output is the verdict: a setup error naming it. The cluster counts as read
    where its own status was (a failure the status shows would fail the check: the test above)."""
    found = results(tmp_path)
    (tmp_path / "ceph" / file).unlink()
    got = judged(lab, found)
    assert got.setup_error == f"no {what} in the results (ceph/{file})" and got.value is None
    assert (got.coverage[0].seen, got.coverage[0].planned) == (0 if file == "status.json" else 1, 1)
    assert judge(planned_check(lab), got).status == "setup_error"


def test_a_failure_the_status_shows_is_not_hidden_by_a_missing_sibling(lab: Blueprint, tmp_path: Path) -> None:
    """The osd-down recording without its pool listing (issue 37, item 4: this came out as exit 2, the failure
    unreported): what status and tree show fails the check, exit 1, and the missing file is named beside it."""
    found = results(tmp_path, "osd-down")
    (tmp_path / "ceph" / "osd-pool-ls-detail.json").unlink()
    got = judged(lab, found)
    assert "osd.3 on storage-1 is down" in got.failures
    assert got.setup_error == "no ceph osd pool ls detail output in the results (ceph/osd-pool-ls-detail.json)"
    verdict = judge(planned_check(lab), got)
    assert verdict.status == "fail" and exit_code([verdict]) == 1, verdict.message
    assert "health HEALTH_WARN: OSD_DOWN" in verdict.message
    assert "and could not measure the rest: no ceph osd pool ls detail output" in verdict.message
    # the same files healthy: nothing failed, so the missing one is the verdict
    (tmp_path / "healthy").mkdir()
    healthy = results(tmp_path / "healthy")
    (tmp_path / "healthy" / "ceph" / "osd-pool-ls-detail.json").unlink()
    assert judge(planned_check(lab), judged(lab, healthy)).status == "setup_error"


def test_the_runners_setup_error_stands_for_the_output(lab: Blueprint, tmp_path: Path) -> None:
    found = results(tmp_path)
    (tmp_path / "setup-errors.json").write_text(json.dumps(
        {"storage.ceph_health": {"storage-1": "ceph status -f json: timed out after 60 s"}}))
    got = judged(lab, found)
    assert got.setup_error == "storage-1: ceph status -f json: timed out after 60 s" and got.value is None
    assert judge(planned_check(lab), got).status == "setup_error"


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
    with pytest.raises(ParseError, match=r"health\.checks: expected ceph status -f json"):
        parse_status('{"health": {"status": "HEALTH_OK", "checks": []}, "pgmap": {}, "osdmap": {}}', "status.json")
    with pytest.raises(ParseError, match=r"\(line 1\)"):
        parse_status("Error EACCES: access denied", "status.json")
    tree = parse_osd_tree((CEPH / "osd-down" / "osd-tree.json").read_text())
    assert [(o.name, o.host, o.device_class, o.up, o.in_) for o in tree] == \
        [(f"osd.{i}", "storage-1", "nvme", i != 3, True) for i in range(4)]
    with pytest.raises(ParseError, match=r"\(document\): expected a JSON object \(ceph osd tree -f json\)"):
        parse_osd_tree('[{"id": 0}]', "osd-tree.json")
    with pytest.raises(ParseError, match=r"nodes\.0\.name: expected ceph osd tree -f json: Field required"):
        parse_osd_tree('{"nodes": [{"id": 0, "type": "osd"}]}', "osd-tree.json")
    with pytest.raises(ParseError, match="expected a JSON array of pools"):
        parse_pools('{"pools": []}', "pools.json")
