"""The storage plan: tiers and their protection, NVMe-oF, the client cache (dm-cache), the cloud's managed
file system, and the whole StoragePlan over them (Ceph and the shared file system in their own modules)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import Field, model_validator

from blueprints.blueprint.ceph import CephPlan
from blueprints.blueprint.shared_fs import SharedFsPlan
from blueprints.model import Frozen
from blueprints.traced import Traced
from blueprints.units import Duration, Rate, Ratio, Size


class ProtectionOption(Frozen):
    scheme: Literal["erasure", "replica", "none"]
    data: int = Field(description="k data chunks (1 for replicas)")
    parity: int = Field(description="m parity chunks, or copies - 1 for replicas")
    multiplier: float = Field(description="raw / usable")
    raw: Size = Field(description="Raw capacity this option needs")
    min_nodes: int = Field(description="Failure domains the option needs")


class TierOption(Frozen):
    """One server shape under one protection option, weighed for a tier (planner/storage_optimizer.py)."""

    server: str = Field(description="Catalog server shape")
    media: str = Field(description="Its drives' media class")
    protection: str = Field(description="e.g. ec-8+2 or replica-3")
    nodes: int = Field(description="Servers it needs: the largest of what each constraint needs")
    binding: Literal["read", "write", "capacity", "failure domains", "target.storage_targets"] = Field(
        description="The constraint that sets the server count (the lab: the spec's count of storage VMs)")
    raw: Size = Field(description="Raw capacity of those servers")
    aggregate_read: Rate = Field(description="Their read throughput under this protection")
    headroom: float | None = Field(description="aggregate read / the tier's read target - 1; None where the tier "
                                               "has no read target")
    per_month: float | None = Field(description="US dollars a month (list prices amortised); None where unknown")
    pareto: bool = Field(description="No other option is as good on cost, headroom and raw capacity and better on one")
    chosen: bool


class TierPlan(Frozen):
    name: Literal["local_cache", "hot", "warm", "cold"]
    media: str
    server: str = Field(description="Catalog server shape")
    usable: Traced[Size]
    protection: Traced[str] = Field(description="Chosen scheme, e.g. ec-8+2 or replica-3")
    alternatives: tuple[ProtectionOption, ...] = Field(description="Protection options weighed, raw of each")
    raw: Traced[Size]
    nodes: Traced[int]
    per_node_read: Rate
    aggregate_read: Traced[Rate]
    read_latency: Duration | None = Field(default=None, description="4k read latency of the media")
    options: tuple[TierOption, ...] = Field(default=(), description="Server shapes and protections weighed")
    decided_by: Literal["cost", "rules"] = Field(
        default="rules", description="cost: the least-cost program chose (every option priced); rules: the "
                                     "planner's rules, some option's list price being unknown")
    unpriced: tuple[str, ...] = Field(default=(), description="Price rows whose price would let cost decide")


class NvmeofSubsystem(Frozen):
    """One namespace and the one host that owns it: the target lets in only the owner's host NQN, and only the
    owner builds on it (its dm-cache tier's origin, ``disks.slow``)."""

    nqn: str
    tier: str
    served_by: str = Field(description="Host name of the storage target that exports it")
    owner: str = Field(description="Host name of the one host that attaches it; no other host's NQN is let in")
    uuid: str = Field(description="Namespace UUID (nvmet device_uuid), uuid5 of the NQN: the owner finds the "
                                  "device as /dev/disk/by-id/nvme-uuid.<uuid>")
    volume: str = Field(description="LVM volume the target carves for it from its disks.nvmeof")

    @property
    def device(self) -> str:
        """The namespace's block device on its owner (udev's link from the namespace's wwid)."""
        return f"/dev/disk/by-id/nvme-uuid.{self.uuid}"


class NvmeofHost(Frozen):
    """The NVMe host identity the planner gives one host that attaches subsystems (``/etc/nvme/hostnqn``, hostid)."""

    name: str = Field(description="Host name")
    nqn: str = Field(description="Host NQN: the only NQN its subsystems' targets let in")
    hostid: str = Field(description="Host ID (UUID), uuid5 of the host NQN, one per NQN as the kernel requires")


class NvmeofPlan(Frozen):
    transport: Literal["rdma", "tcp"]
    port: int
    host_nqn_prefix: str = Field(
        description="Host NQN of host <name> is <host_nqn_prefix><name> (nvmeof.host_nqn); every subsystem allows "
                    "exactly the NQNs of the hosts that attach it (attr_allow_any_host=0)")
    auth: Traced[Literal["dhchap", "none"]] = Field(
        description="dhchap: targets and hosts authenticate both ways with the cluster's DH-CHAP secrets; none: the "
                    "target's kernel cannot (allowed_hosts still apply)")
    paths_per_subsystem: Traced[int]
    iopolicy: Traced[Literal["numa", "round-robin", "queue-depth"]]
    ctrl_loss_tmo: Traced[int]
    reconnect_delay: Traced[int]
    fast_io_fail_tmo: Traced[int]
    keep_alive_tmo: Traced[int]
    namespace_size: Traced[Size] = Field(description="Size of every namespace: the LVM volume its target carves")
    volume_group: str = Field(description="LVM volume group each target makes on its disks.nvmeof")
    subsystems: tuple[NvmeofSubsystem, ...] = Field(description="One per owning host, in host order")

    @model_validator(mode="after")
    def _one_owner_each(self) -> NvmeofPlan:
        seen: set[str] = set()
        for sub in self.subsystems:
            if sub.nqn in seen:
                raise ValueError(f"subsystems repeat NQN {sub.nqn}: expected one entry, and so one owner, per "
                                 "namespace")
            seen.add(sub.nqn)
        return self

    def owned(self) -> dict[str, list[NvmeofSubsystem]]:
        """Host name -> the subsystems it owns, in the plan's order."""
        owned: dict[str, list[NvmeofSubsystem]] = {}
        for sub in self.subsystems:
            owned.setdefault(sub.owner, []).append(sub)
        return owned

    def host(self, name: str) -> NvmeofHost:
        """Host ``name``'s NVMe identity: the one naming rule of host NQNs (``host_nqn_prefix``)."""
        nqn = f"{self.host_nqn_prefix}{name}"
        # built unvalidated: three strings made here, 12,500 times for a 100,000-GPU design
        return NvmeofHost.model_construct(name=name, nqn=nqn, hostid=str(uuid.uuid5(uuid.NAMESPACE_URL, nqn)))


class CachePlan(Frozen):
    """Block-level tiering on each client: dm-cache of the local NVMe in front of the slower tier."""

    mode: Traced[Literal["writethrough", "writeback"]]
    policy: Literal["smq"]
    size: Traced[Size]
    hot_set: Traced[Size]
    read_ahead_kb: Traced[int]
    dirty_background_ratio: int
    dirty_ratio: int
    min_hit_ratio: Traced[Ratio]
    mount_point: str = Field(description="Where the tiered file system is mounted (acceptance's tier workloads "
                             "write their scratch there)")


class ManagedFsPlan(Frozen):
    """A cloud's managed parallel file system, sized from the spec; the stacks create it from these values."""

    service: str = Field(description="Catalog file system, e.g. fsx-lustre-persistent2-1000")
    provider: Literal["aws", "gcp", "azure"]
    product: str = Field(description="Product name")
    sku: str = Field(description="The tier as the provider's API names it (deployment type or SKU); may be empty")
    capacity: Traced[Size] = Field(description="Provisioned capacity, a size the service accepts")
    capacity_gib: int = Field(description="The same capacity in GiB, as the provider APIs take it")
    throughput_per_tib: Rate = Field(description="Provisioned throughput per TiB")
    per_unit_throughput: int = Field(description="Throughput per TiB in MB/s, as the provider APIs take it")
    throughput: Traced[Rate] = Field(description="capacity x throughput_per_tib")
    max_capacity: Size | None = Field(default=None, description="Largest size the provider lists for the tier")


class StoragePlan(Frozen):
    managed_service: str | None = Field(description="Cloud file system used instead of own servers")
    managed: ManagedFsPlan | None = Field(default=None, description="Sizing of the managed file system, in clouds")
    tiers: tuple[TierPlan, ...]
    read_throughput: Traced[Rate] = Field(description="Designed aggregate read throughput")
    write_throughput: Traced[Rate]
    nvmeof: NvmeofPlan | None
    cache: CachePlan | None = Field(description="dm-cache in front of the block device each GPU node owns (its own "
                                                "NVMe-oF namespace); None where a node owns none")
    ceph: CephPlan | None = Field(default=None, description="The Ceph cluster (bare metal, lab); None on the clouds")
    shared: SharedFsPlan = Field(description="The shared file system every GPU node mounts, and its client cache")
