"""KVM or TCG: boot the kernel under KVM for a few seconds and see whether it prints anything.

On some machines ``/dev/kvm`` exists but guests hang in the firmware; the probe catches that and
the lab falls back to TCG. ``CLUSTERSMITH_LAB_ACCEL=tcg|kvm`` skips the probe.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Literal

Accel = Literal["kvm", "tcg"]
BANNER = b"Linux version"


def probe_argv(vmlinuz: Path) -> list[str]:
    return [
        "qemu-system-x86_64", "-accel", "kvm", "-cpu", "host", "-m", "256", "-nodefaults",
        "-no-user-config", "-display", "none", "-no-reboot", "-serial", "stdio",
        "-kernel", str(vmlinuz), "-append", "console=ttyS0 panic=-1",
    ]  # fmt: skip


def probe(vmlinuz: Path, seconds: float = 4.0) -> Accel:
    forced = os.environ.get("CLUSTERSMITH_LAB_ACCEL")
    if forced in ("kvm", "tcg"):
        return forced  # type: ignore[return-value]
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg"
    proc = subprocess.Popen(
        probe_argv(vmlinuz), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    )
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    seen = b""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            seen += proc.stdout.read() or b""
            if BANNER in seen:
                return "kvm"
            time.sleep(0.1)
        seen += proc.stdout.read() or b""
        return "kvm" if BANNER in seen else "tcg"
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
