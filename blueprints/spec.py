"""The requirement spec a user writes: business x data scale x performance, and where to build.

Strict (unknown keys are errors), frozen, and described field by field; ``clustersmith schema``
exports the JSON Schema of ``Requirements`` for editors. Cross-field rules live beside the model they
guard, as ``model_validator``s with user-facing messages. Loading and error reporting are in
``blueprints.loader``.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from blueprints.model import Strict
from blueprints.units import Bound, Duration, Floor, Rate, Ratio, Size, lower, upper

API_VERSION = "clustersmith/v1alpha1"
LAB_MEMORY_MIN = Size.parse("1GiB")
LAB_MEMORY_MAX = Size.parse("64GiB")
# The least a latency target may ask for: a read or a request that crosses the network spends about 1-2 us on the
# wire alone (ib_read_lat on InfiniBand, 1.79 us typical: shared reference field-numbers sections 3.1 and 8).
NETWORK_LATENCY_FLOOR = Floor(Duration.parse("1us"), "a read across the network spends 1-2 us on the wire alone: "
                              "ib_read_lat on InfiniBand, 1.79 us typical")
Accelerator = Literal["H100-SXM", "H200", "B200", "A100", "L40S"]


class RuleError(ValueError):
    """A cross-field rule failed; ``field`` is the offending key, relative to the model that checks it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Metadata(Strict):
    name: str = Field(
        pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$",
        description="Design name: lower-case letters, digits and dashes; names the output folder",
    )
    description: str = Field(default="", description="Free text for humans")


class Business(Strict):
    type: Literal["training", "inference", "mixed"] = Field(description="What the cluster runs")
    domain: Literal["cv", "llm", "recsys"] = Field(description="Model family; shapes I/O and NCCL choices")
    description: str = Field(default="", description="Free text for humans")
    model_updates_per_day: int | None = Field(
        default=None, ge=0, le=100_000,  # about one a second, well past any release process
        description="How often new model versions are pushed to serving (inference, mixed)"
    )


class Compute(Strict):
    accelerator: Accelerator = Field(description="GPU model")
    gpus: int = Field(gt=0, le=1_000_000, description="Total GPUs in the cluster")
    instance_type: str | None = Field(
        default=None, description="Cloud instance type or server model; chosen from the catalog when omitted"
    )


class Data(Strict):
    training_set: Size = Field(description="Training data set size, e.g. 500TB")
    validation_set: Size = Field(default="0B", validate_default=True, description="Validation data set size, e.g. 50TB")
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


class StorageTargets(Strict):
    read_throughput: Annotated[Bound, lower(Rate)] = Field(description="Aggregate read throughput, e.g. >=500GB/s")
    write_throughput: Annotated[Bound, lower(Rate)] | None = Field(
        default=None, description="Aggregate write throughput (checkpoints), e.g. >=100GB/s"
    )
    latency_p99: Annotated[Bound, upper(Duration, NETWORK_LATENCY_FLOOR)] = Field(
        description="p99 small-read latency, e.g. <100us"
    )
    jitter: Annotated[Bound, upper(Ratio)] = Field(
        description="Throughput jitter as coefficient of variation of per-interval bandwidth, e.g. <5%"
    )


class NetworkTargets(Strict):
    comm_share: Ratio = Field(
        default="30%", validate_default=True, description="Share of a training step spent in collectives, e.g. 40%"
    )


class ServingTargets(Strict):
    p99_latency: Annotated[Bound, upper(Duration, NETWORK_LATENCY_FLOOR)] = Field(
        description="Serving p99 latency, e.g. <50ms"
    )
    qps_per_gpu: int = Field(gt=0, le=10_000_000, description="Sustained queries per second per GPU")


class PredictionTargets(Strict):
    floor: Ratio = Field(
        default="90%", validate_default=True,
        description="A check measured below this share of what the plan predicts it should measure is a finding, "
                    "e.g. 90% (the field's own pass marks sit at 90-94% of what a link carries)")
    gate: bool = Field(default=False, strict=True, description="true: a check below the floor fails acceptance (by "
                                                               "default it is information beside the verdict)")


class Performance(Strict):
    storage: StorageTargets = Field(description="Storage data-path targets")
    network: NetworkTargets = Field(default_factory=NetworkTargets, description="Fabric targets")
    predicted: PredictionTargets = Field(default_factory=PredictionTargets,
                                         description="How a measure is held against the plan's prediction")
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


class AwsTarget(Strict):
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
        az = self.availability_zone
        if az is not None and not re.fullmatch(rf"{re.escape(self.region)}(-[a-z]+-\d+)?[a-z]", az):
            raise RuleError("availability_zone", f"availability_zone {az!r} is not a zone of region {self.region!r}; "
                                                 f"expected one such as {self.region + 'a'!r}")
        check_management_network(self.management_network, "aws", 16, 20,
                                 "an AWS VPC is /16 to /28, and the stack carves compute, FSx (/22) and public "
                                 "(/24) subnets from it")
        if self.capacity_block and self.capacity_reservation is None:
            raise RuleError("capacity_block", "capacity_block is true but no capacity_reservation is named; expected "
                                              "the Capacity Block's reservation id (cr-...) in capacity_reservation")
        return self


class GcpTarget(Strict):
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
        if self.zone is not None and not re.fullmatch(rf"{re.escape(self.region)}-[a-z]", self.zone):
            raise RuleError("zone", f"zone {self.zone!r} is not a zone of region {self.region!r}; expected one such "
                                    f"as {self.region + '-a'!r}")
        check_management_network(self.management_network, "gcp", 8, 20,
                                 "the stack carves the hosts' two gVNIC subnets from it")
        return self


class AzureTarget(Strict):
    provider: Literal["azure"] = Field(description="Microsoft Azure")
    region: str = Field(pattern=r"^[a-z0-9]+$", description="Azure region, e.g. eastus")
    management_network: str | None = Field(default=None, description=CLOUD_NETWORK)

    @model_validator(mode="after")
    def _network(self) -> AzureTarget:
        check_management_network(self.management_network, "azure", 8, 20,
                                 "the stack carves the compute and the Managed Lustre subnets from it")
        return self


class BaremetalTarget(Strict):
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


class LabTarget(Strict):
    provider: Literal["lab"] = Field(description="The local QEMU lab: real kernels, emulated throughput")
    clients: int = Field(default=2, ge=1, le=4, description="GPU-client VMs (no GPU inside)")
    storage_targets: int = Field(default=1, ge=1, le=2, description="Storage-target VMs")
    rails: int = Field(default=2, ge=1, le=4, description="Rails: private L2 segments, one NIC per VM each")
    memory: Size = Field(default="2GiB", validate_default=True, description="Memory per VM, 1GiB to 64GiB")
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


# storage --------------------------------------------------------------------------------------------
# The optional ``storage`` block: a shared file system the user already runs (``external``). Without it the planner
# builds the target's own engine (Ceph on bare metal and the lab, the provider's managed Lustre on the clouds). Each
# field checks its own form here; what depends on the target (NFS over RDMA on a cloud network, Lustre's o2ib NIDs)
# is checked by ``Requirements``, and what the system can do against the spec's targets (``capability``) by the
# planner.

ExternalType = Literal["nfs", "lustre", "weka", "vast", "gpfs"]
# NFS over RDMA needs a reliable-connected RDMA transport between client and server (RFC 8166, Linux xprtrdma); the
# types that mount over NFS take `transport`.
NFS_TYPES = ("nfs", "vast")
# The mount options the planner sets itself (the transport, the NFS version, FS-Cache, the systemd ordering): the
# spec's own options may not repeat or contradict them.
PLANNER_OPTIONS = ("proto", "rdma", "port", "nconnect", "fsc", "_netdev", "x-systemd.requires", "x-systemd.after")
SAFE_PATH = re.compile(r"^/[A-Za-z0-9._+@/-]*[A-Za-z0-9._+@-]$")
OPTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*(=[A-Za-z0-9_.:/@+-]+)?$")
HOST = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}"
                  r"[A-Za-z0-9])?$")
LNET_NID = re.compile(r"^(?P<address>[A-Za-z0-9.-]+)@(?P<net>tcp|o2ib|kfi|efa)[0-9]*$")
FS_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Paths an external file system must not cover: the system's own trees and clustersmith's other mounts.
RESERVED_MOUNTS = ("/boot", "/dev", "/etc", "/proc", "/run", "/sys", "/usr", "/var", "/tmp", "/mnt/clustersmith")
EXAMPLE_SOURCE = {
    "nfs": "10.0.0.5:/export/train",
    "vast": "10.0.0.5:/train",
    "lustre": "10.0.0.5@tcp:/lustre (MGS NIDs, ':' between failover MGSs, then :/<fsname>)",
    "weka": "backend-1,backend-2/train (WEKA backends, then /<file system>)",
    "gpfs": "train (the Storage Scale file system's device name)",
}


def _host(text: str) -> bool:
    """An IPv4 or IPv6 address (IPv6 in brackets) or a DNS name."""
    if text.startswith("[") and text.endswith("]"):
        try:
            return ipaddress.ip_address(text[1:-1]).version == 6
        except ValueError:
            return False
    try:
        ipaddress.IPv4Address(text)
        return True
    except ValueError:
        return bool(HOST.fullmatch(text)) and not text.replace(".", "").isdigit()


def source_problem(kind: ExternalType, source: str) -> str | None:
    """What is wrong with ``source`` as the mount source of ``kind``, or None (the forms each client's mount helper
    takes: nfs(5) ``host:/path``; mount.lustre(8) ``mgsnid[:mgsnid...]:/fsname``; WEKA's ``mount -t wekafs
    backend[,backend...]/fs``; Storage Scale's device name, as ``mmmount`` takes it)."""
    expected = f"expected a source such as {EXAMPLE_SOURCE[kind]!r}"
    if kind in NFS_TYPES:
        host, sep, path = source.rpartition(":")
        if not sep or not _host(host) or not SAFE_PATH.fullmatch(path if path != "/" else "/x"):
            return f"source {source!r} is not host:/path for {kind}; {expected}"
        return None
    if kind == "lustre":
        nids, sep, fsname = source.rpartition(":/")
        if not sep or not FS_NAME.fullmatch(fsname) or len(fsname) > 8:
            return f"source {source!r} does not end in :/<fsname> of at most 8 characters; {expected}"
        for mgs in nids.split(":"):
            for nid in mgs.split(","):
                m = LNET_NID.fullmatch(nid)
                if m is None or not _host(m.group("address")):
                    return f"source {source!r}: {nid!r} is not an LNet NID such as 10.0.0.5@tcp or 10.0.0.5@o2ib; " \
                           f"{expected}"
        return None
    if kind == "weka":
        backends, sep, fs = source.partition("/")
        if not sep or not FS_NAME.fullmatch(fs) or not all(_host(b) for b in backends.split(",")):
            return f"source {source!r} is not backend[,backend...]/<file system> for weka; {expected}"
        return None
    if not FS_NAME.fullmatch(source):
        return f"source {source!r} is not a Storage Scale device name (letters, digits, '_' and '-'); {expected}"
    return None


class StorageCapability(Strict):
    """What the user's system can give this cluster, as its owner states it. The planner checks it against
    ``performance.storage`` and ``data``; acceptance measures the system either way."""

    read_throughput: Rate | None = Field(default=None, description="Aggregate read throughput it can serve this "
                                                                     "cluster, e.g. 600GB/s")
    write_throughput: Rate | None = Field(default=None, description="Aggregate write throughput, e.g. 150GB/s")
    capacity: Size | None = Field(default=None, description="Capacity it offers this cluster, e.g. 1PB; acceptance "
                                                            "writes at most half of it")


class ExternalStorage(Strict):
    """A shared file system the user already runs; every GPU node mounts it, clustersmith builds nothing of it."""

    type: ExternalType = Field(description="nfs, lustre, weka, vast (NFS with VAST's client options) or gpfs "
                                           "(IBM Storage Scale)")
    source: str = Field(description="What the client mounts: nfs and vast host:/path; lustre mgsnid[:mgsnid]:/fsname; "
                                    "weka backend[,backend]/fs; gpfs the file system's device name")
    transport: Literal["rdma", "tcp"] | None = Field(
        default=None, description="nfs and vast: rdma (proto=rdma, port 20049) or tcp (the default); other types "
                                  "take their transport from the source")
    nconnect: int | None = Field(default=None, ge=1, le=16, description="nfs and vast over tcp: TCP connections per "
                                                                       "server (nfs(5) nconnect, 1 to 16)")
    options: tuple[str, ...] = Field(default=(), description="Further mount options, each key or key=value, e.g. "
                                                            "ro or rsize=1048576; not the ones the planner sets "
                                                            f"({', '.join(PLANNER_OPTIONS)})")
    mount_point: str = Field(default="", description="Where every GPU node mounts it; default /mnt/<type>")
    capability: StorageCapability = Field(default_factory=StorageCapability,
                                          description="What the system can give this cluster, as you state it")

    @model_validator(mode="after")
    def _form(self) -> ExternalStorage:
        wrong = source_problem(self.type, self.source)
        if wrong is not None:
            raise RuleError("source", wrong)
        if self.transport is not None and self.type not in NFS_TYPES:
            raise RuleError("transport", f"transport {self.transport!r} is set for type {self.type}; expected it "
                                         f"only for {' or '.join(NFS_TYPES)} (a {self.type} client's transport comes "
                                         "from its source)")
        if self.nconnect is not None and (self.type not in NFS_TYPES or self.transport == "rdma"):
            raise RuleError("nconnect", f"nconnect {self.nconnect} is set for {self.type} over "
                                        f"{self.transport or 'its own transport'}; expected it only for nfs or vast "
                                        "over tcp (nfs(5): nconnect opens more TCP connections)")
        for option in self.options:
            if not OPTION.fullmatch(option):
                raise RuleError("options", f"option {option!r} is not key or key=value (letters, digits, '_', '.', "
                                           "'-'; a value without ',' or spaces); expected one option per entry")
            key = option.partition("=")[0]
            if key in PLANNER_OPTIONS:
                raise RuleError("options", f"option {option!r} is one the planner sets ({', '.join(PLANNER_OPTIONS)})"
                                           "; expected only further options (use transport and nconnect)")
        point = self.mount_point
        if point and (not SAFE_PATH.fullmatch(point) or "//" in point or "/./" in point or "/../" in point):
            raise RuleError("mount_point", f"mount_point {point!r} is not an absolute, normalised path of letters, "
                                           "digits and . _ + @ / -; expected one such as /mnt/data")
        if point and any(point == r or point.startswith(r.rstrip("/") + "/") for r in RESERVED_MOUNTS):
            raise RuleError("mount_point", f"mount_point {point!r} is or lies under a system or clustersmith path "
                                           f"({', '.join(RESERVED_MOUNTS)}); expected a folder of its own such as "
                                           "/mnt/data")
        return self

    @property
    def where(self) -> str:
        return self.mount_point or f"/mnt/{self.type}"


class PowerCost(Strict):
    """What your site pays for power: both from your own contract and facility, never a published average."""

    price_per_kwh: float = Field(gt=0, le=10, description="US dollars per kWh, as your power contract says")
    pue: float = Field(ge=1.0, le=3.0, description="Your site's power usage effectiveness (facility power / IT power)")


class CostSpec(Strict):
    """How bought hardware is priced (bare metal): its list price spread over months, and its power."""

    amortise_months: int = Field(
        default=60, gt=0, le=240,
        description="Months over which a bought server's list price is spread to a monthly cost, on target.provider "
                    "baremetal: 60 (five years) by default, a policy of yours rather than a published figure")
    power: PowerCost | None = Field(
        default=None, description="Price power at the servers' rated maximum: an upper bound of the power bill")


class StorageSpec(Strict):
    """Where the data lives. Omit it for the engine clustersmith builds on the target."""

    external: ExternalStorage | None = Field(default=None, description="A shared file system you already run: "
                                                                       "clustersmith mounts it and measures it")


Target = Annotated[
    AwsTarget | GcpTarget | AzureTarget | BaremetalTarget | LabTarget, Field(discriminator="provider")
]


class Requirements(Strict):
    """A requirement spec: what the cluster is for, how much data, which targets, where to build."""

    apiVersion: Literal["clustersmith/v1alpha1"] = Field(description="Schema version")
    kind: Literal["Requirements"] = Field(description="Document kind")
    metadata: Metadata = Field(description="Name and description")
    business: Business = Field(description="What the cluster is for")
    compute: Compute = Field(description="Accelerators")
    data: Data = Field(description="Data scale")
    performance: Performance = Field(description="Targets the design must meet and acceptance checks")
    target: Target = Field(description="Where to build: aws, gcp, azure, baremetal or lab")
    storage: StorageSpec | None = Field(
        default=None, description="Where the data lives: omit it for the engine clustersmith builds on the target "
                                  "(Ceph on baremetal and lab, the provider's managed Lustre on the clouds)")
    costs: CostSpec = Field(default_factory=CostSpec, description="How bought hardware is priced (baremetal)")

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
        external = self.storage.external if self.storage is not None else None
        if external is not None:
            _external_fits_target(external, self.target.provider)
        if "costs" in self.model_fields_set and self.target.provider != "baremetal":
            raise RuleError("costs",
                            f"costs is set but target.provider is {self.target.provider!r}: nothing there is bought "
                            "(the clouds bill by the hour, the lab runs on this machine); expected costs only for "
                            "target.provider baremetal")
        return self


CLOUDS = ("aws", "gcp", "azure")


def _external_fits_target(external: ExternalStorage, provider: str) -> None:
    """What the target's network can carry to a system outside the cluster; raises RuleError naming the field."""
    where = "storage.external"
    if provider == "lab" and external.type != "nfs":
        raise RuleError(f"{where}.type", f"type {external.type!r} on target.provider lab; expected nfs: the lab's "
                                         "image carries the kernel NFS client only (no Lustre, WEKA or Storage Scale "
                                         "client)")
    if provider in CLOUDS and external.transport == "rdma":
        raise RuleError(f"{where}.transport", f"transport 'rdma' on target.provider {provider}; expected tcp: the "
                                              f"{provider} RDMA network ({CLOUD_RDMA[provider]}) reaches only the "
                                              "cluster's own GPU VMs, never a file server outside it")
    if provider in CLOUDS and external.type == "lustre" and "@o2ib" in external.source:
        raise RuleError(f"{where}.source", f"source {external.source!r} names o2ib NIDs on target.provider {provider}; "
                                           f"expected @tcp NIDs: the {provider} RDMA network ({CLOUD_RDMA[provider]}) "
                                           "carries no LNet o2ib to a system outside the cluster")


# Why each cloud's RDMA network cannot reach an outside server: AWS EFA is SRD, not the reliable-connected verbs
# NFS/RDMA and ko2iblnd need (AWS EC2 User Guide, "Elastic Fabric Adapter"); GCP's RoCE VPC carries RDMA between the
# MRDMA NICs of its own VMs (Google Cloud, "RDMA network profiles"); Azure's InfiniBand joins the VMs of one
# InfiniBand group (stacks/azure.py).
CLOUD_RDMA = {"aws": "EFA, SRD transport", "gcp": "the RoCE VPC of the MRDMA NICs",
              "azure": "the InfiniBand group of the GPU VMs"}


JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"  # the draft pydantic's model_json_schema writes


def json_schema() -> dict[str, Any]:
    """The spec's JSON Schema as ``clustersmith schema`` prints it: pydantic's, its dialect named in ``$schema`` so an
    editor or validator reads it as draft 2020-12 (its ``$defs`` and ``prefixItems``) without guessing. No ``$id``:
    the schema is published nowhere a URI could name."""
    return {"$schema": JSON_SCHEMA_DIALECT, **Requirements.model_json_schema()}
