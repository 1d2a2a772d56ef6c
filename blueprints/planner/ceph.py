"""Ceph: the storage engine of bare metal and the lab, sized from the tiers the storage planner chose.

Per-node rates (what ``storage`` sizes tiers with): min(public NIC, drives, OSDs x the catalog's published per-OSD
Ceph rate); writes are the client's bytes, so the drives', OSDs' and cluster network's share is divided by the
protection's amplification ((k+m)/k for erasure codes, copies for replicas; the cluster network carries the
amplification less the one copy that came in on the public network). NICs count at line rate: Ceph is TCP, and
the catalog's rdma_pass_fraction is an ib_write_bw pass mark, not a TCP figure. Where the catalog has no published
per-OSD rate for a drive, the node is bounded by its NICs and drives only, and the formula says so.

The cluster (``plan_ceph``): OSDs per host from the drive catalog, monitors (3, or 5 from 5 hosts), managers beside
the monitors, one active MDS and one standby, a replicated metadata pool and a replicated default data pool, one
data pool per tier with the tier's protection (an EC profile with k, m, crush-failure-domain and
crush-device-class), PG counts from Ceph's PG calculator, the public and cluster networks on the storage rails and
the traffic class Ceph's TCP traffic gets from the QoS plan. The lab's exceptions to these rules are listed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from blueprints.blueprint import (
    CephDaemons,
    CephEcProfile,
    CephLabException,
    CephMount,
    CephNetwork,
    CephOsdGroup,
    CephPlan,
    CephPool,
    CephSetting,
    ComputePlan,
    ProtectionOption,
    QosPlan,
    TierPlan,
    Traced,
    traced,
)
from blueprints.catalog import StorageServer
from blueprints.figures import counted
from blueprints.planner.context import PlanContext
from blueprints.planner.hosts import storage_group
from blueprints.planner.lab import LAB_OSDS, rail_subnet
from blueprints.planner.storage_fabric import client_rails
from blueprints.units import Rate, Size

# CRUSH device class per tier, set explicitly on every OSD (Ceph's classes are free strings; never auto-detected).
# A class names its tier by the media the rules give it; where cost chose other media (planner/storage_optimizer.py),
# the class still names the tier, so that its pools and CRUSH rules stay the same.
DEVICE_CLASS = {"hot": "nvme", "warm": "qlc", "cold": "hdd"}
FS_NAME = "cephfs"
METADATA_POOL = "cephfs_metadata"
DEFAULT_POOL = "cephfs_data"
# Ceph's PG calculator (https://docs.ceph.com/en/squid/rados/operations/pgcalc/): "(Target PGs per OSD) x (OSD #)
# x (%Data) / (Size)"; at least OSD# / Size; "rounded to the nearest power of 2"; "if the nearest power of 2 is more
# than 25% below the original value, the next higher power of 2 is used". Target 100: mon_target_pg_per_osd's
# default (Red Hat Ceph Storage 8, "Setting placement group auto-scaling": "The default value is set to 100").
PG_CALC = "https://docs.ceph.com/en/squid/rados/operations/pgcalc/"
TARGET_PGS_PER_OSD = 100
# The lab's target: 16 PGs per OSD. Every PG peers, reports and recovers on the storage VM's one TCG vCPU: with 100 the
# hot EC pool has 128 PGs, and 12.5 minutes after an OSD was marked out 35 of them were still degraded (slow OSD
# heartbeats of 60 s); with 16 every PG was active+clean 94 s after it (stacks/lab/CEPH_MEASURED.md, "PGs per OSD").
# A lab exception, listed in `plan`.
LAB_TARGET_PGS_PER_OSD = 16
# Ceph's own `ceph fs volume create` (ceph/ceph src/pybind/mgr/volumes/fs/volume.py, create_volume): the metadata
# pool with 16 PGs (pg_num_min=16), the data pool with 8.
METADATA_MIN_PGS = 16
DEFAULT_DATA_MIN_PGS = 8
# Red Hat Ceph Storage 8 Operations Guide, "Management of monitors using the Ceph Orchestrator": "a typical Red Hat
# Ceph Storage cluster has three or five monitor daemons deployed on different hosts. Red Hat recommends deploying
# five monitors if there are five or more nodes in a cluster."
FIVE_MONITORS_FROM = 5
MON_SOURCE = ("Red Hat Ceph Storage 8 Operations Guide: three or five monitors on different hosts, five if there "
              "are five or more nodes")
# Ceph's manager guide (docs.ceph.com, mgr/administrator): "set up a ceph-mgr on each of the hosts running a
# ceph-mon daemon to achieve the same level of availability".
MGR_SOURCE = "a ceph-mgr on each monitor host (docs.ceph.com mgr/administrator)"
# One active MDS (Ceph's default max_mds 1; "configure multiple active MDS daemons when your metadata performance is
# bottlenecked on the single MDS", docs.ceph.com/en/mimic/cephfs/multimds/), and a standby: "A Ceph File System
# (CephFS) requires at least one standby MDS daemon to remain highly available" (IBM Storage Ceph 9, "Configuring
# multiple active Metadata Server daemons").
MDS_SOURCE = ("max_mds 1 (multiple active MDS only when metadata is the bottleneck, docs.ceph.com cephfs/multimds); "
              "one standby (IBM Storage Ceph 9: CephFS requires at least one standby MDS)")
# Ceph's erasure-code docs: min_size k+1 keeps a PG from accepting writes it could not rebuild after one more loss;
# replicated pools: Ceph's default osd_pool_default_min_size for size 3 is 2.
EC_MIN_SIZE = "k+1 (docs.ceph.com rados/operations/erasure-code: min_size K+1 prevents loss of writes and data)"
# The lab: 4 OSDs in the storage VM, so EC 2+1 with failure domain osd has k+m+1 = 4 failure domains (issue 18).
LAB_EC = (2, 1)
LAB_MIN_OSD_DEVICE = Size.parse("6GiB")  # = LAB_OSD_DISK; ceph-volume refuses devices under 5 GiB (shared/DESIGN.md)


# ceph.conf settings every design changes from Ceph's defaults (the role writes them into [global] with the reason).
SETTINGS = (
    CephSetting(name="osd class update on start", value="false",
                why="the CRUSH device class is the tier's (nvme, qlc, hdd), set by the role, never auto-detected"),
    CephSetting(name="auth allow insecure global id reclaim", value="false",
                why="every client is patched for CVE-2021-20288; the default (true) raises "
                    "AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED (https://docs.ceph.com/en/latest/security/CVE-2021-20288/)"),
)
# The lab's further settings: every OSD in one VM, and a TCG guest 10-100x slower than hardware (the bench's list,
# tests/bench_ceph_lab.py, reached HEALTH_OK with them; stacks/lab/CEPH_MEASURED.md).
LAB_SETTINGS = (
    CephSetting(name="osd crush chooseleaf type", value="0",
                why="every OSD is in one VM: replicas and EC shards go to OSDs, not hosts"),
    CephSetting(name="osd pool default pg autoscale mode", value="off",
                why="PG counts are the planner's, set per pool; the manager's own pool gets no autoscaler either"),
    CephSetting(name="osd memory target", value="939524096",
                why="896 MiB, the floor Ceph accepts (DESIGN.md); 4 OSDs share one VM"),
    CephSetting(name="bluestore fsck on mkfs", value="false",
                why="mkfs's deep fsck is minutes of CPU under TCG and checks a new store"),
    CephSetting(name="osd heartbeat grace", value="160",
                why="Ceph's valgrind suites' value: a slow OSD must not be marked down"),
    CephSetting(name="osd op thread timeout", value="150",
                why="Ceph's valgrind suites' value: slow op threads are not hung ones"),
    CephSetting(name="mon osd crush smoke test", value="false",
                why="Ceph's valgrind suites' value: the smoke test forks crushtool"),
    CephSetting(name="mds beacon grace", value="300",
                why="a TCG MDS can miss 15 s beacons; the standby-less MDS would be failed"),
    CephSetting(name="mon mgr beacon grace", value="300", why="same for the one manager"),
    # Idle Ceph kept the storage VM's vCPU busy under TCG (4 OSDs, mon, mgr: 44 % of it, its QEMU 61 % of a host
    # core); these five brought the QEMU process to 41 % (stacks/lab/CEPH_MEASURED.md, "Idle load")
    CephSetting(name="bluestore cache trim interval", value="1",
                why="Pacific trims every OSD's cache 20 times a second (0.05 s); at 1 s an idle OSD used 30 % less"),
    CephSetting(name="osd heartbeat interval", value="20",
                why="peer pings every 6 s by default; 20 s stays far inside the 160 s grace above"),
    CephSetting(name="mgr tick period", value="10",
                why="the manager's beacon every 2 s by default; 10 s against the 300 s beacon grace above"),
    CephSetting(name="mgr stats period", value="30",
                why="daemons report stats to the manager every 5 s by default; PG states show up to 30 s later"),
    CephSetting(name="osd mon report interval", value="30",
                why="OSDs report to the monitor every 5 s by default; a stopped OSD still marks itself down at once"),
)
# The manager's prometheus module (default port 9283) is what monitoring scrapes (issue 18, item 6).
MGR_MODULES = ("prometheus",)
# mount.ceph(8): "mount_timeout: Timeout value for mount, in seconds. Default: 60"; the lab's TCG monitor and MDS
# answer a new session far slower, so the lab waits 300 s (the bench's value; its mounts were not timed).
MOUNT_TIMEOUT = 60
LAB_MOUNT_TIMEOUT = 300


def protection_label(opt: ProtectionOption) -> str:
    if opt.scheme == "erasure":
        return f"ec-{opt.data}+{opt.parity}"
    return f"replica-{opt.parity + 1}" if opt.scheme == "replica" else "none"


@dataclass(frozen=True)
class NodeRates:
    """What one Ceph host of a tier serves to clients under one protection option, with the arithmetic."""

    read: Rate
    write: Rate
    read_why: str
    write_why: str
    osds: int


def split_nics(server: StorageServer) -> tuple[int, int]:
    """Storage NICs of a Ceph host: the first half carries the public network, the rest the cluster network (one NIC:
    both share it)."""
    public = max(server.nics // 2, 1)
    return public, max(server.nics - public, 0)


def node_rates(ctx: PlanContext, server: StorageServer, opt: ProtectionOption, osds: int | None = None) -> NodeRates:
    drive = ctx.catalog.drives[server.drive]
    nic = ctx.catalog.nics[server.nic]
    osds = osds if osds is not None else server.drives * drive.osds_per_drive
    public, cluster = split_nics(server)
    amp = opt.multiplier
    pub = public * nic.speed.value
    drives = counted(server.drives, "drive")
    reads = [(pub, f"public {public} x {nic.speed}"),
             (server.drives * drive.seq_read.value, f"{drives} x {drive.seq_read}")]
    writes = [(pub, f"public {public} x {nic.speed}"),
              (server.drives * drive.seq_write.value / amp, f"{drives} x {drive.seq_write} / {amp:.4g}")]
    if cluster and amp > 1:
        writes.append((cluster * nic.speed.value / (amp - 1), f"cluster {cluster} x {nic.speed} / ({amp:.4g} - 1)"))
    rate = drive.ceph_osd
    if rate is not None:
        erasure = opt.scheme == "erasure"
        r_osd = rate.read_erasure if erasure else rate.read_replicated
        w_osd = rate.write_erasure if erasure else rate.write_replicated
        kind = "erasure" if erasure else "replicated"
        reads.append((osds * r_osd.value, f"{counted(osds, 'OSD')} x {r_osd} {kind}"))
        writes.append((osds * w_osd.value / amp, f"{counted(osds, 'OSD')} x {w_osd} {kind} / {amp:.4g}"))
    read, write = min(v for v, _ in reads), min(v for v, _ in writes)
    none = "" if rate is not None else f"; no published per-OSD Ceph rate for {drive.name}: NICs and drives only"

    def why(parts: list[tuple[float, str]], best: float) -> str:
        return "min(" + ", ".join(f"{t} = {Rate.of(v)}" for v, t in parts) + f") = {Rate.of(best)}" + none

    return NodeRates(Rate.of(read), Rate.of(write), why(reads, read), why(writes, write), osds)


def pg_count(osds: int, size: int, share: float = 1.0, floor: int = 1,
             target: int = TARGET_PGS_PER_OSD) -> tuple[int, str]:
    """Ceph's PG calculator for a pool holding ``share`` of its device class's data (0: metadata and CephFS's default
    data pool, which hold no file data; the calculator's floor of OSDs / size applies), ``target`` PGs per OSD."""
    value = max(target * osds * share / size, osds / size)
    nearest = 2 ** max(round(math.log2(value)), 0)
    pgs = max(nearest * 2 if nearest < 0.75 * value else nearest, floor)
    what = (f"{'lab: ' if target != TARGET_PGS_PER_OSD else ''}{target} x {osds} OSDs / size {size}" if share
            else f"no file data: {osds} OSDs / size {size}")
    return pgs, f"{what} = {value:.4g} -> power of two {pgs}" + (f" (at least {floor})" if pgs == floor > 1 else "")


def _dscp(qos: QosPlan) -> tuple[Traced[int], bool]:
    """Ceph is TCP: left unmarked (DSCP 0), which the QoS plan maps to no priority of its own, so it rides the default
    lossy class; PFC covers only the priority of RoCE's DSCP. Decided here, once."""
    dscp = 0
    mapped = qos.switch_dscp_to_priority
    lossless = dscp in mapped and mapped[dscp] in qos.pfc_priorities
    marked = ", ".join(f"DSCP {d} -> priority {p}" for d, p in mapped.items())
    return traced(dscp, list(qos.dscp.derived_from.spec), "ceph.tcp_on_the_default_class",
                  f"Ceph's messenger is TCP, not RDMA: unmarked, DSCP 0, priority 0, no PFC (the QoS plan marks only "
                  f"{marked}; PFC on {list(qos.pfc_priorities) or 'none'})"), lossless


def _network(ctx: PlanContext, qos: QosPlan, rails: tuple[int, ...], server: StorageServer) -> CephNetwork:
    public, cluster = split_nics(server)
    dscp, lossless = _dscp(qos)
    spec = ["target.rails"] if ctx.is_lab else ["compute.accelerator"]
    cluster_nic = public if cluster else 0
    public_subnet = cluster_subnet = None
    if ctx.is_lab:
        public_subnet, cluster_subnet = rail_subnet(0), rail_subnet(cluster_nic)
    return CephNetwork(
        public_nic=traced(0, spec, "ceph.public_on_the_first_storage_rail",
                          f"storage NIC 0 of {server.nics}; GPU nodes reach it on rail "
                          f"{rails[0] if rails else 0}"),
        cluster_nic=traced(cluster_nic, spec, "ceph.cluster_on_the_other_storage_rail",
                           f"storage NIC {cluster_nic}: replication and recovery off the public network"
                           if cluster else "one storage NIC: the cluster network shares it"),
        client_rail=rails[0] if rails else 0,
        public_subnet=public_subnet, cluster_subnet=cluster_subnet, dscp=dscp, lossless=lossless,
    )


def _option(tier: TierPlan) -> ProtectionOption:
    return next(o for o in tier.alternatives if protection_label(o) == tier.protection.value)


def _hosts(ctx: PlanContext, compute: ComputePlan, tiers: list[TierPlan], count: int) -> tuple[str, ...]:
    names: list[str] = []
    for tier in tiers:
        group = storage_group(ctx, compute, tier)
        names += [group.name(i + 1) for i in range(min(tier.nodes.value, count - len(names)))]
    return tuple(names)


def _daemons(ctx: PlanContext, compute: ComputePlan, tiers: list[TierPlan]) -> CephDaemons:
    hosts = sum(t.nodes.value for t in tiers)
    spec = list(tiers[0].nodes.derived_from.spec)
    if ctx.is_lab:
        one = traced(1, ["target.provider"], "ceph.lab_one_of_each", "lab: every daemon in the one storage VM")
        only = _hosts(ctx, compute, tiers, 1)
        return CephDaemons(monitors=one, managers=one, mds_active=one,
                           mds_standby=traced(0, ["target.provider"], "ceph.lab_one_of_each", "lab: no standby MDS"),
                           monitor_hosts=only, manager_hosts=only, mds_hosts=only)
    mons = 5 if hosts >= FIVE_MONITORS_FROM else 3
    monitors = traced(mons, spec, "ceph.monitors_3_or_5",
                      f"{hosts} Ceph hosts {'>=' if mons == 5 else '<'} {FIVE_MONITORS_FROM}: {mons} ({MON_SOURCE})")
    managers = traced(mons, spec, "ceph.manager_per_monitor", f"{mons}: {MGR_SOURCE}")
    mon_hosts = _hosts(ctx, compute, tiers, mons)
    return CephDaemons(
        monitors=monitors, managers=managers,
        mds_active=traced(1, ["business.type"], "ceph.one_active_mds", MDS_SOURCE),
        mds_standby=traced(1, ["business.type"], "ceph.one_standby_mds", MDS_SOURCE),
        monitor_hosts=mon_hosts, manager_hosts=mon_hosts, mds_hosts=_hosts(ctx, compute, tiers[:1], 2),
    )


def _replicated(name: str, purpose: str, copies: int, osds: int, floor: int, domain: str,
                spec: list[str], why: str) -> CephPool:
    pgs, formula = pg_count(osds, copies, share=0.0, floor=floor)
    return CephPool(
        name=name, purpose=purpose, type="replicated",
        size=traced(copies, spec, "ceph.replicated_size", why),
        min_size=traced(copies - 1, spec, "ceph.replicated_min_size",
                        f"size {copies} - 1 = {copies - 1} (Ceph's default min_size for size 3 is 2)"),
        crush_rule=f"replicated_{DEVICE_CLASS['hot']}", crush_device_class=DEVICE_CLASS["hot"],
        crush_failure_domain=domain,
        pg_num=traced(pgs, spec, "ceph.pg_calculator", f"{formula}; {PG_CALC}"),
        pg_autoscale_mode=_autoscale(spec),
    )


def target_pgs_per_osd(lab: bool) -> int:
    return LAB_TARGET_PGS_PER_OSD if lab else TARGET_PGS_PER_OSD


def _autoscale(spec: list[str]) -> Traced[str]:
    return traced("warn", spec, "ceph.pg_num_planned_autoscaler_warns",
                  "pg_num is planned here; warn reports a pool the autoscaler would resize, without moving data")


def _tier_pool(tier: TierPlan, opt: ProtectionOption, osds: int, domain: str,
               lab: bool) -> tuple[CephPool, CephEcProfile | None]:
    spec = list(tier.nodes.derived_from.spec)
    cls = DEVICE_CLASS[tier.name]
    name = f"cephfs_{tier.name}"
    if opt.scheme == "erasure":
        k, m = opt.data, opt.parity
        profile = CephEcProfile(name=f"{tier.name}_k{k}m{m}", k=k, m=m, crush_failure_domain=domain,
                                crush_device_class=cls)
        pgs, formula = pg_count(osds, k + m, target=target_pgs_per_osd(lab))
        min_size = (traced(k, ["target.provider"], "ceph.lab_ec_min_size_k",
                           f"lab: k = {k}, so EC {k}+{m} keeps serving I/O with one of its {osds} OSDs down")
                    if lab else traced(k + 1, spec, "ceph.ec_min_size", f"k+1 = {k + 1}: {EC_MIN_SIZE}"))
        return CephPool(
            name=name, purpose="tier_data", tier=tier.name, type="erasure",
            size=traced(k + m, spec, "ceph.ec_size", f"k+m = {k}+{m} = {k + m} ({tier.protection.value})"),
            min_size=min_size, erasure_code_profile=profile.name, crush_rule=name, crush_device_class=cls,
            crush_failure_domain=domain,
            pg_num=traced(pgs, spec, "ceph.pg_calculator", f"{formula}; {PG_CALC}"),
            pg_autoscale_mode=_autoscale(spec), allow_ec_overwrites=True, directory=f"/{tier.name}",
        ), profile
    copies = opt.parity + 1
    pgs, formula = pg_count(osds, copies, target=target_pgs_per_osd(lab))
    return CephPool(
        name=name, purpose="tier_data", tier=tier.name, type="replicated",
        size=traced(copies, spec, "ceph.replicated_size", f"{tier.protection.value}"),
        min_size=traced(copies - 1, spec, "ceph.replicated_min_size", f"size {copies} - 1 = {copies - 1}"),
        crush_rule=f"replicated_{cls}", crush_device_class=cls,
        crush_failure_domain=domain,
        pg_num=traced(pgs, spec, "ceph.pg_calculator", f"{formula}; {PG_CALC}"),
        pg_autoscale_mode=_autoscale(spec), directory=f"/{tier.name}",
    ), None


LAB_EXCEPTIONS = (
    CephLabException(rule="monitors", real="3, or 5 from 5 Ceph hosts, on separate hosts", lab="1 monitor"),
    CephLabException(rule="managers", real="one beside each monitor", lab="1 manager"),
    CephLabException(rule="MDS", real="1 active + 1 standby", lab="1 active, no standby"),
    CephLabException(rule="hosts", real="daemons and OSDs spread over the tiers' storage servers",
                     lab="every daemon and all 4 OSDs in the one storage VM"),
    CephLabException(rule="failure domain", real="host (osd crush chooseleaf type 1)",
                     lab="osd (osd crush chooseleaf type 0): k+m+1 = 4 OSDs hold EC 2+1, not hosts"),
    CephLabException(rule="EC min_size", real="k+1", lab="k = 2: EC 2+1 keeps serving I/O with one OSD down"),
    CephLabException(rule="erasure code", real="EC 8+2, 6+3 or 4+2 (m >= 2) or 3 replicas, as the tier is sized",
                     lab="EC 2+1 (m = 1) for the hot data pool"),
    CephLabException(rule="PGs per OSD", real=f"{TARGET_PGS_PER_OSD} (mon_target_pg_per_osd's default) in Ceph's PG "
                     "calculator", lab=f"{LAB_TARGET_PGS_PER_OSD}: every PG peers and recovers on one TCG vCPU"),
    CephLabException(rule="OSD devices", real="one OSD per NVMe/QLC/HDD drive, device class from the tier",
                     lab="virtual disks (>= 6 GiB, ceph-volume refuses < 5 GiB), device class nvme set by the ceph "
                         "role"),
    CephLabException(rule="slow-machine settings", real="Ceph's defaults",
                     lab="longer heartbeat, beacon and op-thread graces, 896 MiB osd_memory_target, no fsck on "
                         "mkfs, no CRUSH smoke test (storage.ceph.settings says why each)"),
    CephLabException(rule="mount_timeout", real=f"{MOUNT_TIMEOUT} s (mount.ceph's default)",
                     lab=f"{LAB_MOUNT_TIMEOUT} s: a TCG monitor and MDS answer slowly"),
    CephLabException(rule="throughput", real="per-OSD rates from the catalog's published Ceph result",
                     lab="emulated (TCG): no figure from the lab is a performance claim"),
)


def plan_ceph(ctx: PlanContext, compute: ComputePlan, qos: QosPlan, tiers: list[TierPlan]) -> CephPlan:
    """The Ceph cluster of the tiers ``storage`` sized (hot first; the local cache is not part of it)."""
    servers = [ctx.catalog.storage_servers[t.server] for t in tiers]
    domain: str = "osd" if ctx.is_lab else "host"
    groups: list[CephOsdGroup] = []
    pools: list[CephPool] = []
    profiles: list[CephEcProfile] = []
    osd_total = 0
    for tier, server in zip(tiers, servers, strict=True):
        drive = ctx.catalog.drives[server.drive]
        opt = _option(tier)
        per_host = LAB_OSDS if ctx.is_lab else server.drives * drive.osds_per_drive
        rates = node_rates(ctx, server, opt, per_host)
        spec = list(tier.nodes.derived_from.spec)
        per_host_t = (traced(per_host, ["target.provider"], "ceph.lab_osds",
                             f"lab: {LAB_OSDS} OSDs = k+m+1 for EC {LAB_EC[0]}+{LAB_EC[1]} with failure domain osd")
                      if ctx.is_lab else
                      traced(per_host, spec, "ceph.osds_per_host",
                             f"{server.drives} drives x {drive.osds_per_drive} OSD per drive = {per_host}"))
        groups.append(CephOsdGroup(
            tier=tier.name, device_class=DEVICE_CLASS[tier.name], hosts=tier.nodes.value, osds_per_host=per_host_t,
            per_node_read=traced(rates.read, spec, "ceph.per_node_read", rates.read_why),
            per_node_write=traced(rates.write, spec, "ceph.per_node_write", rates.write_why)))
        osds = tier.nodes.value * per_host
        osd_total += osds
        pool, profile = _tier_pool(tier, opt, osds, domain, ctx.is_lab)
        pools.append(pool)
        if profile is not None:
            profiles.append(profile)
    hot = groups[0]
    hot_osds = hot.hosts * hot.osds_per_host.value
    spec = list(tiers[0].nodes.derived_from.spec)
    three = "3 copies on the hot tier's NVMe: metadata and backtraces on the fastest media"
    head = [
        _replicated(METADATA_POOL, "metadata", 3, hot_osds, METADATA_MIN_PGS, domain, spec, three),
        _replicated(DEFAULT_POOL, "default_data", 3, hot_osds, DEFAULT_DATA_MIN_PGS, domain, spec,
                    three + "; CephFS's default data pool must be replicated (an EC pool cannot be it)"),
    ]
    return CephPlan(
        fs_name=FS_NAME,
        failure_domain=traced(domain, ["target.provider"], "ceph.failure_domain",
                              "lab: osd, every OSD in one VM" if ctx.is_lab else "host: a lost server loses one "
                              "chunk or copy of each PG, and k+m+1 (replicas+1) hosts leave room to rebuild it"),
        daemons=_daemons(ctx, compute, tiers), osd_groups=tuple(groups),
        osds=traced(osd_total, spec, "ceph.osds", " + ".join(
            f"{g.hosts} {g.tier} x {g.osds_per_host.value}" for g in groups) + f" = {osd_total}"),
        ec_profiles=tuple(profiles), pools=tuple(head + pools),
        network=_network(ctx, qos, client_rails(ctx, compute).value, servers[0]),
        target_pgs_per_osd=target_pgs_per_osd(ctx.is_lab),
        osd_device_min_size=LAB_MIN_OSD_DEVICE if ctx.is_lab else None,
        settings=SETTINGS + (LAB_SETTINGS if ctx.is_lab else ()),
        mgr_modules=MGR_MODULES,
        mount=CephMount(
            mount_point=f"/mnt/{FS_NAME}",
            mount_timeout=(traced(LAB_MOUNT_TIMEOUT, ["target.provider"], "ceph.lab_mount_timeout",
                                  f"lab: {LAB_MOUNT_TIMEOUT} s, TCG daemons answer slowly")
                           if ctx.is_lab else
                           traced(MOUNT_TIMEOUT, ["target.provider"], "ceph.mount_timeout",
                                  "mount.ceph(8) default: 60 s"))),
        lab_exceptions=LAB_EXCEPTIONS if ctx.is_lab else (),
    )
