"""One acceptance run: the tools over the inventory into a results folder, then the same judging as ``--results``.

The steps are the modules of :mod:`validators.run`, in order: facts, Ceph's account of itself (first: a cluster that
is not healthy is named before the workloads load it), fio per workload, probes (the paths the workloads just used,
read before perftest's pairs saturate the rails they share: in the lab a keep-alive lost to ib_write_bw's own load
left the probe waiting out a reconnect, 40 s of a run), perftest pairs, NCCL.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from blueprints.blueprint import Blueprint, Check
from blueprints.blueprint.check_args import FioArgs, PerftestArgs, args_as
from validators.inventory import Inventory
from validators.run import ceph, facts, fio, nccl, perftest, probe
from validators.run.plumbing import Progress, Session
from validators.safety import WritePlan

PROBES = {"nvmeof.paths": "nvme", "qos.consistency": "qos", "monitoring.targets_up": "targets",
          "cache.hit_ratio": "cache"}


def run_tools(bp: Blueprint, build_dir: Path, inventory: Inventory, results: Path, checks: list[Check],
              write: WritePlan, progress: Progress, timeout_scale: float = 1.0) -> None:
    session = Session(bp, build_dir, inventory, results, progress, timeout_scale)
    try:
        facts.run(session)
        for check in checks:
            if check.tool == "ceph":
                ceph.run(session, check)
        fio_checks = [c for c in checks if c.tool == "fio"]
        for workload in bp.acceptance.workloads:
            served = [c for c in fio_checks if args_as(c.args, FioArgs).workload == workload.name]
            if served:
                fio.run(session, workload, served, write)
        wanted: dict[str, list[str]] = {}
        for check in checks:
            if check.id in PROBES:
                wanted.setdefault(PROBES[check.id], []).append(check.id)
        if wanted:
            probe.run(session, sorted(wanted), wanted)
        for check in checks:  # each host's device and GID index come from its rdma record (facts)
            if check.tool == "ib_write_bw":
                args, duration = perftest.write_bw_args(args_as(check.args, PerftestArgs))
                perftest.run(session, check, "ib_write_bw", args, duration)
        for check in checks:
            if check.tool == "nccl":
                nccl.run(session, check)
    finally:
        fio.cleanup(session, write)
        session.finish()
        shutil.rmtree(results / ".jobs", ignore_errors=True)

