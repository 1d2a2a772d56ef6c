"""What every runner step shares: one ansible-runner play per step, the hosts' outcomes, setup errors and notes.

A step's playbook runs on every host it concerns at once (forks = hosts), under a timeout. A host where a tool could
not run (unreachable, binary missing, mount absent) is recorded in ``setup-errors.json`` against the checks that
needed it, so it is reported as a setup error and never as a measured miss. What the runner did that a reader of the
results should know (a perftest pair measured on its second attempt) goes to ``runner-notes.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ansible_runner

from blueprints.blueprint import Blueprint, Check
from validators.inventory import Inventory

PLAYBOOKS = Path(__file__).resolve().parent.parent / "playbooks"
Progress = Callable[[str, str], None]  # (step, message)


@dataclass
class HostOutcome:
    """How a play went on one host: the tasks that failed (in their own words), whether it was reachable, and the
    failures of a task's earlier tries (``until``/``retries``). What the tools said is in the files the playbook
    fetched, never here."""

    failed: list[str] = field(default_factory=list)
    unreachable: str | None = None
    retried: list[str] = field(default_factory=list)

    @property
    def problem(self) -> str | None:
        if self.unreachable is not None:
            return f"unreachable: {self.unreachable}"
        return self.failed[0] if self.failed else None


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
    keys at each boot (its inventory also turns checking off per host: stacks/lab/inventory.py)."""
    return {"ANSIBLE_RETRY_FILES_ENABLED": "False", "ANSIBLE_NOCOLOR": "True",
            "ANSIBLE_HOST_KEY_CHECKING": "False" if bp.target.provider == "lab" else "True"}


class Session:
    """One acceptance run's runner state: the Blueprint, the inventory, the results folder and what went wrong."""

    def __init__(self, bp: Blueprint, build_dir: Path, inventory: Inventory, results: Path,
                 progress: Progress, timeout_scale: float = 1.0) -> None:
        self.bp = bp
        self.build_dir = build_dir
        self.inventory = inventory
        self.results = results
        self.progress = progress
        self.scale = timeout_scale
        self.setup_errors: dict[str, dict[str, str]] = {}
        self.notes: dict[str, list[str]] = {}
        self.fio_window: tuple[float, float] | None = None  # wall-clock start and end of the fio workloads
        self.rdma: dict[str, dict[int, dict[str, Any]]] = {}  # host -> rail -> what the rdma role recorded

    def check(self, check_id: str) -> Check | None:
        """The Blueprint's check of that id, or None."""
        return next((c for c in self.bp.acceptance.checks if c.id == check_id), None)

    def play(self, step: str, playbook: str, hosts: list[str], extravars: dict[str, Any],
             timeout: float) -> dict[str, HostOutcome]:
        """Run ``playbook`` on ``hosts`` at once; ``accept_hosts`` and ``accept_results`` (this step's folder of the
        run's results, where the playbook fetches what the tools wrote) are set for it."""
        outcomes = {h: HostOutcome() for h in hosts}
        if not hosts:
            return outcomes
        data = self.results / ".ansible-runner" / step
        data.mkdir(parents=True, exist_ok=True)

        def on_event(event: dict[str, Any]) -> bool:
            ed = event.get("event_data", {})
            host, task, res = ed.get("host"), ed.get("task", ""), ed.get("res", {})
            kind = event.get("event", "")
            if host in outcomes:
                if kind in ("runner_on_failed", "runner_item_on_failed") and not ed.get("ignore_errors"):
                    outcomes[host].failed.append(failure(task, res))
                elif kind == "runner_retry":
                    outcomes[host].retried.append(failure(task, res))
                elif kind == "runner_on_unreachable":
                    outcomes[host].unreachable = str(res.get("msg", "unreachable")).strip()
                if kind in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable"):
                    self.progress(step, f"{host}: {task} {'ok' if kind == 'runner_on_ok' else kind[10:]}")
            return True

        limit = int(timeout * self.scale) + 60
        run = ansible_runner.run(
            private_data_dir=str(data), project_dir=str(PLAYBOOKS), playbook=playbook,
            inventory=self.inventory.path, extravars={"accept_results": str(self.results), **extravars,
                                                      "accept_hosts": hosts},
            forks=max(len(hosts), 5), timeout=limit, quiet=True, event_handler=on_event,
            envvars=ansible_env(self.bp),
        )
        if run.status == "timeout":
            for o in outcomes.values():
                if o.problem is None:
                    o.failed.append(f"timed out after {limit} s")
        elif run.status not in ("successful", "failed"):
            for o in outcomes.values():
                o.failed.append(f"ansible-runner ended {run.status}: see {data}")
        return outcomes

    def record(self, check_ids: list[str], outcomes: dict[str, HostOutcome]) -> None:
        """Every host whose play went wrong, as a setup error of each check it served."""
        for host, o in outcomes.items():
            if o.problem is not None:
                for cid in check_ids:
                    self.setup_error(cid, host, o.problem)

    def setup_error(self, check_id: str, where: str, why: str) -> None:
        self.setup_errors.setdefault(check_id, {})[where] = why

    def note(self, check_id: str, text: str) -> None:
        self.notes.setdefault(check_id, []).append(text)

    def write(self, *parts: str, text: str) -> None:
        path = self.results.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def finish(self) -> None:
        self.write("setup-errors.json", text=json.dumps(self.setup_errors, indent=2))
        self.write("runner-notes.json", text=json.dumps(self.notes, indent=2))
