"""What a running lab is made of, saved as ``<workdir>/lab/state.json`` so any later command
(``lab status``, ``lab fault``, ``lab down``) can find its processes, sockets and ports again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ConfigDict

from blueprints import atomic
from blueprints.hosts import HostRole
from blueprints.lab_plan import LabPlan
from blueprints.model import Frozen

Power = Literal["running", "paused", "stopped"]


class _Model(Frozen):
    """The running lab's record, as ``Frozen`` but mutable as it always was: the lab code builds it, saves it and
    reads it back; it is not the planned contract, and nothing proves (short of the lab tier) that no caller updates
    one in place."""

    model_config = ConfigDict(frozen=False)


class RailNic(_Model):
    """One host's NIC on one rail."""

    rail_index: int
    rail_name: str
    netdev: str  # the interface name inside the guest
    device_id: str  # the QEMU device id (QMP set_link takes it)
    mac: str
    address: str
    prefix: int
    mtu: int
    link_up: bool = True

    @property
    def cidr(self) -> str:
        return f"{self.address}/{self.prefix}"


class DiskState(_Model):
    name: str
    path: Path
    size_bytes: int
    serial: str

    @property
    def guest_path(self) -> str:
        return f"/dev/disk/by-id/virtio-{self.serial}"


class HostState(_Model):
    name: str
    role: HostRole
    memory_mib: int
    cpus: int
    ssh_port: int
    mgmt_mac: str
    pidfile: Path
    qmp_socket: Path
    console_log: Path
    rails: tuple[RailNic, ...]
    disks: tuple[DiskState, ...]
    named_disks: dict[str, str] = {}  # the Blueprint's device paths the lab makes no disk for (LabHost.named_disks)
    power: Power = "running"
    boot_seconds: float | None = None


class SwitchState(_Model):
    rail_index: int
    rail_name: str
    socket_dir: Path
    pidfile: Path


class LabState(_Model):
    name: str
    workdir: Path
    runtime_dir: Path  # short path under /tmp: unix sockets and pidfiles
    accel: Literal["kvm", "tcg"]
    vmlinuz: Path
    initrd: Path
    private_key: Path
    plan: LabPlan
    hosts: tuple[HostState, ...]
    switches: tuple[SwitchState, ...]

    def host(self, name: str) -> HostState:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(name)


def state_path(workdir: Path) -> Path:
    return workdir / "lab" / "state.json"


def save(state: LabState) -> None:
    """Write atomically (temp file + rename) so a reader never sees half a state file."""
    path = state_path(state.workdir)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write(path, state.model_dump_json(indent=2))


def load(workdir: Path) -> LabState | None:
    path = state_path(workdir)
    if not path.is_file():
        return None
    return LabState.model_validate_json(path.read_text())


class RailStatus(_Model):
    name: str
    netdev: str
    address: str
    link_up: bool


class HostStatus(_Model):
    name: str
    role: HostRole
    ssh_port: int
    power: Power
    rails: tuple[RailStatus, ...]
    panic: str = ""  # the guest kernel's panic from its console (vm.kernel_panic), "" when it shows none


class LabStatus(_Model):
    """What ``Lab.status()`` reports: read live from QEMU where it can be."""

    name: str
    accel: str
    hosts: tuple[HostStatus, ...]
