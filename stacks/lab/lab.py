"""The lab's public API: boot a ``LabPlan`` as QEMU VMs, inject faults, tear it all down."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType

from blueprints.lab_plan import LabPlan
from stacks.lab import accel, image, inventory, rails, ssh, state, topology, vm
from stacks.lab.errors import LabError, LabInputError
from stacks.lab.progress import Progress, ProgressEvent, log_progress
from stacks.lab.state import DiskState, HostState, LabState, LabStatus, RailNic, SwitchState

READY_PROBE = "systemctl is-active clustersmith-lab-init.service"


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 right now (QEMU binds them a moment later)."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
        return ports


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While ``up`` runs, SIGTERM and SIGHUP unwind like Ctrl-C, so the half-built lab is torn down."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class Lab:
    """A lab for one Blueprint, kept in ``workdir`` (``out/<name>``)."""

    def __init__(self, plan: LabPlan, name: str, workdir: Path) -> None:
        self.plan = plan
        self.name = name
        self.workdir = Path(workdir).resolve()
        self.lab_dir = self.workdir / "lab"

    @classmethod
    def attach(cls, workdir: Path) -> Lab:
        """The lab whose state ``workdir/lab/state.json`` holds (for status, faults and down)."""
        saved = state.load(Path(workdir).resolve())
        if saved is None:
            raise LabInputError(f"no lab was brought up in {workdir} (no {state.state_path(Path(workdir))})")
        return cls(saved.plan, saved.name, saved.workdir)

    # -- life cycle ------------------------------------------------------------------------------

    def up(self, progress: Progress = log_progress, ssh_timeout: float = 900.0) -> LabStatus:
        """Build or reuse the image, boot every VM, wait for SSH, write the inventory."""
        topology.check_plan(self.plan)
        inventory.claim(self.workdir)  # a user's own inventory is refused before anything boots
        with self._locked():
            existing = state.load(self.workdir)
            if existing is not None and self._any_alive(existing):
                raise LabInputError(
                    f"lab {existing.name!r} is already running from {self.workdir}; "
                    f"run `clustersmith lab down {self.workdir}` first"
                )
            if existing is not None:
                self._teardown(existing)  # leftovers of a lab that died
            try:
                with _sigterm_as_interrupt():
                    self._up(progress, ssh_timeout)
            except BaseException:
                leftover = state.load(self.workdir)
                if leftover is not None:
                    progress(ProgressEvent("down", "cleaning up after the failed start"))
                    self._teardown(leftover)
                raise
        return self.status()

    def down(self, progress: Progress = log_progress) -> bool:
        """Stop every VM and switch and remove sockets, disks and state; False if nothing ran."""
        with self._locked():
            saved = state.load(self.workdir)
            if saved is None:
                return False
            progress(ProgressEvent("down", f"stopping lab {saved.name!r}"))
            self._teardown(saved)
            progress(ProgressEvent("down", "stopped", done=True))
            return True

    # -- faults ------------------------------------------------------------------------------------

    def set_link(self, host: str, rail_index: int, up: bool) -> None:
        """Cut (``up=False``) or restore one host's NIC on one rail, as a cable pull would."""
        with self._locked():
            saved = self._state()
            target = self._host(saved, host)
            nic = self._nic(target, rail_index)
            vm.qmp(target, "set_link", {"name": nic.device_id, "up": up})
            self._save_host(
                saved,
                target,
                rails=tuple(n.model_copy(update={"link_up": up}) if n is nic else n for n in target.rails),
            )

    def pause(self, host: str) -> None:
        """Freeze the VM's CPUs (QMP ``stop``): the host stops answering but keeps its state."""
        self._power(host, "stop", "paused")

    def resume(self, host: str) -> None:
        self._power(host, "cont", "running")

    def stop(self, host: str) -> None:
        """Hard stop: the VM's process ends without a guest shutdown."""
        with self._locked():
            saved = self._state()
            target = self._host(saved, host)
            vm.stop(target)
            self._save_host(saved, target, power="stopped")

    # -- looking in ----------------------------------------------------------------------------------

    def status(self) -> LabStatus:
        saved = self._state()
        hosts = []
        for host in saved.hosts:
            live = vm.run_state(host)
            power: state.Power = "running" if live == "running" else "paused" if live == "paused" else "stopped"
            hosts.append(
                state.HostStatus(
                    name=host.name,
                    role=host.role,
                    ssh_port=host.ssh_port,
                    power=power,
                    panic=vm.kernel_panic(vm.console_text(host)),
                    rails=tuple(
                        state.RailStatus(name=n.rail_name, netdev=n.netdev, address=n.address, link_up=n.link_up)
                        for n in host.rails
                    ),
                )
            )
        return LabStatus(name=saved.name, accel=saved.accel, hosts=tuple(hosts))

    def saved_state(self) -> LabState:
        return self._state()

    def ssh(self, host: str, command: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run ``command`` as root in ``host`` through its forwarded port."""
        saved = self._state()
        return ssh.run(self._host(saved, host).ssh_port, saved.private_key, command, timeout=timeout)

    def wait_ssh(self, host: str, timeout: float = 120.0) -> None:
        saved = self._state()
        target = self._host(saved, host)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ssh.answers(target.ssh_port, saved.private_key):
                return
            time.sleep(1)
        raise LabError(f"{host} did not answer SSH on 127.0.0.1:{target.ssh_port} within {timeout:.0f} s")

    # -- internals ------------------------------------------------------------------------------------

    def _up(self, progress: Progress, ssh_timeout: float) -> None:
        built = image.ensure(self.plan.image, progress)
        chosen = accel.probe(built.vmlinuz)
        progress(ProgressEvent("boot", f"accelerator: {chosen}"))
        key = ssh.ensure_key(self.lab_dir, f"clustersmith-lab-{self.name}")
        runtime = Path(tempfile.mkdtemp(prefix="clustersmith-lab-"))
        try:
            planned = self._plan_state(built, chosen, key, runtime)
        except BaseException:
            shutil.rmtree(runtime, ignore_errors=True)
            raise
        state.save(planned)
        for switch in planned.switches:
            rails.start(switch)
        public = ssh.cmdline_key(key)
        started = time.monotonic()
        for host in planned.hosts:
            progress(ProgressEvent(f"boot:{host.name}", f"starting ({host.memory_mib} MiB, {host.cpus} vCPU)"))
            vm.start(planned, host, public)
        booted = self._wait_ready(planned, started, ssh_timeout, progress)
        state.save(booted)
        inventory.write(booted, self.workdir)
        progress(ProgressEvent("boot", f"inventory {inventory.inventory_path(self.workdir)}", done=True))

    def _plan_state(self, built: image.BuiltImage, chosen: accel.Accel, key: Path, runtime: Path) -> LabState:
        ports = free_ports(len(self.plan.hosts))
        hosts = []
        for i, (host, port) in enumerate(zip(self.plan.hosts, ports, strict=True)):
            nics = []
            for rail in self.plan.rails:
                address, prefix = topology.rail_address(rail.subnet, i)
                nics.append(
                    RailNic(
                        rail_index=rail.index,
                        rail_name=rail.name,
                        netdev=topology.netdev(rail.index),
                        device_id=f"{topology.netdev(rail.index)}-nic",
                        mac=topology.mac(self.name, i, rail.index + 1),
                        address=address,
                        prefix=prefix,
                        mtu=rail.mtu,
                    )
                )
            disks = tuple(
                DiskState(
                    name=d.name,
                    path=self.lab_dir / "disks" / f"{host.name}-{d.name}.img",
                    size_bytes=d.size_bytes,
                    serial=topology.disk_serial(d.name),
                )
                for d in host.disks
            )
            hosts.append(
                HostState(
                    name=host.name,
                    role=host.role,
                    memory_mib=host.memory_mib,
                    cpus=host.cpus,
                    ssh_port=port,
                    mgmt_mac=topology.mac(self.name, i, 0),
                    pidfile=runtime / f"{host.name}.pid",
                    qmp_socket=runtime / f"{host.name}.qmp",
                    console_log=self.lab_dir / "logs" / f"{host.name}.console.log",
                    rails=tuple(nics),
                    disks=disks,
                    named_disks=host.named_disks,
                )
            )
        switches = tuple(
            SwitchState(
                rail_index=r.index,
                rail_name=r.name,
                socket_dir=runtime / f"{topology.netdev(r.index)}.vde",
                pidfile=runtime / f"{topology.netdev(r.index)}.vde.pid",
            )
            for r in self.plan.rails
        )
        return LabState(
            name=self.name,
            workdir=self.workdir,
            runtime_dir=runtime,
            accel=chosen,
            vmlinuz=built.vmlinuz,
            initrd=built.initrd,
            private_key=key,
            plan=self.plan,
            hosts=tuple(hosts),
            switches=switches,
        )

    def _wait_ready(self, planned: LabState, started: float, timeout: float, progress: Progress) -> LabState:
        pending = {h.name: h for h in planned.hosts}
        boot_seconds: dict[str, float] = {}
        deadline = started + timeout
        while pending:
            for name, host in list(pending.items()):
                if not vm.is_running(host):
                    raise LabError(f"VM {name} exited while booting; console:\n{vm.console_tail(host)}")
                try:
                    probe = ssh.run(host.ssh_port, planned.private_key, READY_PROBE, timeout=90)
                except subprocess.TimeoutExpired:
                    continue
                word = probe.stdout.strip()
                if word == "failed":
                    journal = ssh.run(
                        host.ssh_port,
                        planned.private_key,
                        "journalctl -b -u clustersmith-lab-init --no-pager | tail -20",
                    ).stdout
                    raise LabError(f"guest setup failed on {name}:\n{journal}")
                if probe.returncode == 0 and word == "active":
                    boot_seconds[name] = round(time.monotonic() - started, 1)
                    progress(ProgressEvent(f"boot:{name}", f"SSH ready after {boot_seconds[name]} s", done=True))
                    del pending[name]
            if pending and time.monotonic() > deadline:
                names = ", ".join(sorted(pending))
                raise LabError(
                    f"no SSH from {names} within {timeout:.0f} s; console of {next(iter(pending))}:\n"
                    f"{vm.console_tail(next(iter(pending.values())))}"
                )
            if pending:
                time.sleep(2)
        return planned.model_copy(
            update={"hosts": tuple(h.model_copy(update={"boot_seconds": boot_seconds[h.name]}) for h in planned.hosts)}
        )

    def _teardown(self, saved: LabState) -> None:
        for host in saved.hosts:
            vm.stop(host)
            vm.remove_disks(host)
        for switch in saved.switches:
            rails.stop(switch)
        shutil.rmtree(saved.runtime_dir, ignore_errors=True)
        shutil.rmtree(self.lab_dir / "disks", ignore_errors=True)
        for leftover in ("id_ed25519", "id_ed25519.pub"):
            (self.lab_dir / leftover).unlink(missing_ok=True)
        state.state_path(self.workdir).unlink(missing_ok=True)
        inventory.remove(inventory.inventory_path(self.workdir))  # a rebuild keeps it; the lab's ports die here

    @staticmethod
    def _any_alive(saved: LabState) -> bool:
        return any(vm.is_running(h) for h in saved.hosts) or any(rails.is_running(s) for s in saved.switches)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One lab command at a time per workdir (flock on the folder itself, nothing left behind)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.workdir, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _state(self) -> LabState:
        saved = state.load(self.workdir)
        if saved is None:
            raise LabInputError(f"lab {self.name!r} is not running (no {state.state_path(self.workdir)})")
        return saved

    @staticmethod
    def _host(saved: LabState, name: str) -> HostState:
        try:
            return saved.host(name)
        except KeyError:
            names = ", ".join(h.name for h in saved.hosts)
            raise LabInputError(f"no host {name!r} in lab {saved.name!r}; hosts: {names}") from None

    @staticmethod
    def _nic(host: HostState, rail_index: int) -> RailNic:
        for nic in host.rails:
            if nic.rail_index == rail_index:
                return nic
        indexes = ", ".join(str(n.rail_index) for n in host.rails)
        raise LabInputError(f"{host.name} has no rail {rail_index}; rails: {indexes}")

    def _power(self, host: str, command: str, power: state.Power) -> None:
        with self._locked():
            saved = self._state()
            target = self._host(saved, host)
            vm.qmp(target, command)
            self._save_host(saved, target, power=power)

    @staticmethod
    def _save_host(saved: LabState, target: HostState, **changes: object) -> None:
        updated = target.model_copy(update=changes)
        state.save(saved.model_copy(update={"hosts": tuple(updated if h is target else h for h in saved.hosts)}))
