"""The lab used when no Blueprint gives one: the lab tier's tests and the molecule scenarios.

One storage target and two GPU clients on two rails; the storage target carries a fast and a slow
disk for tiering. Memory and CPU sizes are the smallest measured to boot reliably under TCG.
"""

from __future__ import annotations

from blueprints.lab_plan import LabDisk, LabHost, LabImage, LabPlan, LabRail
from blueprints.planner.lab import LAB_MODULES, LAB_PACKAGES, LAB_SUITE

GIB = 1024**3

# The planner's image for the lab target, so the lab tier, the molecule scenarios and
# `clustersmith build examples/lab.yaml` share one cached image instead of building one each.
PACKAGES = LAB_PACKAGES
KERNEL_MODULES = LAB_MODULES


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
        image=LabImage(suite=LAB_SUITE, packages=PACKAGES, kernel_modules=KERNEL_MODULES),
    )
