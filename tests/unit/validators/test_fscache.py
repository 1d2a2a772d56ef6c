"""The cache check (cache.fscache_hit_ratio) judged on the lab's real CephFS readings: the plan's CephFS counters
(RdHelp RD hits, RdHelp DL misses, blueprints/planner/shared_fs.py CEPH_COUNTERS) move as it assumes on 6.1.

tests/fixtures/fscache/cephfs-6.1-lab/fio/cache_read is a whole cache_read step as `clustersmith accept` brought it
back (see the fixtures' README): the first pass downloads every read subrequest (DL +16, RD +0), the second, with the
page cache dropped, reads from the cache only (RD +6, DL +0)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint
from blueprints.blueprint.check_args import FioArgs, args_as
from blueprints.loader import load_requirements
from blueprints.planner import plan
from validators.evaluate import evaluate
from validators.fscache import delta, parse_stats
from validators.outcome import CheckResult
from validators.results import Results

REPO = Path(__file__).resolve().parents[3]
RECORDED = REPO / "tests" / "fixtures" / "fscache" / "cephfs-6.1-lab"
CHECK = "cache.fscache_hit_ratio"


@pytest.fixture(scope="module")
def lab() -> Blueprint:
    return plan(load_requirements(REPO / "examples" / "lab.yaml"))


def judged(bp: Blueprint, results: Path) -> CheckResult:
    (got,) = evaluate(bp, Results(results), (CHECK,), strict=False)
    return got


def reading(host: str, i: int) -> dict[tuple[str, str], float]:
    path = RECORDED / "fio" / "cache_read" / f"{host}.fscache.{i}"
    return parse_stats(path.read_text(), path.name)


def test_the_labs_cephfs_counters_count_the_first_pass_as_misses_and_the_second_as_hits(lab: Blueprint) -> None:
    check = next(c for c in lab.acceptance.checks if c.id == CHECK)
    args = args_as(check.args, FioArgs)
    hits, misses = args.hit_counters, args.miss_counters
    assert (hits, misses) == ((("RdHelp", "RD"),), (("RdHelp", "DL"),))  # the plan's CephFS definition
    for host in ("client-1", "client-2"):
        before, first, second = (reading(host, i) for i in range(3))
        assert (delta(before, first, hits, host), delta(before, first, misses, host)) == (0, 16)
        assert (delta(first, second, hits, host), delta(first, second, misses, host)) == (6, 0)


def test_the_recorded_step_judges_a_whole_second_pass_from_the_cache(lab: Blueprint) -> None:
    got = judged(lab, RECORDED)
    # a hit ratio is not emulated throughput: judged in the lab too, against the plan's 95 %
    assert got.status == "pass" and got.measured == 1.0 and got.threshold == pytest.approx(0.95)
    assert [(d.where, d.value) for d in got.details] == [("client-1", 1.0), ("client-2", 1.0)]
    assert "second pass: hits +6, misses +0; first pass: hits +0, misses +16" in got.details[0].note


def test_a_kernel_that_prints_no_rdhelp_rd_is_named_not_judged(lab: Blueprint, tmp_path: Path) -> None:
    """Another kernel counts otherwise: the plan's definition must follow it, so the check says which counter is
    missing on which host instead of a ratio."""
    shutil.copytree(RECORDED, tmp_path, dirs_exist_ok=True)
    edited = tmp_path / "fio" / "cache_read" / "client-2.fscache.2"
    edited.write_text("\n".join(line for line in edited.read_text().splitlines()
                                if not line.startswith("RdHelp : RD=")) + "\n")
    got = judged(lab, tmp_path)
    assert got.status == "setup_error" and got.measured is None
    assert "client-2: " in got.message and "the kernel prints no RdHelp RD" in got.message
    assert [d.where for d in got.details] == ["client-1"]  # what was measured stays visible
