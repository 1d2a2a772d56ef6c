""".ci/run: `make test`'s exact parts in its order, each stage's wall time and the total in the log, and a failing stage
still fails the run (after printing its time)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

CI_RUN = REPO / ".ci" / "run"


def make_commands(*targets: str) -> list[str]:
    """What `make` would run for ``targets`` on a machine where nothing is built yet (-B), without running it."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # a make above this one (`make test` runs the suite) passes its flags down and makes the listing say where it
    # enters and leaves: the listing is read as a make started by hand
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    done = subprocess.run(["make", "--no-print-directory", "-n", "-B", *targets], cwd=REPO, env=env,
                          capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_ci_runs_exactly_make_tests_parts_in_its_order() -> None:
    targets = re.findall(r"^make (\S+)$", CI_RUN.read_text(), re.M)
    assert targets == ["venv", "lint", "test-unit", "test-lab"]
    parts: list[str] = []
    for target in targets:  # each part makes the venv first again: the same command, run once by `make test`
        parts += [c for c in make_commands(target) if c not in parts]
    assert parts == make_commands("test")
    assert any("--durations=30 -m lab" in c for c in parts), "the lab tier lists its slowest tests"


def ci_script(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    """A script with .ci/run's shell options and its stage timing, running ``body``."""
    script = tmp_path / "run"
    script.write_text(f"set -euo pipefail\n. {REPO / '.ci' / 'stages.sh'}\n{body}\n")
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, check=False)


def test_every_stage_and_the_total_are_printed(tmp_path: Path) -> None:
    done = ci_script(tmp_path, "ci_stage apt-install\ntrue\nci_stage lab-tier\necho tests ran")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "ci: stage apt-install begins at +0 s"
    assert re.fullmatch(r"ci: stage apt-install \d+ s", lines[1]), lines
    assert lines[2:4] == ["ci: stage lab-tier begins at +0 s", "tests ran"]
    assert re.fullmatch(r"ci: stage lab-tier \d+ s", lines[4]), lines
    assert re.fullmatch(r"ci: stages: apt-install \d+ s,lab-tier \d+ s", lines[5]), lines
    assert re.fullmatch(r"ci: total \d+ s \(exit 0\)", lines[6]), lines
    assert len(lines) == 7, lines


def test_a_failing_stage_prints_its_time_and_fails_the_run(tmp_path: Path) -> None:
    done = ci_script(tmp_path, "ci_stage lint\nfalse\nci_stage unit-tier\necho never")
    assert done.returncode == 1
    assert "never" not in done.stdout and "unit-tier" not in done.stdout, done.stdout
    assert re.search(r"^ci: stage lint \d+ s \(failed, exit 1\)$", done.stdout, re.M), done.stdout
    assert re.search(r"^ci: total \d+ s \(exit 1\)$", done.stdout, re.M), done.stdout


def test_a_failing_pipeline_fails_its_stage(tmp_path: Path) -> None:
    """pipefail still holds: a failure early in a pipeline ends the run with the failing command's status."""
    done = ci_script(tmp_path, "ci_stage unit-tier\n(exit 3) | cat\necho never")
    assert done.returncode == 3
    assert "never" not in done.stdout
    assert re.search(r"^ci: stage unit-tier \d+ s \(failed, exit 3\)$", done.stdout, re.M), done.stdout
