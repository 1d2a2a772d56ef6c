"""The compute plan: GPU nodes, their accelerator, rails and storage NICs."""

from __future__ import annotations

from pydantic import Field

from blueprints.model import Frozen
from blueprints.traced import Traced
from blueprints.units import Rate, Size


class ComputePlan(Frozen):
    node_type: Traced[str] = Field(description="Catalog server or cloud instance type")
    accelerator: str
    gpus: int
    gpus_per_node: int
    nodes: Traced[int] = Field(description="GPU nodes")
    rails: Traced[int] = Field(description="Compute NIC rails per node")
    rail_speed: Rate = Field(description="Line rate of one rail NIC")
    storage_nics: int = Field(description="Storage NICs per node")
    storage_nic_speed: Rate
    local_nvme: Size = Field(description="Local NVMe cache per node")
    storage_read_per_node: Rate = Field(description="Storage read one node is sized to ingest")
