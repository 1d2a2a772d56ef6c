"""The host groups of a design: which machines exist, how they are named, what NICs and disks each owns.

Everything downstream names hosts through these groups (``blueprints.hosts``); the planner names a tier's
storage hosts here too, so an NVMe-oF subsystem's serving host is the same name the inventory lists.
"""

from __future__ import annotations

from blueprints.blueprint import ComputePlan, StoragePlan, TierPlan
from blueprints.hosts import DiskPlan, HostGroup
from blueprints.planner.context import PlanContext
from blueprints.planner.lab import LAB_OSDS
from blueprints.spec import LabTarget

# Design defaults (not performance figures): the machine that runs Prometheus and Alertmanager.
MONITORING_NODE_TYPE = {
    "aws": "m7i.2xlarge",
    "gcp": "n2-standard-8",
    "azure": "Standard_D8s_v5",
    "baremetal": "monitoring",
}
FAST_DISK = DiskPlan(name="fast", purpose="local NVMe block device")
# Where NVMe-oF is planned (bare metal, the lab) the device the cache fronts is the host's own namespace: the
# inventory names it from the Blueprint (nvmeof.subsystems[].device), nothing to fill in. On the clouds it is a
# volume the host owns, which the user names.
OWN_NAMESPACE_DISK = DiskPlan(name="slow", purpose="the host's own NVMe-oF namespace", planned=True)
NVMEOF_DISK = DiskPlan(name="nvmeof", purpose="block device carved into the NVMe-oF namespaces the target serves")


def osd_disks(count: int) -> tuple[DiskPlan, ...]:
    """A Ceph host's OSD devices, osd0..osd<count-1>: the ceph role runs ceph-volume on each (the lab: its osdN
    virtual disks; bare metal: every data drive of the server)."""
    return tuple(DiskPlan(name=f"osd{i}", purpose="Ceph OSD data device") for i in range(count))


def storage_group(ctx: PlanContext, compute: ComputePlan, tier: TierPlan) -> HostGroup:
    """The storage-target hosts of one tier (the lab: its storage VMs). The hot tier's serve the NVMe-oF
    namespaces, carved from their disks.nvmeof."""
    prefix = "storage-" if ctx.is_lab else f"{tier.name}-"
    drives = LAB_OSDS if ctx.is_lab else ctx.catalog.storage_servers[tier.server].drives
    # the server's own storage NICs (catalog), as the storage fabric counts them; the lab's VMs have the rails
    nics = compute.storage_nics if ctx.is_lab else ctx.catalog.storage_servers[tier.server].nics
    serving = (NVMEOF_DISK,) if tier.name == "hot" else ()
    return HostGroup(role="storage_target", count=tier.nodes.value, name_prefix=prefix, node_type=tier.server,
                     rail_nics=nics, tier=tier.name, disks=serving + osd_disks(drives))


def client_disks(storage: StoragePlan | None) -> tuple[DiskPlan, ...]:
    """A GPU node's disks the roles use: its local NVMe where a cache is planned on it (dm-cache, FS-Cache), and its
    own NVMe-oF namespace where one is planned (``storage`` None: while the namespaces themselves are planned). The
    clouds' nodes list none: their stacks' outputs name no instance-store device, and no role uses one there."""
    if storage is None:
        return (FAST_DISK, OWN_NAMESPACE_DISK)
    fast = (FAST_DISK,) if storage.cache is not None or storage.shared.fscache is not None else ()
    return fast + ((OWN_NAMESPACE_DISK,) if storage.nvmeof is not None else ())


def client_group(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan | None = None) -> HostGroup:
    """The GPU nodes (the lab: its client VMs), with the disks ``client_disks`` names."""
    disks = client_disks(storage)
    if isinstance(ctx.req.target, LabTarget):
        t = ctx.req.target
        return HostGroup(role="gpu_client", count=t.clients, name_prefix="client-", node_type="lab-vm",
                         rail_nics=t.rails, disks=disks)
    return HostGroup(role="gpu_client", count=compute.nodes.value, name_prefix="gpu-",
                     node_type=compute.node_type.value, rail_nics=compute.rails.value, disks=disks)


def host_groups(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan) -> tuple[HostGroup, ...]:
    if isinstance(ctx.req.target, LabTarget):
        t = ctx.req.target
        return (
            HostGroup(role="storage_target", count=t.storage_targets, name_prefix="storage-", node_type="lab-target",
                      rail_nics=t.rails, tier="hot", disks=(NVMEOF_DISK, *osd_disks(LAB_OSDS))),
            client_group(ctx, compute, storage),
            HostGroup(role="monitoring", count=1, name_prefix="storage-", node_type="lab-target"),
        )
    groups = [client_group(ctx, compute, storage)]
    groups += [storage_group(ctx, compute, t) for t in storage.tiers if t.name != "local_cache" and t.nodes.value > 0]
    groups.append(HostGroup(role="monitoring", count=1, name_prefix="mon-",
                            node_type=MONITORING_NODE_TYPE[ctx.provider]))
    return tuple(groups)
