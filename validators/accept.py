"""One acceptance run: the tools over the inventory into a results folder, then the same judging as ``--results``."""

from __future__ import annotations

from pathlib import Path

from blueprints.blueprint import Blueprint, Check
from validators.inventory import Inventory
from validators.runner import Progress, Runner
from validators.safety import WritePlan

PROBES = {"nvmeof.paths": "nvme", "qos.consistency": "qos", "monitoring.targets_up": "targets",
          "cache.hit_ratio": "cache"}


def run_tools(bp: Blueprint, build_dir: Path, inventory: Inventory, results: Path, checks: list[Check],
              write: WritePlan, progress: Progress, timeout_scale: float = 1.0) -> None:
    runner = Runner(bp, build_dir, inventory, results, progress, timeout_scale)
    try:
        runner.facts()
        fio_checks = [c for c in checks if c.tool == "fio"]
        for workload in bp.acceptance.workloads:
            served = [c for c in fio_checks if c.args.get("workload") == workload.name]
            if served:
                runner.fio(workload, served, write)
        for check in checks:  # each host's device and GID index come from its rdma record (runner.facts)
            if check.tool == "ib_write_bw":
                duration = int(check.args.get("duration", "10"))
                args = ["-s", check.args.get("size", "65536"), "-D", str(duration), "-q", check.args.get("qps", "1"),
                        "--report_gbits", "-F"]
                runner.perftest(check, "ib_write_bw", args, duration)
        wanted: dict[str, list[str]] = {}
        for check in checks:
            if check.id in PROBES:
                wanted.setdefault(PROBES[check.id], []).append(check.id)
        if wanted:
            runner.probe(sorted(wanted), wanted)
        for check in checks:
            if check.tool == "nccl":
                runner.nccl(check)
    finally:
        runner.cleanup(write)
        runner.finish()

