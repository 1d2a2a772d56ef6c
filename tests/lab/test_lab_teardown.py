"""The lab tier's last tests, on the session's example lab once every other test is done with it: a hard stop ends
one VM and leaves the rest running, and ``down`` leaves no process, socket or disk behind.

Skipped on a lab the session attached to (``CLUSTERSMITH_EXAMPLE_LAB``): that lab is its owner's to stop.
"""

from __future__ import annotations

import subprocess

import pytest

from stacks.lab import Lab
from tests.lab.conftest import attached
from tests.lab.test_lab_e2e import pings

pytestmark = [pytest.mark.lab,
              pytest.mark.skipif(attached(), reason="an attached lab (CLUSTERSMITH_EXAMPLE_LAB) is its owner's")]


def test_hard_stop_ends_the_vm(lab: Lab) -> None:
    lab.stop("client-2")
    assert next(h.power for h in lab.status().hosts if h.name == "client-2") == "stopped"
    assert pings(lab, "client-1", "storage-1", 0), "the rest of the lab keeps running"


def test_down_leaves_no_process_socket_or_disk_behind(lab: Lab) -> None:
    saved = lab.saved_state()
    assert lab.down() is True
    assert not saved.runtime_dir.exists()
    for host in saved.hosts:
        for disk in host.disks:
            assert not disk.path.exists()
    leftovers = subprocess.run(["pgrep", "-f", str(saved.runtime_dir)], capture_output=True, text=True)
    assert leftovers.stdout == "", f"processes still running: {leftovers.stdout}"
    assert lab.down() is False
