"""The part of a Blueprint that describes the local QEMU lab (target ``lab``).

The planner fills it from the spec's ``target`` block; ``stacks.lab`` reads nothing else to build the
image, boot the VMs and wire the rails.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.hosts import HostRole
from blueprints.model import Frozen
from blueprints.traced import Traced


class LabDisk(Frozen):
    name: str = Field(
        pattern=r"^(fast|nvmeof|osd[0-9]+)$",
        description="fast: the NVMe-like cache device; nvmeof: the device a target carves into namespaces; osdN: a "
                    "Ceph OSD's device",
    )
    size_bytes: int = Field(gt=0, description="Size of the sparse disk image in bytes")


class LabRail(Frozen):
    index: int = Field(ge=0, description="Rail number, 0-based")
    name: str = Field(description="Rail name used in inventories, e.g. rail0")
    subnet: str = Field(description="Private IPv4 /24 of this rail, only the lab's VMs are on it")
    mtu: int = Field(description="MTU set on the rail NICs")


class LabHost(Frozen):
    name: str = Field(description="VM host name, e.g. storage-1 or client-1")
    role: HostRole = Field(description="What the host does in the cluster")
    memory_mib: int = Field(ge=512, description="Guest memory in MiB (the root file system lives in it)")
    cpus: int = Field(ge=1, description="Guest vCPUs")
    disks: tuple[LabDisk, ...] = Field(default=(), description="Extra block devices for storage tiering")
    named_disks: dict[str, str] = Field(
        default_factory=dict, description="Inventory disks the lab makes no virtual disk for, by the device path the "
                                          "Blueprint gives (a client's disks.slow: its own NVMe-oF namespace)")


LabKernelName = Literal["bookworm", "bookworm-backports"]


class LabKernel(Frozen):
    name: LabKernelName = Field(description="Which Debian kernel the lab boots, as the spec names it")
    apt_suite: str = Field(description="Debian suite whose linux-image-amd64 names the kernel package, e.g. "
                                       "bookworm-backports")
    machine_index: bool = Field(description="True: resolved and fetched with the machine's own apt index (its "
                                            "sources list the suite); False: with a private apt index of the "
                                            "machine's mirror and this suite, verified by the system keyring")
    release_series: str = Field(description="The kernel series the suite carries, e.g. 6.12 (informational)")
    nvme_auth: bool = Field(description="Built with CONFIG_NVME_HOST_AUTH and CONFIG_NVME_TARGET_AUTH (DH-CHAP)")


class LabImage(Frozen):
    suite: str = Field(description="Debian suite the root file system is bootstrapped from")
    packages: tuple[str, ...] = Field(description="Debian packages installed into the image")
    kernel_modules: tuple[str, ...] = Field(description="Kernel modules copied from the Debian kernel package")
    kernel: Traced[LabKernel] = Field(description="The kernel the VMs boot and what it can do")


class LabPlan(Frozen):
    hosts: tuple[LabHost, ...] = Field(description="The VMs, storage targets first")
    rails: tuple[LabRail, ...] = Field(description="Private L2 segments, one NIC per VM on each")
    image: LabImage = Field(description="What the shared guest image holds")
    storage_memory_mib: Traced[int] | None = Field(
        default=None, description="RAM of each storage VM, sized for the Ceph daemons it runs")
