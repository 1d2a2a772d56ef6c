"""The fabrics: the compute fabric (RoCE, InfiniBand, EFA) and the storage fabric, sized and counted."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.model import Frozen
from blueprints.traced import Traced

FabricKind = Literal["roce", "infiniband", "efa"]


class FabricPlan(Frozen):
    kind: Traced[FabricKind]
    provider_managed: bool = Field(description="True in clouds: the provider runs the switches")
    switch: str | None = Field(description="Catalog switch model")
    radix: int | None = None
    endpoints: Traced[int] = Field(description="NIC ports attached to the compute fabric")
    tiers: Traced[int] = Field(description="Fat-tree tiers (0 when provider-managed)")
    leaf_switches: Traced[int]
    spine_switches: Traced[int]
    core_switches: Traced[int]
    rail_optimized: Traced[bool]
    ecmp: bool
    mtu: Traced[int]
    scalable_units: Traced[int] | None = Field(
        default=None, description="InfiniBand: whole scalable units the fabric is built for (positions rounded up)")
    fabric_manager_positions: Traced[int] | None = Field(
        default=None, description="Node positions reserved for the subnet manager (UFM) on InfiniBand")
    designed_endpoints: Traced[int] | None = Field(
        default=None, description="Leaf down-ports the design provides after rounding (>= endpoints)")
    leaf_spine_cables: int = Field(default=0, ge=0, description="Cables from each leaf to each spine")


class StorageFabricPlan(Frozen):
    """The storage fabric, sized and counted on its own: GPU nodes' storage NICs plus the storage nodes' NICs."""

    provider_managed: bool = Field(description="True in clouds: the managed file system's network is the provider's")
    shared_with_compute: bool = Field(default=False, description="True in the lab: both rails carry both")
    client_rails: Traced[tuple[int, ...]] = Field(
        description="Rail indices (the inventory's per-host `rails`) of each GPU node's storage NICs: "
                                  "the compute rails themselves where shared_with_compute, else the storage NICs "
                                  "listed after the compute rails; empty where the GPU nodes have none (clouds)")
    switch: str | None = Field(description="Catalog switch model")
    radix: int | None = None
    port_speed: str | None = Field(default=None, description="Port speed the switch is chosen for")
    endpoints: Traced[int] = Field(description="NIC ports attached to the storage fabric")
    tiers: Traced[int]
    leaf_switches: Traced[int]
    spine_switches: Traced[int]
    core_switches: Traced[int]
    leaf_spine_cables: int = Field(default=0, ge=0, description="Cables from each leaf to each spine")
    nics_per_host: int = Field(default=1, ge=1, description="Storage NICs of every host where all have as many: NIC "
                                                            "j of each host on leaf group j; 1 otherwise")
