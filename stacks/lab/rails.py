"""Rails: one ``vde_switch`` per rail, a private L2 segment on a unix socket, nothing routed."""

from __future__ import annotations

import shutil
import subprocess
import time

from stacks.lab import processes
from stacks.lab.errors import LabError
from stacks.lab.state import SwitchState


def switch_argv(switch: SwitchState) -> list[str]:
    return [
        "vde_switch", "--sock", str(switch.socket_dir), "--mode", "0600", "--dirmode", "0700",
        "--numports", "16", "--daemon", "--pidfile", str(switch.pidfile),
    ]  # fmt: skip


def start(switch: SwitchState, timeout: float = 10.0) -> None:
    if shutil.which("vde_switch") is None:
        raise LabError("vde_switch is not installed (apt-get install vde2)")
    done = subprocess.run(switch_argv(switch), stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"vde_switch for {switch.rail_name} failed: {done.stderr.strip()}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (switch.socket_dir / "ctl").exists() and is_running(switch):
            return
        time.sleep(0.05)
    raise LabError(f"vde_switch for {switch.rail_name} did not come up at {switch.socket_dir}")


def is_running(switch: SwitchState) -> bool:
    return processes.is_ours(processes.read_pid(switch.pidfile), str(switch.socket_dir))


def stop(switch: SwitchState) -> None:
    processes.terminate(processes.read_pid(switch.pidfile), str(switch.socket_dir))
    shutil.rmtree(switch.socket_dir, ignore_errors=True)
    switch.pidfile.unlink(missing_ok=True)
