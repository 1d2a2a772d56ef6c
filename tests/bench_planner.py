"""Benchmark: plan and build specs of 1k, 16k, 100k and 1M GPUs; print CPU time, wall time and peak memory per size.

Run: `make bench` (or `.venv/bin/python tests/bench_planner.py [GPUS ...]`). The spec is
examples/cv-training-500tb.yaml scaled to the size (throughputs and data grow with the GPUs), built twice: as it is
(bare metal: Ceph, NVMe-oF namespaces per GPU node, the placeholder inventory) and on AWS (the cloud layout). Bare
metal ends below 1M GPUs, where the planner finds no 3-tier fat tree for the rails; its row says so. Each size runs
in a fresh process so peak RSS belongs to that size alone. CPU seconds (user + system, getrusage) are the figure
to compare: on a shared machine the wall time also counts the other processes' turns.

Targets: 1M GPUs built in under 10 s of CPU and under 500 MB peak (issue 20); growth no worse than linear.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
SIZES = (1_024, 16_384, 100_000, 1_000_000)
TARGETS: dict[str, dict[str, str] | None] = {"baremetal": None, "aws": {"provider": "aws", "region": "us-east-1"}}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def one(gpus: int, target: str) -> dict[str, Any]:
    cpu0 = _cpu()  # the interpreter's start-up, before any import of the project's
    from blueprints.errors import ClusterSmithError
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
    doc["target"] = TARGETS[target] or doc["target"]
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(yaml.safe_dump(doc, sort_keys=False))
        c0, t0 = _cpu(), time.perf_counter()
        try:
            bp = plan(load_requirements(spec), spec_file=str(spec), spec_lines=requirement_lines(spec))
        except ClusterSmithError as exc:
            return {"gpus": gpus, "target": target, "infeasible": exc.problems[0].message}
        c1 = _cpu()
        _, files = build(bp, Path(tmp) / "out")
        c2, t2 = _cpu(), time.perf_counter()
        sizes = {f: f.stat().st_size for f in files}
        biggest = max(sizes, key=lambda f: sizes[f])
        largest = f"{biggest.relative_to(Path(tmp) / 'out' / bp.name)} ({sizes[biggest]} B)"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"gpus": gpus, "target": target, "plan_cpu_s": c1 - c0, "build_cpu_s": c2 - c1, "cpu_s": c2 - cpu0,
            "wall_s": t2 - t0, "peak_mib": peak, "files": len(files), "bytes": sum(sizes.values()),
            "largest": largest}


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        print(json.dumps(one(int(sys.argv[2]), sys.argv[3])))
        return
    sizes = tuple(int(a) for a in sys.argv[1:]) or SIZES
    print(f"{'target':<9} {'GPUs':>9} {'plan cpu':>9} {'build cpu':>9} {'cpu s':>7} {'wall s':>7} {'peak MiB':>9} "
          f"{'files':>6} {'bytes':>11}  largest file")
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in TARGETS}
    for target in TARGETS:
        for gpus in sizes:
            out = subprocess.run([sys.executable, __file__, "--one", str(gpus), target], capture_output=True,
                                 text=True, check=True, cwd=REPO)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            if "infeasible" in r:
                print(f"{target:<9} {gpus:>9}  not planned: {r['infeasible']}", flush=True)
                continue
            rows[target].append(r)
            print(f"{target:<9} {r['gpus']:>9} {r['plan_cpu_s']:>9.2f} {r['build_cpu_s']:>9.2f} {r['cpu_s']:>7.2f} "
                  f"{r['wall_s']:>7.2f} {r['peak_mib']:>9.1f} {r['files']:>6} {r['bytes']:>11}  {r['largest']}",
                  flush=True)
    print("cpu s: the whole process after interpreter start (imports, plan, build); wall s: plan and build")
    for target, done in rows.items():
        if len(done) > 1:
            print(f"{target}: CPU x{done[-1]['cpu_s'] / done[0]['cpu_s']:.1f} from {done[0]['gpus']} to "
                  f"{done[-1]['gpus']} GPUs (x{done[-1]['gpus'] / done[0]['gpus']:.0f})")


if __name__ == "__main__":
    main()
