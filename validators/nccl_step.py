"""The runner's NCCL step: the GPU pre-flight, nccl-tests over every GPU node, the pairwise sweep when the all-node
busbw misses its bar, and on the lab (GPUs emulated) the same launch proven with an MPI program. Decisions are
``validators.nccl_run``'s; this module plays ``playbooks/nccl.yml`` and lays out the results folder:

    nccl/preflight.json                 {host: {"gpus": n, "error": why nvidia-smi gave none}}
    nccl/all_reduce_perf.txt            the all-node all_reduce run (table and NCCL INFO lines, --tag-output)
    nccl/collectives/<test>.txt         the plan's other collectives over every node
    nccl/pairs/<a>+<b>.txt              the sweep's pair runs
    nccl/launch/mpi_ring.txt            the lab's launch proof
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from blueprints.blueprint import Blueprint, Check
from validators.checks.network import nccl_bytes
from validators.errors import ParseError
from validators.inventory import Inventory
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


class Outcome(Protocol):
    """What one host's tasks returned in a play (validators.runner.HostOutcome)."""

    ok: dict[str, list[dict[str, Any]]]
    unreachable: str | None

    @property
    def problem(self) -> str | None: ...


class Runner(Protocol):
    """The parts of validators.runner.Runner this step uses."""

    bp: Blueprint
    inventory: Inventory
    results: Path
    scale: float
    setup_errors: dict[str, dict[str, str]]
    notes: dict[str, list[str]]

    def _play(self, step: str, playbook: str, hosts: list[str], extravars: dict[str, Any],
              timeout: float) -> Mapping[str, Outcome]: ...

    def _write(self, *parts: str, text: str) -> None: ...

RUN_TIMEOUT_S = 900  # one nccl-tests sweep of 2G..8G; thousands of ranks take minutes to set up
LIST_TASK = "List the GPUs the driver exposes"
RUN_TASK = "Run each launch, its output into a log"
FETCH_TASK = "Fetch each log"


def run_nccl(runner: Runner, check: Check) -> None:
    lab = runner.bp.target.provider == "lab"
    try:
        launch = plan_launch(runner.bp, runner.inventory, rsh_agent=LAB_RSH_AGENT if lab else None)
    except LaunchError as exc:
        runner.setup_errors.setdefault(check.id, {})["inventory"] = str(exc)
        return
    if emulated(check):
        _prove_launch(runner, check, launch, lab)
        return
    if not _preflight(runner, check, launch):
        return
    all_reduce = runner.results / "nccl" / "all_reduce_perf.txt"
    others = runner.results / "nccl" / "collectives"
    runs = [{"log": f"{t}.txt", "argv": launch.argv([t, *sweep(check)]),
             "dest": str(all_reduce if t == "all_reduce_perf" else others / f"{t}.txt")} for t in collectives(check)]
    failed = _launch(runner, check, "nccl-all-nodes", {launch.launcher: (launch, runs)}, lab)
    if failed:
        for name, why in failed.items():
            runner.setup_errors.setdefault(check.id, {})[launch.launcher] = f"{name}: {why}"
        return
    busbw = _busbw(all_reduce, check)
    if busbw is not None and busbw < check.threshold and check.severity != "info" and len(launch.nodes) > 1:
        _pairwise(runner, check, launch, lab, busbw)


def _preflight(runner: Runner, check: Check, launch: Launch) -> bool:
    """``nvidia-smi -L`` on every node into nccl/preflight.json; True when each has its planned GPUs."""
    nodes = [n.name for n in launch.nodes]
    outcomes = runner._play("nccl-preflight", "nccl.yml", nodes, {"accept_preflight": nodes}, 120)
    counted: dict[str, GpuCount] = {}
    for host, o in outcomes.items():
        if LIST_TASK not in o.ok:  # unreachable, or the play failed before nvidia-smi ran
            runner.setup_errors.setdefault(check.id, {})[host] = o.problem or "the pre-flight did not run"
            continue
        res = o.ok.get(LIST_TASK, [{}])[-1]
        stdout = str(res.get("stdout", ""))
        error = None
        if res.get("rc") != 0:
            said = str(res.get("stderr") or res.get("msg") or stdout).strip().splitlines()
            error = f"nvidia-smi -L exited {res.get('rc')}: {said[-1] if said else 'no output'}"
        counted[host] = GpuCount(gpus=count_gpus(stdout), error=error)
    runner._write("nccl", "preflight.json", text=json.dumps({h: c.model_dump() for h, c in counted.items()},
                                                              indent=2))
    planned = launch.gpus_per_node
    return len(counted) == len(nodes) and all(c.gpus >= planned for c in counted.values())


def _launch(runner: Runner, check: Check, step: str, launches: dict[str, tuple[Launch, list[dict[str, Any]]]],
            lab: bool, program: str | None = None) -> dict[str, str]:
    """One play: each launcher runs its launches in turn; returns {log: why} for every run that did not end 0."""
    some = next(iter(launches.values()))[0]
    program_hosts = sorted({n.name for launch, _ in launches.values() for n in launch.nodes}) if program else []
    hosts = sorted(set(launches) | set(program_hosts))
    timeout = RUN_TIMEOUT_S * max(1, len(next(iter(launches.values()))[1]))
    outcomes = runner._play(step, "nccl.yml", hosts, {
        "accept_launchers": sorted(launches), "accept_launcher_tool": some.kind, "accept_workdir": WORKDIR,
        "accept_hostfiles": {h: launch.hostfile() for h, (launch, _) in launches.items()},
        "accept_runs": {h: runs for h, (_, runs) in launches.items()}, "accept_launch_key": lab,
        "accept_program_hosts": program_hosts, "accept_program": program or "",
        "accept_timeout": int(RUN_TIMEOUT_S * runner.scale)}, timeout)
    failed: dict[str, str] = {}
    for launcher, (_, runs) in launches.items():
        o = outcomes[launcher]
        done = {r["item"]["log"]: r for r in o.ok.get(RUN_TASK, []) if isinstance(r.get("item"), dict)}
        for run in runs:
            res = done.get(run["log"])
            if res is None:
                failed[run["log"]] = o.problem or "did not run"
            elif res.get("rc") != 0:
                failed[run["log"]] = _exit_reason(res.get("rc"), Path(run["dest"]))
            elif not Path(run["dest"]).is_file():
                fetched = next((r for r in o.ok.get(FETCH_TASK, []) if isinstance(r.get("item"), dict)
                                and r["item"].get("log") == run["log"]), {})
                failed[run["log"]] = f"exited 0, but its log was not fetched back ({fetched.get('msg', 'no reason')})"
    return failed


def _exit_reason(rc: object, log: Path) -> str:
    """The launch's exit status and the tool's own last words (the log's last line)."""
    if rc == 124:
        return f"timed out after {RUN_TIMEOUT_S} s"
    last = ""
    if log.is_file():
        with log.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                last = line.strip() or last
    return f"exited {rc}" + (f": {last}" if last else " with no output")


def _busbw(log: Path, check: Check) -> float | None:
    """The lowest out-of-place busbw at the plan's large sizes, as the rule reads it; None when there is none."""
    try:
        run = parse_nccl_file(log)
    except ParseError:
        return None
    large = [r.out_of_place.busbw for r in run.large(nccl_bytes(check.args.get("minbytes", "0")))
             if r.out_of_place is not None]
    return min(large) if large else None


def _pairwise(runner: Runner, check: Check, launch: Launch, lab: bool, busbw: float) -> None:
    """all_reduce on disjoint node pairs, a wave at a time, and the slow nodes named in the check's notes."""
    measured: dict[Pair, float | None] = {}
    for i, wave in enumerate(pair_waves([n.name for n in launch.nodes])):
        launches: dict[str, tuple[Launch, list[dict[str, Any]]]] = {}
        for a, b in wave:
            pair = launch.subset((a, b))
            dest = runner.results / "nccl" / "pairs" / f"{a}+{b}.txt"
            launches[pair.launcher] = (pair, [{"log": f"{a}+{b}.txt", "argv": pair.argv(["all_reduce_perf",
                                                                                         *sweep(check)]),
                                               "dest": str(dest)}])
        failed = _launch(runner, check, f"nccl-pairs-wave{i + 1}", launches, lab)
        for a, b in wave:
            measured[(a, b)] = None if f"{a}+{b}.txt" in failed else \
                _busbw(runner.results / "nccl" / "pairs" / f"{a}+{b}.txt", check)
    verdict = slow_nodes(measured, check.threshold)
    runner.notes.setdefault(check.id, []).append(
        f"all-node busbw {busbw:g} GB/s missed {check.threshold:g} GB/s; " + verdict.note(check.threshold)
        + f" ({len(measured)} pair run(s) in nccl/pairs/)")


def _prove_launch(runner: Runner, check: Check, launch: Launch, lab: bool) -> None:
    """The GPUs are emulated: start an MPI program (no NCCL) over the same launch, and judge its ranks."""
    log = runner.results / "nccl" / "launch" / "mpi_ring.txt"
    runs = [{"log": "mpi_ring.txt", "argv": launch.argv(["python3", f"{WORKDIR}/{PROOF_PROGRAM}"]),
             "dest": str(log)}]
    failed = _launch(runner, check, "nccl-launch-proof", {launch.launcher: (launch, runs)}, lab, PROOF_PROGRAM)
    if failed:
        runner.setup_errors.setdefault(check.id, {})[launch.launcher] = f"launch proof: {failed['mpi_ring.txt']}"
        return
    text = log.read_text(encoding="utf-8", errors="replace")
    proof = judge_launch_proof(text, launch)
    if proof.problems:
        last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "an empty log")
        runner.setup_errors.setdefault(check.id, {})[launch.launcher] = f"{proof.note(launch)} (log ends: {last})"
    else:
        runner.notes.setdefault(check.id, []).append(proof.note(launch))
