"""One acceptance run: the tools over the inventory into a results folder, then the same judging as ``--results``.

The steps are the modules of :mod:`validators.run`, in order: facts, fio per workload, perftest pairs, probes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from blueprints.blueprint import Blueprint, Check
from validators.inventory import Inventory
from validators.run import facts, fio, perftest, probe
from validators.run.plumbing import Progress, Session
from validators.safety import WritePlan

PROBES = {"nvmeof.paths": "nvme", "qos.consistency": "qos", "monitoring.targets_up": "targets",
          "cache.hit_ratio": "cache"}


def run_tools(bp: Blueprint, build_dir: Path, inventory: Inventory, results: Path, checks: list[Check],
              write: WritePlan, progress: Progress, timeout_scale: float = 1.0) -> None:
    session = Session(bp, build_dir, inventory, results, progress, timeout_scale)
    try:
        facts.run(session)
        fio_checks = [c for c in checks if c.tool == "fio"]
        for workload in bp.acceptance.workloads:
            served = [c for c in fio_checks if c.args.get("workload") == workload.name]
            if served:
                fio.run(session, workload, served, write)
        for check in checks:  # each host's device and GID index come from its rdma record (facts)
            if check.tool == "ib_write_bw":
                duration = int(check.args.get("duration", "10"))
                args = ["-s", check.args.get("size", "65536"), "-D", str(duration), "-q", check.args.get("qps", "1"),
                        "--report_gbits", "-F"]
                perftest.run(session, check, "ib_write_bw", args, duration)
        wanted: dict[str, list[str]] = {}
        for check in checks:
            if check.id in PROBES:
                wanted.setdefault(PROBES[check.id], []).append(check.id)
        if wanted:
            probe.run(session, sorted(wanted), wanted)
        gpus = any(f.get("gpus", 0) for f in _facts(results).values())
        for check in checks:  # the NCCL step (validators/run/nccl.py) takes this place once it launches nccl-tests
            if check.tool == "nccl" and gpus:
                session.setup_error(check.id, "cluster", (
                    "running nccl-tests across hosts is not automated yet: run all_reduce_perf -b 2G -e 8G "
                    "(NCCL_ALGO=Ring on two nodes), put its output in nccl/ and judge it with --results"))
    finally:
        fio.cleanup(session, write)
        session.finish()
        shutil.rmtree(results / ".jobs", ignore_errors=True)


def _facts(results: Path) -> dict[str, dict[str, int]]:
    path = results / "host-facts.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    return data if isinstance(data, dict) else {}
