"""What every runner step shares: ansible-runner plays over a step's hosts, the hosts' outcomes, setup errors, notes.

Each play names its hosts by groups of its own (``accept_step``, and the playbook's other groups), written into an
inventory file beside the user's: a host pattern of one group costs one look-up, where a pattern listing N host
names costs Ansible a scan of the whole inventory per name (N x inventory). Plays run with pipelining on, facts off
and at most ``Session.forks`` forks. A step on many hosts runs as a host job (:mod:`validators.run.jobs`): two raw
calls per host (start, collect), its hosts split into shards of at most ``Session.shard_hosts``, up to
``Session.shards`` ansible-runner processes side by side, since one ansible-playbook process handles its hosts' tasks
one after another (its strategy loop is one thread).

A host where a tool could not run (unreachable, binary missing, mount absent) is recorded in ``setup-errors.json``
against the checks that needed it, so it is reported as a setup error and never as a measured miss. What the runner
did that a reader of the results should know (a perftest pair measured on its second attempt, a late start) goes to
``runner-notes.json``.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import ansible_runner
import yaml

from blueprints.blueprint import Blueprint, Check
from validators.inventory import Inventory
from validators.run.jobs import Collected, Job, Record, payload, script, spec_text, unpack

PLAYBOOKS = Path(__file__).resolve().parent.parent / "playbooks"
Progress = Callable[[str, str], None]  # (step, message)

FORKS = 32  # per ansible-playbook process: a host job's calls return at once or wait on the host, never compute
SHARD_HOSTS = 256  # hosts per ansible-playbook process before a step is split
# The common start of an aligned job: time for every shard to start every host's job, from the runner's own cost
# (ansible-playbook's start and the first SSH connections, then one start call per host in its shard, measured at
# 10-15 ms of the controller's main process per host and call: tests/bench_accept_runner.py), with room to spare.
# Only the first connections wait on the hosts, so only they stretch with --timeout-scale: the controller's own
# share does not. Measured in the lab (three TCG guests on a loaded 2-core controller, --timeout-scale 4; every
# aligned job of a full accept run, timings.json, 2026-12-06): the last host's job had started 1.1-2.6 s after the
# start play's launch, where the margin was 30.1 s (10 + 5 x 4 + 3 x 0.05); at 11.2 s (3 + 2 x 4 + 0.15) the earliest
# host still waited 7.8-9.5 s of it (a clean-clone CI, 2026-12-06). Now 3 + 1 x 4 + 0.15 = 7.2 s there, 2.7 times
# the slowest start seen; a job that does begin late is named in the notes, never dropped.
START_BASE_S = 3.0
START_CONNECT_S = 1.0
START_PER_HOST_S = 0.05
LATE_NOTE_MS = 1000  # a job that began this much after the common start is named in the notes (accept_job.sh)


@dataclass(frozen=True)
class StepTiming:
    """Where one step's time went (``timings.json``): its wall time over how many hosts; for an aligned job the
    common start's margin and the least time any host's job still waited for it (the margin left unused); for a
    perftest job each wave's slot and the most of it any client used (from the wave's start to the client's end)."""

    step: str
    seconds: float
    hosts: int
    start_margin_s: float | None = None
    least_wait_s: float | None = None
    slot_s: float | None = None
    most_slot_used_s: float | None = None


@dataclass
class HostOutcome:
    """How a play went on one host: the tasks that failed (in their own words), whether it was reachable, and the
    failures of a task's earlier tries (``until``/``retries``); for a host job also what the job recorded, per key
    (a perftest pair, a launch). What the tools said is in the files the job or playbook wrote, never here."""

    failed: list[str] = field(default_factory=list)
    unreachable: str | None = None
    retried: list[str] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    collected: bool = False

    @property
    def problem(self) -> str | None:
        if self.unreachable is not None:
            return f"unreachable: {self.unreachable}"
        return self.failed[0] if self.failed else None

    def failed_for(self, key: str) -> list[str]:
        return [r.words for r in self.records if r.kind == "failed" and r.key == key]

    def retried_for(self, key: str) -> list[str]:
        return [r.words for r in self.records if r.kind == "retried" and r.key == key]


TIMED_OUT = 124  # timeout(1)'s exit status for a command it killed


def last_line(path: Path) -> str:
    """A tool's last words: the last non-empty line of its output file ("" when there is none or no file)."""
    last = ""
    if path.is_file():
        with path.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                last = line.strip() or last
    return last


def failure(task: str, res: dict[str, Any]) -> str:
    """A failed task in the tool's own last words (the task's name only labels it)."""
    text = str(res.get("msg") or res.get("stderr") or res.get("stdout") or "failed").strip()
    output = str(res.get("stderr") or res.get("stdout") or "").strip()
    if text == "non-zero return code" and output:  # the command module's words; the tool's own say why
        text = f"exit {res.get('rc')}: {output.splitlines()[-1].strip()}"
    cmd = res.get("cmd")
    program = (cmd[0] if isinstance(cmd, list) else str(cmd).split()[0]) if cmd else None
    not_run = "No such file or directory" in text or (text == "Error executing command." and str(res.get("rc")) == "2"
                                                      and not res.get("stdout") and not res.get("stderr"))
    if program and not_run:  # the command module could not start the program (ENOENT)
        text = f"{program}: command not found"
    return f"{task}: {text.splitlines()[-1] if text else 'failed'}"


def ansible_env(bp: Blueprint) -> dict[str, str]:
    """Ansible's settings for every play. SSH host keys are checked on every target but the lab, whose VMs make new
    keys at each boot (its inventory also turns checking off per host: stacks/lab/inventory.py). Pipelining sends a
    module over the connection it runs on (no temporary file, no extra SSH calls); no play gathers facts."""
    return {"ANSIBLE_RETRY_FILES_ENABLED": "False", "ANSIBLE_NOCOLOR": "True",
            "ANSIBLE_HOST_KEY_CHECKING": "False" if bp.target.provider == "lab" else "True",
            "ANSIBLE_PIPELINING": "True", "ANSIBLE_GATHERING": "explicit"}


def shard(hosts: list[str], most: int, per_shard: int) -> list[list[str]]:
    """``hosts`` in at most ``most`` shards of at most ``per_shard`` hosts where that many shards allow it, evenly."""
    count = max(1, min(most, math.ceil(len(hosts) / max(1, per_shard))))
    size = math.ceil(len(hosts) / count)
    return [hosts[i:i + size] for i in range(0, len(hosts), size)]


def start_margin_s(hosts: int, scale: float) -> float:
    """How long after the runner starts a shard of ``hosts`` every host's job has been started, with room: the
    controller's share as measured, the first connections' share stretched by ``scale`` (slow hosts)."""
    return START_BASE_S + START_CONNECT_S * scale + hosts * START_PER_HOST_S


class Session:
    """One acceptance run's runner state: the Blueprint, the inventory, the results folder and what went wrong."""

    def __init__(self, bp: Blueprint, build_dir: Path, inventory: Inventory, results: Path,
                 progress: Progress, timeout_scale: float = 1.0, forks: int = FORKS, shards: int | None = None,
                 shard_hosts: int = SHARD_HOSTS) -> None:
        self.bp = bp
        self.build_dir = build_dir
        self.inventory = inventory
        self.results = results
        self._progress = progress
        self._lock = threading.Lock()
        self._cancel = threading.Event()  # a signal reached one step: the steps run beside it end too
        self.scale = timeout_scale
        self.forks = forks
        self.shards = shards if shards is not None else max(1, (os.cpu_count() or 2) // 2)
        self.shard_hosts = shard_hosts
        self.setup_errors: dict[str, dict[str, str]] = {}
        self.notes: dict[str, list[str]] = {}
        self.fio_window: tuple[float, float] | None = None  # wall-clock start and end of the fio workloads
        self.fio_started = False  # a fio job was started: its scratch files are removed at the run's end
        self.rdma: dict[str, dict[int, dict[str, Any]]] = {}  # host -> rail -> what the rdma role recorded
        self.timings: list[StepTiming] = []

    def progress(self, step: str, message: str) -> None:
        with self._lock:
            self._progress(step, message)

    def check(self, check_id: str) -> Check | None:
        """The Blueprint's check of that id, or None."""
        return next((c for c in self.bp.acceptance.checks if c.id == check_id), None)

    def side_by_side(self, *steps: Callable[[], None]) -> None:
        """Run ``steps`` (each one or more plays or jobs on hosts of their own) at once, each in a thread of its own,
        and wait for all; a signal to this process cancels every one of them, and a step's own error is raised once
        all have ended."""
        errors: list[BaseException] = []

        def guarded(step: Callable[[], None]) -> None:
            try:
                step()
            except BaseException as err:  # raised again in the caller's thread, once every step ended
                errors.append(err)

        threads = [threading.Thread(target=guarded, args=(s,), name="accept-side-by-side", daemon=True)
                   for s in steps]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.5)
        except BaseException:
            self._cancel.set()
            for thread in threads:
                thread.join()
            raise
        if errors:
            raise errors[0]

    def play(self, step: str, playbook: str, hosts: list[str], extravars: dict[str, Any], timeout: float,
             groups: dict[str, list[str]] | None = None) -> dict[str, HostOutcome]:
        """Run ``playbook`` on ``hosts`` (its group ``accept_step``, and ``groups`` beside it), at most ``forks`` at
        once; ``accept_results`` (the run's results folder, where the playbook fetches what the tools wrote) is set
        for it."""
        outcomes = {h: HostOutcome() for h in hosts}
        if not hosts:
            return outcomes
        data = self.results / ".ansible-runner" / step
        members: dict[str, dict[str, Any]] = {"accept_step": {h: None for h in hosts}}
        for name, names in (groups or {}).items():
            members[name] = {h: None for h in names}
        began = time.monotonic()
        self._run([_Shard(data, hosts, members)], playbook, {"accept_results": str(self.results), **extravars},
                  outcomes, int(timeout * self.scale) + 60, step, None)
        self.timings.append(StepTiming(step, round(time.monotonic() - began, 1), len(hosts)))
        return outcomes

    def job(self, job: Job) -> dict[str, HostOutcome]:
        """Run a host job (:mod:`validators.run.jobs`) on every host of ``job.specs``, in shards side by side; each
        host's declared outputs land in the results folder, its records in its outcome. A host whose results did not
        come back is a failure of its outcome. ``job.limit_s`` bounds each host's job from its start (the caller
        scales it); the whole run may take the start margin, that, and a minute."""
        hosts = list(job.specs)
        outcomes = {h: HostOutcome() for h in hosts}
        if not hosts:
            return outcomes
        token = os.urandom(6).hex()
        shards = shard(hosts, self.shards, self.shard_hosts)
        data = self.results / ".ansible-runner" / job.step
        runs = []
        for k, part in enumerate(shards):
            members = {"accept_step": {h: {
                "accept_job_dir": f"/tmp/clustersmith-accept-{job.step}-{token}-{i}",
                "accept_job_spec": spec_text({**job.specs[h], "job_limit_s": job.limit_s})}
                for i, h in enumerate(part, start=sum(len(s) for s in shards[:k]))}}
            runs.append(_Shard(data / f"shard{k}" if len(shards) > 1 else data, part, members))
        margin = start_margin_s(max(len(s) for s in shards), self.scale)
        t0 = time.time() + margin if job.aligned else 0.0

        def collect(host: str, archive: bytes) -> None:
            got = unpack(archive, host, self.results, job.outputs)
            o = outcomes[host]
            o.collected = True
            o.records = got.records
            o.failed.extend(r.words for r in got.records if r.kind == "failed" and r.key == "-")
            o.retried.extend(r.words for r in got.records if r.kind == "retried" and r.key == "-")
            if got.refused:
                o.failed.append(f"the job wrote what the step does not take: {', '.join(got.refused[:5])}")
            if got.status not in (None, "0") and not any(r.kind == "failed" for r in got.records):
                o.failed.append(f"the step's job ended {got.status}" + (f": {got.last_words}" if got.last_words
                                                                           else " and said nothing"))

        began = time.monotonic()
        self._run(runs, "job_now.yml" if job.short else "job.yml",
                  {"accept_job_script": script(job.body), "accept_job_t0": round(t0, 3)},
                  outcomes, int(margin + job.limit_s) + 60, job.step, collect)
        self.timings.append(_job_timing(job, round(time.monotonic() - began, 1), margin, outcomes))
        for o in outcomes.values():
            if o.problem is None and not o.collected:
                o.failed.append("the job's results did not come back")
        return outcomes

    def _run(self, shards: list[_Shard], playbook: str, extravars: dict[str, Any], outcomes: dict[str, HostOutcome],
             limit: int, step: str, collect: Callable[[str, bytes], None] | None) -> None:
        """Each shard's ansible-runner run in a thread of its own, side by side, each ended after ``limit`` s; a
        signal to this process (Ctrl-C, SIGTERM) cancels them all before it goes on."""
        cancel = threading.Event()

        def on_event(event: dict[str, Any]) -> bool:
            ed = event.get("event_data", {})
            host, task, res = ed.get("host"), ed.get("task", ""), ed.get("res", {})
            kind = event.get("event", "")
            if host not in outcomes:
                return True
            o = outcomes[host]
            if kind in ("runner_on_failed", "runner_item_on_failed") and not ed.get("ignore_errors"):
                o.failed.append(failure(task, res))
            elif kind == "runner_retry":
                o.retried.append(failure(task, res))
            elif kind == "runner_on_unreachable":
                o.unreachable = str(res.get("msg", "unreachable")).strip()
            elif kind == "runner_on_ok" and collect is not None and isinstance(res, dict):
                archive = payload(str(res.get("stdout", "")))
                if archive is not None:
                    collect(host, archive)
                    self.progress(step, f"{host}: collected")
                    return False  # the archive is in the results folder now; no copy in the runner's artifacts
            if kind in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable"):
                self.progress(step, f"{host}: {task} {'ok' if kind == 'runner_on_ok' else kind[10:]}")
            # a host job keeps in the runner's artifacts only what went wrong: two calls per host add up
            return collect is None or kind not in ("runner_on_ok", "runner_on_start")

        def run_shard(part: _Shard, statuses: list[str]) -> None:
            part.data.mkdir(parents=True, exist_ok=True)
            overlay = part.data / "step-inventory.yml"
            overlay.write_text(yaml.safe_dump({"all": {"children": {
                name: {"hosts": hosts} for name, hosts in part.groups.items()}}}, sort_keys=False),
                encoding="utf-8")
            run = ansible_runner.run(
                private_data_dir=str(part.data), project_dir=str(PLAYBOOKS), playbook=playbook,
                inventory=[self.inventory.path, str(overlay)], extravars=extravars,
                forks=max(1, min(len(part.hosts), self.forks)), timeout=limit, quiet=True, event_handler=on_event,
                envvars=ansible_env(self.bp), cancel_callback=lambda: cancel.is_set() or self._cancel.is_set())
            statuses.append(str(run.status))

        threads = []
        for part in shards:
            statuses: list[str] = []
            thread = threading.Thread(target=run_shard, args=(part, statuses), name=f"accept-{step}", daemon=True)
            threads.append((thread, part, statuses))
            thread.start()
        try:
            for thread, _, _ in threads:
                while thread.is_alive():
                    thread.join(0.5)
        except BaseException:
            cancel.set()
            self._cancel.set()
            for thread, _, _ in threads:
                thread.join()
            raise
        for _, part, statuses in threads:
            status = statuses[0] if statuses else "an error (see the runner's artifacts)"
            for h in part.hosts:
                o = outcomes[h]
                if status == "timeout" and o.problem is None:
                    o.failed.append(f"timed out after {limit} s")
                elif status not in ("successful", "failed", "timeout"):
                    o.failed.append(f"ansible-runner ended {status}: see {part.data}")

    def record(self, check_ids: list[str], outcomes: dict[str, HostOutcome]) -> None:
        """Every host whose play went wrong, as a setup error of each check it served."""
        for host, o in outcomes.items():
            if o.problem is not None:
                for cid in check_ids:
                    self.setup_error(cid, host, o.problem)

    def late(self, check_ids: list[str], outcomes: dict[str, HostOutcome], what: str) -> None:
        """Note the hosts whose aligned job (or a perftest entry: its wave's start) began more than LATE_NOTE_MS after
        the planned start."""
        late = {h: int(r.words) for h, o in outcomes.items() for r in o.records
                if r.kind == "note" and r.key == "late_ms" and r.words.isdigit() and int(r.words) > LATE_NOTE_MS}
        if late:
            worst = max(late.values())
            names = ", ".join(sorted(late)[:10]) + (f" and {len(late) - 10} more" if len(late) > 10 else "")
            for cid in check_ids:
                self.note(cid, f"{what} began up to {worst / 1000:.1f} s after the planned start on {len(late)} "
                               f"host(s): {names}")

    def setup_error(self, check_id: str, where: str, why: str) -> None:
        with self._lock:
            self.setup_errors.setdefault(check_id, {})[where] = why

    def note(self, check_id: str, text: str) -> None:
        with self._lock:
            self.notes.setdefault(check_id, []).append(text)

    def write(self, *parts: str, text: str) -> None:
        path = self.results.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def finish(self) -> None:
        self.write("setup-errors.json", text=json.dumps(self.setup_errors, indent=2))
        self.write("runner-notes.json", text=json.dumps(self.notes, indent=2))
        self.write("timings.json", text=json.dumps([asdict(t) for t in self.timings], indent=2))


def _job_timing(job: Job, seconds: float, margin: float, outcomes: dict[str, HostOutcome]) -> StepTiming:
    """A host job's timing, from what its hosts recorded (``waited_ms``, ``slot_used_ms`` notes)."""
    def figures(key: str) -> list[float]:
        return [int(r.words) / 1000 for o in outcomes.values() for r in o.records
                if r.kind == "note" and r.key == key and r.words.isdigit()]
    waited, used = figures("waited_ms"), figures("slot_used_ms")
    return StepTiming(job.step, seconds, len(outcomes), start_margin_s=round(margin, 1) if job.aligned else None,
                      least_wait_s=min(waited) if waited else None, slot_s=job.slot_s or None,
                      most_slot_used_s=max(used) if used else None)


@dataclass
class _Shard:
    """One ansible-runner run: its folder, its hosts and the groups its inventory file gives them (host -> vars)."""

    data: Path
    hosts: list[str]
    groups: dict[str, dict[str, Any]]


__all__ = ["TIMED_OUT", "Collected", "HostOutcome", "Job", "Session", "StepTiming", "ansible_env", "failure",
           "last_line"]
