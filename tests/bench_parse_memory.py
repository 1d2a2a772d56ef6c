"""Peak memory of ``clustersmith parse`` on logs of hundreds of MB (issue 16 item 4); prints its figures.

    .venv/bin/python tests/bench_parse_memory.py [MB ...]    (default: 300 and 1000 MB of NCCL INFO lines)

Each log is the recorded nccl-tests (or ib_write_bw) output with its INFO (banner) lines repeated up to the size, or
the whole nccl-tests log repeated, run after run (tests/big_logs.py); the child's peak RSS must stay within
BOUND_MIB of its RSS on the recorded file.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.big_logs import NCCL, PERFTEST, nccl_log, nccl_runs_log, peak_rss, perftest_log

BOUND_MIB = 32


def main(sizes: list[int]) -> int:
    bad = 0
    for tool, small, make in (("nccl", NCCL, nccl_log), ("nccl", NCCL, nccl_runs_log),
                              ("ib_write_bw", PERFTEST, perftest_log)):
        rc, base, err = peak_rss(tool, small)
        print(f"{tool}: recorded file ({small.stat().st_size} B): exit {rc}, peak RSS {base / 1024:.1f} MiB")
        for mb in sizes:
            with tempfile.TemporaryDirectory() as tmp:
                path = make(Path(tmp) / f"big.{tool}.txt", mb << 20)
                start = time.monotonic()
                rc, rss, err = peak_rss(tool, path)
                took = time.monotonic() - start
            grew = (rss - base) / 1024
            ok = rc == 0 and grew <= BOUND_MIB
            bad += not ok
            print(f"{tool} ({make.__name__}): {mb} MB log: exit {rc}, peak RSS {rss / 1024:.1f} MiB "
                  f"(+{grew:.1f} MiB over the recorded file; bound +{BOUND_MIB} MiB), {took:.1f} s, "
                  f"{'ok' if ok else 'OVER: ' + err[-300:]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main([int(a) for a in sys.argv[1:]] or [300, 1000]))
