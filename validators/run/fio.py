"""Step ``fio``: one workload on every GPU client at once, its job file rendered from the Blueprint's workload for the
target this run writes to (``blueprints.render.acceptance.fio_job``, the renderer `build` uses too).

The playbook fetches each client's report, bandwidth logs and exit status into ``fio/<workload>/``. A client whose
fio finished (exit 0), or ended non-zero with a job error in its report (an I/O error, a verify mismatch: the
verdict judges those), is measured. One whose fio ended non-zero with no job error was cut short (killed, timed
out) and one with no report never measured: both are setup errors naming the host, so nothing partial counts.
"""

from __future__ import annotations

import time
from pathlib import Path

from blueprints.blueprint import Check, FioWorkload
from blueprints.render.acceptance import FioTarget, fio_job
from validators.errors import ParseError
from validators.fio import parse_fio_file
from validators.run.plumbing import Session
from validators.safety import WritePlan


def target(write: WritePlan, workload: FioWorkload) -> FioTarget:
    return FioTarget(kind="device" if write.kind == "device" else "directory", path=write.area(workload).path)


def job_file(session: Session, workload: FioWorkload, write: WritePlan) -> Path:
    path = session.results / ".jobs" / f"{workload.name}.fio"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(fio_job(session.bp, workload, target(write, workload)), encoding="utf-8")
    return path


def cut_short(dest: Path, host: str) -> str | None:
    """Why a client's report does not count, or None when it does."""
    exit_file = dest / f"{host}.exit"
    if not exit_file.is_file():
        return None if (dest / f"{host}.json").is_file() else "fio wrote no JSON report"
    status, _, words = exit_file.read_text(encoding="utf-8", errors="replace").partition("\n")
    said = next((line.strip() for line in reversed(words.splitlines()) if line.strip()), "")
    if not status.strip().lstrip("-").isdigit():  # the task ended without fio's status: Ansible's timeout killed it
        return "fio did not end within its timeout" + (f": {said}" if said else "")
    if status.strip() == "0":
        return None if (dest / f"{host}.json").is_file() else "fio ended 0 but wrote no JSON report"
    if not (dest / f"{host}.json").is_file():
        return f"fio exited {status.strip()} with no JSON report" + (f": {said}" if said else "")
    try:
        job_errors = parse_fio_file(dest / f"{host}.json").errors
    except ParseError:
        job_errors = 0
    if job_errors:
        return None  # fio ran and reported its error: the verdict judges it
    return (f"fio exited {status.strip()} before its workload finished, its report shows no job error: the run was "
            f"cut short (killed or timed out), nothing it measured counts" + (f" ({said})" if said else ""))


def run(session: Session, workload: FioWorkload, checks: list[Check], write: WritePlan) -> None:
    clients = session.inventory.group("gpu_clients")
    job = job_file(session, workload, write)
    area = write.area(workload)
    timeout = workload.runtime_s.value + workload.ramp_s + 60 + workload.size.value.value * \
        workload.numjobs.value / 2e6
    dest = session.results / "fio" / workload.name
    dest.mkdir(parents=True, exist_ok=True)
    started = time.time()
    outcomes = session.play(f"fio-{workload.name}", "fio.yml", clients, {
        "accept_workload": workload.name, "accept_job_file": str(job), "accept_fio_results": str(dest),
        "accept_target_kind": write.kind, "accept_target": area.path, "accept_mount": area.mount or "",
        "accept_scratch_nqns": list(write.scratch_nqns), "accept_timeout": int(timeout * session.scale),
        "accept_passes": 0 if workload.time_based else 2,
    }, timeout * (1 if workload.time_based else 3))
    ended = time.time()
    session.fio_window = (started, ended) if session.fio_window is None else (session.fio_window[0], ended)
    for host, o in outcomes.items():
        if o.unreachable is not None:
            continue
        ran = (dest / f"{host}.exit").is_file() or (dest / f"{host}.json").is_file()
        why = cut_short(dest, host) if ran else None
        if ran and why is None:
            o.failed.clear()  # fio ran and wrote its report: what it says is measured, not a setup error
        elif why is not None:
            o.failed[:0] = [why]
        elif o.problem is None:
            o.failed.append("fio wrote no JSON report")
    session.record([c.id for c in checks], outcomes)


def cleanup(session: Session, write: WritePlan) -> None:
    if write.kind in ("scratch_dir", "directory"):
        session.play("cleanup", "cleanup.yml", session.inventory.group("gpu_clients"),
                     {"accept_targets": [a.path for a in write.areas()]}, 120)
