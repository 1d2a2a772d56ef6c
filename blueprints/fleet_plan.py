"""The part of a Blueprint that says how the clouds' GPU nodes are provisioned: as the providers' fleet resources.

One fleet is one provider resource that keeps a number of identical machines running (an AWS Auto Scaling group,
a GCP managed instance group, an Azure scale set in Flexible orchestration). The planner splits the GPU nodes into
fleets no larger than the provider allows, each over a contiguous range of the GPU group's host names, and says
how the fleets meet the fabric (on Azure one InfiniBand partition per scale set). The stacks create one resource per
fleet, and ``clustersmith inventory --from-stack`` names each fleet's instances after that range.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.hosts import HostRole, host_names
from blueprints.model import Frozen
from blueprints.traced import Traced

FleetKind = Literal["aws-autoscaling-group", "gcp-managed-instance-group", "azure-scale-set-flexible"]


class Fleet(Frozen):
    """One fleet resource and the host names its instances take."""

    name: str = Field(description="Fleet name, also its resource's name and clustersmith:fleet tag, e.g. gpu-fleet-1")
    role: HostRole
    node_type: str = Field(description="Instance type (the host group's node_type)")
    name_prefix: str = Field(description="The host group's naming rule: host n is <name_prefix><n>")
    first: int = Field(ge=1, description="Number of the fleet's first host in its group")
    size: int = Field(ge=1, description="Instances the fleet keeps running: hosts first .. first + size - 1")
    ib_partition: int | None = Field(
        default=None, description="Azure: the InfiniBand partition of the fleet's VMs (one per scale set); None "
                                  "where the fabric spans every fleet")

    def host_names(self) -> list[str]:
        return host_names(self.name_prefix, self.first, self.size)

    @property
    def last(self) -> int:
        return self.first + self.size - 1


class CapacityPlan(Frozen):
    """Where the fleets' capacity comes from: on-demand, or a reservation the spec names."""

    source: Traced[Literal["on-demand", "reservation", "capacity-block"]]
    reservation: str | None = Field(default=None, description="AWS capacity reservation id (cr-...) or GCP "
                                                              "reservation name the instances launch into")


class FleetsPlan(Frozen):
    kind: FleetKind = Field(description="The provider resource each fleet is")
    max_size: Traced[int] | None = Field(description="Most instances one fleet may hold; None: no limit below the "
                                                     "account's quota")
    fleets: tuple[Fleet, ...] = Field(description="GPU-node fleets, in host order")
    count: Traced[int] = Field(description="Number of fleets")
    fabric: str = Field(description="How the fleets share the compute fabric")
    capacity: CapacityPlan
    host_tag: str = Field(description="Tag (AWS, Azure) or label (GCP) `inventory --from-stack` writes on each "
                                      "instance once, naming the host it is")
