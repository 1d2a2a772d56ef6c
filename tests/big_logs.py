"""Large tool-output files made on the fly from recorded real logs, for the parsers' memory bound.

``nccl_log`` repeats the NCCL INFO lines of a recorded nccl-tests run (tests/fixtures/nccl, cited in its README)
ahead of its results table, as NCCL_DEBUG=INFO output from many ranks would; ``perftest_log`` repeats the banner
lines of a recorded ib_write_bw client; ``nccl_runs_log`` repeats a whole recorded nccl-tests log, runs after runs.
All are mutations of real output: the tables themselves are left as recorded.
``peak_rss`` runs ``clustersmith parse`` in a child and returns the child's own peak resident set (os.wait4).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
NCCL = FIXTURES / "nccl" / "eks-efa-tag-output-2x1.txt"
PERFTEST = FIXTURES / "rdma" / "lab-ib_write_bw-rail0.client.txt"


def _repeat(path: Path, out: Path, size: int, noise: list[str], before: int) -> Path:
    """``path`` with ``noise`` repeated (round robin) after its first ``before`` lines until ``out`` has ``size``
    bytes."""
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    block = "".join(noise).encode() * max(1, (1 << 20) // max(1, len("".join(noise))))
    with out.open("wb") as f:
        f.write("".join(text[:before]).encode())
        while f.tell() < size:
            f.write(block)
        f.write("".join(text[before:]).encode())
    return out


def nccl_log(out: Path, size: int) -> Path:
    lines = NCCL.read_text(encoding="utf-8").splitlines(keepends=True)
    return _repeat(NCCL, out, size, [ln for ln in lines if "NCCL INFO" in ln], before=2)


def nccl_runs_log(out: Path, size: int) -> Path:
    """The recorded nccl-tests log whole, again and again until ``size``: a job that ran the sweep many times into
    one file (issue 43: ``parse nccl`` held every run, then its JSON)."""
    run = NCCL.read_bytes()
    block = run * max(1, (1 << 20) // len(run))
    with out.open("wb") as f:
        while f.tell() < size:
            f.write(block)
    return out


def perftest_log(out: Path, size: int) -> Path:
    lines = PERFTEST.read_text(encoding="utf-8").splitlines(keepends=True)
    banner = [ln for ln in lines if ("address:" in ln or "GID:" in ln)]
    at = next(i for i, ln in enumerate(lines) if "GID:" in ln)
    return _repeat(PERFTEST, out, size, banner, before=at)


def peak_rss(tool: str, path: Path) -> tuple[int, int, str]:
    """(exit code, the child's peak RSS in KiB, its stderr) of ``python -m validators parse TOOL PATH``."""
    proc = subprocess.Popen([sys.executable, "-m", "validators", "parse", tool, str(path)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss, err  # Linux: KiB
