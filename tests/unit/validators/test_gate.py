"""Issue 15: verdicts that cannot pass a bad result. Each case is a recording (tests/fixtures, sources in their
READMEs), or a copy of one with the edit the test names; thresholds come from the planned Blueprints."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint, Check
from blueprints.loader import load_requirements
from blueprints.planner import plan
from tests.unit.validators.gate_inputs import FIO, FIXTURES, REPO, fio_as, fio_results, two_node_blueprint
from validators.cli import _summary
from validators.coverage import count
from validators.errors import ParseError
from validators.evaluate import evaluate
from validators.fio import parse_fio
from validators.nccl import parse_nccl_file, parse_nccl_text
from validators.outcome import CheckResult, Measurement, Series, exit_code, judge
from validators.report import RunReport
from validators.report.html import render_html
from validators.results import Results

NCCL = FIXTURES / "nccl"


def lab() -> Blueprint:
    return plan(load_requirements(REPO / "examples" / "lab.yaml"))


def check(bp: Blueprint, check_id: str) -> Check:
    return next(c for c in bp.acceptance.checks if c.id == check_id)


def judged(bp: Blueprint, root: Path, check_id: str, strict: bool = False) -> CheckResult:
    return evaluate(bp, Results(root), [check_id], strict=strict)[0]


# fio -------------------------------------------------------------------------------------------------------------


def test_a_read_job_that_ended_with_eio_fails_the_throughput_check(tmp_path: Path) -> None:
    """Edit: every recorded seq_read report's `"error" : 0` set to 5 (EIO), its bandwidth left as recorded."""
    bp = lab()
    root = fio_results(tmp_path, ["client-1", "client-2"], ("seq_read",))
    for report in (root / "fio" / "seq_read").glob("*.json"):
        text = report.read_text()
        assert '"error" : 0,' in text
        report.write_text(text.replace('"error" : 0,', '"error" : 5,'))
    got = judged(bp, root, "storage.read_throughput")
    assert got.status == "fail" and got.measured is not None and got.measured > 0  # numbers alone would not fail
    assert 'client-1.json: job \'seq_read\': "error" : 5 (EIO, Input/output error)' in got.message
    assert "client-2.json" in got.message


def test_a_real_fio_job_error_is_kept_in_fios_words() -> None:
    """job-error/client-1.json: fio 3.33 writing to /dev/full with libaio (recorded, see the fixture README)."""
    run = parse_fio((FIO.parents[1] / "job-error" / "client-1.json").read_text(), "x")
    assert run.host == "client-1" and run.failures() == ("job 'seq_write': \"error\" : 22 (EINVAL, Invalid argument)",)


def test_one_clients_report_under_three_names_is_one_host_not_three(tmp_path: Path) -> None:
    """Issue 15: one client's fio JSON under three file names summed to 3x and passed. Copies of client-1's
    recorded report filed as client-1.json, client-2.json and client-3.json (no other edit)."""
    folder = tmp_path / "fio" / "seq_read"
    folder.mkdir(parents=True)
    for name in ("client-1", "client-2", "client-3"):
        shutil.copy(FIO / "seq_read" / "client-1.json", folder / f"{name}.json")
    got = judged(lab(), tmp_path, "storage.read_throughput")
    assert got.status == "setup_error", got.message
    assert "1 of 2 hosts in the result; missing: client-2; reported more than once: client-1" in got.message
    assert "client-3.json reports host client-1 (its write_bw_log prefix)" in got.notes


def test_a_host_the_blueprint_does_not_name_is_foreign(tmp_path: Path) -> None:
    root = fio_results(tmp_path, ["client-1", "client-2"], ("seq_read",))
    fio_as(FIO / "seq_read" / "client-2.json", root / "fio" / "seq_read" / "intruder.json", "client-2", "intruder")
    got = judged(lab(), root, "storage.read_throughput")
    assert got.status == "setup_error" and "not in the Blueprint: intruder" in got.message
    assert got.coverage_shown == "2 of 2 hosts"


def test_unified_rw_reporting_mixed_is_read_and_not_taken_for_reads(tmp_path: Path) -> None:
    """mixed-reporting/client-1.json: fio 3.33 with unified_rw_reporting=mixed (recorded, see the README)."""
    src = FIO.parents[1] / "mixed-reporting" / "client-1.json"
    run = parse_fio(src.read_text(), str(src))
    job = run.jobs[0]
    assert job.read is None and job.write is None and job.mixed is not None and job.mixed.bw_bytes > 0
    for workload in ("seq_read", "mixed"):
        fio_as(src, tmp_path / "fio" / workload / "client-1.json", "client-1", "client-1")
        fio_as(src, tmp_path / "fio" / workload / "client-2.json", "client-1", "client-2")
    got = judged(lab(), tmp_path, "storage.read_throughput")
    assert got.status == "setup_error" and "fio reported no 'read' section in client-1.json, client-2.json" \
        in got.message and "unified_rw_reporting=mixed" in got.message
    mixed = judged(lab(), tmp_path, "storage.mixed")
    assert mixed.status == "pass" and mixed.measured == 0 and "MB moved" in mixed.details[0].note


def test_fio_before_3_2_gives_bw_in_kib_per_second() -> None:
    """old-3.1/fio-3.1-gvisor-sample.json: fio 3.1 JSON as google/gvisor keeps it (see the README): no bw_bytes."""
    src = FIO.parents[1] / "old-3.1" / "fio-3.1-gvisor-sample.json"
    assert "bw_bytes" not in src.read_text()
    run = parse_fio(src.read_text(), str(src))
    assert run.version == "fio-3.1" and run.bw_bytes("write") == 1753471 * 1024 and run.host is None


def test_a_run_killed_before_its_runtime_is_a_setup_error_naming_the_client(tmp_path: Path) -> None:
    """cut-short/client-1.json: fio 3.33 sent SIGTERM 4 s into a 10 s time_based seq_read (recorded, see the README):
    its job says error 0 and its bandwidth looks like a measure. Beside client-2's complete recording, the verdict
    must not take it: a setup error naming client-1's report, not client-2's."""
    root = fio_results(tmp_path, ["client-1", "client-2"], ("seq_read",))
    shutil.copy(FIO.parents[1] / "cut-short" / "client-1.json", root / "fio" / "seq_read" / "client-1.json")
    got = judged(lab(), root, "storage.read_throughput")
    assert got.status == "setup_error", got.message
    assert "client-1.json: job 'seq_read' measured 2.4 s of its time_based runtime of 10 s" in got.message
    assert "client-2.json" not in got.message and got.coverage_shown == "2 of 2 hosts"


def test_every_complete_recording_measured_its_whole_runtime() -> None:
    """The check that refuses a cut-short run must not refuse a complete one: each recorded time_based report."""
    reports = [*sorted(FIO.glob("*/client-*.json")), FIO.parents[1] / "mixed-reporting" / "client-1.json",
               FIO.parents[1] / "client-server" / "seq_read.json"]
    for src in reports:
        run = parse_fio(src.read_text(), str(src))
        assert run.time_based_ms in (2000, 4000) and run.cut_short() == (), src
    killed = parse_fio((FIO.parents[1] / "cut-short" / "client-1.json").read_text(), "x")
    assert killed.errors == 0 and killed.time_based_ms == 10_000 and len(killed.cut_short()) == 1


@pytest.mark.parametrize(("written", "time_based"), [
    ("1", True), ("true", True), ("", True),  # "": a bare `time_based` line, as fio's newer stat.c writes it
    ("0", False), ("false", False), (None, False)])  # None: left out, as fio 3.33 does with a bare one
def test_time_based_is_read_in_every_form_fio_writes(written: str | None, time_based: bool) -> None:
    """The killed recording (time_based=1, runtime 10) with its time_based option as each fio version writes it:
    set, the cut-short check finds the 2.4 s run; not set, nothing is claimed of the runtime."""
    text = (FIO.parents[1] / "cut-short" / "client-1.json").read_text()
    report = json.loads(text[text.index("{"):])  # past what fio printed ahead of the document (the signal)
    for place in (report.get("global options", {}), *(j.get("job options", {}) for j in report["jobs"])):
        if "time_based" in place:
            if written is None:
                del place["time_based"]
            else:
                place["time_based"] = written
    run = parse_fio(json.dumps(report), "edited")
    assert (run.time_based_ms == 10_000) is time_based and (len(run.cut_short()) == 1) is time_based


def test_fio_3_33_leaves_a_bare_time_based_out_of_its_report() -> None:
    """bare-time-based/fio-3.33.json (recorded, see the README): what fio 3.33 writes for a bare `time_based` line.
    The report does not say the run was time based, so nothing is claimed about its runtime."""
    src = FIO.parents[1] / "bare-time-based" / "fio-3.33.json"
    assert "time_based" not in src.read_text() and "time_based" in (src.parent / "k.fio").read_text()
    assert parse_fio(src.read_text(), str(src)).time_based_ms is None


# nccl-tests ------------------------------------------------------------------------------------------------------


def a3mega(tmp_path: Path, edit: str = "", *, rows_wrong: int = 0, oob: str = "") -> Path:
    """The recorded a3mega log, copied to nccl/a3mega.txt with the named edit: ``rows_wrong`` sets the #wrong
    columns of every row from 2 GiB up; ``oob`` replaces the footer's "0 OK"; ``edit`` = "cut" ends the file after
    the 4 GiB row (no 8 GiB row, no footer), "inf" sets the 8 GiB row's out-of-place busbw to inf."""
    lines = (NCCL / "a3mega-2x8-h100.txt").read_text().splitlines()
    out = []
    for line in lines:
        words = line.split()
        if rows_wrong and words[:1] and words[0].isdigit() and int(words[0]) >= 2 * 1024**3:
            words[8] = words[12] = str(rows_wrong)
            line = "  ".join(words)
        if oob and line.startswith("# Out of bounds values"):
            line = f"# Out of bounds values : {oob}"
        if edit == "inf" and words[:1] == ["8589934592"]:
            words[7] = "inf"
            line = "  ".join(words)
        out.append(line)
        if edit == "cut" and words[:1] == ["4294967296"]:
            break
    path = tmp_path / "nccl" / "a3mega.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n")
    return path


def test_wrong_elements_and_out_of_bounds_values_fail_a_fast_run(tmp_path: Path) -> None:
    bp = two_node_blueprint(tmp_path)
    a3mega(tmp_path / "r", rows_wrong=123, oob="42 FAILED")
    got = judged(bp, tmp_path / "r", "nccl.allreduce_busbw")
    assert got.status == "fail" and "#wrong 123 at 8589934592 B (out-of-place)" in got.message
    assert "Out of bounds values : 42 FAILED" in got.message


def test_a_sweep_cut_at_4_gib_with_no_footer_never_passes(tmp_path: Path) -> None:
    bp = two_node_blueprint(tmp_path)
    a3mega(tmp_path / "r", "cut")
    got = judged(bp, tmp_path / "r", "nccl.allreduce_busbw")
    assert got.status == "setup_error"
    assert "a3mega.txt stops at 4294967296 B, short of the plan's 8G (8589934592 B), with no footer" in got.message


def test_an_inf_busbw_is_refused_by_name_and_never_judged(tmp_path: Path) -> None:
    bp = two_node_blueprint(tmp_path)
    path = a3mega(tmp_path / "r", "inf")
    with pytest.raises(ParseError) as err:
        judged(bp, tmp_path / "r", "nccl.allreduce_busbw", strict=True)  # --results: bad input, exit 2
    assert str(path) in str(err.value) and "busbw" in str(err.value) and "inf" in str(err.value)
    assert judged(bp, tmp_path / "r", "nccl.allreduce_busbw").status == "setup_error"  # a run's own output


def test_a_non_finite_measure_is_a_setup_error_and_the_html_report_still_renders() -> None:
    c = check(lab(), "nccl.allreduce_busbw")
    got = judge(c, Measurement(value=math.inf, series=(Series(kind="busbw", name="x", points=(
        (1024.0, 1.0), (2048.0, math.inf), (4096.0, math.nan))),)))
    assert got.status == "setup_error" and got.measured is None and "not a finite number" in got.message
    assert got.series[0].points == ((1024.0, 1.0),)
    page = render_html(RunReport(blueprint="lab", spec_file="x", started="t", duration_s=0.0, results_dir="r",
                                 checks=(got,)))
    assert "not a finite number" in page and "inf" not in page.split("<svg", 1)[-1].split("</svg>", 1)[0]


def test_a_log_of_several_tests_is_one_result_per_test(tmp_path: Path) -> None:
    """Issue 15: a log of several runs was merged (ranks multiplied, the first run's FAILED hidden). Made by
    writing the recorded a3mega log twice, one after the other, as cluster scripts do; the first copy's footer
    edited to "4 FAILED" and each preceded by nccl-tests' "# Collective test starting" line (all_reduce_perf,
    then all_gather_perf)."""
    first = a3mega(tmp_path / "one", oob="4 FAILED").read_text()
    second = (NCCL / "a3mega-2x8-h100.txt").read_text()
    log = tmp_path / "r" / "nccl" / "cluster.txt"
    log.parent.mkdir(parents=True)
    log.write_text("# Collective test starting: all_reduce_perf\n" + first
                   + "# Collective test starting: all_gather_perf\n" + second)
    runs = parse_nccl_file(log).runs
    assert [(r.test, r.ranks, len(r.rows), r.footer) for r in runs] == [
        ("all_reduce_perf", 16, 31, True), ("all_gather_perf", 16, 31, True)]
    assert runs[0].failures() == ("Out of bounds values : 4 FAILED",) and runs[1].failures() == ()
    assert runs[0].avg_busbw == runs[1].avg_busbw == 70.742
    got = judged(two_node_blueprint(tmp_path), tmp_path / "r", "nccl.allreduce_busbw")
    assert got.status == "fail" and "all_reduce_perf at line 1: Out of bounds values : 4 FAILED" in got.message
    assert got.coverage_shown == "16 of 16 ranks, 2 of 2 nodes"
    assert any("all_gather_perf" in n and "judged for errors and completeness only" in n for n in got.notes)
    with pytest.raises(ParseError, match="expected one run, found 2"):
        parse_nccl_text(log.read_text(), "cluster.txt")


def test_tag_output_prefixes_anywhere_in_a_row(tmp_path: Path) -> None:
    """Edit of eks-efa-tag-output-2x1.txt: a second rank's `[1,1]<stdout>:` put after the count column of every
    data row, as two ranks writing at once interleave them; the rows read the same as the unedited log's."""
    src = NCCL / "eks-efa-tag-output-2x1.txt"
    edited = []
    for line in src.read_text().splitlines():
        head, _, rest = line.partition(":")
        words = rest.split()
        if head == "[1,0]<stdout>" and len(words) == 13 and words[0].isdigit():
            line = f"{head}:  {words[0]}  {words[1]} [1,1]<stdout>:  " + "  ".join(words[2:])
        edited.append(line)
    assert sum("float [1,1]" in x or "[1,1]<stdout>:  float" in x for x in edited) == 31
    path = tmp_path / "tagged.txt"
    path.write_text("\n".join(edited) + "\n")
    assert parse_nccl_file(path).runs[0].rows == parse_nccl_file(src).runs[0].rows


@pytest.mark.parametrize(("measured", "status", "said"), [
    # a failure of the cluster beside what could not be read, or beside a run short of the plan: a fail, both named
    (Measurement(failures=("gpu-2: path down",), setup_error="gpu-3: no listing"), "fail",
     "gpu-2: path down; and could not measure the rest: gpu-3: no listing"),
    (Measurement(value=1.0, failures=("gpu-2: path down",), coverage=(count("nodes", 1, 2),)), "fail",
     "gpu-2: path down; and the result does not cover the plan: 1 of 2 nodes"),
    # a miss that is not the cluster's (a run short of the plan's size) beside a gap: the gap decides, the miss shown
    (Measurement(value=1.0, violations=("ran on 1 node; planned 2",), coverage=(count("nodes", 1, 2),)),
     "setup_error", "what could be read shows: ran on 1 node; planned 2"),
])
def test_a_failure_is_never_hidden_behind_what_could_not_be_read(measured: Measurement, status: str,
                                                                 said: str) -> None:
    """Issue 37 item 4, the rule every check shares (outcome.judge): failures stand, the rest beside them."""
    production = plan(load_requirements(REPO / "examples" / "cv-training-500tb.yaml"))  # severity error, not info
    got = judge(check(production, "nccl.allreduce_busbw"), measured)
    assert got.status == status and said in got.message, got.message
    assert exit_code([got]) == (1 if status == "fail" else 2)


def test_a_bound_of_20000_us_is_printed_as_20000_not_2e04(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 43 item 6: the lab's p99 bound of 20000 us was printed '<= 2e+04' (four significant digits, %g)."""
    got = judge(check(lab(), "storage.latency_p99"), Measurement(value=25000.0))
    assert "measured 25000 us, expected <= 20000 us" in got.message
    report = RunReport(blueprint="lab", spec_file="x", started="t", duration_s=0.0, results_dir="r", checks=(got,))
    assert "<td>expected</td><td>&lt;= 20000 us</td>" in render_html(report)
    _summary(report)
    shown = capsys.readouterr().out
    assert "<= 20000" in shown and "e+0" not in shown
