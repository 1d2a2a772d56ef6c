"""The cache check (cache.fscache_hit_ratio) judged on the lab's real CephFS readings: the plan's CephFS counters for
kernels 5.17-6.7 (RdHelp RD hits, RdHelp DL misses, blueprints/planner/shared_fs.py CEPH_COUNTERS) move as it assumes
on 6.1, and the check picks that set from what the 6.1 file prints.

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
from validators.errors import ParseError
from validators.evaluate import evaluate
from validators.fscache import choose, delta, parse_stats
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
    sets = args_as(check.args, FioArgs).counters
    for host in ("client-1", "client-2"):
        before, first, second = (reading(host, i) for i in range(3))
        chosen = choose(sets, [before, first, second], host)
        assert chosen.kernels == "5.17-6.7"  # 6.1 prints neither CaRdOps nor the 6.8-6.10 "Netfs" lines
        hits, misses = chosen.hit_counters, chosen.miss_counters
        assert (hits, misses) == ((("RdHelp", "RD"),), (("RdHelp", "DL"),))  # the plan's CephFS definition there
        assert (delta(before, first, hits, host), delta(before, first, misses, host)) == (0, 16)
        assert (delta(first, second, hits, host), delta(first, second, misses, host)) == (6, 0)


def test_the_recorded_step_judges_a_whole_second_pass_from_the_cache(lab: Blueprint) -> None:
    got = judged(lab, RECORDED)
    # a hit ratio is not emulated throughput: judged in the lab too, against the plan's 95 %
    assert got.status == "pass" and got.measured == 1.0 and got.threshold == pytest.approx(0.95)
    assert [(d.where, d.value) for d in got.details] == [("client-1", 1.0), ("client-2", 1.0)]
    assert "second pass: hits +6, misses +0; first pass: hits +0, misses +16" in got.details[0].note
    assert "counted as on kernels 5.17-6.7" in got.details[0].note
    assert "client-1: 5.17-6.7, RdHelp RD / (RdHelp RD + RdHelp DL)" in " ".join(got.notes)


def test_a_kernel_that_prints_none_of_the_planned_sets_is_named_not_judged(lab: Blueprint, tmp_path: Path) -> None:
    """A kernel that counts otherwise than every set the plan names: the plan's definition must follow it, so the check
    says which host prints none of them, and which lines it prints, instead of a ratio."""
    shutil.copytree(RECORDED, tmp_path, dirs_exist_ok=True)
    edited = tmp_path / "fio" / "cache_read" / "client-2.fscache.2"
    edited.write_text("\n".join(line for line in edited.read_text().splitlines()
                                if not line.startswith("RdHelp : RD=")) + "\n")
    got = judged(lab, tmp_path)
    assert got.status == "setup_error" and got.measured is None
    assert "client-2: the kernel prints none of the plan's counter sets (for kernels 6.11 and later, 6.8-6.10, " \
        "5.17-6.7; it prints the lines Acquire, Cookies, IO, Invals, LRU, NoSpace, RdHelp, Relinqs, Updates)" \
        in got.message
    assert [d.where for d in got.details] == ["client-1"]  # what was measured stays visible


NETFS_ERA = REPO / "tests" / "fixtures" / "fscache" / "stats-netfs-cephfs-proxmox-2024.txt"


def test_a_file_of_the_netfs_labelled_kernels_parses_and_is_counted_by_their_set(lab: Blueprint) -> None:
    """Another cluster's real file (tests/fixtures/fscache/README.md: a CephFS client's, posted to the kernel's stable
    list, 2024-09): netfs's "Netfs" lines come before the heading, which reads "-- FS-Cache statistics --". The
    plan's CephFS sets pick the 6.8-6.10 one, and the IO line carries a third key (mis) the 6.1 file does not."""
    got = parse_stats(NETFS_ERA.read_text(), NETFS_ERA.name)
    assert got[("Netfs", "DL")] == 548 and got[("Netfs", "RD")] == 0 and got[("Netfs", "DR")] == 0
    assert got[("IO", "rd")] == 0 and got[("IO", "mis")] == 0 and got[("NoSpace", "nwr")] == 0
    check = next(c for c in lab.acceptance.checks if c.id == CHECK)
    chosen = choose(args_as(check.args, FioArgs).counters, [got, got], NETFS_ERA.name)
    assert (chosen.kernels, chosen.hits, chosen.misses) == ("6.8-6.10", ("Netfs:RD",), ("Netfs:DL",))


def test_a_file_without_the_heading_is_not_the_stats_file() -> None:
    with pytest.raises(ParseError) as info:
        parse_stats("Netfs  : DL=548 ds=548 df=0 di=0\nIO     : rd=0 wr=0 mis=0\n", "client-1.fscache.0")
    assert "expected a line 'FS-Cache statistics'" in info.value.problems[0].message


RECORDED_612 = REPO / "tests" / "fixtures" / "fscache" / "cephfs-6.12-lab"


def test_the_recorded_612_step_is_counted_by_the_netfs_labels_of_611_and_later(lab: Blueprint) -> None:
    """The same step on the lab's 6.12 kernel (tests/fixtures/fscache/README.md): the check picks the 6.11-and-later set
    from what the file prints, and judges a whole second pass from the cache (DownOps DL +8 then CaRdOps RD +4)."""
    got = judged(lab, RECORDED_612)
    assert got.status == "pass" and got.measured == 1.0
    assert [d.note for d in got.details] == [
        "second pass: hits +4, misses +0; first pass: hits +0, misses +8 (ratio 0.000); counted as on kernels 6.11 and "
        "later"] * 2
    before = parse_stats((RECORDED_612 / "fio" / "cache_read" / "client-1.fscache.0").read_text(), "client-1")
    assert ("RdHelp", "RD") not in before and ("Netfs", "RD") not in before and before[("Reads", "WB")] == 8192


NFS_612 = REPO / "tests" / "fixtures" / "fscache" / "nfs-6.12-lab"


def test_nfs_on_612_reads_through_netfs_and_is_counted_by_its_labels() -> None:
    """The lab's external-NFS proof on 6.12 (tests/fixtures/fscache/README.md): NFS reads through netfs there, so the
    plan's NFS sets pick the 6.11-and-later one (CaRdOps RD / DownOps DL), not the IO line NFS was judged by up to
    6.10; the first pass downloads every subrequest, the second reads them all from the cache."""
    bp = plan(load_requirements(REPO / "tests" / "fixtures" / "lab" / "external-nfs.yaml"))
    check = next(c for c in bp.acceptance.checks if c.id == CHECK)
    before, first, second = (parse_stats((NFS_612 / f"client-1.fscache.{i}").read_text(), f"client-1.fscache.{i}")
                             for i in range(3))
    chosen = choose(args_as(check.args, FioArgs).counters, [before, first, second], "client-1")
    assert chosen.kernels == "6.11 and later" and chosen.formula == "CaRdOps RD / (CaRdOps RD + DownOps DL)"
    hits, misses = chosen.hit_counters, chosen.miss_counters
    assert (delta(before, first, hits, "1"), delta(before, first, misses, "1")) == (0, 64)
    assert (delta(first, second, hits, "2"), delta(first, second, misses, "2")) == (64, 0)
