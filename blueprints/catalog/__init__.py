"""Hardware facts the planner sizes from: GPUs, NICs, drives, switches, servers and cloud instances.

The data lives in the YAML files beside this module; every entry names its ``source`` (a published
figure, or a design default that says so). ``load_catalog()`` parses them once into typed models.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from blueprints.units import Duration, Rate, Size

_HERE = Path(__file__).parent


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Catalog key")
    source: str = Field(min_length=3, description="Where the figures come from")


class Gpu(_Entry):
    memory: Size = Field(description="HBM capacity per GPU")
    nvlink_per_direction: Rate | None = Field(default=None, description="NVLink bandwidth per direction")
    nvls: bool = Field(default=False, description="NVLink SHARP: reductions in the NVSwitch of its 8-GPU baseboard")


class Nic(_Entry):
    speed: Rate = Field(description="Line rate, e.g. 400G")
    nccl_busbw: Rate | None = Field(default=None, description="Achievable NCCL bandwidth through one NIC")
    rdma_pass_fraction: float = Field(description="ib_write_bw pass mark as a fraction of line rate")
    rdma_achieved_fraction: float | None = Field(
        default=None, gt=0, le=1, description="What ib_write_bw achieves as a fraction of line rate in published runs "
                                              "(the prediction); None where nothing is published")
    rdma_achieved_source: str | None = Field(default=None, description="Where rdma_achieved_fraction was published")

    @model_validator(mode="after")
    def _achieved_with_its_source(self) -> Self:
        if (self.rdma_achieved_fraction is None) != (self.rdma_achieved_source is None):
            raise ValueError(f"NIC {self.name}: rdma_achieved_fraction and rdma_achieved_source go together")
        return self


class CephOsdRate(BaseModel):
    """What one Ceph OSD on a drive delivered in a published result, per protection scheme (4 MiB I/O)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read_replicated: Rate = Field(description="Client reads served per OSD, replicated pool")
    write_replicated: Rate = Field(description="Bytes written per OSD after replication (client write x copies)")
    read_erasure: Rate = Field(description="Client reads served per OSD, erasure-coded pool")
    write_erasure: Rate = Field(description="Bytes written per OSD after erasure coding (client write x (k+m)/k)")
    source: str = Field(min_length=3, description="The published result and the per-OSD arithmetic")


class Drive(_Entry):
    media: Literal["nvme_tlc", "nvme_qlc", "hdd"] = Field(description="Media class")
    capacity: Size = Field(description="Capacity of one drive")
    seq_read: Rate = Field(description="Sequential read bandwidth of one drive")
    seq_write: Rate = Field(description="Sequential write bandwidth of one drive")
    read_latency: Duration = Field(description="Typical 4k random read latency at queue depth 1")
    osds_per_drive: int = Field(default=1, gt=0, description="Ceph OSDs on one drive (drives.yaml header: its source)")
    ceph_osd: CephOsdRate | None = Field(default=None, description="Published per-OSD Ceph rate; None where none found")


class SwitchPorts(BaseModel):
    """How the switch's operating system names its ports at the catalog's port speed: ``cages`` front-panel cages,
    each split into ``per_cage`` ports (blueprints.wiring.port_name applies it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    os: Literal["sonic", "mlnx-os", "vde"] = Field(description="sonic: EthernetN with its front-panel alias etpN[a-d] "
                                                    "(the platform's port_config.ini); mlnx-os: 1/<cage>/<port>; "
                                                    "vde: the lab's vde_switch port numbers")
    cages: int = Field(gt=0, description="Front-panel cages")
    per_cage: int = Field(gt=0, description="Ports each cage is split into at port_speed")
    lanes_per_cage: int = Field(default=0, ge=0, description="sonic: SerDes lanes of a cage (EthernetN counts lanes)")
    source: str = Field(min_length=3, description="Where the naming comes from")


class Switch(_Entry):
    fabric: Literal["infiniband", "ethernet"] = Field(description="Switch family")
    radix: int = Field(gt=1, description="Ports per switch at port_speed")
    port_speed: Rate = Field(description="Port speed the radix is counted at")
    sharp: bool = Field(default=False, description="In-network reduction (SHARP) that NCCL reaches through CollNet")
    ports: SwitchPorts = Field(description="Port naming at port_speed")

    @model_validator(mode="after")
    def _ports_make_the_radix(self) -> Switch:
        if self.ports.cages * self.ports.per_cage != self.radix:
            raise ValueError(f"switch {self.name}: ports {self.ports.cages} cages x {self.ports.per_cage} = "
                             f"{self.ports.cages * self.ports.per_cage}; expected the radix {self.radix}")
        return self


class GpuServer(_Entry):
    accelerator: str = Field(description="GPU catalog key")
    gpus_per_node: int = Field(gt=0, description="GPUs in one server")
    compute_rails: int = Field(gt=0, description="Compute-fabric NICs (one per rail)")
    compute_nic: str = Field(description="NIC catalog key of the compute rails")
    storage_nics: int = Field(ge=0, description="Storage-fabric NICs")
    storage_nic: str = Field(description="NIC catalog key of the storage NICs")
    local_nvme: Size = Field(description="Local NVMe cache capacity")
    storage_read_per_node: Rate = Field(description="Storage read one node should sustain")
    max_power_kw: float | None = Field(default=None, gt=0, description="Rated maximum input power, kW")
    power_source: str = Field(default="", description="Where max_power_kw was read")

    @model_validator(mode="after")
    def _power_with_its_source(self) -> Self:
        if self.max_power_kw is not None and len(self.power_source) < 3:
            raise ValueError(f"{self.name}: max_power_kw names its source (power_source)")
        return self


class StorageServer(_Entry):
    drive: str = Field(description="Drive catalog key")
    drives: int = Field(gt=0, description="Drives per server")
    nics: int = Field(gt=0, description="Storage-fabric NICs per server")
    nic: str = Field(description="NIC catalog key")


class InstanceType(_Entry):
    provider: Literal["aws", "gcp", "azure"] = Field(description="Cloud")
    accelerator: str = Field(description="GPU catalog key")
    gpus_per_node: int = Field(gt=0, description="GPUs per instance")
    network: Literal["efa", "roce", "infiniband", "tcpxo"] = Field(description="GPU-to-GPU network technology")
    rdma_interfaces: int = Field(gt=0, description="RDMA network interfaces per instance")
    network_bandwidth: Rate = Field(description="Aggregate GPU network bandwidth per instance")
    local_nvme: Size = Field(description="Instance-store NVMe")


class ManagedFileSystem(_Entry):
    provider: Literal["aws", "gcp", "azure"] = Field(description="Cloud")
    service: str = Field(description="Product name")
    throughput_per_tib: Rate = Field(description="Throughput per TiB of provisioned capacity")
    min_capacity: Size = Field(description="Smallest file system")
    capacity_step: Size = Field(description="Capacity increment")
    sku: str = Field(default="", description="The tier as the provider's API names it (deployment type or SKU)")
    max_capacity: Size | None = Field(default=None, description="Largest file system the provider lists")
    large_step: Size | None = Field(default=None, description="Capacity increment above large_step_above")
    large_step_above: Size | None = Field(default=None, description="Capacity above which large_step applies")


PricePurchase = Literal["on_demand", "spot", "capacity_block", "list"]  # list: bought at its list price
PriceUnit = Literal["hour", "gb_month", "each"]  # each: one item bought
# a day, or the month or year where the source gives no day
_READ = r"^\d{4}(-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?)?$"


class Price(BaseModel):
    """One price as read from a published page (prices.yaml), or a search that found none (``price: unknown``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Row key: <item>/<region>/<purchase>")
    item: str = Field(description="What is priced, as the catalog names it: an instance type, a file system tier")
    region: str = Field(description="Where the price holds; 'any' where the source does not say")
    purchase: PricePurchase
    unit: PriceUnit = Field(description="hour: per instance-hour; gb_month: per GB of provisioned capacity a month; "
                                        "each: one item bought (purchase list)")
    price: float | Literal["unknown"] = Field(description="US dollars per unit, or unknown")
    source: str = Field(default="", description="What the page says and how the figure was read from it")
    searched: str = Field(default="", description="For an unknown price: where it was looked for")
    url: str = Field(pattern=r"^https://", description="The page read")
    read: str = Field(pattern=_READ, description="When it was read: YYYY-MM-DD, or YYYY-MM / YYYY where no day")

    @model_validator(mode="after")
    def _said_why(self) -> Price:
        if self.name != f"{self.item}/{self.region}/{self.purchase}":
            raise ValueError(f"a price row is named <item>/<region>/<purchase>: {self.name!r}")
        if self.price == "unknown" and len(self.searched) < 3:
            raise ValueError(f"{self.name}: an unknown price says where it was searched for (searched)")
        if self.price != "unknown" and (self.price <= 0 or len(self.source) < 3):
            raise ValueError(f"{self.name}: a price is above 0 and names its source")
        return self


class Prices(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_age_days: int = Field(gt=0, description="A row read longer ago than this is a warning in plan")
    rows: dict[str, Price]

    def find(self, item: str, region: str | None, purchase: PricePurchase) -> Price | None:
        """The row for ``item`` bought as ``purchase`` in ``region``, else one that holds in any region."""
        return self.rows.get(f"{item}/{region}/{purchase}") or self.rows.get(f"{item}/any/{purchase}")


class Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    gpus: dict[str, Gpu]
    nics: dict[str, Nic]
    drives: dict[str, Drive]
    switches: dict[str, Switch]
    gpu_servers: dict[str, GpuServer]
    storage_servers: dict[str, StorageServer]
    instance_types: dict[str, InstanceType]
    file_systems: dict[str, ManagedFileSystem]
    prices: Prices


_FILES = {
    "gpus": "gpus.yaml",
    "nics": "nics.yaml",
    "drives": "drives.yaml",
    "switches": "switches.yaml",
    "gpu_servers": "gpu_servers.yaml",
    "storage_servers": "storage_servers.yaml",
    "instance_types": "instance_types.yaml",
    "file_systems": "file_systems.yaml",
}


@cache
def load_catalog(folder: Path = _HERE) -> Catalog:
    data: dict[str, dict[str, object]] = {}
    for key, filename in _FILES.items():
        entries = yaml.safe_load((folder / filename).read_text()) or []
        data[key] = {e["name"]: e for e in entries}
    prices = yaml.safe_load((folder / "prices.yaml").read_text())
    rows = {r["name"]: r for r in prices["rows"]}
    if len(rows) != len(prices["rows"]):
        raise ValueError("prices.yaml: two rows share a name (<item>/<region>/<purchase>)")
    data["prices"] = {**prices, "rows": rows}
    return Catalog.model_validate(data)
