"""One lab VM: its QEMU command line (pure, unit-tested) and its life cycle through QMP."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from stacks.lab import processes
from stacks.lab.errors import LabError
from stacks.lab.qmp import QmpClient, QmpError
from stacks.lab.state import HostState, LabState, SwitchState

# quiet boot; predictable names off (the guest renames NICs by MAC); no CPU bug mitigations,
# which only slow an emulated guest that runs nothing untrusted.
BASE_APPEND = (
    "console=ttyS0", "quiet", "net.ifnames=0", "mitigations=off", "panic=-1",
    # a TCG guest on a busy 2-core host can take minutes over a unit; systemd's 90 s would fail it
    "systemd.default_timeout_start_sec=900",
)  # fmt: skip


def kernel_append(host: HostState, public_key_b64: str) -> str:
    words = [
        *BASE_APPEND,
        f"systemd.hostname={host.name}",
        f"cs.key={public_key_b64}",
        f"cs.mgmt={host.mgmt_mac}",
    ]
    words += [f"cs.rail={n.netdev},{n.mac},{n.cidr},{n.mtu}" for n in host.rails]
    # e.g. CLUSTERSMITH_LAB_KERNEL_ARGS="systemd.journald.forward_to_console=1" to watch a boot
    words += os.environ.get("CLUSTERSMITH_LAB_KERNEL_ARGS", "").split()
    append = " ".join(words)
    if len(append) > 2000:
        raise LabError(f"kernel command line for {host.name} is {len(append)} bytes; the limit is 2048")
    return append


# Under TCG, AVX and AVX2 are emulated one helper call per instruction, yet glibc picks its AVX2 string and memory
# routines whenever the CPU offers them: a Python-heavy guest (every Ansible task) ran about 40 % faster with them
# masked (the same guest, GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-AVX). The features that need AVX go with it.
TCG_CPU = "max," + ",".join(f"{flag}=off" for flag in ("avx", "avx2", "fma", "f16c", "vaes", "vpclmulqdq"))


# QEMU 7.2's TCG reserves a 1 GiB translation cache per VM; CLUSTERSMITH_LAB_TCG_TB_MIB=<MiB> lowers it (tb-size),
# which tests/bench_ceph_lab.py measures against the host's memory. Unset: QEMU's default, as before.
TB_SIZE_ENV = "CLUSTERSMITH_LAB_TCG_TB_MIB"


def accel_arg(accel: str) -> str:
    tb_mib = os.environ.get(TB_SIZE_ENV, "").strip()
    if accel != "tcg" or not tb_mib:
        return accel
    if not tb_mib.isdigit() or int(tb_mib) < 1:
        raise LabError(f"{TB_SIZE_ENV}={tb_mib!r}: expected a whole number of MiB, at least 1")
    return f"tcg,tb-size={int(tb_mib)}"


def qemu_argv(lab: LabState, host: HostState, public_key_b64: str) -> list[str]:
    """The full ``qemu-system-x86_64`` command line for ``host``; it daemonizes once running."""
    switches: dict[int, SwitchState] = {s.rail_index: s for s in lab.switches}
    cpu = "host" if lab.accel == "kvm" else TCG_CPU
    argv = [
        "qemu-system-x86_64",
        "-name", f"{host.name},process=lab-{host.name}",
        "-accel", accel_arg(lab.accel), "-cpu", cpu, "-m", str(host.memory_mib), "-smp", str(host.cpus),
        "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
        "-kernel", str(lab.vmlinuz), "-initrd", str(lab.initrd),
        "-append", kernel_append(host, public_key_b64),
        "-serial", f"file:{host.console_log}",
        "-qmp", f"unix:{host.qmp_socket},server=on,wait=off",
        "-pidfile", str(host.pidfile), "-daemonize",
        "-object", "rng-random,id=rng0,filename=/dev/urandom",
        "-device", "virtio-rng-pci,rng=rng0",
        # restrict=on: the guest reaches neither the host nor anything beyond; only the forward works.
        "-netdev", f"user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:{host.ssh_port}-:22",
        "-device", f"virtio-net-pci,netdev=mgmt,mac={host.mgmt_mac}",
    ]  # fmt: skip
    for nic in host.rails:
        argv += [
            "-netdev", f"vde,id={nic.netdev},sock={switches[nic.rail_index].socket_dir}",
            "-device",
            f"virtio-net-pci,netdev={nic.netdev},id={nic.device_id},mac={nic.mac},host_mtu={nic.mtu}",
        ]  # fmt: skip
    for disk in host.disks:
        argv += [
            "-drive", f"file={disk.path},if=none,id=disk-{disk.name},format=raw,cache=unsafe",
            "-device", f"virtio-blk-pci,drive=disk-{disk.name},serial={disk.serial}",
        ]  # fmt: skip
    return argv


def create_disks(host: HostState) -> None:
    for disk in host.disks:
        disk.path.parent.mkdir(parents=True, exist_ok=True)
        with disk.path.open("wb") as sparse:
            sparse.truncate(disk.size_bytes)


def start(lab: LabState, host: HostState, public_key_b64: str) -> None:
    if shutil.which("qemu-system-x86_64") is None:
        raise LabError("qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)")
    create_disks(host)
    host.console_log.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        qemu_argv(lab, host, public_key_b64), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        check=False, timeout=60,
    )  # fmt: skip
    if done.returncode != 0:
        raise LabError(f"QEMU for {host.name} failed to start: {done.stderr.strip()[-2000:]}")


def is_running(host: HostState) -> bool:
    return processes.is_ours(processes.read_pid(host.pidfile), str(host.qmp_socket))


def qmp(host: HostState, command: str, arguments: dict[str, object] | None = None) -> object:
    if not is_running(host):
        raise LabError(f"VM {host.name} is not running")
    with QmpClient(host.qmp_socket) as client:
        return client.execute(command, arguments)


def run_state(host: HostState) -> str:
    """QEMU's own word for the VM's state (``running``, ``paused``, ...) or ``stopped``."""
    if not is_running(host):
        return "stopped"
    try:
        status = qmp(host, "query-status")
    except LabError:
        return "stopped"
    return str(status["status"]) if isinstance(status, dict) else "stopped"


def stop(host: HostState, grace: float = 3.0) -> None:
    """Hard stop: QMP ``quit`` (no guest shutdown, like pulling the plug), SIGTERM/SIGKILL if needed."""
    pid = processes.read_pid(host.pidfile)
    marker = str(host.qmp_socket)
    if processes.is_ours(pid, marker):
        with contextlib.suppress(QmpError, LabError):
            qmp(host, "quit")
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and processes.is_ours(pid, marker):
            time.sleep(0.05)
        processes.terminate(pid, marker)
    host.pidfile.unlink(missing_ok=True)
    host.qmp_socket.unlink(missing_ok=True)


def remove_disks(host: HostState) -> None:
    for disk in host.disks:
        disk.path.unlink(missing_ok=True)


# what a guest kernel prints when it dies: the oops or BUG that starts it, the task and work queue it hit, the
# instruction, and the panic itself ("Kernel panic - not syncing: Fatal exception in interrupt")
_DEATH = re.compile(r"^\[\s*\d+\.\d+\]\s+((?:Oops|BUG|Kernel panic - not syncing|Workqueue|RIP|CPU: \d+ .*Comm):? .*)$")


def kernel_panic(console: str) -> str:
    """The guest kernel's panic in its console text, one line per fact (oops, task, work queue, instruction, panic),
    or "" when the console shows none. The lab boots with ``panic=-1`` and ``-no-reboot``: a panicked guest's QEMU
    exits, so ``lab status`` says "stopped" and SSH is refused; this says why
    (tests/fixtures/lab/panic-rxe-6.12-ci.txt is a real one)."""
    if "Kernel panic - not syncing" not in console:
        return ""
    facts: list[str] = []
    for line in console.splitlines():
        if (found := _DEATH.match(line)) and (fact := found.group(1)) not in facts:
            facts.append(fact)
            if fact.startswith("Kernel panic"):
                break
    return "\n".join(facts)


def console_text(host: HostState) -> str:
    try:
        return Path(host.console_log).read_text(errors="replace")
    except OSError:
        return ""


def console_tail(host: HostState, lines: int = 30) -> str:
    text = console_text(host)
    return "\n".join(text.splitlines()[-lines:]) if text else "(no console log)"
