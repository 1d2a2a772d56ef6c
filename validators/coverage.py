"""What the Blueprint plans that a verdict must cover, read from it once, and the coverage of a result against it.

Every rule gets a ``Planned``: the GPU nodes, storage targets and monitoring hosts by name
(``Blueprint.hosts_by_role``), the GPUs per node and so the ranks an all-node NCCL run has, the compute rails,
and the NVMe-oF subsystems each GPU node owns and attaches with their paths (one per rail). ``cover`` compares the names
a result reports with the planned ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from blueprints.blueprint import Blueprint, CephPlan
from validators.outcome import Coverage


class OsdHostPlan(BaseModel):
    """One Ceph OSD host as the Blueprint plans it: its tier's OSDs per host and CRUSH device class."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    osds: int
    device_class: str


class Planned(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu_nodes: tuple[str, ...] = Field(description="Hosts of role gpu_client, in the Blueprint's order")
    storage_targets: tuple[str, ...] = ()
    monitoring: tuple[str, ...] = ()
    gpus_per_node: int
    rails: int = Field(description="Compute rails per GPU node")
    storage_rails: tuple[int, ...] = Field(default=(), description="Rail indices of each GPU node's storage NICs "
                                           "(storage_fabric.client_rails), measured against the storage targets")
    rail_gbit: float | None = Field(default=None, description="Line rate of a compute rail NIC (compute.rail_speed)")
    storage_nic_gbit: float | None = Field(default=None, description="Line rate of a GPU node's storage NIC: its "
                                           "compute rail's where the fabrics share the rails")
    subsystems: dict[str, tuple[str, ...]] = Field(default_factory=dict,
                                                   description="Host -> the NVMe-oF NQNs it attaches")
    paths_per_subsystem: int = 0
    host_nqns: dict[str, str] = Field(default_factory=dict,
                                      description="Host -> the NVMe host NQN the Blueprint assigns it (nvmeof.host)")
    gpus_emulated: bool = Field(default=False, description="The lab: the Blueprint itself says there is no GPU")
    ceph: CephPlan | None = Field(default=None, description="The Ceph cluster the Blueprint plans (storage.ceph)")
    osd_hosts: dict[str, OsdHostPlan] = Field(default_factory=dict,
                                              description="Host -> its planned OSDs (storage targets of a Ceph tier)")
    scrape_targets: tuple[str, ...] = Field(default=(), description="'job host' of every target Prometheus must "
                                            "scrape (Blueprint.scrape_targets: the build's file_sd target files)")

    @property
    def ranks(self) -> int:
        """An all-node NCCL run: one rank per GPU on every GPU node."""
        return len(self.gpu_nodes) * self.gpus_per_node

    @classmethod
    def of(cls, bp: Blueprint) -> Planned:
        by_role = bp.hosts_by_role()
        nvmeof = bp.storage.nvmeof
        subsystems = {owner: [s.nqn for s in subs] for owner, subs in bp.nvmeof_owned().items()}
        return cls(gpu_nodes=tuple(by_role.get("gpu_client", [])),
                   storage_targets=tuple(by_role.get("storage_target", [])),
                   monitoring=tuple(by_role.get("monitoring", [])), gpus_per_node=bp.compute.gpus_per_node,
                   rails=bp.compute.rails.value, storage_rails=bp.storage_fabric.client_rails.value,
                   rail_gbit=bp.compute.rail_speed.gbit,
                   storage_nic_gbit=(bp.compute.rail_speed if bp.storage_fabric.shared_with_compute
                                     else bp.compute.storage_nic_speed).gbit,
                   subsystems={h: tuple(n) for h, n in subsystems.items()},
                   paths_per_subsystem=nvmeof.paths_per_subsystem.value if nvmeof else 0,
                   host_nqns={h: nvmeof.host(h).nqn for h in subsystems} if nvmeof else {},
                   gpus_emulated=bp.lab is not None, ceph=bp.storage.ceph, osd_hosts=osd_hosts(bp),
                   scrape_targets=tuple(f"{g.job} {h}" for g in bp.scrape_targets() for h in g.hosts))


def osd_hosts(bp: Blueprint) -> dict[str, OsdHostPlan]:
    """Each storage target of a tier the CephPlan has an OSD group for, with that group's OSDs per host and class."""
    ceph = bp.storage.ceph
    groups = {g.tier: g for g in ceph.osd_groups} if ceph else {}
    return {name: OsdHostPlan(osds=groups[h.tier].osds_per_host.value, device_class=groups[h.tier].device_class)
            for h in bp.hosts if h.role == "storage_target" and h.tier in groups for name in h.names()}


def cover(what: str, seen: Iterable[str], planned: Iterable[str]) -> Coverage:
    """``seen`` (one name per report, repeats kept) against ``planned``: missing, foreign and duplicate names."""
    reports = list(seen)
    plan = list(dict.fromkeys(planned))
    counts = Counter(reports)
    wanted = set(plan)
    return Coverage(what=what, seen=len(wanted & set(counts)), planned=len(plan),
                    missing=tuple(p for p in plan if p not in counts),
                    foreign=tuple(sorted(n for n in counts if n not in wanted)),
                    duplicate=tuple(sorted(n for n, k in counts.items() if k > 1)))


def count(what: str, seen: int, planned: int) -> Coverage:
    """A count the result states (ranks, nodes) against the plan's, when the units have no names."""
    return Coverage(what=what, seen=seen, planned=planned)
