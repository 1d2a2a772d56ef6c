"""The lab tier: boots real Linux VMs under QEMU.

Missing tools skip the tier with a clear message on a developer's machine; under CI (``CI`` set)
they fail it, since CI must prove the lab. One default lab (1 storage target, 2 clients, 2 rails)
is booted per session and torn down at the end, whatever happened.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stacks.lab import Lab
from stacks.lab.defaults import default_plan

TOOLS = {
    "qemu-system-x86_64": "qemu-system-x86",
    "vde_switch": "vde2",
    "debootstrap": "debootstrap",
    "cpio": "cpio",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "depmod": "kmod",
    "apt-get": "apt",
}
TIMINGS: dict[str, float] = {}


def require_lab_tools() -> None:
    missing = sorted({pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None})
    problems = [f"missing Debian packages: {' '.join(missing)}"] if missing else []
    if os.geteuid() != 0:
        problems.append("the image build (debootstrap) needs root")
    if not problems:
        return
    message = "lab tier needs QEMU and friends: " + "; ".join(problems) + f" (apt-get install {' '.join(missing)})"
    if os.environ.get("CI"):
        pytest.fail("CI must run the lab tier, but " + message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def lab_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lab") / "out" / "lab-e2e"


@pytest.fixture(scope="session")
def lab(lab_workdir: Path) -> Iterator[Lab]:
    require_lab_tools()
    the_lab = Lab(default_plan(), "lab-e2e", lab_workdir)
    started = time.monotonic()
    try:
        the_lab.up()
        TIMINGS["lab up (image + boot + SSH)"] = time.monotonic() - started
        for host in the_lab.saved_state().hosts:
            TIMINGS[f"boot to SSH: {host.name}"] = host.boot_seconds or 0.0
        yield the_lab
    finally:
        the_lab.down()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        terminalreporter.section("lab timings")
        for name, seconds in TIMINGS.items():
            terminalreporter.write_line(f"{name}: {seconds:.1f} s")
