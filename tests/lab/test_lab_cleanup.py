"""An interrupted ``lab up`` (Ctrl-C or SIGTERM) leaves no VM, switch, socket or state behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from stacks.lab import state
from tests.default_lab import default_lab_plan
from tests.lab.conftest import require_lab_tools

pytestmark = pytest.mark.lab


def one_host_plan(path: Path) -> Path:
    plan = default_lab_plan()
    small = plan.model_copy(update={"hosts": plan.hosts[1:2], "rails": plan.rails[:1]})
    path.write_text(yaml.safe_dump(small.model_dump(mode="json")))
    return path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupted_up_cleans_up(tmp_path: Path, sig: signal.Signals) -> None:
    require_lab_tools()
    workdir = tmp_path / "out" / "interrupted"
    plan_file = one_host_plan(tmp_path / "plan.yaml")
    proc = subprocess.Popen(
        [sys.executable, "-m", "stacks.lab", "up", str(workdir), "--plan-file", str(plan_file)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        # a shell without job control starts background jobs with SIGINT ignored; undo that here
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    # A cold image build happens here when this test runs first (a fresh machine's CI, or alone): 16 min on this
    # 2-core machine with the unit tier running beside it (2026-12-02, 14:39 to 14:55), past the 900 s this
    # deadline was; it bounds only how long `up` may take to start a VM, so it leaves room for a slow build.
    deadline = time.monotonic() + 2400
    saved = None
    while time.monotonic() < deadline and proc.poll() is None:
        saved = state.load(workdir)
        if saved is not None and saved.hosts[0].pidfile.exists():
            break
        time.sleep(0.2)
    assert saved is not None and proc.poll() is None, f"up never started a VM: {proc.communicate()[0]}"
    time.sleep(1)
    proc.send_signal(sig)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0, output
    assert state.load(workdir) is None, "the state file survived the interrupt"
    assert not saved.runtime_dir.exists(), "sockets and pidfiles survived the interrupt"
    leftovers = subprocess.run(["pgrep", "-f", str(saved.runtime_dir)], capture_output=True, text=True)
    assert leftovers.stdout == "", f"processes survived the interrupt: {leftovers.stdout}"
