"""What every stack exports, typed: one ``clustersmith`` stack output that ``clustersmith inventory
--from-stack`` turns into the Ansible inventory.

The output is a JSON string (``pulumi stack output clustersmith`` prints it; a string, since building
the nested object as Pulumi values costs minutes at 2,048 hosts): hosts with their role,
inventory group, management address, SSH user and rails (the per-rail address where the provider has
one: GCP's RoCE NICs, bare-metal rails; EFA and Azure's InfiniBand have none until the guest sets
them), plus the managed file system's mount facts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from blueprints.hosts import HostRole

OUTPUT_NAME = "clustersmith"
RailKind = Literal["efa", "efa-only", "mrdma", "infiniband", "roce", "storage"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StackRail(_Frozen):
    index: int = Field(description="Rail number, 0-based")
    name: str = Field(description="rail<index>")
    kind: RailKind
    netdev: str | None = Field(default=None, description="Interface name in the guest, where known")
    address: str | None = Field(default=None, description="IPv4 address of the rail, where the provider sets one")
    prefix: int | None = Field(default=None, description="Prefix length of that address")
    network_card: int | None = Field(default=None, description="AWS network card index of an EFA rail")


class StackHost(_Frozen):
    name: str
    role: HostRole
    group: str = Field(description="Inventory group: storage_targets, gpu_clients or monitoring")
    node_type: str
    address: str = Field(description="Management address Ansible connects to")
    user: str = Field(description="SSH user")
    rails: tuple[StackRail, ...] = ()


class StackFileSystem(_Frozen):
    service: str = Field(description="Catalog file system, e.g. fsx-lustre-persistent2-1000")
    capacity_gib: int
    throughput_mbps: int = Field(description="Provisioned throughput of the whole file system, in MB/s")
    mount: str = Field(description="What a client mounts, e.g. <dns>@tcp:/<mountname>")


class StackOutputs(_Frozen):
    design: str
    provider: Literal["aws", "gcp", "azure", "baremetal"]
    hosts: tuple[StackHost, ...]
    file_system: StackFileSystem | None = None

    @classmethod
    def parse(cls, data: Any) -> StackOutputs:
        return cls.model_validate(data)
