"""The requirement spec a user writes: business x data scale x performance, and where to build.

Strict (unknown keys are errors), frozen, and described field by field; ``clustersmith schema``
exports the JSON Schema of ``Requirements`` for editors. Cross-field rules live beside the model they
guard, as ``model_validator``s with user-facing messages. Loading and error reporting are in
``blueprints.loader``.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from blueprints.units import Bound, Duration, Rate, Ratio, Size, lower, upper

API_VERSION = "clustersmith/v1alpha1"
LAB_MEMORY_MIN = Size.parse("1GiB")
LAB_MEMORY_MAX = Size.parse("64GiB")
Accelerator = Literal["H100-SXM", "H200", "B200", "A100", "L40S"]


class RuleError(ValueError):
    """A cross-field rule failed; ``field`` is the offending key, relative to the model that checks it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Metadata(_Strict):
    name: str = Field(
        pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$",
        description="Design name: lower-case letters, digits and dashes; names the output folder",
    )
    description: str = Field(default="", description="Free text for humans")


class Business(_Strict):
    type: Literal["training", "inference", "mixed"] = Field(description="What the cluster runs")
    domain: Literal["cv", "llm", "recsys"] = Field(description="Model family; shapes I/O and NCCL choices")
    description: str = Field(default="", description="Free text for humans")
    model_updates_per_day: int | None = Field(
        default=None, ge=0, le=100_000,  # about one a second, well past any release process
        description="How often new model versions are pushed to serving (inference, mixed)"
    )


class Compute(_Strict):
    accelerator: Accelerator = Field(description="GPU model")
    gpus: int = Field(gt=0, le=1_000_000, description="Total GPUs in the cluster")
    instance_type: str | None = Field(
        default=None, description="Cloud instance type or server model; chosen from the catalog when omitted"
    )


class Data(_Strict):
    training_set: Size = Field(description="Training data set size, e.g. 500TB")
    validation_set: Size = Field(default=Size.of(0), description="Validation data set size, e.g. 50TB")
    hot_fraction: Ratio = Field(description="Share of the training set read every epoch at full speed, e.g. 20%")
    checkpoint_size: Size | None = Field(default=None, description="Size of one full checkpoint, e.g. 2TB")

    @model_validator(mode="after")
    def _validation_not_larger(self) -> Data:
        if self.training_set.value <= 0:
            raise RuleError("training_set", f"training_set is {self.training_set}; expected a size above 0")
        if self.validation_set.value > self.training_set.value:
            raise RuleError(
                "validation_set",
                f"validation_set {self.validation_set} is larger than training_set {self.training_set}; "
                "expected validation_set <= training_set"
            )
        return self


class StorageTargets(_Strict):
    read_throughput: Annotated[Bound, lower(Rate)] = Field(description="Aggregate read throughput, e.g. >=500GB/s")
    write_throughput: Annotated[Bound, lower(Rate)] | None = Field(
        default=None, description="Aggregate write throughput (checkpoints), e.g. >=100GB/s"
    )
    latency_p99: Annotated[Bound, upper(Duration)] = Field(description="p99 small-read latency, e.g. <100us")
    jitter: Annotated[Bound, upper(Ratio)] = Field(
        description="Throughput jitter as coefficient of variation of per-interval bandwidth, e.g. <5%"
    )


class NetworkTargets(_Strict):
    comm_share: Ratio = Field(
        default=Ratio.parse("30%"), description="Share of a training step spent in collectives, e.g. 40%"
    )


class ServingTargets(_Strict):
    p99_latency: Annotated[Bound, upper(Duration)] = Field(description="Serving p99 latency, e.g. <50ms")
    qps_per_gpu: int = Field(gt=0, le=10_000_000, description="Sustained queries per second per GPU")


class Performance(_Strict):
    storage: StorageTargets = Field(description="Storage data-path targets")
    network: NetworkTargets = Field(default_factory=NetworkTargets, description="Fabric targets")
    serving: ServingTargets | None = Field(default=None, description="Only for business.type inference or mixed")


def check_management_network(value: str | None, provider: str, shortest: int, longest: int, why: str) -> None:
    """The management network monitoring listens on and the stacks open its ports to: one private IPv4 network,
    written as its network address, between /``shortest`` and /``longest``. Raises RuleError naming the field."""
    if value is None:
        return
    field = "management_network"
    try:
        net = ipaddress.IPv4Network(value, strict=False)
    except ValueError:
        raise RuleError(field, f"management_network {value!r} is not an IPv4 network; expected one such as "
                               "10.0.0.0/16") from None
    if "/" not in value:
        raise RuleError(field, f"management_network {value!r} has no prefix length; expected a network such as "
                               f"{net.network_address}/16")
    if str(net) != value.strip():
        raise RuleError(field, f"management_network {value!r} has host bits set; expected its network address "
                               f"{net}")
    if not (net.is_private and not net.is_loopback and not net.is_link_local and not net.is_multicast):
        raise RuleError(field, f"management_network {value} is not a private network; expected an RFC 1918 "
                               "range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16): the monitoring ports are opened "
                               "to it")
    if not shortest <= net.prefixlen <= longest:
        raise RuleError(field, f"management_network {value}: /{net.prefixlen} on {provider}; expected /{shortest} "
                               f"to /{longest} ({why})")


MANAGEMENT_NETWORK = ("Management network (IPv4 CIDR, e.g. 10.0.0.0/16): monitoring listens on each host's "
                      "address in it and the stack opens the monitoring ports to it only")
CLOUD_NETWORK = ("Management network (IPv4 CIDR): the network the stack creates for the hosts; monitoring listens "
                 "in it and the monitoring ports are opened to it only. Default: the stack's own, see `plan`")


class AwsTarget(_Strict):
    provider: Literal["aws"] = Field(description="Amazon Web Services")
    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$", description="AWS region, e.g. us-east-1")
    availability_zone: str | None = Field(default=None, description="Zone for the placement group, e.g. us-east-1a")
    management_network: str | None = Field(default=None, description=CLOUD_NETWORK)
    capacity_reservation: str | None = Field(
        default=None, pattern=r"^cr-([0-9a-f]{8}|[0-9a-f]{17})$",
        description="EC2 capacity reservation (or Capacity Block) id the GPU nodes launch into, e.g. "
                    "cr-0123456789abcdef0; none: on-demand capacity")
    capacity_block: bool = Field(default=False, description="capacity_reservation is a Capacity Block for ML "
                                                            "(launched with market type capacity-block)")

    @model_validator(mode="after")
    def _network(self) -> AwsTarget:
        check_management_network(self.management_network, "aws", 16, 20,
                                 "an AWS VPC is /16 to /28, and the stack carves compute, FSx (/22) and public "
                                 "(/24) subnets from it")
        if self.capacity_block and self.capacity_reservation is None:
            raise RuleError("capacity_block", "capacity_block is true but no capacity_reservation is named; expected "
                                              "the Capacity Block's reservation id (cr-...) in capacity_reservation")
        return self


class GcpTarget(_Strict):
    provider: Literal["gcp"] = Field(description="Google Cloud")
    region: str = Field(pattern=r"^[a-z]+-[a-z]+\d$", description="GCP region, e.g. us-central1")
    zone: str | None = Field(default=None, description="GCP zone, e.g. us-central1-a")
    project: str | None = Field(default=None, description="GCP project id; Pulumi config may set it instead")
    management_network: str | None = Field(default=None, description=CLOUD_NETWORK)
    reservation: str | None = Field(
        default=None, pattern=r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="Compute Engine reservation (its name, in target.project and target.zone) the GPU nodes consume; "
                    "none: on-demand capacity")

    @model_validator(mode="after")
    def _network(self) -> GcpTarget:
        check_management_network(self.management_network, "gcp", 8, 20,
                                 "the stack carves the hosts' two gVNIC subnets from it")
        return self


class AzureTarget(_Strict):
    provider: Literal["azure"] = Field(description="Microsoft Azure")
    region: str = Field(pattern=r"^[a-z0-9]+$", description="Azure region, e.g. eastus")
    management_network: str | None = Field(default=None, description=CLOUD_NETWORK)

    @model_validator(mode="after")
    def _network(self) -> AzureTarget:
        check_management_network(self.management_network, "azure", 8, 20,
                                 "the stack carves the compute and the Managed Lustre subnets from it")
        return self


class BaremetalTarget(_Strict):
    provider: Literal["baremetal"] = Field(description="Your own racks")
    fabric: Literal["roce", "infiniband"] = Field(default="roce", description="Compute and storage fabric")
    machines: Literal["static", "maas", "equinix"] = Field(
        default="static", description="static: racks that exist (inventory only); maas or equinix provision"
    )
    management_network: str | None = Field(default=None, description=MANAGEMENT_NETWORK + " (required)")

    @model_validator(mode="after")
    def _network(self) -> BaremetalTarget:
        if self.management_network is None:
            raise RuleError("management_network",
                            "management_network is missing; expected the network your hosts' management "
                            "interfaces are on (e.g. 10.0.0.0/16): monitoring listens there, with basic auth and "
                            "TLS, never on whatever the default route points at")
        check_management_network(self.management_network, "baremetal", 8, 30, "one network of hosts")
        return self


class LabTarget(_Strict):
    provider: Literal["lab"] = Field(description="The local QEMU lab: real kernels, emulated throughput")
    clients: int = Field(default=2, ge=1, le=4, description="GPU-client VMs (no GPU inside)")
    storage_targets: int = Field(default=1, ge=1, le=2, description="Storage-target VMs")
    rails: int = Field(default=2, ge=1, le=4, description="Rails: private L2 segments, one NIC per VM each")
    memory: Size = Field(default=Size.parse("2GiB"), description="Memory per VM, 1GiB to 64GiB")
    kernel: Literal["bookworm", "bookworm-backports"] = Field(
        default="bookworm", description="The Debian kernel the VMs boot: bookworm (6.1) or bookworm-backports "
                                        "(6.12, with NVMe DH-CHAP)")

    @model_validator(mode="after")
    def _memory_fits(self) -> LabTarget:
        # The guest's root file system is an initramfs held in its memory, so below 1 GiB it does not boot
        # (the lab plan's floor is 512 MiB for the image alone); above 64 GiB no lab host (2 cores) has it.
        if not LAB_MEMORY_MIN.value <= self.memory.value <= LAB_MEMORY_MAX.value:
            raise RuleError("memory", f"memory {self.memory} per VM; expected {LAB_MEMORY_MIN} to {LAB_MEMORY_MAX}")
        return self


Target = Annotated[
    AwsTarget | GcpTarget | AzureTarget | BaremetalTarget | LabTarget, Field(discriminator="provider")
]


class Requirements(_Strict):
    """A requirement spec: what the cluster is for, how much data, which targets, where to build."""

    apiVersion: Literal["clustersmith/v1alpha1"] = Field(description="Schema version")
    kind: Literal["Requirements"] = Field(description="Document kind")
    metadata: Metadata = Field(description="Name and description")
    business: Business = Field(description="What the cluster is for")
    compute: Compute = Field(description="Accelerators")
    data: Data = Field(description="Data scale")
    performance: Performance = Field(description="Targets the design must meet and acceptance checks")
    target: Target = Field(description="Where to build: aws, gcp, azure, baremetal or lab")

    @model_validator(mode="after")
    def _serving_matches_business(self) -> Requirements:
        serving = self.performance.serving is not None
        if serving and self.business.type == "training":
            raise RuleError(
                "performance.serving",
                "performance.serving is set but business.type is 'training'; "
                "expected serving targets only for type 'inference' or 'mixed'"
            )
        if not serving and self.business.type in ("inference", "mixed"):
            raise RuleError(
                "business.type",
                f"business.type is {self.business.type!r} but performance.serving is missing; "
                "expected serving targets (p99_latency, qps_per_gpu)"
            )
        return self
