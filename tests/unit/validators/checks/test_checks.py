"""Judging real recorded output against real Blueprints: thresholds come from the planner, never from here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint, Check
from blueprints.errors import ClusterSmithError
from blueprints.loader import load_requirements
from blueprints.planner import plan
from tests.unit.validators.gate_inputs import fio_results, two_node_blueprint
from validators.checks import rules
from validators.errors import ParseError
from validators.evaluate import evaluate, select
from validators.fio import parse_fio
from validators.outcome import CheckResult, exit_code
from validators.results import Results

REPO = Path(__file__).resolve().parents[4]
FIXTURES = REPO / "tests" / "fixtures"
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def blueprint(name: str) -> Blueprint:
    return plan(load_requirements(REPO / "examples" / f"{name}.yaml"))


def check(bp: Blueprint, check_id: str) -> Check:
    return next(c for c in bp.acceptance.checks if c.id == check_id)


def judged(bp: Blueprint, results: Path, *only: str) -> dict[str, CheckResult]:
    return {r.id: r for r in evaluate(bp, Results(results), only, strict=False)}


def results_with(tmp_path: Path, files: dict[str, Path]) -> Path:
    for dest, src in files.items():
        (tmp_path / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, tmp_path / dest)
    return tmp_path


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_every_planned_check_has_a_rule(example: Path) -> None:
    bp = plan(load_requirements(example))
    assert {c.id for c in bp.acceptance.checks} <= set(rules())


def test_lab_storage_is_informational_and_sums_the_clients() -> None:
    bp = blueprint("lab")
    got = judged(bp, FIXTURES / "fio" / "results", "storage.read_throughput", "storage.mixed", "storage.jitter")
    runs = [parse_fio(p.read_text(), p.name) for p in sorted((FIXTURES / "fio/results/fio/seq_read").glob("*.json"))]
    assert got["storage.read_throughput"].measured == pytest.approx(sum(r.bw_bytes("read") for r in runs) / 1e9)
    assert got["storage.read_throughput"].status == "info"  # lab throughput is emulated
    assert got["storage.jitter"].status == "info" and got["storage.jitter"].measured is not None
    assert got["storage.mixed"].status == "pass" and got["storage.mixed"].measured == 0


def test_production_threshold_from_the_blueprint_fails_a_slow_run(tmp_path: Path) -> None:
    bp = blueprint("cv-training-500tb")
    threshold = check(bp, "storage.read_throughput").threshold
    results = fio_results(tmp_path, bp.hosts_by_role()["gpu_client"], ("seq_read",))  # every GPU node reports
    got = judged(bp, results, "storage.read_throughput")["storage.read_throughput"]
    assert got.coverage_shown == "64 of 64 hosts"
    assert got.measured is not None and got.measured < threshold
    assert got.status == "fail" and f"expected >= {threshold:.4g} GB/s" in got.message
    assert got.spec == ("performance.storage.read_throughput",)
    assert exit_code([got]) == 1


def test_p99_uses_the_blueprint_unit(tmp_path: Path) -> None:
    bp = blueprint("cv-training-500tb")
    results = fio_results(tmp_path, bp.hosts_by_role()["gpu_client"], ("rand_read_4k",))
    got = judged(bp, results, "storage.latency_p99")["storage.latency_p99"]
    assert got.unit == "us" and got.measured is not None
    assert got.status == ("pass" if got.measured <= check(bp, "storage.latency_p99").threshold else "fail")
    assert any(s.kind == "latency" for s in got.series)


TOTAL_LATENCY = FIXTURES / "fio" / "total-latency" / "superbench-fio-3.16-randrw.json"  # lat_percentiles=1


def test_p99_is_read_from_total_latency_where_fio_recorded_only_that(tmp_path: Path) -> None:
    """A real fio 3.16 report run with lat_percentiles=1 (Microsoft SuperBench's recording): its percentiles are
    under lat_ns, its clat_ns has none. The p99 is the one fio recorded, and the notes say which latency it is."""
    results = results_with(tmp_path, {f"fio/rand_read_4k/{c}.json": TOTAL_LATENCY for c in ("client-1", "client-2")})
    got = judged(blueprint("lab"), results, "storage.latency_p99")["storage.latency_p99"]
    assert got.measured == pytest.approx(2244608 / 1e3) and got.unit == "us", got.message  # read lat_ns p99
    assert any("of total latency, submission + completion (lat_ns)" in n for n in got.notes), got.notes
    assert got.status == "info"  # the lab's performance checks are informational


def test_a_report_without_latency_percentiles_says_what_to_add(tmp_path: Path) -> None:
    report = json.loads(TOTAL_LATENCY.read_text())
    for job in report["jobs"]:
        for direction in ("read", "write", "trim"):
            job[direction]["lat_ns"].pop("percentile", None)  # as fio writes with lat_percentiles=0 too
    (tmp_path / "fio" / "rand_read_4k").mkdir(parents=True)
    for client in ("client-1", "client-2"):
        (tmp_path / "fio" / "rand_read_4k" / f"{client}.json").write_text(json.dumps(report))
    got = judged(blueprint("lab"), tmp_path, "storage.latency_p99")["storage.latency_p99"]
    assert got.status == "setup_error" and "fio recorded no read latency percentiles" in got.message
    assert "clat_percentiles=1" in got.message and "lat_percentiles=1" in got.message


def test_clients_whose_percentiles_are_of_different_latencies_are_not_merged(tmp_path: Path) -> None:
    results = results_with(tmp_path, {
        "fio/rand_read_4k/client-1.json": TOTAL_LATENCY,
        "fio/rand_read_4k/client-2.json": FIXTURES / "fio" / "results" / "fio" / "rand_read_4k" / "client-2.json"})
    got = judged(blueprint("lab"), results, "storage.latency_p99")["storage.latency_p99"]
    assert got.status == "setup_error" and "the reports' percentiles are of different latencies" in got.message
    assert "completion latency (clat_ns) in " in got.message and "total latency" in got.message


def test_a_verify_mismatch_fails_the_mixed_workload(tmp_path: Path) -> None:
    src = FIXTURES / "fio" / "verify-failure"
    results = results_with(tmp_path, {"fio/mixed/client-1.json": src / "client-1.json",
                                      "fio/mixed/client-2.json": src / "client-2.json"})
    got = judged(blueprint("lab"), results, "storage.mixed")["storage.mixed"]
    assert got.status == "fail" and got.measured == 2
    assert any("fio error 84" in d.note for d in got.details)


def test_nccl_reads_busbw_at_the_large_sizes_not_the_footer(tmp_path: Path) -> None:
    bp = two_node_blueprint(tmp_path)  # 2 nodes x 8 GPUs, the a3mega recording's shape
    results = results_with(tmp_path, {"nccl/a3mega.txt": FIXTURES / "nccl" / "a3mega-2x8-h100.txt"})
    got = judged(bp, results, "nccl.allreduce_busbw")["nccl.allreduce_busbw"]
    threshold = check(bp, "nccl.allreduce_busbw").threshold
    assert got.measured == 318.40 and got.coverage_shown == "16 of 16 ranks, 2 of 2 nodes"
    assert threshold > 0
    # the log carries no NCCL INFO lines: the transport NCCL used is unconfirmed, so it does not pass; nothing
    # failed either, so it is missing evidence, with what to rerun with
    assert got.status == "setup_error" and "no NCCL INFO lines" in got.message, got.message
    assert "rerun with NCCL_DEBUG=INFO" in got.message
    assert any("not the measure" in n for n in got.notes)
    assert {s.name.split()[-1] for s in got.series} == {"out-of-place", "in-place"}


@pytest.mark.parametrize(("fixture", "coverage"), [
    ("a3mega-2x8-h100.txt", "16 of 512 ranks in the result; 2 of 64 nodes in the result"),
    ("sample-b-1x8-h100.txt", "sample-b-1x8-h100.txt stops at 2147483648 B, short of the plan's 8G"),  # -e 2G
])
def test_a_run_on_fewer_gpus_than_planned_never_passes(tmp_path: Path, fixture: str, coverage: str) -> None:
    """Issue 15: a single-node 8-GPU NVLink run (470 GB/s) passed the 512-GPU fabric check."""
    results = results_with(tmp_path, {f"nccl/{fixture}": FIXTURES / "nccl" / fixture})
    got = judged(blueprint("cv-training-500tb"), results, "nccl.allreduce_busbw")["nccl.allreduce_busbw"]
    assert got.status == "setup_error" and coverage in got.message, got.message


def test_nccl_run_that_stops_below_the_large_sizes_is_a_setup_error(tmp_path: Path) -> None:
    results = results_with(tmp_path, {"nccl/run.txt": FIXTURES / "nccl" / "eks-efa-tag-output-2x1.txt"})
    got = judged(blueprint("cv-training-500tb"), results, "nccl.allreduce_busbw")["nccl.allreduce_busbw"]
    assert got.status == "setup_error" and "stops at 1073741824 B, short of the plan's 8G" in got.message


def test_nccl_without_a_gpu_is_not_applicable_only_on_the_lab(tmp_path: Path) -> None:
    (tmp_path / "host-facts.json").write_text(json.dumps({"client-1": {"gpus": 0}, "client-2": {"gpus": 0}}))
    got = judged(blueprint("lab"), tmp_path, "nccl.allreduce_busbw")["nccl.allreduce_busbw"]
    assert got.status == "not_applicable" and "the Blueprint's GPUs are emulated (lab target)" in got.message
    assert exit_code([got]) == 0
    bp = two_node_blueprint(tmp_path)  # a real cluster: a node short of its GPUs fails, by name and count
    (tmp_path / "host-facts.json").write_text(json.dumps({"gpu-1": {"gpus": 8}, "gpu-2": {"gpus": 7}}))
    got = judged(bp, tmp_path, "nccl.allreduce_busbw")["nccl.allreduce_busbw"]
    assert got.status == "fail" and "gpu-2: 7 GPU(s), planned 8" in got.message and "gpu-1" not in got.message


def test_a_tool_that_did_not_run_is_a_setup_error_not_a_miss(tmp_path: Path) -> None:
    (tmp_path / "setup-errors.json").write_text(json.dumps(
        {"storage.read_throughput": {"client-2": "Check that fio is installed: fio: command not found"}}))
    got = judged(blueprint("cv-training-500tb"), tmp_path, "storage.read_throughput")["storage.read_throughput"]
    assert got.status == "setup_error" and "client-2: Check that fio is installed" in got.message
    assert exit_code([got]) == 2 and got.coverage_shown == "0 of 64 hosts"


def test_missing_output_says_where_it_belongs(tmp_path: Path) -> None:
    got = judged(blueprint("lab"), tmp_path, "storage.latency_p99")["storage.latency_p99"]
    assert got.status == "setup_error" and "fio/rand_read_4k/<host>.json" in got.message


def test_unknown_only_id_is_bad_input() -> None:
    with pytest.raises(ClusterSmithError) as err:
        select(blueprint("lab"), ["storage.read_thruput"])
    problem = err.value.problems[0]
    assert problem.path == "--only" and problem.value == "storage.read_thruput"
    assert "storage.read_throughput" in problem.message


def test_malformed_output_is_bad_input_when_judging_by_hand(tmp_path: Path) -> None:
    (tmp_path / "fio" / "seq_read").mkdir(parents=True)
    (tmp_path / "fio" / "seq_read" / "client-1.json").write_text('{"jobs": []}')
    with pytest.raises(ParseError, match="expected a non-empty array of jobs"):
        evaluate(blueprint("lab"), Results(tmp_path), ["storage.read_throughput"], strict=True)
    got = judged(blueprint("lab"), tmp_path, "storage.read_throughput")["storage.read_throughput"]
    assert got.status == "setup_error" and "non-empty array of jobs" in got.message


def test_results_folder_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ClusterSmithError, match="expected a folder of tool output"):
        evaluate(blueprint("lab"), Results(tmp_path / "nope"))
