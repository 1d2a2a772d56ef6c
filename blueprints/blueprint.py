"""The Blueprint: the resolved design, and the one contract between planning and everything downstream.

Every number the planner derives is a ``Traced`` value: the value plus ``derived_from`` (the spec paths
it came from, the rule's name and the arithmetic). Stacks, roles and validators read this model (or
the ``blueprint.yaml`` it serialises to) and never the raw spec.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from blueprints import yamltext
from blueprints.blueprint_format import BLUEPRINT_FORMAT, refuse_older
from blueprints.check_args import CheckArgs
from blueprints.errors import ClusterSmithError, Problem
from blueprints.fleet_plan import FleetsPlan
from blueprints.hosts import HostGroup, HostRole, names_by_role
from blueprints.lab_plan import LabPlan
from blueprints.textsafe import one_line
from blueprints.traced import Provenance as Provenance  # re-exported: importers take them with the models
from blueprints.traced import Traced as Traced
from blueprints.traced import traced as traced
from blueprints.units import Duration, Rate, Ratio, Size


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# compute -----------------------------------------------------------------------------------------


class ComputePlan(_Frozen):
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


# fabric ------------------------------------------------------------------------------------------

FabricKind = Literal["roce", "infiniband", "efa"]


class FabricPlan(_Frozen):
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


class StorageFabricPlan(_Frozen):
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


# qos ---------------------------------------------------------------------------------------------


class DcqcnPlan(_Frozen):
    enabled: bool
    rpg_time_reset: int
    rpg_byte_reset: int
    rpg_threshold: int
    rpg_ai_rate: int
    rpg_hai_rate: int
    rpg_gd: int
    rpg_min_dec_fac: int
    rpg_min_rate: int
    rate_to_set_on_first_cnp: int
    initial_alpha_value: int
    min_time_between_cnps: int
    source: str


class EtsPlan(_Frozen):
    """Enhanced transmission selection, only where a design asks for a bandwidth split."""

    prio_tc: tuple[int, ...] = Field(min_length=8, max_length=8, description="Traffic class of priorities 0..7")
    tc_tsa: tuple[Literal["strict", "ets", "vendor"], ...] = Field(min_length=8, max_length=8,
                                                                   description="Selection algorithm of TCs 0..7")
    tc_bw: tuple[int, ...] = Field(min_length=8, max_length=8, description="Bandwidth percent of TCs 0..7")


ECT0 = 0b10  # ECN-capable transport (0), the low two bits of the ToS byte


class EcnThresholds(_Frozen):
    """ECN marking on the RoCE queue of the switches: absolute buffer thresholds in bytes."""

    min_bytes: int = Field(gt=0, description="Marking starts above this queue depth")
    max_bytes: int = Field(gt=0, description="Every ECN-capable packet is marked above this queue depth")
    source: str


class PfcWatchdogPlan(_Frozen):
    """PFC watchdog on the switch ports with PFC: a queue paused longer than detection is drained."""

    detection_ms: int = Field(gt=0, description="Paused this long counts as a PFC storm")
    restoration_ms: int = Field(gt=0, description="Storm-free this long restores PFC")
    poll_ms: int = Field(gt=0, description="Polling interval")
    action: Literal["drop", "forward"] = Field(description="What a stormed queue does")
    source: str


class QosPlan(_Frozen):
    """One QoS plan every layer applies: NIC trust/PFC/ECN, NCCL's TC, NVMe-oF's ToS, RDMA-CM, the switch.

    Each fact is stored once: the RoCE priority and DSCP, the CNP's DSCP and priority, and the ToS byte
    (``traffic_class``) that NCCL_IB_TC, NVMe-oF's ``tos`` and RDMA-CM's default ToS all use. What follows
    from them (the DSCP -> priority map, the PFC and DCQCN priorities) is computed, never stored, so no two
    layers of a Blueprint can disagree; a hand-edited ``blueprint.yaml`` whose ToS byte does not carry its
    DSCP, or whose CNPs share RoCE's DSCP or priority, is refused when it is loaded.
    """

    applies: bool = Field(description="False where the provider owns QoS (EFA, managed InfiniBand)")
    roce_priority: Traced[int]
    dscp: Traced[int]
    cnp_dscp: Traced[int]
    cnp_priority: int
    trust: Literal["dscp", "pcp"]
    ecn: bool
    traffic_class: Traced[int] = Field(description="IP ToS byte of RoCE traffic: DSCP << 2 | ECT(0); NCCL_IB_TC, "
                                                   "NVMe-oF tos and RDMA-CM's default ToS")
    dcqcn: DcqcnPlan
    ets: EtsPlan | None = Field(default=None, description="ETS on the NICs; None leaves the NIC's own ETS alone")
    ecn_thresholds: EcnThresholds = Field(description="Switch ECN marking thresholds on the RoCE queue")
    pfc_watchdog: PfcWatchdogPlan = Field(description="Switch PFC watchdog on the PFC priority")

    @model_validator(mode="after")
    def _one_marking(self) -> QosPlan:
        problems = []
        if not (0 <= self.dscp.value <= 63 and 0 <= self.cnp_dscp.value <= 63):
            problems.append(f"qos.dscp {self.dscp.value} and qos.cnp_dscp {self.cnp_dscp.value} must be DSCPs (0..63)")
        if not (0 <= self.roce_priority.value <= 7 and 0 <= self.cnp_priority <= 7):
            problems.append(f"qos.roce_priority {self.roce_priority.value} and qos.cnp_priority {self.cnp_priority} "
                            "must be priorities (0..7)")
        tos = self.dscp.value << 2 | ECT0
        if self.traffic_class.value != tos:
            problems.append(f"qos.traffic_class {self.traffic_class.value} does not carry qos.dscp "
                            f"{self.dscp.value}: expected {self.dscp.value} << 2 | ECT(0) = {tos}")
        if self.cnp_dscp.value == self.dscp.value or self.cnp_priority == self.roce_priority.value:
            problems.append(f"CNPs (DSCP {self.cnp_dscp.value}, priority {self.cnp_priority}) must not share RoCE's "
                            f"DSCP {self.dscp.value} or priority {self.roce_priority.value}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def switch_dscp_to_priority(self) -> dict[int, int]:
        """DSCP -> priority on the NICs and the switches: RoCE and CNPs."""
        return {self.dscp.value: self.roce_priority.value, self.cnp_dscp.value: self.cnp_priority}

    @property
    def pfc_priorities(self) -> tuple[int, ...]:
        """PFC is on for the RoCE priority only, where the plan applies."""
        return (self.roce_priority.value,) if self.applies else ()

    @property
    def strict_priorities(self) -> tuple[int, ...]:
        """Switch egress: CNPs in strict priority (not ETS/DWRR), so they never queue behind data."""
        return (self.cnp_priority,) if self.applies else ()

    @property
    def dcqcn_priorities(self) -> tuple[int, ...]:
        """Priorities with ECN marking and DCQCN."""
        return (self.roce_priority.value,) if self.dcqcn.enabled and self.ecn else ()


# nccl --------------------------------------------------------------------------------------------


class EnvVar(_Frozen):
    name: str
    value: str
    derived_from: Provenance


class NcclPlan(_Frozen):
    env: tuple[EnvVar, ...] = Field(description="Node-wide environment of every rank (NCCL_IB_HCA is per host)")
    degraded_env: tuple[EnvVar, ...] = Field(
        description="Job-level degraded profile (/etc/clustersmith/nccl/degraded.env): AllReduce on Ring")
    ib_hca_rails: Traced[tuple[int, ...]] = Field(
        description="Compute rails whose discovered RDMA devices NCCL_IB_HCA names, per host; empty: not set")
    gpudirect_rdma: Traced[bool]
    in_network_reduction: Traced[Literal["none", "sharp", "nvls"]]
    algorithm_expectation: Traced[str] = Field(
        description="What NCCL is expected to choose; acceptance reports it as information, never pass/fail")
    notes: tuple[str, ...] = Field(default=(), description="Provider settings no stored document covers")


# storage -----------------------------------------------------------------------------------------


class ProtectionOption(_Frozen):
    scheme: Literal["erasure", "replica", "none"]
    data: int = Field(description="k data chunks (1 for replicas)")
    parity: int = Field(description="m parity chunks, or copies - 1 for replicas")
    multiplier: float = Field(description="raw / usable")
    raw: Size = Field(description="Raw capacity this option needs")
    min_nodes: int = Field(description="Failure domains the option needs")


class TierPlan(_Frozen):
    name: Literal["local_cache", "hot", "warm", "cold"]
    media: str
    server: str = Field(description="Catalog server shape")
    usable: Traced[Size]
    protection: Traced[str] = Field(description="Chosen scheme, e.g. ec-8+2 or replica-3")
    alternatives: tuple[ProtectionOption, ...] = Field(description="Protection options weighed, raw of each")
    raw: Traced[Size]
    nodes: Traced[int]
    per_node_read: Rate
    aggregate_read: Traced[Rate]
    read_latency: Duration | None = Field(default=None, description="4k read latency of the media")


class NvmeofSubsystem(_Frozen):
    """One namespace and the one host that owns it: the target lets in only the owner's host NQN, and only the
    owner builds on it (its dm-cache tier's origin, ``disks.slow``)."""

    nqn: str
    tier: str
    served_by: str = Field(description="Host name of the storage target that exports it")
    owner: str = Field(description="Host name of the one host that attaches it; no other host's NQN is let in")
    uuid: str = Field(description="Namespace UUID (nvmet device_uuid), uuid5 of the NQN: the owner finds the "
                                  "device as /dev/disk/by-id/nvme-uuid.<uuid>")
    volume: str = Field(description="LVM volume the target carves for it from its disks.nvmeof")

    @property
    def device(self) -> str:
        """The namespace's block device on its owner (udev's link from the namespace's wwid)."""
        return f"/dev/disk/by-id/nvme-uuid.{self.uuid}"


class NvmeofHost(_Frozen):
    """The NVMe host identity the planner gives one host that attaches subsystems (``/etc/nvme/hostnqn``, hostid)."""

    name: str = Field(description="Host name")
    nqn: str = Field(description="Host NQN: the only NQN its subsystems' targets let in")
    hostid: str = Field(description="Host ID (UUID), uuid5 of the host NQN, one per NQN as the kernel requires")


class NvmeofPlan(_Frozen):
    transport: Literal["rdma", "tcp"]
    port: int
    host_nqn_prefix: str = Field(
        description="Host NQN of host <name> is <host_nqn_prefix><name> (nvmeof.host_nqn); every subsystem allows "
                    "exactly the NQNs of the hosts that attach it (attr_allow_any_host=0)")
    auth: Traced[Literal["dhchap", "none"]] = Field(
        description="dhchap: targets and hosts authenticate both ways with the cluster's DH-CHAP secrets; none: the "
                    "target's kernel cannot (allowed_hosts still apply)")
    paths_per_subsystem: Traced[int]
    iopolicy: Traced[Literal["numa", "round-robin", "queue-depth"]]
    ctrl_loss_tmo: Traced[int]
    reconnect_delay: Traced[int]
    fast_io_fail_tmo: Traced[int]
    keep_alive_tmo: Traced[int]
    namespace_size: Traced[Size] = Field(description="Size of every namespace: the LVM volume its target carves")
    volume_group: str = Field(description="LVM volume group each target makes on its disks.nvmeof")
    subsystems: tuple[NvmeofSubsystem, ...] = Field(description="One per owning host, in host order")

    @model_validator(mode="after")
    def _one_owner_each(self) -> NvmeofPlan:
        seen: set[str] = set()
        for sub in self.subsystems:
            if sub.nqn in seen:
                raise ValueError(f"subsystems repeat NQN {sub.nqn}: expected one entry, and so one owner, per "
                                 "namespace")
            seen.add(sub.nqn)
        return self

    def host(self, name: str) -> NvmeofHost:
        """Host ``name``'s NVMe identity: the one naming rule of host NQNs (``host_nqn_prefix``)."""
        nqn = f"{self.host_nqn_prefix}{name}"
        # built unvalidated: three strings made here, 12,500 times for a 100,000-GPU design
        return NvmeofHost.model_construct(name=name, nqn=nqn, hostid=str(uuid.uuid5(uuid.NAMESPACE_URL, nqn)))


class CachePlan(_Frozen):
    """Block-level tiering on each client: dm-cache of the local NVMe in front of the slower tier."""

    mode: Traced[Literal["writethrough", "writeback"]]
    policy: Literal["smq"]
    size: Traced[Size]
    hot_set: Traced[Size]
    read_ahead_kb: Traced[int]
    dirty_background_ratio: int
    dirty_ratio: int
    min_hit_ratio: Traced[Ratio]
    mount_point: str = Field(description="Where the tiered file system is mounted (acceptance's tier workloads "
                             "write their scratch there)")


class ManagedFsPlan(_Frozen):
    """A cloud's managed parallel file system, sized from the spec; the stacks create it from these values."""

    service: str = Field(description="Catalog file system, e.g. fsx-lustre-persistent2-1000")
    provider: Literal["aws", "gcp", "azure"]
    product: str = Field(description="Product name")
    sku: str = Field(description="The tier as the provider's API names it (deployment type or SKU); may be empty")
    capacity: Traced[Size] = Field(description="Provisioned capacity, a size the service accepts")
    capacity_gib: int = Field(description="The same capacity in GiB, as the provider APIs take it")
    throughput_per_tib: Rate = Field(description="Provisioned throughput per TiB")
    per_unit_throughput: int = Field(description="Throughput per TiB in MB/s, as the provider APIs take it")
    throughput: Traced[Rate] = Field(description="capacity x throughput_per_tib")
    max_capacity: Size | None = Field(default=None, description="Largest size the provider lists for the tier")


class CephOsdGroup(_Frozen):
    """The OSD hosts of one tier: one CRUSH device class, set explicitly on each of their OSDs."""

    tier: str
    device_class: str = Field(description="CRUSH device class every OSD of the tier gets (never auto-detected)")
    hosts: int = Field(description="Hosts of the tier (its storage servers)")
    osds_per_host: Traced[int] = Field(description="OSDs on each host: drives x OSDs per drive (catalog)")
    per_node_read: Traced[Rate] = Field(description="Client reads one host serves under the tier's protection")
    per_node_write: Traced[Rate] = Field(description="Client writes one host absorbs, after the protection's "
                                                     "amplification")


class CephEcProfile(_Frozen):
    """An erasure-code profile as `ceph osd erasure-code-profile set` takes it."""

    name: str
    k: int
    m: int
    crush_failure_domain: Literal["host", "osd"] = Field(alias="crush-failure-domain")
    crush_device_class: str = Field(alias="crush-device-class")
    plugin: Literal["jerasure"] = "jerasure"
    technique: Literal["reed_sol_van"] = "reed_sol_van"

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class CephPool(_Frozen):
    """One pool, named and set as Ceph names its settings."""

    name: str
    application: Literal["cephfs"] = "cephfs"
    purpose: Literal["metadata", "default_data", "tier_data"]
    tier: str | None = Field(default=None, description="Tier whose data it holds (tier_data pools)")
    type: Literal["replicated", "erasure"]
    size: Traced[int] = Field(description="Copies (replicated) or k+m (erasure)")
    min_size: Traced[int]
    erasure_code_profile: str | None = Field(default=None, description="CephEcProfile name (erasure pools)")
    crush_rule: str = Field(description="CRUSH rule: replicated_<class> or, for erasure pools, the pool's own")
    crush_device_class: str
    crush_failure_domain: Literal["host", "osd"]
    pg_num: Traced[int] = Field(description="pg_num = pgp_num, a power of two")
    pg_autoscale_mode: Traced[Literal["on", "off", "warn"]]
    allow_ec_overwrites: bool = Field(default=False, description="Required for CephFS data on an erasure pool")
    directory: str | None = Field(default=None, description="CephFS directory whose ceph.dir.layout.pool is this pool")


class CephDaemons(_Frozen):
    monitors: Traced[int]
    managers: Traced[int]
    mds_active: Traced[int] = Field(description="max_mds")
    mds_standby: Traced[int] = Field(description="standby_count_wanted")
    monitor_hosts: tuple[str, ...]
    manager_hosts: tuple[str, ...]
    mds_hosts: tuple[str, ...]


class CephNetwork(_Frozen):
    public_nic: Traced[int] = Field(description="Storage NIC (rail index) of every Ceph host on the public network")
    cluster_nic: Traced[int] = Field(description="Storage NIC of every Ceph host on the cluster network")
    client_rail: int = Field(description="GPU nodes' rail that reaches the public network")
    public_subnet: str | None = Field(default=None, description="The lab's rail subnet; None: the site's addressing")
    cluster_subnet: str | None = None
    dscp: Traced[int] = Field(description="DSCP of Ceph's TCP traffic")
    lossless: bool = Field(description="True only if the QoS plan puts that DSCP on a PFC priority")


class CephSetting(_Frozen):
    """One ceph.conf [global] setting the design changes from Ceph's default, and why."""

    name: str = Field(description="As ceph.conf spells it, e.g. osd class update on start")
    value: str
    why: str


class CephMount(_Frozen):
    """How every GPU node mounts the file system (the shared_fs role): the kernel client over client_rail."""

    mount_point: str = Field(description="Where CephFS's root is mounted on every GPU node")
    mount_timeout: Traced[int] = Field(description="mount.ceph mount_timeout, seconds")


class CephLabException(_Frozen):
    """A rule the real design keeps that the lab breaks, and why."""

    rule: str
    real: str
    lab: str


class CephPlan(_Frozen):
    """The Ceph cluster: daemons, OSD hosts per tier, EC profiles, pools, networks (bare metal and the lab)."""

    fs_name: str
    failure_domain: Traced[Literal["host", "osd"]]
    daemons: CephDaemons
    osd_groups: tuple[CephOsdGroup, ...]
    osds: Traced[int] = Field(description="OSDs in the cluster")
    ec_profiles: tuple[CephEcProfile, ...]
    pools: tuple[CephPool, ...]
    network: CephNetwork
    target_pgs_per_osd: int = Field(description="PG calculator target (mon_target_pg_per_osd)")
    osd_device_min_size: Size | None = Field(default=None, description="Lab: smallest virtual disk an OSD may get")
    settings: tuple[CephSetting, ...] = Field(description="ceph.conf settings changed from Ceph's defaults")
    mgr_modules: tuple[str, ...] = Field(description="Manager modules enabled beyond Ceph's always-on ones")
    mount: CephMount
    lab_exceptions: tuple[CephLabException, ...] = Field(default=(), description="Lab departures from the rules")


StorageEngine = Literal["ceph", "managed-lustre", "external"]
ClientFs = Literal["cephfs", "lustre", "nfs", "wekafs", "gpfs"]


class ClientSetting(_Frozen):
    """One client tuning a provider documents for its file system, applied by the shared_fs role."""

    kind: Literal["modprobe", "lctl"] = Field(description="modprobe: a module option (/etc/modprobe.d), before the "
                                                          "module loads; lctl: `lctl set_param` after the mount")
    name: str = Field(description="module and option (ksocklnd credits) or the lctl parameter "
                                  "(osc.*OST*.max_rpcs_in_flight)")
    value: str
    why: str
    source: str = Field(description="The provider's document that gives it")
    min_cpus: int | None = Field(default=None, description="Applied only on hosts with more CPUs than this")
    min_memory_gib: int | None = Field(default=None, description="Applied only on hosts with more memory (GiB)")
    per_cpu: int | None = Field(default=None, description="The value is this many times the host's CPUs")


class FsCacheCounters(_Frozen):
    """Which counters of the kernel's /proc/fs/fscache/stats (6.1: fs/fscache/stats.c and fs/netfs/stats.c) count a
    read served by the cache and one that was not: the hit ratio is hits / (hits + misses) over a window. Each counter
    is named by its line's label and its key, as the file prints them (``IO``, ``rd``)."""

    hits: tuple[tuple[str, str], ...] = Field(description="(line, key) of the counters of reads the cache served")
    misses: tuple[tuple[str, str], ...] = Field(description="(line, key) of the counters of reads it did not")
    why: str = Field(description="Why these counters, for this client on this kernel")


class FsCachePlan(_Frozen):
    """FS-Cache on each GPU node's local NVMe (cachefilesd), in front of the shared file system (the ``fsc`` mount
    option): a logical volume of ``size`` in ``volume_group`` on disks.fast, ext4, mounted at ``cache_dir``."""

    size: Traced[Size]
    volume_group: str = Field(description="LVM volume group on the node's disks.fast (storage_tiering's, where it "
                                          "also plans dm-cache)")
    logical_volume: str
    cache_dir: str = Field(description="cachefilesd's `dir`")
    tag: str = Field(description="cachefilesd's `tag`")
    cull_percent: tuple[int, int, int] = Field(description="cachefilesd brun, bcull, bstop: free-space percentages "
                                                           "(its defaults 10, 7, 3)")
    counters: FsCacheCounters
    min_hit_ratio: Traced[Ratio]


class SharedCapability(_Frozen):
    """What an external system can give the cluster: the spec's statement, or nothing stated."""

    read_throughput: Traced[Rate] | None = None
    write_throughput: Traced[Rate] | None = None
    capacity: Traced[Size] | None = None


class SharedFsPlan(_Frozen):
    """The shared file system every GPU node mounts (the shared_fs role), whoever builds it."""

    engine: Traced[StorageEngine]
    client: ClientFs = Field(description="The kernel client (and mount type) every GPU node uses")
    owner: Literal["clustersmith", "provider", "user"] = Field(
        description="Who builds and runs the storage system: clustersmith (Ceph), the cloud provider (its managed "
                    "Lustre, from the stack), the user (external)")
    described: str = Field(description="The system in words, as reports name it")
    source: str | None = Field(default=None, description="What every node mounts, where the plan knows it (external); "
                                                         "None: from the Ceph monitors or the stack's outputs")
    source_from: Literal["plan", "ceph_monitors", "stack_outputs"]
    transport: Literal["rdma", "tcp"] = Field(description="How the client reaches the servers")
    options: tuple[str, ...] = Field(description="Mount options the plan sets (the client's own, the spec's, fsc)")
    mount_point: str
    mount_timeout: Traced[int] = Field(description="Seconds the mount may take before systemd gives up (less 30 s)")
    client_rail: int | None = Field(default=None, description="The rail the mount uses, whose bring-up it waits for; "
                                                              "None: the host's management network")
    tuning: tuple[ClientSetting, ...] = Field(default=(), description="Client settings the provider documents")
    fscache: FsCachePlan | None = Field(default=None, description="FS-Cache where the client and the node have one")
    capability: SharedCapability | None = Field(default=None, description="external: what the spec states")
    scratch_dir: str = Field(description="Directory acceptance writes its own files in (under mount_point)")


class StoragePlan(_Frozen):
    managed_service: str | None = Field(description="Cloud file system used instead of own servers")
    managed: ManagedFsPlan | None = Field(default=None, description="Sizing of the managed file system, in clouds")
    tiers: tuple[TierPlan, ...]
    read_throughput: Traced[Rate] = Field(description="Designed aggregate read throughput")
    write_throughput: Traced[Rate]
    nvmeof: NvmeofPlan | None
    cache: CachePlan | None = Field(description="dm-cache in front of the block device each GPU node owns (its own "
                                                "NVMe-oF namespace); None where a node owns none")
    ceph: CephPlan | None = Field(default=None, description="The Ceph cluster (bare metal, lab); None on the clouds")
    shared: SharedFsPlan = Field(description="The shared file system every GPU node mounts, and its client cache")


# monitoring --------------------------------------------------------------------------------------


class ScrapeJob(_Frozen):
    name: str
    role: HostRole
    port: int
    exporter: str
    hosts: tuple[str, ...] = Field(default=(), description="Only these hosts of the role (the Ceph managers); "
                                                           "empty: every host of the role")
    tls: bool = Field(default=True, description="HTTPS with the cluster CA and basic auth (MonitoringAuth); False: "
                                                "plain HTTP without auth, for an exporter that offers neither")
    note: str = Field(default="", description="How the exporter answers, where that is not plain (standbys)")

    def scraped(self, roles: Mapping[HostRole, list[str]]) -> list[str]:
        """The hosts this job scrapes, from ``Blueprint.hosts_by_role()``."""
        return list(self.hosts) if self.hosts else roles.get(self.role, [])


class ScrapeTargets(_Frozen):
    """The hosts one scrape job reaches under one role: what one file_sd target file lists
    (``Blueprint.scrape_targets``). Every target carries the labels ``role`` and ``exporter``, and its host name as
    ``instance``."""

    job: str
    role: HostRole
    exporter: str
    port: int
    hosts: tuple[str, ...] = Field(description="Host names, each scraped at <host>:<port>")

    @property
    def addresses(self) -> list[str]:
        return [f"{host}:{self.port}" for host in self.hosts]


RuleGroup = Literal["storage", "fabric", "gpu", "serving", "ceph", "baseline"]


class AlertRule(_Frozen):
    name: str
    summary: str
    expr: str = Field(description="PromQL; the threshold is substituted in")
    threshold: float
    unit: str
    for_: str = Field(alias="for", description="How long the condition must hold")
    severity: Literal["critical", "warning", "info"]
    derived_from: Provenance
    group: RuleGroup = Field(default="storage", description="Rule file it is written to: rules/<group>.yml")
    metric_source: str = Field(default="", description="Where the metric comes from and how it is measured")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class RecordingRule(_Frozen):
    """A series precomputed by Prometheus: a windowed rate, ratio or a historical baseline."""

    record: str = Field(description="Name of the recorded series (level:metric:operations)")
    expr: str = Field(description="PromQL it is computed from")
    group: RuleGroup = Field(description="Rule group: alerts of the same group read it in the same evaluation")


class Query(_Frozen):
    """A PromQL expression the monitoring plan defines once: recording rules, alerts, dashboard panels and acceptance
    name it instead of restating it."""

    name: str = Field(description="Stable id the other layers name it by, e.g. cache.read_hit_ratio")
    measures: str = Field(description="What its value is, in words")
    expr: str = Field(description="PromQL; {window} stands for the range it is taken over")
    window: str | None = Field(default=None, description="Range alerts and dashboards take it over (5m); acceptance "
                                                         "puts in its measurement's own")
    unit: str
    source: str = Field(description="Where its series come from and how they are measured")
    recorded: str | None = Field(default=None, description="Series a recording rule keeps it in, at its window")

    def over(self, window: str | None = None) -> str:
        """The PromQL over ``window`` (a Prometheus duration), by default the query's own."""
        if "{window}" not in self.expr:
            return self.expr
        chosen = window or self.window
        if chosen is None:
            raise ValueError(f"query {self.name} needs a window")
        return self.expr.replace("{window}", chosen)

    @property
    def series(self) -> str:
        """What a reader at the query's own window uses: the recorded series where there is one."""
        return self.recorded or self.over()


class TargetPanel(_Frozen):
    """One spec target on the targets dashboard: what was asked, the query that measures it, which side is good."""

    spec: tuple[str, ...] = Field(description="Spec paths of the target")
    title: str
    threshold: float = Field(description="The target, in the panel's unit")
    query: str = Field(description="Name of the MonitoringPlan query measured")
    aggregate: Literal["min", "max", "sum"] = Field(description="How the query's series become one value: the "
                                                                "worst host (min, max) or the cluster total (sum)")
    unit: str = Field(description="Grafana unit of the panel")
    good_below: bool = Field(description="True when values below the threshold are good")


class MonitoringAuth(_Frozen):
    """How every monitoring listener is reached: HTTPS with the cluster CA, basic auth with the secrets store's
    ``monitoring`` account. Paths are on the hosts; the password and its hash never enter the Blueprint."""

    scheme: Literal["https"] = "https"
    username: str = Field(description="Basic-auth user; the secrets store's monitoring.username must be the same")
    web_config_file: str = Field(description="Exporter-toolkit web config every listener reads (--web.config.file)")
    tls_dir: str = Field(description="Folder of the cluster CA (ca.crt) and the host's certificate and key")
    ca_file: str = Field(description="The cluster CA certificate scrapers verify every listener against")
    password_file: str = Field(description="Monitoring hosts: the password Prometheus scrapes with (0600, prometheus)")


class MonitoringPlan(_Frozen):
    scrape_interval: Duration
    scrape: tuple[ScrapeJob, ...]
    alerts: tuple[AlertRule, ...]
    baseline_window: Duration = Field(description="History the dynamic thresholds are computed over")
    recording: tuple[RecordingRule, ...] = Field(default=(), description="Recording rules the alerts read")
    evaluation_interval: Duration = Field(default=Duration.parse("15s"), description="How often rules run")
    baseline_interval: Duration = Field(
        default=Duration.parse("2m"),
        description="How often the baseline group (long windows) runs; under the 5m lookback, so it never goes stale",
    )
    collect_interval: Duration = Field(
        default=Duration.parse("10s"), description="How often the textfile exporter refreshes its metrics"
    )
    latency_buckets: tuple[float, ...] = Field(
        default=(), description="Upper bounds (s) of the storage read latency histogram; the p99 target is one"
    )
    listen_cidr: Traced[str] = Field(
        description="Network the exporters, Prometheus and Alertmanager listen on (each host's address in it)",
    )
    auth: MonitoringAuth = Field(description="TLS and basic auth of every listener and of every scrape")
    queries: tuple[Query, ...] = Field(default=(), description="Every query the rules, dashboards and acceptance read")
    targets: tuple[TargetPanel, ...] = Field(default=(), description="Rows of the spec targets dashboard")

    def query(self, name: str) -> Query:
        """The plan's query of that name; a name the plan lacks is a planner defect."""
        for q in self.queries:
            if q.name == name:
                return q
        raise KeyError(f"the monitoring plan has no query {name!r}: {', '.join(q.name for q in self.queries)}")


# acceptance --------------------------------------------------------------------------------------

Tool = Literal["fio", "nccl", "ib_write_bw", "ib_read_lat", "nvme", "qos", "prometheus", "ceph"]


class Check(_Frozen):
    id: str = Field(description="Stable id, e.g. storage.read_throughput")
    tool: Tool
    metric: str = Field(description="What is measured")
    op: Literal[">=", "<=", "==", "<", ">"]
    threshold: float = Field(description="In the unit below")
    unit: str
    severity: Literal["error", "warning", "info"]
    scope: Literal["cluster", "host", "rail"] = Field(description="Where the measure is taken")
    args: CheckArgs = Field(description="Tool arguments from the plan, typed per tool family (check_args)")
    derived_from: Provenance


ScratchFs = Literal["shared", "tier"]
# The one workload that reads through the page cache: a file opened for direct I/O bypasses FS-Cache (and flushes its
# cached copy): RHEL 7 Storage Administration Guide 10.3.2, "Cache Limitations with NFS". The cache check reads
# buffered; every other workload measures the storage with O_DIRECT.
BUFFERED_WORKLOAD = "cache_read"


class FioWorkload(_Frozen):
    """One fio job run on every GPU client at once; rendered as ``acceptance/fio/<name>.fio``."""

    name: str = Field(description="Job name and file stem, e.g. seq_read; fio checks name it in args.workload")
    purpose: str = Field(description="What the workload measures")
    rw: Literal["read", "write", "randread", "randwrite", "randrw"]
    bs: str = Field(description="Block size (4k, 1M) or a range lo-hi (bsrange)")
    rwmixread: int | None = Field(default=None, description="Read share in percent for randrw")
    iodepth: Traced[int] = Field(description="Outstanding I/Os per job")
    numjobs: Traced[int] = Field(description="Jobs per client, each on its own scratch file")
    size: Traced[Size] = Field(description="Scratch file size per job")
    runtime_s: Traced[int] = Field(description="Measured seconds (time_based), after ramp_s")
    ramp_s: int = Field(description="Seconds run before measuring starts")
    direct: bool = Field(default=True, description="O_DIRECT: bypass the page cache")
    time_based: bool = Field(default=True, description="Loop over the files for runtime_s; False: one pass over them "
                                                       "(runtime_s bounds it)")
    ioengine: Literal["libaio"] = "libaio"
    verify: Literal["crc32c"] | None = Field(default=None, description="Checksum written data and read it back")
    log_avg_ms: int = Field(description="Interval of the per-interval bandwidth log (ms)")
    on: ScratchFs = Field(default="tier", description="The file system it runs on: shared (the storage system, "
                          "every GPU node at once) or tier (each node's own tiered file system)")

    @model_validator(mode="after")
    def _direct_but_the_cache_check(self) -> FioWorkload:
        """Every workload measures the storage, not the client's page cache: O_DIRECT, but for the FS-Cache check,
        which must read buffered (FS-Cache serves only buffered reads) and must not be O_DIRECT."""
        if self.direct == (self.name == BUFFERED_WORKLOAD):
            raise ValueError(f"workload {self.name}: direct={int(self.direct)}; expected direct="
                             f"{int(self.name != BUFFERED_WORKLOAD)} (O_DIRECT for every workload but "
                             f"{BUFFERED_WORKLOAD}, the FS-Cache check, which FS-Cache serves only buffered)")
        return self


class ScratchArea(_Frozen):
    """Where acceptance may write without --destructive: its own files in a directory on the shared file system
    or on the node's tiered file system, or a raw namespace the plan reserves as scratch. Nothing else is written
    unless asked."""

    kind: Literal["directory", "namespace"]
    path: str = Field(description="The directory (kind directory) or the subsystem NQN (kind namespace)")
    mount: str | None = Field(default=None, description="Mount point the directory must be on")
    fs: ScratchFs | None = Field(default=None, description="Directory: the file system it is on, as workloads name it")
    role: HostRole = Field(description="Hosts that hold it")
    derived_from: Provenance


class FioFootprint(_Frozen):
    """What the fio workloads' scratch files take together (every workload reuses the same files)."""

    files: int = Field(description="Scratch files: one per job on every GPU node")
    per_file: Size
    footprint: Traced[Size] = Field(description="files x per_file, capped at half the hot tier's usable capacity")
    tier_usable: Size = Field(description="Usable capacity of the hot tier the cap is taken from")
    fill_time: Traced[Duration] = Field(description="footprint / the design's write throughput")


class AcceptancePlan(_Frozen):
    checks: tuple[Check, ...]
    workloads: tuple[FioWorkload, ...] = Field(default=(), description="fio jobs the fio checks run")
    scratch: tuple[ScratchArea, ...] = Field(default=(), description="Where write tests may write")
    footprint: FioFootprint | None = Field(default=None, description="The fio working set on the hot tier")

    @model_validator(mode="after")
    def _workloads_have_scratch(self) -> AcceptancePlan:
        have = {a.fs for a in self.scratch if a.kind == "directory"}
        if lost := sorted({w.name for w in self.workloads if w.on not in have}):
            raise ValueError(f"workloads {', '.join(lost)} run on a file system with no scratch directory")
        return self

    def scratch_dir(self, on: ScratchFs) -> ScratchArea:
        """The scratch directory of the file system ``on``."""
        return next(a for a in self.scratch if a.kind == "directory" and a.fs == on)


# the Blueprint -----------------------------------------------------------------------------------


Provider = Literal["aws", "gcp", "azure", "baremetal", "lab"]


class TargetPlan(_Frozen):
    """Where the design is built, resolved from the spec's ``target`` for the stacks and renderers.

    The MTU is ``fabric.mtu`` and every machine type is its host group's ``node_type`` (monitoring's too).
    """

    provider: Provider
    region: str | None = Field(default=None, description="Cloud region (aws, gcp, azure)")
    zone: str | None = Field(default=None, description="Zone of the placement group; None: the stack's config")
    project: str | None = Field(default=None, description="GCP project; None: the stack's config")
    machines: Literal["static", "maas", "equinix"] | None = Field(
        default=None, description="Bare metal: static racks (inventory only), or provisioned by maas or equinix")
    description: str = Field(default="", description="The design's description, for the Pulumi project")
    management_network: Traced[str] | None = Field(
        default=None, description="The hosts' management network: the spec's, or on the clouds the network the "
                                  "stack creates for them; None on the lab (its VMs share no management segment)")


class Blueprint(_Frozen):
    apiVersion: Literal["clustersmith/v1alpha1"] = "clustersmith/v1alpha1"
    kind: Literal["Blueprint"] = "Blueprint"
    format: int = Field(default=BLUEPRINT_FORMAT, ge=BLUEPRINT_FORMAT, le=BLUEPRINT_FORMAT,
                        description="blueprint.yaml's format (blueprints.blueprint_format); older ones are refused")
    name: str
    spec_file: str = Field(
        description="The spec this was planned from, on one line: control characters and line separators in the "
                    "path written as \\xNN escapes, so every header and report that names it stays on its line")
    spec_lines: dict[str, int] = Field(description="Spec path -> line in spec_file, for explain")
    spec_values: dict[str, str] = Field(
        default_factory=dict, description="Spec path -> the value planned from, for every path a derived_from names")
    target: TargetPlan
    hosts: tuple[HostGroup, ...]
    fleets: FleetsPlan | None = Field(default=None, description="Clouds: the fleet resources the GPU nodes are "
                                                                "provisioned as; None on bare metal and the lab")
    compute: ComputePlan
    fabric: FabricPlan
    storage_fabric: StorageFabricPlan
    qos: QosPlan
    nccl: NcclPlan
    storage: StoragePlan
    monitoring: MonitoringPlan
    acceptance: AcceptancePlan
    lab: LabPlan | None = None
    notes: tuple[str, ...] = Field(default=(), description="Planner remarks worth reading")

    @field_validator("spec_file")
    @classmethod
    def _spec_file_on_one_line(cls, value: str) -> str:
        return one_line(value)

    def groups_of(self, role: HostRole) -> list[HostGroup]:
        return [g for g in self.hosts if g.role == role]

    def hosts_by_role(self) -> dict[HostRole, list[str]]:
        """Host names per role, in the Blueprint's order (a host may serve several roles)."""
        return names_by_role(self.hosts)

    def scrape_targets(self) -> list[ScrapeTargets]:
        """What Prometheus scrapes, per job and role, in the plan's order: a host once per job, under the first of
        its roles the job lists (the lab's storage-1 is a storage target and the monitoring host: one node target)."""
        roles = self.hosts_by_role()
        seen: dict[str, set[str]] = {}
        found: list[ScrapeTargets] = []
        for job in self.monitoring.scrape:
            done = seen.setdefault(job.name, set())
            hosts = tuple(h for h in job.scraped(roles) if h not in done)
            done.update(hosts)
            if hosts:
                found.append(ScrapeTargets(job=job.name, role=job.role, exporter=job.exporter, port=job.port,
                                           hosts=hosts))
        return found

    def nvmeof_allowed_hosts(self, subsystem: NvmeofSubsystem) -> list[str]:
        """The hosts a subsystem's target lets in: its owner, nothing else."""
        return [subsystem.owner]

    def nvmeof_owned(self) -> dict[str, list[NvmeofSubsystem]]:
        """Host name -> the subsystems it owns, in the Blueprint's order."""
        owned: dict[str, list[NvmeofSubsystem]] = {}
        for sub in self.storage.nvmeof.subsystems if self.storage.nvmeof else ():
            owned.setdefault(sub.owner, []).append(sub)
        return owned

    def nvmeof_hosts(self) -> list[NvmeofHost]:
        """Every host that attaches an NVMe-oF subsystem (an owner), with the identity the planner gives it."""
        plan = self.storage.nvmeof
        return [plan.host(n) for n in self.nvmeof_owned()] if plan else []

    def nccl_environment(self) -> tuple[EnvVar, ...]:
        """What every rank's environment holds: ``nccl.env`` and, on a RoCE fabric whose QoS the cluster runs,
        NCCL_IB_TC from the QoS plan. Where the provider owns QoS (GCP's RoCE VPC, whose gIB setup carries its own
        traffic class) the plan's ToS means nothing to the fabric, so it is not set."""
        env = list(self.nccl.env)
        if self.fabric.kind.value == "roce" and self.qos.applies:
            tc = self.qos.traffic_class
            at = max((i + 1 for i, v in enumerate(env) if v.name.startswith("NCCL_IB_")), default=len(env))
            env.insert(at, EnvVar(name="NCCL_IB_TC", value=str(tc.value), derived_from=Provenance(
                spec=tc.derived_from.spec, rule="nccl.tc_from_qos", formula=tc.derived_from.formula)))
        return tuple(env)


def dump_blueprint(bp: Blueprint) -> str:
    """blueprint.yaml's text (libyaml's layout; its per-node lists written by blueprints.yamltext)."""
    data = bp.model_dump(mode="json", by_alias=True)
    return yamltext.dump(data, width=110, allow_unicode=True)


def load_blueprint(path: Path) -> Blueprint:
    """Load ``blueprint.yaml`` (or the build folder holding it)."""
    if path.is_dir():
        path = path / "blueprint.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ClusterSmithError(
            [Problem("", f"cannot read a Blueprint: {exc}")], str(path), "invalid blueprint"
        ) from None
    refuse_older(data, str(path))
    try:
        return Blueprint.model_validate(data)
    except ValidationError as exc:
        problems = [
            Problem(".".join(str(p) for p in e["loc"]), str(e["msg"]).removeprefix("Value error, "))
            for e in exc.errors()
        ]
        raise ClusterSmithError(problems, str(path), "invalid blueprint") from None
