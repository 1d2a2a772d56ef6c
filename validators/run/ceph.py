"""Step ``ceph``: Ceph's own account of itself, read on one monitor host of the Blueprint's CephPlan (the check's
``args.monitor``: the planner's ``storage.ceph.daemons.monitor_hosts[0]``) with the admin keyring the ``ceph`` role
installs there. Three read-only calls (each costs 6-11 s of the ceph CLI's start and connect under the lab's TCG:
stacks/lab/CEPH_MEASURED.md):

    ceph/status.json              ceph status -f json
    ceph/osd-pool-ls-detail.json  ceph osd pool ls detail -f json
    ceph/osd-tree.json            ceph osd tree -f json (names each down or out OSD with its host)

Each output is fetched with its exit status (``.rc``) and stderr (``.err``) beside it, so ``--results`` re-judges
the same files. A call that did not run, ended non-zero, timed out, or printed what its parser refuses is a setup
error naming the host and the command, never a pass.
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from blueprints.blueprint import Blueprint, Check
from blueprints.blueprint.check_args import CephArgs, args_as
from validators.ceph import parses
from validators.checks.ceph import FOLDER, OUTPUTS
from validators.inventory import Inventory
from validators.run.plumbing import TIMED_OUT, Session

# The plan names no cluster, so Ceph's default name: the ceph role's /etc/ceph/ceph.conf and the admin keyring it
# installs at /etc/ceph/<cluster>.client.admin.keyring.
CLUSTER = "ceph"
# On a dead cluster the CLI waits for a monitor until --connect-timeout (Ceph's default: forever); a live one answers
# in 6-11 s under TCG (CEPH_MEASURED.md), so 30 s to connect and 60 s for the whole call, killed by timeout(1) after.
CONNECT_TIMEOUT_S = 30
CALL_TIMEOUT_S = 60
NOT_MADE = 125  # playbooks/ceph.yml: not made, an earlier call found no monitor answering

COMMANDS = {"status": ["status"], "osd-pool-ls-detail": ["osd", "pool", "ls", "detail"], "osd-tree": ["osd", "tree"]}


class CephCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    file: str
    argv: tuple[str, ...]

    @property
    def shown(self) -> str:
        """The command as a reader knows it (`ceph osd tree -f json`), without the connection options."""
        return " ".join(["ceph", *COMMANDS[self.name], "-f", "json"])


class CephRead(BaseModel):
    """Where and how the step reads the cluster."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str
    keyring: str
    call_timeout_s: int
    calls: tuple[CephCall, ...]


def plan_read(bp: Blueprint, check: Check, inventory: Inventory, scale: float = 1.0) -> CephRead | str:
    """The calls on the monitor host the check names (``args.monitor``: the planner's first monitor), or why there is
    none to read on (no Ceph planned, the host not in the inventory)."""
    if bp.storage.ceph is None:
        return "the Blueprint plans no Ceph cluster"
    host = args_as(check.args, CephArgs).monitor
    if host not in inventory.hosts:
        return (f"monitor host {host} (the check's args.monitor) is not in the inventory "
                f"({', '.join(sorted(inventory.hosts)) or 'no hosts'})")
    keyring = f"/etc/ceph/{CLUSTER}.client.admin.keyring"
    connect = math.ceil(CONNECT_TIMEOUT_S * scale)
    base = ("ceph", "--cluster", CLUSTER, "--name", "client.admin", "--keyring", keyring, "--connect-timeout",
            str(connect))
    calls = tuple(CephCall(name=name, file=file, argv=(*base, *COMMANDS[name], "-f", "json"))
                  for name, file in OUTPUTS)
    return CephRead(host=host, keyring=keyring, call_timeout_s=math.ceil(CALL_TIMEOUT_S * scale), calls=calls)


def judge_call(folder: Path, call: CephCall, timeout_s: int) -> str | None:
    """Why a call's output in ``folder`` does not count (exit status, stderr's last line, parser's words), or None."""
    out = folder / call.file
    try:
        rc = int((folder / f"{call.file}.rc").read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return "did not run (no exit status came back)"
    if rc == TIMED_OUT:
        return f"timed out after {timeout_s} s"
    if rc == NOT_MADE:
        return "not made: an earlier call found no monitor answering"
    if rc != 0:
        err = folder / f"{call.file}.err"
        said = err.read_text(encoding="utf-8", errors="replace").strip().splitlines() if err.is_file() else []
        return f"exited {rc}: {said[-1].strip() if said else 'no output on stderr'}"
    if not out.is_file():
        return "exited 0, but its output was not fetched back"
    return parses(call.name, out.read_text(encoding="utf-8", errors="replace"), str(out))


def run(session: Session, check: Check) -> None:
    read = plan_read(session.bp, check, session.inventory, session.scale)
    if isinstance(read, str):
        session.setup_error(check.id, "inventory", read)
        return
    folder = session.results / FOLDER
    for call in read.calls:  # a file of an earlier run is not this run's
        for suffix in ("", ".rc", ".err"):
            (folder / f"{call.file}{suffix}").unlink(missing_ok=True)
    outcomes = session.play("ceph", "ceph.yml", [read.host], {
        "accept_ceph_calls": [{"file": c.file, "argv": list(c.argv)} for c in read.calls],
        "accept_ceph_timeout": read.call_timeout_s}, CALL_TIMEOUT_S * len(read.calls))
    problem = outcomes[read.host].problem  # unreachable, or the play failed before a call ran: the play's words
    why = []
    for call in read.calls:
        wrong = judge_call(folder, call, read.call_timeout_s)
        if wrong is not None:
            why.append(f"{call.shown}: {problem if problem and wrong.startswith('did not run') else wrong}")
    if why:
        session.setup_error(check.id, read.host, "; ".join(why))
    else:
        session.note(check.id, f"read on monitor {read.host} with {read.keyring}: "
                               + ", ".join(c.shown for c in read.calls))
