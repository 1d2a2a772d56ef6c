"""Benchmark: the acceptance runner's controller cost per host, before and after issue 20's host jobs, side by side.

Run: `nice -n 19 .venv/bin/python tests/bench_accept_runner.py [N ...]` (default 64 256; the issue's sizes are
64 256 1000 4000). Each size builds an inventory of N hosts with names of their own (``node-00001``...), every one
reached through Ansible's local connection, and runs two real steps through the real runner (ansible-runner,
ansible-playbook) on all of them:

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
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ansible_runner
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from blueprints.blueprint import Blueprint, FioWorkload  # noqa: E402
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


def one_size(n: int, folder: Path, bp: Blueprint, project: Path, log: Path, before: bool) -> list[dict[str, Any]]:
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
    write = WritePlan(kind="directory", path=str(scratch), destructive=True)

    def after_fio() -> int:
        fio.run(session, work, [], write)
        return sum(len(v) for v in session.setup_errors.values())

    got = measure(after_fio, log)
    row("fio", "after", got, len(list((results / "fio" / work.name).glob("*.json"))))
    fio.cleanup(session, write)
    for r in rows:
        r["shards"] = len(shard(hosts, session.shards, session.shard_hosts)) if r["design"] == "after" else 1
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--before-max", type=int, default=BEFORE_MAX,
                        help="largest N to run BASE's runner on (it forks a worker per host)")
    args = parser.parse_args()
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
            got = one_size(n, folder, bp, project, log, n <= args.before_max)
            for r in got:
                same = [x for x in got if x["step"] == r["step"] and x["design"] == "before"]
                ratio = f"{same[0]['controller'] / r['controller']:.1f}x" if same and r["design"] == "after" else ""
                h = 1000 / n
                over = f"  over BASE's own {r['limit']} s limit" if r.get("limit") and r["wall"] > r["limit"] else ""
                print(f"{n:>6} {r['step']:>5} {r['design']:>6} {r['wall']:>8.1f} {r['wall'] * h:>7.1f} "
                      f"{r['controller'] * h:>7.1f} {r['main'] * h:>7.1f} {r['host'] * h:>7.1f} "
                      f"{r['ok']:>4}/{n:<4}{'' if not ratio else '  ' + ratio}{over}", flush=True)
            if n > args.before_max:
                print(f"{n:>6}  before not run: it forks one worker per host ({n} at once)")
            rows += got
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
