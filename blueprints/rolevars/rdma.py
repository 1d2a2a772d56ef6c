"""Variables of the ``rdma`` role: RoCE on every rail NIC, from the Blueprint's fabric and QoS plan.

Also defines the inventory's per-host ``rails`` entry (:class:`InventoryRail`), which every data-path
role reads: ``clustersmith lab up`` writes it with real names and addresses, the ansible renderer
writes it with placeholders for non-lab targets.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from blueprints.blueprint import Blueprint
from blueprints.rolevars import Group, RoleVars

# Soft-RoCE puts the RoCE v2 GID of the rail's IPv4 address at index 1 (index 0: the RoCE v2 link-local GID),
# as measured in the lab (roles/rdma/molecule/default: GID check and its negative test at index 0).
SOFT_ROCE_V2_IPV4_GID_INDEX = 1


class InventoryRail(BaseModel):
    """One rail NIC of one host, as the inventory's per-host ``rails`` list holds it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=0, description="Rail number, 0-based; paths pair NICs of the same index")
    name: str = Field(description="Rail name, e.g. rail0")
    netdev: str = Field(description="Network interface of this rail on the host, e.g. rail0 or ens1f0np0")
    address: str | None = Field(default=None, description="IPv4 address of the NIC on this rail")
    prefix: int | None = Field(default=None, ge=0, le=32, description="Prefix length of the rail subnet")
    cidr: str | None = Field(default=None, description="address/prefix")
    mtu: int | None = Field(default=None, description="MTU of this NIC; unset: the fabric MTU")
    mac: str | None = Field(default=None, description="MAC address of the NIC")


class RdmaVars(RoleVars):
    ROLE = "rdma"

    rdma_fabric: Literal["roce", "infiniband"] = Field(description="Fabric kind (fabric.kind)")
    rdma_soft_roce: bool = Field(
        description="Create Soft-RoCE (rxe) devices on the rail NICs: the lab, whose NICs have no RDMA engine")
    rdma_roce_mode: Literal["RoCE v2", "IB/RoCE v1"] = Field(
        default="RoCE v2", description="Default RoCE mode of RDMA-CM on each rail device (RoCE fabrics)")
    rdma_roce_tos: int = Field(
        ge=0, le=255, description="RDMA-CM default ToS of each rail device, as cma_roce_tos sets it "
                                  "(qos.traffic_class; RoCE fabrics)")
    rdma_gid_index: int = Field(
        default=-1, ge=-1, description="GID index that must hold the rail's RoCE v2 IPv4 GID (the lab's Soft-RoCE: "
                                       "1); -1, as NCCL's own default: found in each device's GID table, recorded")
    rdma_mtu: int = Field(ge=576, le=9216, description="MTU of every rail NIC (fabric.mtu)")
    rdma_rails: tuple[InventoryRail, ...] | None = Field(
        default=None, description="Rail NICs of this host; unset: the inventory's per-host `rails` list")


def gid_index(bp: Blueprint) -> int | None:
    """The lab's Soft-RoCE index, checked on the host; elsewhere none is assumed (ConnectX numbering varies:
    field-numbers 3.3 "usually index 3"), the role finds it in the GID table and records it."""
    return SOFT_ROCE_V2_IPV4_GID_INDEX if bp.lab is not None and bp.fabric.kind.value == "roce" else None


def role_vars(bp: Blueprint) -> dict[Group, RoleVars]:
    """RoCE and InfiniBand fabrics the cluster runs itself; nothing where the provider owns RDMA (EFA)."""
    kind = bp.fabric.kind.value
    if kind == "efa":
        return {}
    gid = gid_index(bp)
    return {
        "all": RdmaVars(
            rdma_fabric=kind,
            rdma_soft_roce=bp.lab is not None,
            rdma_roce_mode="RoCE v2",
            rdma_roce_tos=bp.qos.traffic_class.value,
            rdma_mtu=bp.fabric.mtu.value,
            **({"rdma_gid_index": gid} if gid is not None else {}),
        )
    }
