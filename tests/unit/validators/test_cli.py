"""`clustersmith parse` and `clustersmith accept --results` as a user runs them (``python -m validators``, the same
commands the clustersmith CLI registers): exit codes, JSON, reports, messages."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import build
from tests.conftest import BIN
from tests.unit.validators.gate_inputs import fio_results, two_node_blueprint

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"


def run(*args: str | Path, columns: str = "200") -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{BIN}:/usr/bin:/bin"} | ({"COLUMNS": columns} if columns else {})
    return subprocess.run([sys.executable, "-m", "validators", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.mark.parametrize(("tool", "fixture", "key", "value"), [
    ("fio", "fio/client-server/seq_read.json", "client_server", True),
    ("nccl", "nccl/efa-eks-old-layout-2x8-a100.txt", "runs", "old"),  # a log of runs: the first one's layout
])
def test_parse_prints_the_typed_result(tool: str, fixture: str, key: str, value: object) -> None:
    r = run("parse", tool, FIXTURES / fixture)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)[key]
    assert (got[0]["layout"] if key == "runs" else got) == value


def test_parse_of_the_wrong_tool_is_bad_input_without_traceback() -> None:
    r = run("parse", "nccl", FIXTURES / "fio" / "results" / "fio" / "seq_read" / "client-1.json")
    assert r.returncode == 2
    assert "not nccl-tests JSON output" in r.stderr and "results: expected a non-empty results[] array" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder, _ = build(plan(load_requirements(REPO / "examples" / "cv-training-500tb.yaml")),
                      tmp_path_factory.mktemp("out"))
    return folder


@pytest.fixture(scope="module")
def two_node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder, _ = build(two_node_blueprint(tmp_path_factory.mktemp("spec")), tmp_path_factory.mktemp("out"))
    return folder


def test_accept_results_judges_a_hand_made_run(two_node: Path, tmp_path: Path) -> None:
    results = fio_results(tmp_path / "results", ["gpu-1", "gpu-2"], ("seq_read", "mixed"))
    (results / "nccl").mkdir()
    shutil.copy(FIXTURES / "nccl" / "a3mega-2x8-h100.txt", results / "nccl")  # 2 nodes x 8 GPUs, as planned
    r = run("accept", two_node, "--results", results, "--report-dir", tmp_path / "report", "--only",
            "storage.read_throughput,storage.mixed", "--only", "nccl.allreduce_busbw")
    assert r.returncode == 1, r.stdout + r.stderr  # a laptop's disk does not meet a 60 GB/s design
    data = json.loads((tmp_path / "report" / "report.json").read_text())
    # the NCCL log carries no NCCL INFO lines: its transport cannot be confirmed, missing evidence (a setup error)
    assert {c["id"]: c["status"] for c in data["checks"]} == {
        "storage.read_throughput": "fail", "storage.mixed": "pass", "nccl.allreduce_busbw": "setup_error"}
    assert {c["id"]: c["coverage_shown"] for c in data["checks"]}["nccl.allreduce_busbw"] == \
        "16 of 16 ranks, 2 of 2 nodes"
    assert (tmp_path / "report" / "junit.xml").is_file() and (tmp_path / "report" / "report.html").is_file()
    assert "storage.read_throughput: measured" in r.stdout and "2 of 2 hosts" in r.stdout


def test_a_failure_beside_a_setup_error_exits_1(two_node: Path, tmp_path: Path) -> None:
    """Issue 15: a failed check plus a setup error exited 2 (bad input), hiding the failure."""
    results = fio_results(tmp_path / "results", ["gpu-1", "gpu-2"], ("seq_read",))  # no mixed workload: setup
    r = run("accept", two_node, "--results", results, "--report-dir", tmp_path / "report", "--only",
            "storage.read_throughput,storage.mixed")
    statuses = {c["id"]: c["status"] for c in json.loads((tmp_path / "report" / "report.json").read_text())["checks"]}
    assert statuses == {"storage.read_throughput": "fail", "storage.mixed": "setup_error"}
    assert r.returncode == 1, r.stdout + r.stderr
    only_setup = run("accept", two_node, "--results", results, "--report-dir", tmp_path / "r2", "--only",
                     "storage.mixed")
    assert only_setup.returncode == 2


def test_a_report_dir_of_the_users_own_reports_is_refused_before_anything_runs(two_node: Path, tmp_path: Path) -> None:
    """Issue 43 item 4: `accept --report-dir` overwrote a user's own report.html and junit.xml."""
    results = fio_results(tmp_path / "results", ["gpu-1", "gpu-2"], ("seq_read",))
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "report.html").write_text("<p>the user's own report</p>\n")
    r = run("accept", two_node, "--results", results, "--report-dir", theirs, "--only", "storage.read_throughput")
    said = " ".join(r.stderr.split())
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "--report-dir: holds report.html that clustersmith did not write there (no .clustersmith-report); " \
           "expected a new or empty folder, or one an earlier run wrote" in said and str(theirs) in said
    assert sorted(p.name for p in theirs.iterdir()) == ["report.html"]
    assert (theirs / "report.html").read_text() == "<p>the user's own report</p>\n"
    ours = tmp_path / "ours"  # a folder an earlier run wrote is written again
    for _ in range(2):
        r = run("accept", two_node, "--results", results, "--report-dir", ours, "--only", "storage.read_throughput")
        assert r.returncode == 1 and (ours / "report.json").is_file(), r.stdout + r.stderr
    (tmp_path / "file").write_text("x")
    r = run("accept", two_node, "--results", results, "--report-dir", tmp_path / "file", "--only",
            "storage.read_throughput")
    assert r.returncode == 2 and "is a file" in r.stderr and "Traceback" not in r.stderr


def test_accept_help_states_the_exit_codes() -> None:
    r = run("accept", "--help")
    text = " ".join(r.stdout.split())
    assert r.returncode == 0 and "1 any check failed, whatever else happened (setup errors too)" in text
    assert "2 bad input, or setup errors" in text and "when nothing failed" in text


def readme_command(prefix: str) -> list[str]:
    """The README's own command line that starts with ``prefix`` (its comment cut off), split into words."""
    for line in (REPO / "README.md").read_text().splitlines():
        if line.startswith(prefix):
            return line.split("#", 1)[0].split()
    raise AssertionError(f"README.md has no line starting {prefix!r}")


def test_the_readme_commands_work_as_written_with_relative_folders(tmp_path: Path) -> None:
    """Issue 15 item 6: the README's build and ``accept out/<name> --results DIR``, typed verbatim in a repository
    root (a copy of its examples/, so the test never writes into the checkout), with relative folders."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "examples", root / "examples")
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "COLUMNS": "200"}
    built = subprocess.run(readme_command("clustersmith build examples/lab.yaml"), cwd=root, capture_output=True,
                           text=True, timeout=300, env=env)
    assert built.returncode == 0, built.stdout + built.stderr
    fio_results(root / "results", ["client-1", "client-2"], ("seq_read",))
    words = [w.replace("<name>", "lab").replace("DIR", "results")
             for w in readme_command("clustersmith accept out/<name> --results DIR")]
    assert words[2:] == ["out/lab", "--results", "results"]
    r = subprocess.run([*words, "--only", "storage.read_throughput"], cwd=root, capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads((root / "out" / "lab" / "acceptance" / "report" / "report.json").read_text())
    assert report["results_dir"] == str(root / "results")  # resolved once, where the CLI reads it
    assert report["checks"][0]["status"] == "info" and report["checks"][0]["coverage_shown"] == "2 of 2 hosts"


def test_accept_prints_whole_check_ids_in_a_log(out: Path, tmp_path: Path) -> None:
    """Without a terminal or COLUMNS (CI, `| tee`) the summary table keeps its full width, ids uncut."""
    results = fio_results(tmp_path / "results", [f"gpu-{n}" for n in range(1, 65)])
    r = run("accept", out, "--results", results, "--report-dir", tmp_path / "report", columns="")
    rows = {line.split("│")[1].strip() for line in r.stdout.splitlines() if line.startswith("│")}
    assert {"storage.read_throughput", "storage.latency_p99", "nvmeof.paths"} <= rows, r.stdout
    assert f"reports: {tmp_path / 'report' / 'junit.xml'}, " in r.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--only", "storage.speed"], "--only: no such check in the Blueprint's acceptance plan"),
    (["--results", "/nonexistent/results"], "--results: expected a folder of tool output"),
])
def test_accept_bad_input_exits_2(out: Path, args: list[str], message: str) -> None:
    r = run("accept", out, *args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_accept_needs_a_build_folder(tmp_path: Path) -> None:
    r = run("accept", tmp_path / "missing", "--results", tmp_path)
    assert r.returncode == 2 and "cannot read a Blueprint" in r.stderr
