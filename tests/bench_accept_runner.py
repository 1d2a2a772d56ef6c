"""Benchmark: the acceptance runner's controller cost per host, before and after issue 20's host jobs, side by side.

Run: `nice -n 19 .venv/bin/python tests/bench_accept_runner.py [N ...]` (default 64 256; the issue's sizes are 64 256
1000 4000; sizes above ``--fio-max``, 1,000 by default, run the facts step only: one real fio per host at once on this
one machine would not fit its memory). Each size builds an inventory of N hosts with names of their own
(``node-00001``...), every one reached through Ansible's local connection, and runs two real steps through the real
runner (ansible-runner, ansible-playbook) on all of them:

- ``facts``: what every acceptance run does first on every host (a step that reads and brings back);
- ``fio``: the lab's seq_read workload cut to one 1 MiB file read for 1 s (a step that starts a tool on every host
  at once, waits for it, and brings back its report and logs).

*before* is the runner of main at BASE: that commit's playbook (from git), played the way its ``Session.play`` did
(the hosts as a list pattern, forks = hosts, one ansible-runner run), here without its time limit so that it is
measured whole; where it took longer than BASE's own limit for the step (which would have ended it, every host a
setup error), the row says so. *after* is this checkout's runner
(``validators.run``: host jobs, a group per step, bounded forks, shards: the defaults for this machine's cores).

Every host is this machine, so what a host does (the modules' and tools' processes) is measured apart from the
controller: every command Ansible starts goes through ``ANSIBLE_EXECUTABLE``, a shell that times itself and all it
waits for (/usr/bin/time), and a job started in the background leaves the process tree; controller CPU = all the CPU
of this process and its children less that host share. ``main`` is ansible-playbook's own process (the strategy loop,
one thread: what one shard can do per second), sampled from /proc. Not measured here: an SSH client per call
(``before`` makes 6-20 calls per host and step plus file transfers, ``after`` makes 2).

The issue's target is a controller cost per host that stays flat from 64 to 4,000 hosts; README.md ("Acceptance at
scale") projects 1,000 and 10,000 nodes from these figures.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ansible_runner
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from blueprints.blueprint import Blueprint, FioWorkload  # noqa: E402
from blueprints.blueprint.check_args import FioArgs, NcclArgs, PerftestArgs, args_as  # noqa: E402
from blueprints.loader import load_requirements  # noqa: E402
from blueprints.planner import plan  # noqa: E402
from blueprints.render.acceptance import FioTarget, fio_job  # noqa: E402
from blueprints.units import Size  # noqa: E402
from validators.inventory import ensure_ansible, load_inventory  # noqa: E402
from validators.run import facts, fio  # noqa: E402
from validators.run.plumbing import Session, shard  # noqa: E402
from validators.safety import WritePlan  # noqa: E402

BASE = "e1101e0"  # main when issue 20's runner work began: its validators/playbooks and Session.play
SIZES = (64, 256)
BEFORE_MAX = 1000  # before forks one worker per host; 4,000 at once would not fit this machine's memory
# fio's step starts one real fio per host at one common start, every host being this machine: about 9 MiB a host
# (fio 3.33 on this machine, /proc/<pid>/smaps_rollup of a 1 MiB read: 2.4 MiB private to the main process, 1.1 to
# its job, 5.2 shared between the two), so 4,000 at once (35 GiB) would not fit a 24 GiB machine either
FIO_MAX = 1000
CALLS = {"facts": 1, "fio": 2}  # raw calls per host of each step in the after design (job_now.yml, job.yml)
UNLIMITED_S = 7200  # before runs to its end here, to measure it whole; BASE's own limit is shown beside it
TIMED_SHELL = """#!/bin/sh
# every command Ansible starts on a host, timed once (a nested shell is not timed again)
if [ -n "${CLUSTERSMITH_BENCH_TIMED:-}" ]; then exec /bin/sh "$@"; fi
export CLUSTERSMITH_BENCH_TIMED=1
exec /usr/bin/time -a -o "%s" -f "%%U %%S" /bin/sh "$@"
"""


def cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class MainSampler:
    """The CPU seconds of each ansible-playbook process this process started (not their workers), from /proc."""

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.tick = os.sysconf("SC_CLK_TCK")

    def run(self) -> None:
        me = os.getpid()
        while not self.stop.wait(0.1):
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == me:  # ppid: a child of this process, which is what pexpect starts
                    self.seen[int(entry.name)] = (int(fields[11]) + int(fields[12])) / self.tick

    def __enter__(self) -> MainSampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def host_cpu(log: Path) -> float:
    total = 0.0
    for line in log.read_text().splitlines() if log.is_file() else []:
        parts = line.split()
        if len(parts) == 2:
            try:
                total += float(parts[0]) + float(parts[1])
            except ValueError:
                continue
    return total


def measure(run: Callable[[], int], log: Path) -> dict[str, float]:
    log.write_text("")
    before, began = cpu(), time.perf_counter()
    with MainSampler() as sampler:
        failed = run()
    wall, total = time.perf_counter() - began, cpu() - before
    host = host_cpu(log)
    return {"wall": wall, "controller": total - host, "main": sum(sampler.seen.values()), "host": host,
            "failed": failed}


def old_playbooks(into: Path) -> Path:
    """BASE's validators/playbooks, from git."""
    into.mkdir(parents=True)
    for name in ("facts.yml", "fio.yml"):
        text = subprocess.run(["git", "show", f"{BASE}:validators/playbooks/{name}"], cwd=REPO, check=True,
                              capture_output=True, text=True).stdout
        (into / name).write_text(text)
    return into


def old_play(project: Path, data: Path, playbook: str, inventory: Path, hosts: list[str], results: Path,
             extravars: dict[str, Any], timeout: float) -> int:
    """BASE's Session.play: ``accept_hosts`` a list of N names, forks = hosts, one run; returns the hosts that
    failed."""
    failed: set[str] = set()

    def on_event(event: dict[str, Any]) -> bool:
        ed = event.get("event_data", {})
        if event.get("event") in ("runner_on_failed", "runner_on_unreachable") and not ed.get("ignore_errors"):
            failed.add(str(ed.get("host")))
        return True

    data.mkdir(parents=True, exist_ok=True)
    ansible_runner.run(private_data_dir=str(data), project_dir=str(project), playbook=playbook,
                       inventory=str(inventory), extravars={"accept_results": str(results), **extravars,
                                                            "accept_hosts": hosts},
                       forks=max(len(hosts), 5), timeout=int(timeout) + 60, quiet=True, event_handler=on_event,
                       envvars={"ANSIBLE_RETRY_FILES_ENABLED": "False", "ANSIBLE_NOCOLOR": "True",
                                "ANSIBLE_HOST_KEY_CHECKING": "False"})
    return len(failed)


def workload(bp: Blueprint) -> FioWorkload:
    """The lab's seq_read, cut to one 1 MiB file read with 1 MiB blocks for 1 s, so N fio processes on this one
    machine cost little beside the runner."""
    seq = next(w for w in bp.acceptance.workloads if w.name == "seq_read")
    return seq.model_copy(update={
        "size": seq.size.model_copy(update={"value": Size.parse("1MiB")}),
        "runtime_s": seq.runtime_s.model_copy(update={"value": 1}), "ramp_s": 0,
        "iodepth": seq.iodepth.model_copy(update={"value": 1})})


def one_size(n: int, folder: Path, bp: Blueprint, project: Path, log: Path, before: bool,
             with_fio: bool = True) -> list[dict[str, Any]]:
    hosts = [f"node-{i:05d}" for i in range(1, n + 1)]
    inventory = folder / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"},
        "children": {"gpu_clients": {"hosts": {h: None for h in hosts}}}}}))
    scratch = folder / "scratch"
    scratch.mkdir()
    work = workload(bp)
    rows: list[dict[str, Any]] = []

    def row(step: str, design: str, got: dict[str, float], ok: int) -> None:
        rows.append({"hosts": n, "step": step, "design": design, **got, "ok": ok})

    if before:
        results = folder / "before"
        results.mkdir()
        got = measure(lambda: old_play(project, folder / "runner-before-facts", "facts.yml", inventory, hosts,
                                       results, {}, UNLIMITED_S), log)
        row("facts", "before", got, len(list((results / "facts").glob("*.json"))))
        rows[-1]["limit"] = 120 + 60  # BASE's facts step: Session.play(..., 120), ended after timeout + 60 s
        job = folder / "seq_read.fio"
        job.write_text(fio_job(bp, work, FioTarget(kind="directory", path=str(scratch))))
        dest = results / "fio" / work.name
        dest.mkdir(parents=True)
        got = measure(lambda: old_play(project, folder / "runner-before-fio", "fio.yml", inventory, hosts, results, {
            "accept_workload": work.name, "accept_job_file": str(job), "accept_fio_results": str(dest),
            "accept_target_kind": "directory", "accept_target": str(scratch), "accept_mount": "",
            "accept_scratch_nqns": [], "accept_timeout": UNLIMITED_S}, UNLIMITED_S), log)
        row("fio", "before", got, len(list(dest.glob("*.json"))))
        fio_timeout = work.runtime_s.value + work.ramp_s + 60 + work.size.value.value * work.numjobs.value / 2e6
        rows[-1]["limit"] = int(fio_timeout) + 60  # BASE's fio step, as its run() bounded it
        for f in scratch.iterdir():
            f.unlink()
    results = folder / "after"
    results.mkdir()
    session = Session(bp, folder, load_inventory(inventory), results, lambda step, message: None)

    def after_facts() -> int:
        facts.run(session)
        return len(session.setup_errors)

    got = measure(after_facts, log)
    row("facts", "after", got, len(list((results / "facts").glob("*.json"))))
    if not with_fio:
        return rows
    write = WritePlan(kind="directory", path=str(scratch), destructive=True)

    def after_fio() -> int:
        # the checks the workload serves, as validators.accept passes them: a host without its result is then a
        # setup error here as in a real run (with no checks, the runner has nothing to record it under)
        fio.run(session, work, [c for c in bp.acceptance.checks if c.tool == "fio"
                                and args_as(c.args, FioArgs).workload == work.name], write)
        return sum(len(v) for v in session.setup_errors.values())

    got = measure(after_fio, log)
    row("fio", "after", got, len(list((results / "fio" / work.name).glob("*.json"))))
    why = Counter(f"{check}: {re.sub(r'node-[0-9]+', 'node-N', message)[:300]}"
                  for check, hosts_why in session.setup_errors.items() for message in hosts_why.values())
    if why:  # a host without its result is the runner's setup error: say which, so a bench run is never read blind
        print(f"{n:>6}   fio: {sum(why.values())} setup error(s), by message:\n" +
              "\n".join(f"         {count} x {message}" for message, count in why.most_common(5)), flush=True)
    fio.cleanup(session, write)
    for r in rows:
        r["shards"] = len(shard(hosts, session.shards, session.shard_hosts)) if r["design"] == "after" else 1
    return rows


# -- projection -------------------------------------------------------------------------------------------------
CORES = 32  # the controller the projection assumes (issue 20: under 60 minutes for 10,000 nodes on 32 cores)
NCCL_ITERATIONS = 1 + 2 * 20 + 2  # per size: -w 1 warmup, -n 20 out of place and 20 in place, -c 1 check each


def scaled_plan(nodes: int) -> Blueprint:
    """examples/cv-training-500tb.yaml at ``nodes`` GPU nodes (8 GPUs each), its targets scaled with it, as
    tests/bench_planner.py scales it."""
    doc = yaml.safe_load((REPO / "examples" / "cv-training-500tb.yaml").read_text())
    scale = nodes * 8 / 512
    doc["metadata"]["name"] = f"bench-{nodes}"
    doc["compute"]["gpus"] = nodes * 8
    doc["performance"]["storage"]["read_throughput"] = f">={500 * scale:.0f}GB/s"
    doc["performance"]["storage"]["write_throughput"] = f">={100 * scale:.0f}GB/s"
    doc["data"]["training_set"] = f"{500 * scale:.0f}TB"
    doc["data"]["validation_set"] = f"{50 * scale:.0f}TB"
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(yaml.safe_dump(doc, sort_keys=False))
        return plan(load_requirements(spec))


def projection(nodes: int, call_s: float, main_s: float, module_s: float) -> list[tuple[str, float, str]]:
    """Each step's projected wall seconds at ``nodes`` GPU nodes on a CORES-core controller, with the arithmetic:
    a host job's calls cost ``call_s`` of controller CPU and ``main_s`` of one ansible-playbook process per host and
    call (measured), spread over CORES cores and ``Session``'s shards; tool times from the plan."""
    from blueprints.hosts import expand
    from validators.nccl_run import pair_waves
    from validators.run import perftest
    from validators.run.plumbing import SHARD_HOSTS, START_BASE_S, START_CONNECT_S, START_PER_HOST_S, start_margin_s

    bp = scaled_plan(nodes)
    hosts = list(expand(bp.hosts))
    clients = [h.name for h in hosts if h.role == "gpu_client"]
    targets = {h.name: h.rail_nics for h in hosts if h.role == "storage_target"}

    def per_shard(n: int) -> int:
        return math.ceil(n / len(shard([str(i) for i in range(n)], CORES // 2, SHARD_HOSTS)))

    def orch(n: int, calls: int) -> tuple[float, str]:
        per = per_shard(n)
        cpu, serial = n * calls * call_s / CORES, per * calls * main_s
        return max(cpu, serial), (f"max({n} x {calls} x {call_s * 1000:.0f} ms / {CORES}, {per} x {calls} x "
                                  f"{main_s * 1000:.0f} ms)")

    def margin(n: int) -> tuple[float, str]:
        per = per_shard(n)
        return start_margin_s(per, 1.0), f"{START_BASE_S:g} + {START_CONNECT_S:g} + {per} x {START_PER_HOST_S:g}"

    rows: list[tuple[str, float, str]] = []
    t, how = orch(len(hosts), 1)
    rows.append(("facts (every host, 1 call)", t, how))
    rows.append(("ceph (one monitor, 3 calls of 6-11 s under TCG)", 33.0, "3 x 11 s (CEPH_MEASURED.md), at most"))
    assert bp.acceptance.footprint is not None
    fill = bp.acceptance.footprint.fill_time.value.value
    for k, w in enumerate(bp.acceptance.workloads):
        (m, mhow), (c, chow) = margin(len(clients)), orch(len(clients), 1)
        if w.time_based:
            tool = w.ramp_s + w.runtime_s.value + (fill if k == 0 else 0.0)
            what = f"ramp and runtime {w.ramp_s + w.runtime_s.value}" + (f" + laying out the files {fill:.1f}"
                                                                           if k == 0 else "")
        else:  # the cache check: its own (smaller) files laid out, then read twice; runtime_s only bounds a pass
            total = len(clients) * w.numjobs.value * w.size.value.value
            lay, read = total / bp.storage.write_throughput.value.value, total / bp.storage.read_throughput.value.value
            tool = lay + 2 * read
            what = (f"laying out {len(clients)} x {w.numjobs.value} x {w.size.value} {lay:.1f} + 2 passes x "
                    f"{read:.1f} at the design's read throughput")
        rows.append((f"fio {w.name} ({len(clients)} clients at once)", m + tool + c,
                     f"start {mhow} + {what} + collect {chow}"))
    waves = perftest.compute_waves(clients, bp.compute.rails.value) + \
        perftest.storage_waves(clients, bp.storage_fabric.client_rails.value, targets)
    check = next(c for c in bp.acceptance.checks if c.id == "rdma.write_bw")
    slot = round(args_as(check.args, PerftestArgs).duration.value) + perftest.SLOT_EXTRA_S
    both = len(clients) + len(targets)
    (m, mhow), (c, chow) = margin(both), orch(both, 1)
    rows.append((f"perftest ({len(waves)} waves over {both} hosts)", m + len(waves) * slot + c,
                 f"start {mhow} + {len(waves)} waves x {slot} s + collect {chow}"))
    t, how = orch(len(clients), 2)
    rows.append(("probe (paths settled, 2 calls)", t + 5.0, f"{how} + Prometheus on one host, 5 s"))
    nccl = next(c for c in bp.acceptance.checks if c.id == "nccl.allreduce_busbw")
    n_ranks = len(clients) * bp.compute.gpus_per_node
    algbw = nccl.threshold * 1e9 * n_ranks / (2 * (n_ranks - 1))
    sweep = args_as(nccl.args, NcclArgs)
    sizes, size = [], sweep.minbytes.value
    while size <= int(sweep.maxbytes.value):
        sizes.append(size)
        size *= 2
    data = sum(sizes) * NCCL_ITERATIONS / algbw
    t, how = orch(len(clients), 1)
    rows.append(("nccl pre-flight (1 call)", t, how))
    rows.append((f"nccl all_reduce over {n_ranks} ranks, collectives only", data + 3 * module_s + 2 * call_s,
                 f"{sum(sizes) / 2**30:g} GiB x {NCCL_ITERATIONS} iterations / algbw {algbw / 1e9:.0f} GB/s "
                 f"(busbw {nccl.threshold:g} x n/(2(n-1))); launch and setup across {n_ranks} ranks not measured "
                 f"(the runner allows {900} s)"))
    t, how = orch(len(clients), 1)
    rows.append(("cleanup (1 call)", t, how))
    sweep = pair_waves(clients)
    launchers = max(len(w) for w in sweep)
    stage = launchers * 3 * module_s / CORES
    s_t, s_how = orch(launchers, 2)
    rows.append((f"(only on a miss) pairwise sweep, {len(sweep)} waves of {launchers} pairs",
                 len(sweep) * (stage + s_t + data), f"{len(sweep)} x (stage {launchers} x 3 module calls x "
                 f"{module_s * 1000:.0f} ms / {CORES} + job {s_how} + collectives {data:.1f} s)"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--before-max", type=int, default=BEFORE_MAX,
                        help="largest N to run BASE's runner on (it forks a worker per host)")
    parser.add_argument("--fio-max", type=int, default=FIO_MAX,
                        help="largest N to run the fio step on (one real fio per host, all on this machine)")
    parser.add_argument("--project", type=Path, metavar="OUTPUT",
                        help="only print the projection, from the rows (its last JSON line) of an earlier run's output")
    args = parser.parse_args()
    if args.project:
        print_projection(json.loads(args.project.read_text().strip().splitlines()[-1]))
        return
    ensure_ansible()
    bp = plan(load_requirements(REPO / "examples" / "lab.yaml"))
    print(f"controller: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; before = {BASE}, after = this "
          f"checkout; per host: ms of wall, controller CPU, ansible-playbook main process CPU, host-side CPU")
    print(f"{'hosts':>6} {'step':>5} {'design':>6} {'wall s':>8} {'wall/h':>7} {'ctl/h':>7} {'main/h':>7} "
          f"{'host/h':>7} {'ok':>9}  ratio ctl/h before:after")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-accept-") as tmp:
        root = Path(tmp)
        project = old_playbooks(root / "before-playbooks")
        log = root / "host-cpu.log"
        shell = root / "timed-sh"
        shell.write_text(TIMED_SHELL % log)
        shell.chmod(0o755)
        os.environ["ANSIBLE_EXECUTABLE"] = str(shell)
        for n in args.sizes:
            folder = root / f"n{n}"
            folder.mkdir()
            got = one_size(n, folder, bp, project, log, n <= args.before_max, n <= args.fio_max)
            for r in got:
                same = [x for x in got if x["step"] == r["step"] and x["design"] == "before"]
                ratio = f"{same[0]['controller'] / r['controller']:.1f}x" if same and r["design"] == "after" else ""
                h = 1000 / n
                over = f"  over BASE's own {r['limit']} s limit" if r.get("limit") and r["wall"] > r["limit"] else ""
                print(f"{n:>6} {r['step']:>5} {r['design']:>6} {r['wall']:>8.1f} {r['wall'] * h:>7.1f} "
                      f"{r['controller'] * h:>7.1f} {r['main'] * h:>7.1f} {r['host'] * h:>7.1f} "
                      f"{r['ok']:>4}/{n:<4}{'' if not ratio else '  ' + ratio}{over}", flush=True)
            if n > args.before_max:
                print(f"{n:>6}  before not run (--before-max {args.before_max}: it forks one worker per host)")
            if n > args.fio_max:
                print(f"{n:>6}  fio not run (--fio-max {args.fio_max}: one real fio per host on this machine)")
            rows += got
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(rows))
    print_projection(rows)


def print_projection(rows: list[dict[str, Any]]) -> None:
    """The projection for 1,000 and 10,000 nodes from each step's after row at the largest size that ran it (and
    BASE's facts row for a module call)."""
    largest = max((r["hosts"] for r in rows if r["design"] == "after"), default=0)
    ran = {r["step"] for r in rows if r["design"] == "after"}
    after = [max((r for r in rows if r["design"] == "after" and r["step"] == step), key=lambda r: r["hosts"])
             for step in sorted(ran)]
    before = [r for r in rows if r["design"] == "before" and r["step"] == "facts" and r["ok"] == r["hosts"]]
    if not after:
        return
    per_call = {r["step"]: (r["controller"] / r["hosts"] / CALLS[r["step"]], r["main"] / r["hosts"] / CALLS[r["step"]])
                for r in after}
    call_s, main_s = max(c for c, _ in per_call.values()), max(m for _, m in per_call.values())
    module_s = before[-1]["controller"] / before[-1]["hosts"] / 6 if before else 2 * call_s
    module_from = "BASE's facts: 6 module tasks per host" if before else "taken as two raw calls: BASE not run"
    used = ", ".join(f"{r['step']} at {r['hosts']}" for r in after)
    print(f"\nprojection on a {CORES}-core controller, {CORES // 2} shards, from the after rows ({used} hosts; "
          f"largest size {largest}): {call_s * 1000:.0f} ms controller CPU and {main_s * 1000:.0f} ms of one "
          f"ansible-playbook process per host and call, a module call {module_s * 1000:.0f} ms ({module_from})")
    for nodes in (1000, 10000):
        steps = projection(nodes, call_s, main_s, module_s)
        total = sum(t for name, t, _ in steps if not name.startswith("(only"))
        print(f"\n{nodes} GPU nodes: {total:.0f} s = {total / 60:.1f} min, NCCL's launch and setup aside")
        for name, t, how in steps:
            print(f"  {t:>7.1f} s  {name}: {how}")


if __name__ == "__main__":
    main()
