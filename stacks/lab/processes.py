"""Processes the lab starts detached (QEMU with -daemonize, vde_switch -d): found again by pidfile.

A pid is only trusted while ``/proc/<pid>/cmdline`` still names the file or socket this lab gave
the process, so a recycled pid is never signalled.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def read_pid(pidfile: Path) -> int | None:
    try:
        return int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None


def is_ours(pid: int | None, marker: str) -> bool:
    """True while ``pid`` runs and its command line contains ``marker`` (a path unique to the lab)."""
    if pid is None:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state != "Z" and marker.encode() in cmdline


def terminate(pid: int | None, marker: str, grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds; a no-op when the process is gone or not ours."""
    if not is_ours(pid, marker):
        return
    assert pid is not None
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not is_ours(pid, marker):
                return
            time.sleep(0.05)
