"""Variables of the ``nvmeof`` role: NVMe-oF subsystems on the storage targets, multipath on the clients.

Each subsystem of the Blueprint is served by the storage target the planner names (``served_by``: ``hot-3``,
``storage-1``) and lets in only the hosts the Blueprint says attach it, by the host NQN the planner gives each.
Targets export it on one port per rail; clients connect once per rail. Secrets are not role variables: the role
reads them from the cluster's secrets file (``clustersmith_secrets_file``, blueprints.secrets).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from blueprints.blueprint import Blueprint
from blueprints.hosts import INVENTORY_GROUPS, InventoryGroup
from blueprints.rolevars import Group, RoleVars
from blueprints.rolevars.rdma import InventoryRail


class SubsystemVars(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    nqn: str = Field(description="NVMe Qualified Name of the subsystem")
    tier: str = Field(description="Storage tier the subsystem belongs to")
    target_host: str = Field(description="Inventory name of the storage target that serves it")
    attached_by: InventoryGroup = Field(
        description="Inventory group whose nvmeof_hosts attach it: the target lets in their host NQNs, no other")


class HostIdentityVars(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Inventory name of a host that attaches subsystems")
    group: InventoryGroup = Field(description="Its inventory group (a subsystem's attached_by names one)")
    nqn: str = Field(description="Its host NQN (/etc/nvme/hostnqn), the Blueprint's")
    hostid: str = Field(description="Its host ID (/etc/nvme/hostid), a UUID")


class NvmeofVars(RoleVars):
    ROLE = "nvmeof"

    nvmeof_side: Literal["target", "host"] = Field(
        description="target: export subsystems through nvmet; host: connect to them with native multipath")
    nvmeof_transport: Literal["rdma", "tcp"] = Field(description="Fabric transport (storage.nvmeof.transport)")
    nvmeof_port: int = Field(ge=1, le=65535, description="Transport service id (TCP/RDMA-CM port) of every port")
    nvmeof_paths_per_subsystem: int = Field(ge=1, description="Paths each client opens per subsystem, one per rail")
    nvmeof_iopolicy: Literal["numa", "round-robin", "queue-depth"] = Field(
        description="Native multipath I/O policy of every subsystem")
    nvmeof_ctrl_loss_tmo: int = Field(ge=-1, description="Seconds a lost controller is retried; -1: forever")
    nvmeof_reconnect_delay: int = Field(ge=1, description="Seconds between reconnect attempts")
    nvmeof_fast_io_fail_tmo: int = Field(
        ge=-1, description="Seconds before I/O on a lost path fails over to the others; -1: off")
    nvmeof_keep_alive_tmo: int = Field(ge=1, description="Keep-alive timeout in seconds")
    nvmeof_tos: int = Field(ge=0, le=255, description="IP type of service of the connections (qos.traffic_class)")
    nvmeof_subsystems: tuple[SubsystemVars, ...] = Field(description="Every subsystem and the target serving it")
    nvmeof_hosts: tuple[HostIdentityVars, ...] = Field(
        description="NVMe host identity of every host that attaches subsystems (storage.nvmeof.host_nqn_prefix)")
    nvmeof_auth: Literal["dhchap", "none"] = Field(
        description="dhchap: bidirectional DH-CHAP with the secrets file's nvme_dhchap secrets; none: allowed_hosts "
                    "only (storage.nvmeof.auth)")
    nvmeof_rails: tuple[InventoryRail, ...] | None = Field(
        default=None, description="Rail NICs of this host; unset: the inventory's per-host `rails` list")
    nvmeof_namespace_device: str | None = Field(
        default=None,
        description="Target side: block device behind the namespace it serves; unset: the inventory's disks.slow")


def role_vars(bp: Blueprint) -> dict[Group, RoleVars]:
    plan = bp.storage.nvmeof
    if plan is None:
        return {}
    # Who attaches a subsystem is named by group, not host by host: every GPU node attaches every subsystem today,
    # and a list per subsystem would be subsystems x hosts entries (1,000 x 12,500 at 100,000 GPUs).
    subsystems = tuple(SubsystemVars(nqn=s.nqn, tier=s.tier, target_host=s.served_by,
                                     attached_by=INVENTORY_GROUPS[s.attached_by]) for s in plan.subsystems)
    by_role = {role: set(names) for role, names in bp.hosts_by_role().items()}
    roles = list(dict.fromkeys(s.attached_by for s in plan.subsystems))

    def group(name: str) -> InventoryGroup:
        return next(INVENTORY_GROUPS[r] for r in roles if name in by_role.get(r, set()))

    hosts = tuple(HostIdentityVars.model_construct(name=h.name, group=group(h.name), nqn=h.nqn, hostid=h.hostid)
                  for h in bp.nvmeof_hosts())  # the Blueprint's values, unvalidated a second time: 12,500 at 100k GPUs

    def side(name: Literal["target", "host"]) -> NvmeofVars:
        return NvmeofVars(
            nvmeof_side=name,
            nvmeof_transport=plan.transport,
            nvmeof_port=plan.port,
            nvmeof_paths_per_subsystem=plan.paths_per_subsystem.value,
            nvmeof_iopolicy=plan.iopolicy.value,
            nvmeof_ctrl_loss_tmo=plan.ctrl_loss_tmo.value,
            nvmeof_reconnect_delay=plan.reconnect_delay.value,
            nvmeof_fast_io_fail_tmo=plan.fast_io_fail_tmo.value,
            nvmeof_keep_alive_tmo=plan.keep_alive_tmo.value,
            nvmeof_tos=bp.qos.traffic_class.value,
            nvmeof_subsystems=subsystems,
            nvmeof_hosts=hosts,
            nvmeof_auth=plan.auth.value,
        )

    return {"storage_targets": side("target"), "gpu_clients": side("host")}
