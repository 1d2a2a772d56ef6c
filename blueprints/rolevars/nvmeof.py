"""Variables of the ``nvmeof`` role: NVMe-oF subsystems on the storage targets, multipath on the clients.

Each subsystem of the Blueprint is one namespace owned by one host (``owner``: ``gpu-7``, ``client-1``), served by
the storage target the planner names (``served_by``: ``hot-3``, ``storage-1``) from an LVM volume it carves from
its disks.nvmeof, and lets in only its owner, by the host NQN the planner gives it. Targets export it on one port
per rail; its owner, and no other host, connects once per rail. Secrets are not role variables: the role
reads them from the cluster's secrets file (``clustersmith_secrets_file``, blueprints.secrets).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from blueprints.blueprint import Blueprint
from blueprints.rolevars import Group, RoleVars
from blueprints.rolevars.rdma import InventoryRail


class SubsystemVars(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    nqn: str = Field(description="NVMe Qualified Name of the subsystem")
    tier: str = Field(description="Storage tier the subsystem belongs to")
    target_host: str = Field(description="Inventory name of the storage target that serves it")
    owner: str = Field(description="Inventory name of the one host that attaches it: the target lets in its host NQN, "
                                   "no other")
    uuid: str = Field(description="Namespace UUID (nvmet device_uuid): the owner's /dev/disk/by-id/nvme-uuid.<uuid>")
    volume: str = Field(description="LVM volume of nvmeof_volume_group behind the namespace, on the target")


class HostIdentityVars(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Inventory name of a host that attaches subsystems")
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
    nvmeof_namespace_size_bytes: int = Field(gt=0, description="Size of every namespace (storage.nvmeof."
                                                              "namespace_size): its LVM volume on the target")
    nvmeof_volume_group: str = Field(pattern=r"^[A-Za-z0-9+_.][A-Za-z0-9+_.-]*$",
                                     description="LVM volume group a target makes on nvmeof_namespace_pool")
    nvmeof_namespace_pool: str | None = Field(
        default=None, description="Target side: the block device carved into the namespaces it serves, one LVM "
                                  "volume each; unset: the inventory's disks.nvmeof")


def role_vars(bp: Blueprint) -> dict[Group, RoleVars]:
    plan = bp.storage.nvmeof
    if plan is None:
        return {}
    # One subsystem per owning host: both lists grow with the GPU nodes (12,500 at 100,000 GPUs), so neither is
    # validated a second time, and the role filters them once per host (vars/main.yml).
    subsystems = tuple(SubsystemVars.model_construct(nqn=s.nqn, tier=s.tier, target_host=s.served_by, owner=s.owner,
                                                     uuid=s.uuid, volume=s.volume)
                       for s in plan.subsystems)  # the Blueprint's values, unvalidated again: 12,500 at 100k GPUs
    hosts = tuple(HostIdentityVars.model_construct(name=h.name, nqn=h.nqn, hostid=h.hostid)
                  for h in bp.nvmeof_hosts())

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
            nvmeof_namespace_size_bytes=int(plan.namespace_size.value.value),
            nvmeof_volume_group=plan.volume_group,
        )

    return {"storage_targets": side("target"), "gpu_clients": side("host")}
