"""The storage data path on one lab built from examples/lab.yaml, booted once for this module.

1. Each role's molecule scenario (rdma, nvmeof, storage_tiering) runs against that lab: converge,
   idempotence (zero changes), verify (kernel state, boot-time replay, negative tests). One booted lab
   serves all three (tests/roles/shared_lab attaches to it) instead of a boot each, and the roles are
   not undone between scenarios: on 2 emulated cores a boot or a second fresh converge costs minutes.
2. End to end: the generated site.yml over the whole lab (the data-path roles re-run on converged
   hosts, the others converge), then fio with verify=crc32c on the multipath namespace while
   client-1's rail 0 is cut and restored: zero I/O errors, zero verify failures, I/O goes on over the
   other rail, both paths live afterwards.

Converge/idempotence times and the I/O pause are printed in the "lab timings" summary.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint, load_blueprint
from stacks.lab import Lab, ssh
from tests.lab.conftest import TIMINGS, require_lab_tools
from tests.roles.library import load

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ROLES = ("rdma", "nvmeof", "storage_tiering")
STEPS = ("create", "prepare", "converge", "idempotence", "verify", "destroy")
CUT_AFTER_S = 10  # fio runs this long on both rails before the cut
CUT_S = 20  # how long rail 0 stays cut (the DESIGN measurement)
IOPS_LOG_MS = 250
subsys_info = load("nvmeof", "nvme_subsys_info.py")


def run(argv: list[str | Path], timeout: float, env: dict[str, str] | None = None,
        cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "ANSIBLE_NOCOLOR": "1", "PY_COLORS": "0", **(env or {})}, check=False)


def tail(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stdout + done.stderr)[-6000:]


@pytest.fixture(scope="module")
def lab_workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`clustersmith build examples/lab.yaml` then `clustersmith lab up`; `lab down` at the end."""
    require_lab_tools()
    out = tmp_path_factory.mktemp("storage-path")
    built = run([sys.executable, "-m", "blueprints", "build", "examples/lab.yaml", "-o", out], timeout=300)
    assert built.returncode == 0, tail(built)
    workdir = out / "lab"
    started = time.monotonic()
    up = run([sys.executable, "-m", "blueprints", "lab", "up", workdir], timeout=3600)
    try:
        assert up.returncode == 0, tail(up)
        TIMINGS["storage path: lab up (examples/lab.yaml)"] = time.monotonic() - started
        yield workdir
    finally:
        run([sys.executable, "-m", "blueprints", "lab", "down", workdir], timeout=600)


@pytest.fixture(scope="module")
def blueprint(lab_workdir: Path) -> Blueprint:
    return load_blueprint(lab_workdir)


def ssh_out(lab: Lab, host: str, command: str, timeout: float = 300) -> str:
    done = lab.ssh(host, command, timeout=timeout)
    assert done.returncode == 0, f"{host}: `{command}` exited {done.returncode}: {done.stderr or done.stdout}"
    return done.stdout


@pytest.mark.parametrize("role", ROLES)
def test_role_scenario(role: str, lab_workdir: Path) -> None:
    env = {"CLUSTERSMITH_LAB_WORKDIR": str(lab_workdir), "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    for step in STEPS:
        if step == "prepare" and role != "nvmeof":
            continue
        started = time.monotonic()
        done = run([BIN / "molecule", step], timeout=3600, env=env, cwd=REPO / "roles" / role)
        assert done.returncode == 0, f"molecule {step} of {role} failed:\n{tail(done)}"
        if step in ("converge", "idempotence"):
            TIMINGS[f"{role}: molecule {step}"] = time.monotonic() - started


def test_generated_site_converges_the_lab(lab_workdir: Path) -> None:
    inventory = lab_workdir / "ansible" / "inventory.yml"
    prepared = run([BIN / "ansible-playbook", "-i", inventory, "tests/roles/shared_lab/prepare.yml"], timeout=1800)
    assert prepared.returncode == 0, tail(prepared)
    started = time.monotonic()
    site = run([BIN / "ansible-playbook", "-i", inventory, lab_workdir / "ansible" / "site.yml"], timeout=3600)
    TIMINGS["site.yml over the lab"] = time.monotonic() - started
    assert site.returncode == 0, tail(site)
    assert "failed=0" in site.stdout and "unreachable=0" in site.stdout


def multipath_state(lab: Lab, host: str, nqn: str) -> object:
    listed = subsys_info.parse_list_subsys(ssh_out(lab, host, "nvme list-subsys --output-format=json"))
    subs = [s for s in listed if s.nqn == nqn]
    assert len(subs) == 1, f"{host}: expected one subsystem {nqn}, got {listed}"
    heads = ssh_out(lab, host, f"ls /sys/class/nvme-subsystem/{subs[0].name}").split()
    return subs[0], [f"/dev/{h}" for h in heads if subsys_info.HEAD.match(h)]


def longest_pause_ms(iops_log: str) -> int:
    """Longest stretch between two log intervals that completed I/O (fio iops log: time_ms, iops, dir, ...)."""
    busy = sorted({int(line.split(",")[0]) for line in iops_log.splitlines()
                   if line.strip() and int(line.split(",")[1]) > 0})
    gaps = [b - a for a, b in itertools.pairwise(busy)]
    return max(gaps, default=0) - IOPS_LOG_MS if gaps else 0


FIO_JOB = """[global]
filename={device}
ioengine=libaio
direct=1
rw=randwrite
bs=4k
iodepth=8
size=128m
verify=crc32c
verify_fatal=1
verify_backlog=512
time_based=1
runtime={runtime}
write_iops_log=/root/railcut
log_avg_msec={log_ms}
[railcut]
"""


def test_fio_verify_survives_a_rail_cut(lab_workdir: Path, blueprint: Blueprint) -> None:
    lab = Lab.attach(lab_workdir)
    plan = blueprint.storage.nvmeof
    assert plan is not None
    nqn = plan.subsystems[0].nqn
    sub, heads = multipath_state(lab, "client-1", nqn)
    assert sub.live_paths == plan.paths_per_subsystem.value and len(heads) == 1, (sub, heads)
    # after the link returns the path reconnects within a few reconnect_delay periods (Blueprint)
    heal_s = 3 * plan.reconnect_delay.value + plan.keep_alive_tmo.value
    runtime = CUT_AFTER_S + CUT_S + heal_s
    job = FIO_JOB.format(device=heads[0], runtime=runtime, log_ms=IOPS_LOG_MS)
    ssh_out(lab, "client-1", f"rm -f /root/railcut*; cat > /root/railcut.fio <<'EOF'\n{job}EOF")
    saved = lab.saved_state()
    fio_cmd = "fio --output-format=json --output=/root/railcut.json /root/railcut.fio"
    with subprocess.Popen(ssh.argv(saved.host("client-1").ssh_port, saved.private_key, fio_cmd),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as fio:
        time.sleep(CUT_AFTER_S)
        lab.set_link("client-1", 0, up=False)
        cut_at = time.monotonic()
        try:
            time.sleep(CUT_S)
        finally:
            lab.set_link("client-1", 0, up=True)
        cut_for = time.monotonic() - cut_at
        out, _ = fio.communicate(timeout=runtime + 600)
        assert fio.returncode == 0, f"fio exited {fio.returncode}: {out[-3000:]}"
    result = json.loads(ssh_out(lab, "client-1", "cat /root/railcut.json"))
    job_result = result["jobs"][0]
    assert job_result["error"] == 0, f"fio error {job_result['error']}"
    assert job_result["write"]["io_bytes"] > 0 and job_result["read"]["io_bytes"] > 0, "no writes or no verify reads"
    pause_ms = longest_pause_ms(ssh_out(lab, "client-1", "cat /root/railcut_iops.1.log"))
    TIMINGS["rail cut: longest I/O pause (s)"] = pause_ms / 1000
    TIMINGS["rail cut: link down for (s)"] = cut_for
    assert pause_ms < CUT_S * 1000, f"I/O stopped for {pause_ms} ms: it did not go on over rail 1 during the cut"
    deadline = time.monotonic() + heal_s + 120
    while True:
        sub, _ = multipath_state(lab, "client-1", nqn)
        if sub.live_paths == plan.paths_per_subsystem.value or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert [p.state for p in sub.paths] == ["live"] * plan.paths_per_subsystem.value, sub.paths
