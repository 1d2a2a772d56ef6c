"""What every stack exports, typed: one ``clustersmith`` stack output that ``clustersmith inventory
--from-stack`` turns into the Ansible inventory.

On the clouds the GPU nodes are fleets (an Auto Scaling group, managed instance groups, Flexible scale sets): the
output names each fleet, where the provider API finds it, and the host names its instances take; the instances and
their addresses are read from the provider at inventory time (``stacks.fleet_inventory``). Machines the stack
creates one by one (the monitoring host, bare metal) are listed in ``hosts``.

The output is a JSON string (``pulumi stack output clustersmith`` prints it; a string, since building
the nested object as Pulumi values costs minutes at 2,048 hosts): hosts with their role,
inventory group, management address, SSH user and rails (the per-rail address where the provider has
one: GCP's RoCE NICs, bare-metal rails; EFA and Azure's InfiniBand have none until the guest sets
them), plus the managed file system's mount facts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from blueprints.hosts import HostRole, host_names
from blueprints.model import Frozen

OUTPUT_NAME = "clustersmith"
RailKind = Literal["efa", "efa-only", "mrdma", "infiniband", "roce", "storage"]


class StackRail(Frozen):
    index: int = Field(description="Rail number, 0-based")
    name: str = Field(description="rail<index>")
    kind: RailKind
    netdev: str | None = Field(default=None, description="Interface name in the guest, where known")
    address: str | None = Field(default=None, description="IPv4 address of the rail, where the provider sets one")
    prefix: int | None = Field(default=None, description="Prefix length of that address")
    network_card: int | None = Field(default=None, description="AWS network card index of an EFA rail")


class StackHost(Frozen):
    name: str
    role: HostRole
    group: str = Field(description="Inventory group: storage_targets, gpu_clients or monitoring")
    node_type: str
    address: str = Field(description="Management address Ansible connects to")
    user: str = Field(description="SSH user")
    rails: tuple[StackRail, ...] = ()


class StackFileSystem(Frozen):
    service: str = Field(description="Catalog file system, e.g. fsx-lustre-persistent2-1000")
    capacity_gib: int
    throughput_mbps: int = Field(description="Provisioned throughput of the whole file system, in MB/s")
    mount: str = Field(description="What a client mounts, e.g. <dns>@tcp:/<mountname>")


class AwsFleetRef(Frozen):
    provider: Literal["aws"] = "aws"
    region: str
    group: str = Field(description="Auto Scaling group name")


class GcpFleetRef(Frozen):
    provider: Literal["gcp"] = "gcp"
    project: str
    zone: str
    group: str = Field(description="Managed instance group name")


class AzureFleetRef(Frozen):
    provider: Literal["azure"] = "azure"
    scale_set_id: str = Field(description="ARM id of the Flexible scale set (subscription and resource group in it)")


FleetRef = Annotated[AwsFleetRef | GcpFleetRef | AzureFleetRef, Field(discriminator="provider")]


class StackFleet(Frozen):
    """A fleet the stack created, and the Blueprint host names its instances are given."""

    name: str = Field(description="Fleet name (the Blueprint's), also its clustersmith:fleet tag or label")
    ref: FleetRef
    role: HostRole
    group: str = Field(description="Inventory group of its hosts")
    node_type: str
    name_prefix: str
    first: int = Field(ge=1, description="Number of the fleet's first host")
    size: int = Field(ge=1, description="Instances the fleet keeps running")
    host_tag: str = Field(description="Tag or label naming each instance's host, written by inventory --from-stack")
    user: str = Field(description="SSH user")
    rails: tuple[StackRail, ...] = Field(default=(), description="Every instance's rails; where the provider gives "
                                                                 "a rail its address (GCP) it is read per instance")

    def host_names(self) -> list[str]:
        return host_names(self.name_prefix, self.first, self.size)


class StackOutputs(Frozen):
    design: str
    provider: Literal["aws", "gcp", "azure", "baremetal"]
    hosts: tuple[StackHost, ...]
    fleets: tuple[StackFleet, ...] = Field(default=(), description="Fleets whose instances become hosts at "
                                                                   "inventory time")
    file_system: StackFileSystem | None = None

    @classmethod
    def parse(cls, data: Any) -> StackOutputs:
        return cls.model_validate(data)
