"""The lab used when no Blueprint gives one: the lab tier's tests and the molecule scenarios.

One storage target and two GPU clients on two rails; the storage target carries a fast and a slow
disk for tiering. Memory and CPU sizes are the smallest measured to boot reliably under TCG.
"""

from __future__ import annotations

from blueprints.lab_plan import LabDisk, LabHost, LabImage, LabPlan, LabRail

GIB = 1024**3

PACKAGES = (
    "rdma-core", "ibverbs-utils", "ibverbs-providers", "rdmacm-utils", "perftest", "infiniband-diags",
    "nvme-cli", "fio", "lvm2", "python3", "openssh-server", "prometheus", "prometheus-node-exporter",
    "iproute2", "iputils-ping", "procps", "kmod", "ethtool",
)  # fmt: skip
KERNEL_MODULES = (
    "rdma_rxe", "ib_core", "ib_uverbs", "ib_umad", "rdma_cm", "rdma_ucm", "nvme_core", "nvme_fabrics",
    "nvme_rdma", "nvme_tcp", "nvmet", "nvmet_rdma", "nvmet_tcp", "null_blk", "dm_mod", "dm_cache",
    "dm_cache_smq", "dm_multipath", "dm_round_robin",
)  # fmt: skip


def default_plan(client_memory_mib: int = 1536, target_memory_mib: int = 2048) -> LabPlan:
    disks = (LabDisk(name="fast", size_bytes=1 * GIB), LabDisk(name="slow", size_bytes=4 * GIB))
    return LabPlan(
        hosts=(
            LabHost(name="storage-1", role="storage_target", memory_mib=target_memory_mib, cpus=1, disks=disks),
            LabHost(name="client-1", role="gpu_client", memory_mib=client_memory_mib, cpus=1),
            LabHost(name="client-2", role="gpu_client", memory_mib=client_memory_mib, cpus=1),
        ),
        rails=(
            LabRail(index=0, name="rail0", subnet="10.77.0.0/24", mtu=1500),
            LabRail(index=1, name="rail1", subnet="10.77.1.0/24", mtu=1500),
        ),
        image=LabImage(suite="bookworm", packages=PACKAGES, kernel_modules=KERNEL_MODULES),
    )
