"""Storage: tiers sized from data scale and hot fraction, protection, node counts, NVMe-oF, client cache.

- hot tier (NVMe TLC) holds the hot fraction of the training set plus two checkpoints and carries the
  read and write throughput targets; its node count is the largest of what throughput, write
  throughput and raw capacity need;
- warm tier (NVMe QLC) holds the rest of the training set and the validation set;
- cold tier (HDD) keeps one archive copy of both;
- local cache: each GPU node's local NVMe in front of the network tiers (dm-cache).
Protection per tier: on bare metal and the lab the engine is Ceph (planner/ceph.py), whose per-node rates
(min(NICs, drives, OSDs x the catalog's per-OSD Ceph rate), writes divided by the protection's amplification)
size each option. An erasure code k+m needs k+m+1 hosts and n replicas n+1 (a lost host can be rebuilt
elsewhere); the hot tier takes the option needing fewest nodes, then least raw capacity; the warm (QLC) and
cold (HDD) tiers take an erasure code, which saves raw capacity against 3 replicas (raw of every option is
recorded, field-numbers 7). The lab's one storage VM holds EC 2+1 over 4 OSDs (failure domain osd).
"""

from __future__ import annotations

import uuid
from typing import Literal

from blueprints.blueprint import (
    CachePlan,
    ComputePlan,
    NvmeofPlan,
    NvmeofSubsystem,
    ProtectionOption,
    QosPlan,
    StoragePlan,
    TierOption,
    TierPlan,
    Traced,
    traced,
)
from blueprints.catalog import StorageServer
from blueprints.errors import InfeasibleError, Problem
from blueprints.figures import counted, usd
from blueprints.planner.ceph import LAB_EC, node_rates, plan_ceph, protection_label
from blueprints.planner.context import PlanContext, ceil_div
from blueprints.planner.fio_workloads import TIERED_MOUNT
from blueprints.planner.hosts import client_group, storage_group
from blueprints.planner.lab import LAB_OSDS
from blueprints.planner.shared_fs import plan_ceph_mount
from blueprints.planner.storage_optimizer import Candidate, options, solve
from blueprints.planner.storage_services import plan_external, plan_managed, raise_all
from blueprints.spec import LabTarget
from blueprints.units import Duration, Rate, Ratio, Size

# The most servers one tier may plan. The Blueprint lists every storage server as a host, and a 100,000-GPU spec must
# plan and render in seconds (DESIGN.md). 10,000 holds the hot tier that the storage NICs of 100,000 GPUs can feed
# (12,500 nodes x 40 GB/s / ~100 GB/s per server, about 5,000) twice over; a tier past it is a storage system
# clustersmith was neither designed nor tested for.
MAX_STORAGE_NODES = 10_000
# The smallest client cache planned: a hot set of a few bytes (hot_fraction 1e-30) would size a cache of 0 bytes,
# which dm-cache cannot build; 64 MiB is the smallest cache that holds a few of its 512 KiB blocks per job.
MIN_CACHE = Size.parse("64MiB")
EC_PROFILES = ((8, 2), (6, 3), (4, 2))  # widest first; raw multipliers 1.25, 1.5, 1.5
REPLICAS = 3
RDMA_SMALL_MESSAGE = Duration.parse("2us")  # ib_read_lat ~1-2 us (field-numbers 8)
TierName = Literal["local_cache", "hot", "warm", "cold"]
# The media a tier's servers may carry: the hot and warm tiers flash, the cold tier any (its rule default is HDD)
TIER_MEDIA: dict[str, tuple[str, ...]] = {"hot": ("nvme_tlc", "nvme_qlc"), "warm": ("nvme_tlc", "nvme_qlc"),
                                          "cold": ("nvme_tlc", "nvme_qlc", "hdd")}
LAB_SERVER = "lab-target"


def protection_options(usable: float) -> list[ProtectionOption]:
    """Each option's raw capacity and the failure domains it needs: k+m+1 for EC k+m, replicas+1 for replicas
    (one spare domain to rebuild a lost one into)."""
    opts = [ProtectionOption(scheme="erasure", data=k, parity=m, multiplier=(k + m) / k,
                             raw=Size.of(usable * (k + m) / k), min_nodes=k + m + 1) for k, m in EC_PROFILES]
    opts.append(ProtectionOption(scheme="replica", data=1, parity=REPLICAS - 1, multiplier=float(REPLICAS),
                                 raw=Size.of(usable * REPLICAS), min_nodes=REPLICAS + 1))
    opts.append(ProtectionOption(scheme="none", data=1, parity=0, multiplier=1.0, raw=Size.of(usable),
                                 min_nodes=1))
    return opts


def lab_option(usable: float) -> ProtectionOption:
    """The lab's EC 2+1 over LAB_OSDS OSDs of its one storage VM (failure domain osd: k+m+1 = 4)."""
    k, m = LAB_EC
    return ProtectionOption(scheme="erasure", data=k, parity=m, multiplier=(k + m) / k,
                            raw=Size.of(usable * (k + m) / k), min_nodes=LAB_OSDS)


def _server_capacity(ctx: PlanContext, server: StorageServer) -> tuple[Size, Duration]:
    """Raw capacity of one server and its media's 4k read latency (its rates are Ceph's: ceph.node_rates)."""
    drive = ctx.catalog.drives[server.drive]
    return Size.of(server.drives * drive.capacity.value), drive.read_latency


def _eligible(ctx: PlanContext, name: TierName, default: str) -> list[StorageServer]:
    """The server shapes a tier may take: drives of its media classes and, for the hot tier, media that reads fast
    enough for the latency target (the default shape always, so that the rules can name a target it misses)."""
    target = ctx.req.performance.storage.latency_p99.value
    out = []
    for server in ctx.catalog.storage_servers.values():
        drive = ctx.catalog.drives[server.drive]
        fast = name != "hot" or drive.read_latency.value + RDMA_SMALL_MESSAGE.value < target
        if server.name == default or (server.name != LAB_SERVER and drive.media in TIER_MEDIA[name] and fast):
            out.append(server)
    return out


def _monthly(ctx: PlanContext, server: StorageServer) -> tuple[float | None, str]:
    """One server's monthly cost (its list price over costs.amortise_months) and how, or None and the row's name."""
    row = ctx.catalog.prices.find(server.name, None, "list")
    if row is None or row.price == "unknown":
        return None, row.name if row is not None else f"{server.name}/any/list (no row)"
    months = ctx.req.costs.amortise_months
    month = row.price / months
    return month, (f"{server.name} {usd(row.price)} / {months} months = {usd(month)} a month (price row {row.name}, "
                   f"read {row.read} from {row.url})")


def _candidates(ctx: PlanContext, name: TierName, servers: list[StorageServer], usable: float, read_target: float,
                write_target: float) -> list[Candidate]:
    out = []
    for server in servers:
        per_cap, _ = _server_capacity(ctx, server)
        month, _ = _monthly(ctx, server)
        out += [Candidate(tier=name, server=server, media=ctx.catalog.drives[server.drive].media, option=o,
                          rates=node_rates(ctx, server, o), per_node_raw=per_cap.value, read_target=read_target,
                          write_target=write_target, per_month=month)
                for o in protection_options(usable) if o.scheme != "none"]
    return out


def _why(c: Candidate) -> list[str]:
    """The arithmetic of each constraint's server count, for the Blueprint's trace."""
    n = c.needs()
    why = [f"capacity: raw {c.option.raw} / {Size.of(c.per_node_raw)} per node = {n['capacity']}",
           f"{protection_label(c.option)} needs {c.option.min_nodes} hosts (k+m+1, replicas+1)"]
    if c.read_target:
        why.insert(0, f"read: {Rate.of(c.read_target)} / {c.rates.read} per node [{c.rates.read_why}] = {n['read']}")
    if c.write_target:
        why.insert(1, f"write: {Rate.of(c.write_target)} / {c.rates.write} per node [{c.rates.write_why}] "
                      f"= {n['write']}")
    return why


def _by_rules(cands: list[Candidate], prefer_erasure: bool) -> Candidate:
    """Fewest nodes, then (``prefer_erasure``) an erasure code, then the least raw capacity."""
    return min(cands, key=lambda c: (c.nodes, prefer_erasure and c.option.scheme != "erasure", c.option.multiplier))


def _size_tier(ctx: PlanContext, name: TierName, server_name: str, usable: float, usable_spec: list[str],
               usable_formula: str, read_target: float = 0.0, write_target: float = 0.0,
               fixed_nodes: int | None = None, problems: list[Problem] | None = None,
               prefer_erasure: bool = False) -> TierPlan:
    """Size one tier: for each server shape and protection option, the nodes that read, write (Ceph's per-node rates
    under that option, writes after its amplification), raw capacity and failure domains need. Where every shape
    the tier may take has a list price, the least monthly cost decides (planner/storage_optimizer.py); elsewhere
    the rules: the default shape's option needing fewest nodes, then the least raw capacity (``prefer_erasure``: an
    erasure code whenever it needs no more servers than 3 replicas, since only then does it save raw capacity that
    is bought: with drives fixed per server, an erasure code's k+m+1 hosts can cost more disks than replicas' 4)."""
    spec = list(usable_spec)
    if read_target:
        spec.append("performance.storage.read_throughput")
    if write_target:
        spec.append("performance.storage.write_throughput")
    if fixed_nodes is not None:
        return _lab_tier(ctx, name, server_name, usable, usable_spec, usable_formula, fixed_nodes, spec)
    eligible = _eligible(ctx, name, server_name)
    unpriced = tuple(dict.fromkeys(why for s in eligible for m, why in [_monthly(ctx, s)] if m is None))
    chosen: Candidate | None = None
    cands: list[Candidate] = []
    if not unpriced:
        cands = _candidates(ctx, name, eligible, usable, read_target, write_target)
        chosen = (solve({name: cands}, MAX_STORAGE_NODES) or {}).get(name)
    decided_by: Literal["cost", "rules"] = "cost" if chosen is not None else "rules"
    if chosen is None:  # a price unknown, or no option within MAX_STORAGE_NODES: the rules decide and say so
        cands = _candidates(ctx, name, [ctx.catalog.storage_servers[server_name]], usable, read_target, write_target)
        chosen = _by_rules(cands, prefer_erasure)
    nodes, why = chosen.nodes, _why(chosen)
    if nodes > MAX_STORAGE_NODES and problems is not None:
        n = chosen.needs()
        driver = max((n["read"], "performance.storage.read_throughput"),
                     (n["write"], "performance.storage.write_throughput"), (n["capacity"], usable_spec[0]))[1]
        problems.append(Problem(driver, f"the {name} tier needs {nodes} storage servers (" + "; ".join(why)
                                + f"); expected at most {MAX_STORAGE_NODES} per tier"))
    among = "ec-8+2, ec-6+3, ec-4+2 and replica-3"
    if decided_by == "cost":
        month, priced = _monthly(ctx, chosen.server)
        total = nodes * (month or 0.0)
        shapes = ", ".join(s.name for s in eligible)
        rule, formula = "storage.least_cost", (
            f"least monthly cost of {len(cands)} options ({shapes}; {among}), solved by HiGHS: "
            f"{counted(nodes, 'node')} x [{priced}] = {usd(total)} a month")
        spec.append("costs.amortise_months")
    else:
        rule = "storage.ec_where_it_saves_servers" if prefer_erasure else "storage.fewest_nodes_then_least_raw"
        formula = f"of {among}: fewest nodes, then " + (
            "an erasure code (raw x1.25-1.5 against 3 replicas' x3), then least raw capacity"
            if prefer_erasure else "least raw capacity")
    server = chosen.server
    _, latency = _server_capacity(ctx, server)
    per_read = chosen.rates.read
    return TierPlan(
        name=name,
        media=server.drive,
        server=server.name,
        usable=traced(Size.of(usable), usable_spec, f"storage.{name}_capacity", usable_formula),
        protection=traced(protection_label(chosen.option), spec, rule, formula),
        alternatives=tuple(c.option for c in cands if c.server is server),
        raw=traced(chosen.option.raw, usable_spec, "storage.raw_from_protection",
                   f"{Size.of(usable)} x {chosen.option.multiplier:.4g} = {chosen.option.raw}"),
        nodes=traced(nodes, spec, f"storage.{name}_nodes", "max(" + "; ".join(why) + ")"),
        per_node_read=per_read,
        aggregate_read=traced(Rate.of(nodes * per_read.value), spec, f"storage.{name}_aggregate_read",
                              f"{counted(nodes, 'node')} x {per_read} = {Rate.of(nodes * per_read.value)}"),
        read_latency=latency,
        options=options(cands, chosen),
        decided_by=decided_by,
        unpriced=unpriced,
    )


def _lab_tier(ctx: PlanContext, name: TierName, server_name: str, usable: float, usable_spec: list[str],
              usable_formula: str, fixed_nodes: int, spec: list[str]) -> TierPlan:
    """The lab's one storage VM: EC 2+1 over its LAB_OSDS OSDs (failure domain osd)."""
    server = ctx.catalog.storage_servers[server_name]
    per_cap, latency = _server_capacity(ctx, server)
    spec.append("target.storage_targets")
    chosen = lab_option(usable)
    per_read = node_rates(ctx, server, chosen).read
    return TierPlan(
        name=name,
        media=server.drive,
        server=server.name,
        usable=traced(Size.of(usable), usable_spec, f"storage.{name}_capacity", usable_formula),
        protection=traced(protection_label(chosen), spec, "storage.fewest_nodes_then_least_raw",
                          f"lab: {protection_label(chosen)} over {LAB_OSDS} OSDs"),
        alternatives=(chosen,),
        raw=traced(chosen.raw, usable_spec, "storage.raw_from_protection",
                   f"{Size.of(usable)} x {chosen.multiplier:.4g} = {chosen.raw}"),
        nodes=traced(fixed_nodes, spec, f"storage.{name}_nodes",
                     f"max({fixed_nodes} storage VM(s) from target.storage_targets, {LAB_OSDS} OSDs: EC 2+1 with "
                     f"failure domain osd (k+m+1 = {LAB_OSDS}))"),
        per_node_read=per_read,
        aggregate_read=traced(Rate.of(fixed_nodes * per_read.value), spec, f"storage.{name}_aggregate_read",
                              f"{counted(fixed_nodes, 'node')} x {per_read} = {Rate.of(fixed_nodes * per_read.value)}"),
        read_latency=latency,
        options=(TierOption(server=server.name, media=ctx.catalog.drives[server.drive].media,
                            protection=protection_label(chosen), nodes=fixed_nodes, binding="target.storage_targets",
                            raw=Size.of(fixed_nodes * per_cap.value),
                            aggregate_read=Rate.of(fixed_nodes * per_read.value), headroom=None, per_month=None,
                            pareto=True, chosen=True),),
    )


def _check_latency(ctx: PlanContext, hot: TierPlan) -> list[Problem]:
    target = ctx.req.performance.storage.latency_p99
    if hot.read_latency is None:
        return []
    floor = hot.read_latency.value + RDMA_SMALL_MESSAGE.value
    if floor >= target.value:
        return [Problem(
            "performance.storage.latency_p99",
            f"latency_p99 {target} cannot be met: the hot tier's media ({hot.media}) reads 4k in "
            f"{hot.read_latency} plus ~{RDMA_SMALL_MESSAGE} on the wire = {Duration.of(floor)}",
        )]
    return []


def client_write_per_node(compute: ComputePlan) -> tuple[Rate, str]:
    """What one GPU node can send to storage: its storage NICs at line rate (cloud instances: their GPU
    network, which carries the managed file system's traffic)."""
    if compute.storage_nics:
        per = compute.storage_nics * compute.storage_nic_speed.value
        return Rate.of(per), f"{compute.storage_nics} storage NIC(s) x {compute.storage_nic_speed}"
    per = compute.rails.value * compute.rail_speed.value
    return Rate.of(per), f"{compute.rails.value} network interface(s) x {compute.rail_speed}"


def _check_client_ingest(ctx: PlanContext, compute: ComputePlan) -> list[Problem]:
    """The GPU nodes bound both throughput targets: read by what a node ingests, write by its storage NICs."""
    problems: list[Problem] = []
    target = ctx.req.performance.storage.read_throughput
    can = compute.nodes.value * compute.storage_read_per_node.value
    if can < target.value:
        problems.append(Problem(
            "performance.storage.read_throughput",
            f"read_throughput {target} cannot be met: {compute.nodes.value} GPU nodes x "
            f"{compute.storage_read_per_node} per node = {Rate.of(can)}",
        ))
    write = ctx.req.performance.storage.write_throughput
    per, how = client_write_per_node(compute)
    can_write = compute.nodes.value * per.value
    if write is not None and can_write < write.value:
        problems.append(Problem(
            "performance.storage.write_throughput",
            f"write_throughput {write} cannot be met: {compute.nodes.value} GPU nodes x {how} = "
            f"{Rate.of(can_write)}; expected at most {Rate.of(can_write)}",
        ))
    return problems


# Host NQNs are named by clustersmith, under the naming authority of its subsystem NQNs: readable in the target's
# configfs and kernel log (which host was refused), deterministic from cluster and host name (a rebuild or a
# reinstalled host keeps its NQN, so every subsystem's allowed hosts are known when planning), and the prefix says
# which nvmet host entries are the cluster's. Host n of cluster c: nqn.2026-11.io.clustersmith:c:host:<name>.
HOST_NQN_AUTHORITY = "nqn.2026-11.io.clustersmith"
def _nvmeof_auth(ctx: PlanContext) -> Traced[Literal["dhchap", "none"]]:
    if ctx.lab is not None:
        kernel = ctx.lab.image.kernel.value
        if not kernel.nvme_auth:
            return traced("none", ["target.provider", "target.kernel"], "nvmeof.auth_where_the_kernel_can",
                          f"lab: Debian's {kernel.release_series} kernel ({kernel.name}) is built without "
                          "CONFIG_NVME_AUTH/CONFIG_NVME_TARGET_AUTH; allowed_hosts only")
        return traced("dhchap", ["target.provider", "target.kernel"], "nvmeof.auth_where_the_kernel_can",
                      f"lab: Debian's {kernel.release_series} kernel ({kernel.name}) has CONFIG_NVME_TARGET_AUTH: "
                      "bidirectional DH-HMAC-CHAP, hmac(sha256), secrets from the cluster's secrets file")
    return traced("dhchap", ["target.provider"], "nvmeof.auth_where_the_kernel_can",
                  "bidirectional DH-HMAC-CHAP, hmac(sha256), secrets from the cluster's secrets file")


# A target's namespaces are LVM volumes on its disks.nvmeof. LVM keeps its label and metadata in the device's first
# MiB (pe_start 1 MiB, lvm.conf(5)) and allocates 4 MiB extents (vgcreate(8) default): 8 MiB is left for that, and
# every volume is a whole number of extents.
LVM_EXTENT = 4 << 20
LVM_RESERVE = 8 << 20
NVMEOF_VOLUME_GROUP = "clustersmith-nvmeof"


def _namespace_size(ctx: PlanContext, hot: TierPlan, owners: int, targets: int) -> Traced[Size]:
    """Each target's disks.nvmeof (one drive of the hot server's model) split evenly between the hosts it serves."""
    drive = ctx.catalog.storage_servers[hot.server].drive
    capacity = int(ctx.catalog.drives[drive].capacity.value)
    per_target = ceil_div(owners, targets)
    size = (capacity - LVM_RESERVE) // per_target // LVM_EXTENT * LVM_EXTENT
    spec = list(dict.fromkeys(["target.clients" if ctx.is_lab else "compute.gpus", *hot.nodes.derived_from.spec]))
    return traced(Size.of(size), spec, "nvmeof.namespace_per_owner",
                  f"one {drive} drive ({Size.of(capacity)}) per {hot.server}, less 8 MiB of LVM metadata, split "
                  f"between the ceil({counted(owners, 'host')} / {counted(targets, 'target')}) = "
                  f"{counted(per_target, 'host')} it serves, whole 4 MiB extents = {Size.of(size)}")


def _nvmeof(ctx: PlanContext, compute: ComputePlan, hot: TierPlan) -> NvmeofPlan | None:
    """One namespace per GPU node, owned by it alone (its dm-cache tier's origin), served by the hot tier's
    targets in turn: host i by target i mod targets."""
    if ctx.is_cloud:
        return None
    name = ctx.req.metadata.name
    paths = compute.storage_nics
    path_spec = ["target.rails"] if ctx.is_lab else ["compute.accelerator"]
    training = ctx.req.business.type == "training"
    policy: Literal["round-robin", "queue-depth"] = "round-robin" if training else "queue-depth"
    kernel = "kernel default (drivers/nvme/host/fabrics.h; field-numbers 4)"
    targets = storage_group(ctx, compute, hot)
    owners = client_group(ctx, compute).names()
    size = _namespace_size(ctx, hot, len(owners), targets.count)

    def subsystem(i: int, owner: str) -> NvmeofSubsystem:
        nqn = f"nqn.2026-11.io.clustersmith:{name}:ns:{owner}"
        return NvmeofSubsystem.model_construct(  # built unvalidated: 12,500 of them for a 100,000-GPU design
            nqn=nqn, tier=hot.name, served_by=targets.name(i % targets.count + 1), owner=owner,
            uuid=str(uuid.uuid5(uuid.NAMESPACE_URL, nqn)), volume=f"ns-{owner}")

    return NvmeofPlan(
        transport="rdma",
        port=4420,
        host_nqn_prefix=f"{HOST_NQN_AUTHORITY}:{name}:host:",
        auth=_nvmeof_auth(ctx),
        paths_per_subsystem=traced(paths, path_spec, "nvmeof.one_path_per_storage_nic",
                                   f"{paths} storage NICs per node -> {paths} paths"),
        iopolicy=traced(policy, ["business.type"], "nvmeof.iopolicy_by_workload",
                        "training streams large reads: round-robin" if training
                        else "small I/O under load: queue-depth (nvme-multipath.rst)"),
        ctrl_loss_tmo=traced(-1, ["performance.storage.jitter"], "nvmeof.never_drop_a_path",
                             "-1: keep reconnecting, a returning rail rejoins (vendor udev convention)"),
        reconnect_delay=traced(10, ["performance.storage.jitter"], "nvmeof.reconnect_delay", kernel),
        fast_io_fail_tmo=traced(-1, ["performance.storage.jitter"], "nvmeof.fast_io_fail", kernel),
        keep_alive_tmo=traced(5, ["performance.storage.jitter"], "nvmeof.keep_alive", kernel),
        namespace_size=size,
        volume_group=NVMEOF_VOLUME_GROUP,
        subsystems=tuple(subsystem(i, owner) for i, owner in enumerate(owners)),
    )


def _cache(ctx: PlanContext, compute: ComputePlan, origin: Traced[Size] | None = None) -> CachePlan:
    """``origin``: the node's own NVMe-oF namespace the cache fronts, where one is planned: a cache larger than
    its origin holds nothing more."""
    req = ctx.req
    hot_total = req.data.training_set.value * req.data.hot_fraction.value
    per_node_hot = hot_total / max(compute.nodes.value, 1)
    local = compute.local_nvme.value
    size = max(min(local, per_node_hot), min(local, MIN_CACHE.value)) if per_node_hot else local
    if origin is not None:
        size = min(size, origin.value.value)
    streaming = req.business.domain in ("cv", "llm")
    return CachePlan(
        mode=traced("writethrough", ["business.type"], "cache.writethrough_for_read_mostly",
                    "reads dominate; a lost cache device loses no data"),
        policy="smq",
        mount_point=TIERED_MOUNT,
        size=traced(Size.of(size), list(dict.fromkeys(["data.training_set", "data.hot_fraction", "compute.gpus",
                                                       *(origin.derived_from.spec if origin is not None else ())])),
                    "cache.hot_shard_per_node",
                    f"min(local NVMe {compute.local_nvme}, {Size.of(hot_total)} hot / "
                    f"{compute.nodes.value} nodes = {Size.of(per_node_hot)}"
                    + (f", the namespace it fronts {origin.value}" if origin is not None else "") + ")"),
        hot_set=traced(Size.of(hot_total), ["data.training_set", "data.hot_fraction"], "cache.hot_set",
                       f"{req.data.training_set} x {req.data.hot_fraction} = {Size.of(hot_total)}"),
        read_ahead_kb=traced(4096 if streaming else 128, ["business.domain"], "cache.read_ahead_by_domain",
                             "large sequential samples: 4 MiB" if streaming else "random lookups: kernel default"),
        dirty_background_ratio=5,
        dirty_ratio=10,
        min_hit_ratio=traced(Ratio.parse("95%"), ["data.hot_fraction"], "cache.min_hit_ratio",
                             "hot set cached: hits below 95 % mean it does not fit or is not warmed"),
    )


def plan_storage(ctx: PlanContext, compute: ComputePlan, qos: QosPlan) -> StoragePlan:
    req = ctx.req
    train, val = req.data.training_set.value, req.data.validation_set.value
    hot_fraction = req.data.hot_fraction.value
    ckpt = req.data.checkpoint_size.value if req.data.checkpoint_size else 0.0
    read_t = req.performance.storage.read_throughput.value
    write_b = req.performance.storage.write_throughput
    write_t = write_b.value if write_b else 0.0
    problems = _check_client_ingest(ctx, compute)
    data_spec = ["data.training_set", "data.hot_fraction"] + (["data.checkpoint_size"] if ckpt else [])
    hot_usable = train * hot_fraction + 2 * ckpt
    hot_formula = f"{req.data.training_set} x {req.data.hot_fraction}" + (
        f" + 2 x {req.data.checkpoint_size} checkpoints" if ckpt else "") + f" = {Size.of(hot_usable)}"

    external = ctx.req.storage.external if ctx.req.storage is not None else None
    if external is not None:
        return plan_external(ctx, compute, external, train + val + 2 * ckpt, problems)
    if ctx.is_cloud:
        try:
            managed = plan_managed(ctx, compute, train + val + 2 * ckpt, read_t, write_t)
        except InfeasibleError as exc:
            problems += exc.problems
        raise_all(ctx, problems)
        return managed

    tiers: list[TierPlan] = []
    local = compute.nodes.value * compute.local_nvme.value
    local_cache = TierPlan(
        name="local_cache", media="local-nvme", server=compute.node_type.value,
        usable=traced(Size.of(local), ["compute.gpus"], "storage.local_cache_capacity",
                      f"{compute.nodes.value} nodes x {compute.local_nvme}"),
        protection=traced("none", ["compute.gpus"], "storage.cache_needs_no_protection", "a cache"),
        alternatives=(), raw=traced(Size.of(local), ["compute.gpus"], "storage.local_cache_capacity"),
        nodes=compute.nodes, per_node_read=compute.storage_read_per_node,
        aggregate_read=traced(Rate.of(local and compute.nodes.value * compute.storage_read_per_node.value),
                              ["compute.gpus"], "storage.local_cache_aggregate_read",
                              f"{compute.nodes.value} nodes x {compute.storage_read_per_node}"),
    )
    tiers.append(local_cache)
    if isinstance(req.target, LabTarget):
        hot = _size_tier(ctx, "hot", LAB_SERVER, hot_usable, data_spec, hot_formula,
                         fixed_nodes=req.target.storage_targets)
    else:
        hot = _size_tier(ctx, "hot", "nvme-tlc-server", hot_usable, data_spec, hot_formula, read_t, write_t,
                         problems=problems)
    problems += _check_latency(ctx, hot)
    tiers.append(hot)
    if not ctx.is_lab:
        warm_usable = train * (1 - hot_fraction) + val
        tiers.append(_size_tier(
            ctx, "warm", "nvme-qlc-server", warm_usable,
            ["data.training_set", "data.hot_fraction", "data.validation_set"],
            f"{req.data.training_set} x (1 - {req.data.hot_fraction}) + {req.data.validation_set} "
            f"= {Size.of(warm_usable)}", problems=problems, prefer_erasure=True))
        cold_usable = train + val
        tiers.append(_size_tier(
            ctx, "cold", "hdd-server", cold_usable, ["data.training_set", "data.validation_set"],
            f"archive copy: {req.data.training_set} + {req.data.validation_set} = {Size.of(cold_usable)}",
            problems=problems, prefer_erasure=True))
    raise_all(ctx, problems)
    ceph = plan_ceph(ctx, compute, qos, tiers[1:])
    per_write = ceph.osd_groups[0].per_node_write.value
    nvmeof = _nvmeof(ctx, compute, hot)
    write_cap = Rate.of(hot.nodes.value * per_write.value)
    cache = _cache(ctx, compute, nvmeof.namespace_size if nvmeof else None)
    return StoragePlan(
        managed_service=None,
        tiers=tuple(tiers),
        read_throughput=hot.aggregate_read,
        write_throughput=traced(write_cap, list(hot.nodes.derived_from.spec), "storage.hot_aggregate_write",
                                f"{counted(hot.nodes.value, 'node')} x {per_write} per-node client write "
                                f"({hot.protection.value}) = {write_cap}"),
        nvmeof=nvmeof,
        cache=cache,
        ceph=ceph,
        shared=plan_ceph_mount(ctx, compute, ceph, cache),
    )
