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

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def run(*args: str | Path, columns: str = "200") -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{BIN}:/usr/bin:/bin"} | ({"COLUMNS": columns} if columns else {})
    return subprocess.run([sys.executable, "-m", "validators", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.mark.parametrize(("tool", "fixture", "key", "value"), [
    ("fio", "fio/client-server/seq_read.json", "client_server", True),
    ("nccl", "nccl/efa-eks-old-layout-2x8-a100.txt", "layout", "old"),
])
def test_parse_prints_the_typed_result(tool: str, fixture: str, key: str, value: object) -> None:
    r = run("parse", tool, FIXTURES / fixture)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[key] == value


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


def test_accept_results_judges_a_hand_made_run(out: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(FIXTURES / "fio" / "results", results)
    (results / "nccl").mkdir()
    shutil.copy(FIXTURES / "nccl" / "a3mega-2x8-h100.txt", results / "nccl")
    r = run("accept", out, "--results", results, "--report-dir", tmp_path / "report", "--only",
            "storage.read_throughput,storage.mixed", "--only", "nccl.allreduce_busbw")
    assert r.returncode == 1, r.stdout + r.stderr  # a laptop's disk does not meet a 500 GB/s design
    data = json.loads((tmp_path / "report" / "report.json").read_text())
    assert {c["id"]: c["status"] for c in data["checks"]} == {
        "storage.read_throughput": "fail", "storage.mixed": "pass", "nccl.allreduce_busbw": "fail"}
    assert (tmp_path / "report" / "junit.xml").is_file() and (tmp_path / "report" / "report.html").is_file()
    assert "storage.read_throughput: measured" in r.stdout


def test_accept_prints_whole_check_ids_in_a_log(out: Path, tmp_path: Path) -> None:
    """Without a terminal or COLUMNS (CI, `| tee`) the summary table keeps its full width, ids uncut."""
    results = tmp_path / "results"
    shutil.copytree(FIXTURES / "fio" / "results", results)
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
