"""Acceptance: the checks that gate production, each threshold traced to the spec line it enforces.

In the lab, throughput and latency are emulated, so those checks are informational there: they run and
report, but never pass or fail a lab as a performance claim.
"""

from __future__ import annotations

from typing import Literal

from blueprints.blueprint import (
    AcceptancePlan,
    CephPlan,
    Check,
    ComputePlan,
    FabricPlan,
    NcclPlan,
    Prediction,
    Provenance,
    QosPlan,
    StoragePlan,
)
from blueprints.blueprint.check_args import (
    AnyArgs,
    CephArgs,
    CounterSet,
    FioArgs,
    NcclArgs,
    NvmeArgs,
    PerftestArgs,
    PrometheusArgs,
    QosArgs,
    counter_name,
)
from blueprints.catalog import Nic
from blueprints.figures import plain
from blueprints.planner.context import PlanContext
from blueprints.planner.fio_workloads import plan_footprint, plan_scratch, plan_workloads, workload_args
from blueprints.planner.monitoring import HIT_RATIO
from blueprints.planner.nccl_model import NcclFabric, allreduce_busbw
from blueprints.traced import Traced, traced
from blueprints.units import Duration, Rate

GB = 1e9
# How long the paths probe lets a path settle before judging it: a path "connecting" retries every reconnect delay
# (a keep-alive hiccup under load heals within one or two), so three of them; one "resetting" waits out the host's
# admin command timeout, then one reconnect delay and one attempt with its margin: two more.
SETTLE_DELAYS = 3
RESET_EXTRA_DELAYS = 2


# The lab proves ib_write_bw's traffic on every pair, never its speed (Soft-RoCE under TCG): 5 s of it a pair, where
# real hosts run PerftestArgs' 10 s. Six waves of the example lab, 30 s less of the lab tier.
LAB_PERFTEST_DURATION = Duration.parse("5s")


def _check(ctx: PlanContext, id: str, tool: str, metric: str, op: str, threshold: float, unit: str,
           spec: list[str], rule: str, formula: str = "", severity: str = "error", scope: str = "cluster",
           performance: bool = True, args: AnyArgs | None = None) -> Check:
    if performance and ctx.is_lab:
        severity = "info"
        formula = (formula + "; " if formula else "") + "lab: emulated, informational"
    return Check.model_validate({
        "id": id, "tool": tool, "metric": metric, "op": op, "threshold": round(threshold, 6), "unit": unit,
        "severity": severity, "scope": scope, "args": args or PrometheusArgs(),
        "derived_from": Provenance(spec=tuple(spec), rule=rule, formula=formula),
    })


def predict(ctx: PlanContext, check: Check, figure: Traced[float]) -> Check:
    """``check`` with what the built cluster should measure (``figure``, in the check's unit) and the spec's floor
    and gate (``performance.predicted``). Not in the lab: its throughput is emulated."""
    if ctx.is_lab:
        return check
    targets = ctx.req.performance.predicted
    floor = traced(targets.floor.value, ["performance.predicted.floor"], "acceptance.prediction_floor",
                   f"a measure below {targets.floor} of its prediction is a finding (the field's pass marks sit at "
                   f"90-94% of what a link carries: NGC 90%, Azure 92.5-93.75%, field-numbers 3.1)")
    gate = traced(targets.gate, ["performance.predicted.gate"], "acceptance.prediction_floor",
                  "below the floor: a failure" if targets.gate else "below the floor: information beside the verdict")
    return check.model_copy(update={"predicted": Prediction(figure=figure, floor=floor, gate=gate)})


def predicted_from_design(ctx: PlanContext, check: Check, design: Traced[Rate]) -> Check:
    """``check`` predicted to measure the storage plan's own aggregate (the tiers' nodes x their per-node rate, the
    managed file system's capacity x its throughput per TiB, or the user's system's stated figure), in GB/s."""
    formula = f"the design's {design.value}: {design.derived_from.formula or design.derived_from.rule}"
    return predict(ctx, check, traced(round(design.value.value / GB, 6), design.derived_from.spec,
                                      "acceptance.predicted_from_design", formula))


def predicted_from_line_rate(ctx: PlanContext, check: Check, nic: Nic, gbit: float) -> Check:
    """``check`` (ib_write_bw per rail) predicted to measure the rail's line rate times the share of it ib_write_bw
    achieves in published runs (the NIC catalogue's ``rdma_achieved_fraction``), in Gb/s; no prediction where none
    is published."""
    if nic.rdma_achieved_fraction is None:
        return check
    fraction = nic.rdma_achieved_fraction
    return predict(ctx, check, traced(round(gbit * fraction, 6), list(check.derived_from.spec),
                                      "acceptance.predicted_perftest",
                                      f"{plain(gbit)} Gb/s x {fraction:.1%} (ib_write_bw's achieved share of line "
                                      f"rate: {nic.rdma_achieved_source})"))


def predicted_nccl(ctx: PlanContext, compute: ComputePlan, check: Check) -> Check:
    """``check`` (all_reduce busbw across every GPU node) predicted by the bandwidth model of
    ``blueprints.planner.nccl_model`` for the plan's nodes, GPUs and rails (its error on published logs:
    docs/benchmarks.md); no prediction where the model has none."""
    got = allreduce_busbw(NcclFabric(nodes=compute.nodes.value, gpus_per_node=compute.gpus_per_node,
                                     nics=compute.rails.value, nic_gbit=compute.rail_speed.gbit,
                                     gpu=compute.accelerator))
    if got is None:
        return check
    return predict(ctx, check, traced(round(got.busbw, 6), list(check.derived_from.spec), "acceptance.predicted_nccl",
                                      got.formula))


def nccl_tests(ctx: PlanContext) -> tuple[str, ...]:
    """The nccl-tests binaries acceptance runs across every GPU node: all_reduce always; the collectives of
    sharded LLM training (all_gather, reduce_scatter: FSDP/ZeRO) where the cluster trains LLMs; alltoall
    (embedding exchange) for recommender models."""
    business = ctx.req.business
    tests = ["all_reduce_perf"]
    if business.domain == "llm" and business.type in ("training", "mixed"):
        tests += ["all_gather_perf", "reduce_scatter_perf"]
    if business.domain == "recsys":
        tests.append("alltoall_perf")
    return tuple(tests)


def nccl_transport(ctx: PlanContext, fabric: FabricPlan) -> Literal["ib", "ofi", "gib"]:
    """The transport NCCL's debug log must name between nodes: the libfabric (OFI) plugin on EFA, the gIB plugin on
    GCP's RoCE, NCCL's own IB verbs transport on InfiniBand and RoCE (and the lab's Soft-RoCE)."""
    if fabric.kind.value == "efa":
        return "ofi"
    if ctx.provider == "gcp":
        return "gib"
    return "ib"


def ceph_health(ctx: PlanContext, ceph: CephPlan) -> Check:
    """Ceph's own account of the cluster against its plan, read on its first monitor host (``args.monitor``, where
    validators/run/ceph.py runs the ceph CLI): traced to the spec lines the plan's OSD count, failure domain and pools
    came from."""
    sources = [ceph.osds.derived_from, ceph.failure_domain.derived_from,
               *(v.derived_from for p in ceph.pools for v in (p.size, p.min_size, p.pg_num))]
    spec = list(dict.fromkeys(s for source in sources for s in source.spec))
    pools = ", ".join(f"{p.name} {p.erasure_code_profile or f'{p.size.value} copies'}" for p in ceph.pools)
    return _check(ctx, "storage.ceph_health", "ceph", "Ceph health, PGs, OSDs and pools as planned", "==", 1,
                  "bool", spec, "acceptance.ceph_as_planned",
                  f"HEALTH_OK with nothing muted, every PG active+clean, {ceph.osds.value} OSDs up and in, pools "
                  f"{pools} as planned; read on monitor {ceph.daemons.monitor_hosts[0]}",
                  performance=False, args=CephArgs(monitor=ceph.daemons.monitor_hosts[0]))


def _on_system(check: Check, storage: StoragePlan) -> Check:
    """A check measured on the shared file system names the system (``args.system``; ``args.owner`` user: the
    user's own, which acceptance measures as it measures any other)."""
    workload = check.args.workload if isinstance(check.args, FioArgs) else None
    on_shared = (check.tool == "fio" and any(w == workload for w in ("seq_read", "seq_write", "mixed", "cache_read"))) \
        or (check.id == "storage.latency_p99" and storage.cache is None)
    if not on_shared:
        return check
    fs = storage.shared
    args = check.args.model_copy(update={"system": fs.described, "owner": fs.owner, "mount": fs.mount_point})
    return check.model_copy(update={"args": args})


def plan_acceptance(ctx: PlanContext, compute: ComputePlan, fabric: FabricPlan, qos: QosPlan, nccl: NcclPlan,
                    storage: StoragePlan) -> AcceptancePlan:
    perf = ctx.req.performance.storage
    workloads = {w.name: w for w in plan_workloads(ctx, compute, storage)}
    checks = [
        predicted_from_design(ctx, _check(
            ctx, "storage.read_throughput", "fio", "aggregate sequential read bw_bytes across clients", ">=",
            perf.read_throughput.value / GB, "GB/s", ["performance.storage.read_throughput"],
            "acceptance.read_throughput", f"{perf.read_throughput}", args=workload_args(workloads["seq_read"])),
            storage.read_throughput),
    ]
    if perf.write_throughput is not None:
        checks.append(predicted_from_design(ctx, _check(
            ctx, "storage.write_throughput", "fio", "aggregate sequential write bw_bytes", ">=",
            perf.write_throughput.value / GB, "GB/s", ["performance.storage.write_throughput"],
            "acceptance.write_throughput", f"{perf.write_throughput}", args=workload_args(workloads["seq_write"])),
            storage.write_throughput))
    checks += [
        _check(ctx, "storage.latency_p99", "fio", "4k random read clat p99", "<=", perf.latency_p99.value * 1e6,
               "us", ["performance.storage.latency_p99"], "acceptance.latency_p99", f"{perf.latency_p99}",
               args=workload_args(workloads["rand_read_4k"])),
        _check(ctx, "storage.jitter", "fio", "coefficient of variation of per-interval read bandwidth", "<=",
               perf.jitter.value * 100, "%", ["performance.storage.jitter"], "acceptance.jitter_cv",
               f"stddev / mean of the summed per-interval bandwidth {perf.jitter}",
               args=workload_args(workloads["seq_read"])),
        _check(ctx, "storage.mixed", "fio", "randrw 70/30, 4k-1M: completes without errors", "==", 0, "errors",
               ["performance.storage.read_throughput", "performance.storage.write_throughput"],
               "acceptance.mixed_workload", "the design's mixed workload", performance=False,
               args=workload_args(workloads["mixed"])),
    ]
    nic = next((n for n in ctx.catalog.nics.values() if n.speed.value == compute.rail_speed.value), None)
    if nic is not None:
        gbit = compute.rail_speed.gbit
        checks.append(predicted_from_line_rate(ctx, _check(
            ctx, "rdma.write_bw", "ib_write_bw", "bandwidth per rail", ">=", gbit * nic.rdma_pass_fraction, "Gb/s",
            ["compute.accelerator", "target.provider"], "acceptance.rdma_line_rate",
            f"{nic.rdma_pass_fraction:.0%} of {plain(gbit)} Gb/s (NGC multinode pass mark)", scope="rail",
            args=PerftestArgs(duration=LAB_PERFTEST_DURATION) if ctx.is_lab else PerftestArgs()), nic, gbit))
    busbw_nic = next((n for n in ctx.catalog.nics.values() if n.nccl_busbw and n.speed.value == 50e9), None)
    if busbw_nic is not None and busbw_nic.nccl_busbw is not None:
        fraction = busbw_nic.nccl_busbw.value / busbw_nic.speed.value
        node_bw = compute.rails.value * compute.rail_speed.value
        expect = node_bw * fraction / GB
        severity = "error" if ctx.req.performance.network.comm_share.value >= 0.3 else "warning"
        tests = nccl_tests(ctx)
        transport = nccl_transport(ctx, fabric)
        checks.append(predicted_nccl(ctx, compute, _check(
            ctx, "nccl.allreduce_busbw", "nccl", "all_reduce busbw at the largest size", ">=", expect, "GB/s",
            ["compute.accelerator", "performance.network.comm_share", "business.type", "business.domain",
             "target.provider"],
            "acceptance.nccl_busbw_per_nic",
            f"{compute.rails.value} x {compute.rail_speed} x {fraction:.2f} (46 GB/s per 400G NIC, nccl-tests#290); "
            f"over {compute.nodes.value} node(s) x {compute.gpus_per_node} GPU(s), one rank per GPU; runs "
            f"{', '.join(tests)} (business {ctx.req.business.type}/{ctx.req.business.domain}); NCCL must use "
            f"{transport} between nodes", severity=severity,
            args=NcclArgs(
                # information for the report beside what NCCL chose, never pass/fail
                algorithm_expectation=nccl.algorithm_expectation.value,
                # what the runner launches and the debug log must show (validators.nccl_run)
                tests=tests, nodes=compute.nodes.value, gpus_per_node=compute.gpus_per_node,
                transport=transport, gpus="emulated" if ctx.is_lab else "real"))))
    if storage.nvmeof is not None:
        nv = storage.nvmeof
        delay = nv.reconnect_delay.value
        settle, reset_extra = SETTLE_DELAYS * delay, RESET_EXTRA_DELAYS * delay
        checks.append(_check(ctx, "nvmeof.paths", "nvme", "live paths per namespace", ">=",
                             nv.paths_per_subsystem.value, "paths", list(nv.paths_per_subsystem.derived_from.spec),
                             "acceptance.one_path_per_rail",
                             f"{nv.paths_per_subsystem.derived_from.formula}; a reconnecting path may settle for "
                             f"{SETTLE_DELAYS} x reconnect_delay {delay} s = {settle} s, one resetting for the "
                             f"host's admin_timeout + {RESET_EXTRA_DELAYS} x {delay} s",
                             scope="host", performance=False,
                             args=NvmeArgs(iopolicy=nv.iopolicy.value, settle=Duration.of(settle),
                                           reset_extra=Duration.of(reset_extra))))
    if qos.applies:
        checks.append(_check(ctx, "qos.consistency", "qos", "layers agreeing with the QoS plan", "==", 1, "bool",
                             list(qos.dscp.derived_from.spec), "acceptance.qos_one_plan",
                             f"DSCP {qos.dscp.value}, priority {qos.roce_priority.value}, "
                             f"ToS {qos.traffic_class.value}",
                             scope="host", performance=False,
                             args=QosArgs(dscp=qos.dscp.value, priority=qos.roce_priority.value,
                                         tos=qos.traffic_class.value)))
    if storage.cache is not None:
        checks.append(_check(ctx, "cache.hit_ratio", "prometheus",
                             "dm-cache read hit ratio over the fio run (its tier workloads)", ">=",
                             storage.cache.min_hit_ratio.value.value, "ratio",
                             list(storage.cache.min_hit_ratio.derived_from.spec), "acceptance.cache_hit_ratio",
                             storage.cache.min_hit_ratio.derived_from.formula, severity="warning", scope="host",
                             args=PrometheusArgs(query=HIT_RATIO)))
    fscache = storage.shared.fscache
    if fscache is not None and "cache_read" in workloads:
        floor = fscache.min_hit_ratio
        ratio = "; ".join(f"{c.kernels}: {c.formula}" for c in fscache.counters)
        checks.append(_check(ctx, "cache.fscache_hit_ratio", "fio",
                             "FS-Cache read hit ratio of the second read pass, on every GPU node", ">=",
                             floor.value.value, "ratio", list(floor.derived_from.spec), "acceptance.fscache_hit_ratio",
                             f"{floor.derived_from.formula}; from /proc/fs/fscache/stats before and after the second "
                             f"pass, by the host's kernel: {ratio}", scope="host", performance=False,
                             args=workload_args(workloads["cache_read"]).model_copy(update={
                                 "passes": 2, "counters": tuple(
                                     CounterSet(kernels=c.kernels, hits=tuple(map(counter_name, c.hits)),
                                                misses=tuple(map(counter_name, c.misses)))
                                     for c in fscache.counters)})))
    if storage.ceph is not None:
        checks.append(ceph_health(ctx, storage.ceph))
    checks.append(_check(ctx, "monitoring.targets_up", "prometheus", "share of scrape targets up", ">=", 1.0,
                         "ratio", ["target.provider"], "acceptance.all_targets_up", "every target up",
                         performance=False))
    checks = [_on_system(c, storage) for c in checks]
    return AcceptancePlan(checks=tuple(checks), workloads=tuple(workloads.values()), scratch=plan_scratch(storage),
                          footprint=plan_footprint(compute, storage, workloads["seq_read"]))
