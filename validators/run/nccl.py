"""Step ``nccl``: the GPU pre-flight, nccl-tests over every GPU node, the pairwise sweep when the all-node
busbw misses its bar, and on the lab (GPUs emulated) the same launch proven with an MPI program. Decisions are
``validators.nccl_run``'s; this module plays ``playbooks/nccl.yml`` and lays out the results folder:

    nccl/preflight/<host>.txt, .rc      what nvidia-smi -L printed on each node, and its exit status
    nccl/preflight.json                 {host: {"gpus": n, "error": why nvidia-smi gave none}}
    nccl/all_reduce_perf.txt            the all-node all_reduce run (table and NCCL INFO lines, --tag-output)
    nccl/collectives/<test>.txt         the plan's other collectives over every node
    nccl/pairs/<a>+<b>.txt              the sweep's pair runs
    nccl/launch/mpi_ring.txt            the lab's launch proof

Every log comes back with its exit status beside it (``<log>.rc``), so nothing here reads a task's result. The
pre-flight and the launches are host jobs (``files/job_nccl_preflight.sh``, ``files/job_nccl_launch.sh``): every
node's pre-flight, and every launcher of a pairwise wave, runs at once however many forks start them;
``playbooks/nccl.yml`` puts the hostfile, the lab's key and the lab's program in place first and removes the program
after.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

from blueprints.blueprint import Check
from blueprints.blueprint.check_args import NcclArgs, args_as
from blueprints.figures import plain
from validators.errors import ParseError
from validators.nccl import parse_nccl_file
from validators.nccl_run import (
    LAB_RSH_AGENT,
    PROOF_PROGRAM,
    WORKDIR,
    GpuCount,
    Launch,
    LaunchError,
    Pair,
    collectives,
    count_gpus,
    emulated,
    judge_launch_proof,
    pair_waves,
    plan_launch,
    slow_nodes,
    sweep,
)
from validators.run.jobs import Job, SpecValue, argv_text
from validators.run.plumbing import TIMED_OUT, Session, last_line

PREFLIGHT_LIMIT_S = 120

RUN_TIMEOUT_S = 900  # one nccl-tests sweep of 2G..8G; thousands of ranks take minutes to set up


def run(session: Session, check: Check) -> None:
    lab = session.bp.target.provider == "lab"
    try:
        launch = plan_launch(session.bp, session.inventory, rsh_agent=LAB_RSH_AGENT if lab else None)
    except LaunchError as exc:
        session.setup_error(check.id, "inventory", str(exc))
        return
    if emulated(check):
        _prove_launch(session, check, launch, lab)
        return
    if not _preflight(session, check, launch):
        return
    all_reduce = session.results / "nccl" / "all_reduce_perf.txt"
    others = session.results / "nccl" / "collectives"
    runs = [{"log": f"{t}.txt", "argv": launch.argv([t, *sweep(check)]),
             "dest": str(all_reduce if t == "all_reduce_perf" else others / f"{t}.txt")} for t in collectives(check)]
    failed = _launch(session, check, "nccl-all-nodes", {launch.launcher: (launch, runs)}, lab)
    if failed:
        for name, why in failed.items():
            session.setup_error(check.id, launch.launcher, f"{name}: {why}")
        return
    busbw = _busbw(all_reduce, check)
    if busbw is not None and busbw < check.threshold and check.severity != "info" and len(launch.nodes) > 1:
        _pairwise(session, check, launch, lab, busbw)


def _preflight(session: Session, check: Check, launch: Launch) -> bool:
    """``nvidia-smi -L`` on every node (fetched into nccl/preflight/<host>.txt and .rc), counted into
    nccl/preflight.json; True when each node has its planned GPUs."""
    nodes = [n.name for n in launch.nodes]
    outcomes = session.job(Job("nccl-preflight", "nccl_preflight", {n: {"host": n} for n in nodes},
                               ("nccl/preflight/{host}.txt", "nccl/preflight/{host}.txt.rc"),
                               int(PREFLIGHT_LIMIT_S * session.scale), short=True))
    counted: dict[str, GpuCount] = {}
    for host, o in outcomes.items():
        listing = session.results / "nccl" / "preflight" / f"{host}.txt"
        rc = _status(listing)
        if rc is None:  # unreachable, or the play failed before nvidia-smi ran
            session.setup_error(check.id, host, o.problem or "the pre-flight did not run")
            continue
        text = listing.read_text(encoding="utf-8", errors="replace") if listing.is_file() else ""
        error = None
        if rc != 0:
            said = text.strip().splitlines()
            error = f"nvidia-smi -L exited {rc}: {said[-1] if said else 'no output'}"
        counted[host] = GpuCount(gpus=count_gpus(text) if rc == 0 else 0, error=error)
    session.write("nccl", "preflight.json", text=json.dumps({h: c.model_dump() for h, c in counted.items()},
                                                             indent=2))
    planned = launch.gpus_per_node
    return len(counted) == len(nodes) and all(c.gpus >= planned for c in counted.values())


def _status(log: Path) -> int | None:
    """The exit status the playbook fetched beside a log (``<log>.rc``); None when there is none."""
    rc = log.with_name(log.name + ".rc")
    try:
        return int(rc.read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _launch(session: Session, check: Check, step: str, launches: dict[str, tuple[Launch, list[dict[str, Any]]]],
            lab: bool, program: str | None = None) -> dict[str, str]:
    """One host job: each launcher runs its launches in turn (the hostfile, the lab's key and program put in place by
    nccl.yml first); returns {log: why} for every run that did not end 0."""
    some = next(iter(launches.values()))[0]
    program_hosts = sorted({n.name for launch, _ in launches.values() for n in launch.nodes}) if program else []
    timeout = RUN_TIMEOUT_S * max(1, len(next(iter(launches.values()))[1]))
    for _, runs in launches.values():  # a file of an earlier run is not this run's
        for run in runs:
            for path in (Path(run["dest"]), Path(run["dest"] + ".rc")):
                path.unlink(missing_ok=True)
    stage: dict[str, Any] = {"accept_workdir": WORKDIR, "accept_launch_key": lab, "accept_program": program or "",
                             "accept_hostfiles": {h: launch.hostfile() for h, (launch, _) in launches.items()}}
    staged = session.play(f"{step}-stage", "nccl.yml", sorted(set(launches) | set(program_hosts)), stage, 120, groups={
        "accept_launchers": sorted(launches), "accept_program_hosts": program_hosts, "accept_program_cleanup": []})
    specs: dict[str, dict[str, SpecValue]] = {}
    outputs: list[str] = []
    for h, (_, runs) in launches.items():
        if staged[h].problem is not None:
            continue
        specs[h] = {"host": h, "launcher_tool": some.kind, "workdir": WORKDIR,
                    "timeout": int(RUN_TIMEOUT_S * session.scale), "runs": len(runs)}
        for n, run in enumerate(runs, start=1):
            dest = Path(run["dest"]).relative_to(session.results).as_posix()
            specs[h].update({f"run_{n}_log": run["log"], f"run_{n}_dest": dest,
                             f"run_{n}_argv": argv_text(run["argv"])})
            outputs += [glob.escape(dest), glob.escape(dest) + ".rc"]
    outcomes = session.job(Job(step, "nccl_launch", specs, tuple(outputs), int(timeout * session.scale) + 60))
    if program_hosts:
        session.play(f"{step}-cleanup", "nccl.yml", program_hosts, {"accept_workdir": WORKDIR}, 120, groups={
            "accept_launchers": [], "accept_program_hosts": [], "accept_program_cleanup": program_hosts})
    failed: dict[str, str] = {}
    for launcher, (_, runs) in launches.items():
        o = outcomes.get(launcher, staged[launcher])
        for run in runs:
            log = Path(run["dest"])
            rc = _status(log)
            if rc is None:
                failed[run["log"]] = o.problem or "did not run (no exit status came back)"
            elif rc != 0:
                failed[run["log"]] = _exit_reason(rc, log)
            elif not log.is_file():
                failed[run["log"]] = "exited 0, but its log was not fetched back"
    return failed


def _exit_reason(rc: object, log: Path) -> str:
    """The launch's exit status and the tool's own last words (the log's last line)."""
    if rc == TIMED_OUT:
        return f"timed out after {RUN_TIMEOUT_S} s"
    last = last_line(log)
    return f"exited {rc}" + (f": {last}" if last else " with no output")


def _busbw(log: Path, check: Check) -> float | None:
    """The lowest out-of-place busbw at the plan's large sizes, as the rule reads it; None when there is none."""
    try:
        runs = parse_nccl_file(log).runs
    except ParseError:
        return None
    large = [r.out_of_place.busbw for run in runs for r in run.large(int(args_as(check.args, NcclArgs).minbytes.value))
             if r.out_of_place is not None]
    return min(large) if large else None


def _pairwise(session: Session, check: Check, launch: Launch, lab: bool, busbw: float) -> None:
    """all_reduce on disjoint node pairs, a wave at a time, and the slow nodes named in the check's notes."""
    measured: dict[Pair, float | None] = {}
    for i, wave in enumerate(pair_waves([n.name for n in launch.nodes])):
        launches: dict[str, tuple[Launch, list[dict[str, Any]]]] = {}
        for a, b in wave:
            pair = launch.subset((a, b))
            dest = session.results / "nccl" / "pairs" / f"{a}+{b}.txt"
            launches[pair.launcher] = (pair, [{"log": f"{a}+{b}.txt", "argv": pair.argv(["all_reduce_perf",
                                                                                         *sweep(check)]),
                                               "dest": str(dest)}])
        failed = _launch(session, check, f"nccl-pairs-wave{i + 1}", launches, lab)
        for a, b in wave:
            measured[(a, b)] = None if f"{a}+{b}.txt" in failed else \
                _busbw(session.results / "nccl" / "pairs" / f"{a}+{b}.txt", check)
    verdict = slow_nodes(measured, check.threshold)
    session.note(check.id,
        f"all-node busbw {plain(busbw)} GB/s missed {plain(check.threshold)} GB/s; " + verdict.note(check.threshold)
        + f" ({len(measured)} pair run(s) in nccl/pairs/)")


def _prove_launch(session: Session, check: Check, launch: Launch, lab: bool) -> None:
    """The GPUs are emulated: start an MPI program (no NCCL) over the same launch, and judge its ranks."""
    log = session.results / "nccl" / "launch" / "mpi_ring.txt"
    runs = [{"log": "mpi_ring.txt", "argv": launch.argv(["python3", f"{WORKDIR}/{PROOF_PROGRAM}"]),
             "dest": str(log)}]
    failed = _launch(session, check, "nccl-launch-proof", {launch.launcher: (launch, runs)}, lab, PROOF_PROGRAM)
    if failed:
        session.setup_error(check.id, launch.launcher, f"launch proof: {failed['mpi_ring.txt']}")
        return
    text = log.read_text(encoding="utf-8", errors="replace")
    proof = judge_launch_proof(text, launch)
    if proof.problems:
        last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "an empty log")
        session.setup_error(check.id, launch.launcher, f"{proof.note(launch)} (log ends: {last})")
    else:
        session.note(check.id, proof.note(launch))
