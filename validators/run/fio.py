"""Step ``fio``: one workload on every GPU client at once, its job file rendered from the Blueprint's workload for the
target this run writes to (``blueprints.render.acceptance.fio_job``, the renderer `build` uses too).

A host job (``files/job_fio.sh``) checks each client's target, then starts fio on every client at the common start
the runner sets (so a thousand clients run together however long starting them took), and brings each client's
report, bandwidth logs and exit status into ``fio/<workload>/``; a client that began late is named in the notes.
A client whose fio finished (exit 0), or ended non-zero with a job error in its report (an I/O error, a verify
mismatch: the verdict judges those), is measured. One whose fio ended non-zero with no job error was cut short
(killed, timed out) and one with no report never measured: both are setup errors naming the host, so nothing
partial counts.
"""

from __future__ import annotations

import time
from pathlib import Path

from blueprints.blueprint import Check, FioWorkload
from blueprints.render.acceptance import FioTarget, fio_job
from validators.errors import ParseError
from validators.fio import parse_fio_file
from validators.run.jobs import Job, SpecValue
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
    rel = f"fio/{workload.name}"
    fio_timeout = int(timeout * session.scale)
    text = job.read_text(encoding="utf-8")
    # the cache check (the one workload that is not time based) lays its files out, then reads them twice
    passes = 0 if workload.time_based else 2
    common: dict[str, SpecValue] = {"kind": write.kind, "target": area.path, "mount": area.mount or "",
                                    "nqns": "\n".join(write.scratch_nqns), "job": text, "fio_timeout": fio_timeout,
                                    "dest": rel, "passes": passes}
    specs = {h: {"host": h, **common} for h in clients}
    outputs: tuple[str, ...] = (f"{rel}/{{host}}.json", f"{rel}/{{host}}_bw.*.log", f"{rel}/{{host}}.exit")
    if passes:
        outputs += (f"{rel}/{{host}}.fscache.*", f"{rel}/{{host}}.*.fio-json")
    started = time.time()
    session.fio_started = True  # set before the job: a run interrupted inside it still removes what it wrote
    outcomes = session.job(Job(f"fio-{workload.name}", "fio", specs, outputs,
                               fio_timeout * (1 + passes) + int(60 * session.scale), aligned=True))
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
    session.late([c.id for c in checks], outcomes, f"fio {workload.name}")


def cleanup(session: Session, write: WritePlan) -> None:
    """Remove the scratch files (``files/job_cleanup.sh``: only ``clustersmith-accept.<host>.*``) in every directory
    of ``write.cleanup_paths``: this run's, and those an earlier --keep-scratch run left in the plan's other scratch
    directories. A run that keeps them (--keep-scratch) leaves them for the next; one that started no fio job makes
    no call on the clients."""
    if session.fio_started and not write.keep and write.cleanup_paths:
        targets = "\n".join(write.cleanup_paths)
        session.job(Job("cleanup", "cleanup", {h: {"host": h, "targets": targets}
                                               for h in session.inventory.group("gpu_clients")}, (),
                        int(120 * session.scale), short=True))
