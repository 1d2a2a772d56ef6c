"""The spec fuzzer's own parts (tests/fuzz_specs.py, tests/fuzz_fork.py): the forked runner gives what the console
script gives, and each failure class the fuzzer counts is found when it happens (a judge that cannot fail would
report zeros for nothing)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from blueprints.cli import main as cli_main
from tests.fuzz_fork import run_forked
from tests.fuzz_specs import Case, run_case

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "examples" / "lab.yaml"


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "CLUSTERSMITH_SECRETS_DIR": str(tmp_path / "s")}


def test_the_forked_cli_exits_as_the_console_script_does(tmp_path: Path) -> None:
    code, out, err = run_forked(cli_main, ["clustersmith", "validate", str(LAB)], 60, tmp_path, _env(tmp_path))
    assert (code, err) == (0, "") and f"ok: {LAB} is valid" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text(LAB.read_text().replace("gpus: 2", "gpus: 0512"))
    code, out, err = run_forked(cli_main, ["clustersmith", "validate", str(bad)], 60, tmp_path, _env(tmp_path))
    assert code == 2 and "0512" in err and "Traceback" not in err


def test_an_escaping_exception_is_a_traceback_and_a_stuck_command_a_timeout(tmp_path: Path) -> None:
    def broken() -> None:
        raise KeyError("boom")

    code, _, err = run_forked(broken, ["x"], 60, tmp_path, {})
    assert code == 1 and "Traceback" in err and "KeyError: 'boom'" in err
    started = time.monotonic()
    assert run_forked(lambda: time.sleep(60), ["x"], 0.5, tmp_path, {})[0] == "timeout"
    assert time.monotonic() - started < 10


def test_terminal_escapes_read_into_a_spec_are_never_printed_raw() -> None:
    text = LAB.read_text().replace("name: lab", 'name: "lab\\e]0;owned\\a\\e[2J"', 1)
    assert text != LAB.read_text()
    result = run_case(Case(0, LAB.name, ["t_control"], text.encode()), 60)
    assert result.codes == {"validate": 2, "build": 2} and result.failures == [], result.details


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "loop"])
def test_a_special_file_in_place_of_the_spec_is_refused_without_hanging(kind: str) -> None:
    result = run_case(Case(0, "-", [f"special_{kind}"], b"", kind), 30)
    assert result.codes == {"validate": 2, "build": 2} and result.failures == [], result.details


def test_the_judge_finds_raw_controls_and_writes_after_a_refusal() -> None:
    """A stand-in for the command (the judge is what is tested): it prints an escape, and writes a secrets file then
    exits 2."""
    def runner(cmd: list[str], timeout: float, cwd: Path, env: dict[str, str]) -> tuple[int | str, str, str]:
        if cmd[-1].endswith("out") or "build" in cmd:
            folder = Path(env["CLUSTERSMITH_SECRETS_DIR"])
            folder.mkdir()
            (folder / "lab-0123456789.yml").write_text("kind: ClusterSecrets\n")
            return 2, "", "error: refused\n"
        return 2, "", "error: bad value 'x\x1b[2J'\n"

    result = run_case(Case(0, LAB.name, [], LAB.read_bytes()), 30, runner)
    assert result.failures == ["raw_control", "write_after_refusal"], result.details
