"""Benchmark: plan and build specs of 1k, 16k and 100k GPUs; print wall time and peak memory per size.

Run: `make bench` (or `.venv/bin/python tests/bench_planner.py`). Each size runs in a fresh process so
peak RSS belongs to that size alone. Target (issue 2): 100k GPUs in under 5 s, growth no worse than linear.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
SIZES = (1_024, 16_384, 100_000)


def one(gpus: int) -> dict[str, float]:
    from blueprints.loader import load_requirements, requirement_lines
    from blueprints.planner import plan
    from blueprints.render import build

    doc = yaml.safe_load((REPO / "examples" / "cv-training-500tb.yaml").read_text())
    doc["metadata"]["name"] = f"bench-{gpus}"
    doc["compute"]["gpus"] = gpus
    scale = gpus / 512
    doc["performance"]["storage"]["read_throughput"] = f">={500 * scale:.0f}GB/s"
    doc["performance"]["storage"]["write_throughput"] = f">={100 * scale:.0f}GB/s"
    doc["data"]["training_set"] = f"{500 * scale:.0f}TB"
    doc["data"]["validation_set"] = f"{50 * scale:.0f}TB"
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(yaml.safe_dump(doc, sort_keys=False))
        t0 = time.perf_counter()
        bp = plan(load_requirements(spec), spec_file=str(spec), spec_lines=requirement_lines(spec))
        t1 = time.perf_counter()
        _, files = build(bp, Path(tmp) / "out")
        t2 = time.perf_counter()
        size = sum(f.stat().st_size for f in files)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"gpus": gpus, "plan_s": t1 - t0, "build_s": t2 - t1, "total_s": t2 - t0, "peak_mib": peak,
            "files": len(files), "bytes": size}


def main() -> None:
    if len(sys.argv) == 2:
        print(json.dumps(one(int(sys.argv[1]))))
        return
    print(f"{'GPUs':>8} {'plan s':>8} {'build s':>8} {'total s':>8} {'peak MiB':>9} {'files':>6} {'bytes':>10}")
    rows = []
    for gpus in SIZES:
        out = subprocess.run([sys.executable, __file__, str(gpus)], capture_output=True, text=True, check=True,
                             cwd=REPO)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(r)
        print(f"{r['gpus']:>8} {r['plan_s']:>8.3f} {r['build_s']:>8.3f} {r['total_s']:>8.3f} {r['peak_mib']:>9.1f} "
              f"{r['files']:>6} {r['bytes']:>10}")
    growth = rows[-1]["total_s"] / rows[0]["total_s"]
    print(f"time growth 1k -> 100k GPUs: x{growth:.1f} for x{SIZES[-1] / SIZES[0]:.0f} GPUs")


if __name__ == "__main__":
    main()
