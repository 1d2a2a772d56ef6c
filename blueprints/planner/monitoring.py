"""Monitoring: scrape targets per host role, recording rules and alert rules whose thresholds are the spec's.

Metric names prefixed ``clustersmith_`` come from the project's textfile exporter (monitoring role,
``roles/monitoring/files/clustersmith-exporter``); ``node_*`` from node_exporter; ``DCGM_*`` from
dcgm-exporter on GPU hosts. Rules without a spec target (PFC pause storms, CNP rate) alert on deviation
from a historical baseline: recording rules keep the mean and standard deviation of the rate over
``baseline_window`` and the alert fires above mean + k standard deviations.
"""

from __future__ import annotations

from blueprints.blueprint import (
    AlertRule,
    ComputePlan,
    MonitoringPlan,
    Provenance,
    RecordingRule,
    RuleGroup,
    ScrapeJob,
    StoragePlan,
    traced,
)
from blueprints.planner.context import PlanContext
from blueprints.spec import LabTarget
from blueprints.units import Duration

NODE_EXPORTER = 9100
DCGM_EXPORTER = 9400
PROMETHEUS = 9090
ALERTMANAGER = 9093
SM_UTIL_FLOOR = 0.70
COLLECT = "10s"
# One exporter run costs about 3.5 s of CPU in a TCG guest (measured in the lab): every 10 s it kept a third of
# each emulated VM busy and slowed every role run after monitoring's; the lab refreshes every 30 s.
LAB_COLLECT = "30s"
BASELINE = "7d"
SIGMAS = 3.0
# A node reading less than this share of its planned ingest is idle; jitter of an idle node means nothing.
JITTER_ACTIVE_SHARE = 0.10
# Log-spaced bounds (s) of the small-read latency histogram; the spec's p99 target is added as a bound.
LATENCY_BOUNDS = (25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3,
                  500e-3, 1.0)  # fmt: skip

JITTER_MEAN = 'avg_over_time(instance:node_disk_read_bytes:rate1m{role="gpu_client"}[10m])'
JITTER_CV = f'stddev_over_time(instance:node_disk_read_bytes:rate1m{{role="gpu_client"}}[10m]) / {JITTER_MEAN}'
PROBE_SOURCE = ("clustersmith-exporter: O_DIRECT 4 KiB reads at random offsets of each NVMe-oF namespace, "
                "timed one by one (a probe, so it measures small-read latency whatever the workload reads)")


def _rule(name: str, group: RuleGroup, summary: str, expr: str, threshold: float, unit: str, for_: str,
          severity: str, spec: list[str] | tuple[str, ...], rule: str, formula: str, source: str) -> AlertRule:
    return AlertRule.model_validate({
        "name": name, "group": group, "summary": summary, "expr": expr, "threshold": threshold, "unit": unit,
        "for": for_, "severity": severity, "metric_source": source,
        "derived_from": Provenance(spec=tuple(spec), rule=rule, formula=formula),
    })


def _baseline(series: str, rate_window: str) -> tuple[list[RecordingRule], str]:
    """Recording rules for the rate of a counter and its historical mean and deviation; the alert expr."""
    rate = f"instance_device:{series}:rate{rate_window}"
    rules = [
        RecordingRule(record=rate, expr=f"rate({series}_total[{rate_window}])", group="fabric"),
        RecordingRule(record=f"{rate}:avg_over_time_{BASELINE}", expr=f"avg_over_time({rate}[{BASELINE}])",
                      group="baseline"),
        RecordingRule(record=f"{rate}:stddev_over_time_{BASELINE}", expr=f"stddev_over_time({rate}[{BASELINE}])",
                      group="baseline"),
    ]
    expr = (f"{rate} > {rate}:avg_over_time_{BASELINE} + {{threshold}} * {rate}:stddev_over_time_{BASELINE}")
    return rules, expr


def _storage_rules(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan) -> tuple[
        list[RecordingRule], list[AlertRule]]:
    perf = ctx.req.performance
    lat = perf.storage.latency_p99
    jitter = perf.storage.jitter
    floor = JITTER_ACTIVE_SHARE * compute.storage_read_per_node.value
    recording = [
        RecordingRule(record="instance:node_disk_read_bytes:rate1m",
                      expr="sum by (instance, role) (rate(node_disk_read_bytes_total[1m]))", group="storage"),
        RecordingRule(record="instance_lv:clustersmith_lvmcache_read_hit_ratio:rate5m",
                      expr="rate(clustersmith_lvmcache_read_hits_total[5m]) / (rate(clustersmith_lvmcache_read_hits"
                           "_total[5m]) + rate(clustersmith_lvmcache_read_misses_total[5m]))", group="storage"),
    ]
    hit = storage.cache.min_hit_ratio
    alerts = [
        _rule("StorageReadLatencyP99High", "storage", f"Storage p99 small-read latency above the {lat} target",
              "histogram_quantile(0.99, sum by (le, instance) "
              "(rate(clustersmith_storage_read_latency_seconds_bucket[5m]))) > {threshold}",
              lat.value, "s", "10m", "critical", ["performance.storage.latency_p99"], "alert.latency_p99",
              f"p99 > {lat.quantity} ({lat.value:g} s); the target is a histogram bucket bound, so the quantile "
              f"crosses it exactly", PROBE_SOURCE),
        _rule("StorageThroughputJitterHigh", "storage", f"Read throughput jitter above the {jitter} target",
              f"({JITTER_CV} > {{threshold}}) and {JITTER_MEAN} > {floor:g}",
              jitter.value, "ratio", "15m", "warning", ["performance.storage.jitter"], "alert.jitter_cv",
              f"coefficient of variation of the 1-minute read rate > {jitter.quantity}, while the node reads at "
              f"least {JITTER_ACTIVE_SHARE:.0%} of its planned {compute.storage_read_per_node} ({floor:g} B/s)",
              "node_exporter: node_disk_read_bytes_total, summed over a client's block devices"),
        _rule("CacheHitRatioLow", "storage", f"dm-cache read hit ratio below the planned {hit.value} floor",
              "instance_lv:clustersmith_lvmcache_read_hit_ratio:rate5m < {threshold}", hit.value.value, "ratio",
              "30m", "warning", list(hit.derived_from.spec), "alert.cache_hit_ratio",
              f"read hits / (hits + misses) over 5m < {hit.value}",
              "clustersmith-exporter: read hits and misses of each dm-cache target (dmsetup status)"),
    ]
    return recording, alerts


def _fabric_rules(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan) -> tuple[
        list[RecordingRule], list[AlertRule]]:
    recording: list[RecordingRule] = []
    alerts: list[AlertRule] = []
    if storage.nvmeof is not None:
        paths = storage.nvmeof.paths_per_subsystem
        alerts.append(_rule(
            "NvmeofPathDown", "fabric", f"Fewer than the planned {paths.value} live NVMe-oF paths to a subsystem",
            'sum by (instance, subsys) (clustersmith_nvme_path_live{transport!="pcie"}) < {threshold}', paths.value,
            "paths", "30s", "critical", list(paths.derived_from.spec), "alert.path_down",
            f"live paths < {paths.value} planned ({paths.derived_from.formula})",
            "clustersmith-exporter: state of each fabric controller of each nvme-subsystem (sysfs), 1 when live"))
    alerts.append(_rule(
        "RdmaLinkDown", "fabric", "An RDMA port is not ACTIVE", "clustersmith_rdma_port_active < {threshold}", 1,
        "state", "30s", "critical", list(compute.rails.derived_from.spec), "alert.rdma_link_down",
        f"every port of the {compute.rails.value} rails per node must be ACTIVE",
        "clustersmith-exporter: /sys/class/infiniband/<dev>/ports/<n>/state"))
    sigma_spec = ["performance.storage.jitter", "performance.storage.latency_p99"]
    for name, series, window, for_, what, source in (
        ("PfcPauseStorm", "clustersmith_pfc_pause_rx_frames", "5m", "5m", "PFC pause frames received",
         "clustersmith-exporter: ethtool -S rx_prio<N>_pause of each rail netdev (mlx5 naming)"),
        ("CnpRateHigh", "clustersmith_rdma_cnp_sent", "5m", "10m", "Congestion notification packets sent",
         "clustersmith-exporter: /sys/class/infiniband/<dev>/ports/<n>/hw_counters/np_cnp_sent"),
    ):
        rules, expr = _baseline(series, window)
        recording += rules
        alerts.append(_rule(
            name, "fabric", f"{what} above their {BASELINE} baseline", expr, SIGMAS, "sigma", for_, "warning",
            sigma_spec, "alert.dynamic_baseline",
            f"{window} rate > {BASELINE} mean + {SIGMAS:g} standard deviations (three-sigma rule)", source))
    return recording, alerts


def plan_monitoring(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan) -> MonitoringPlan:
    perf = ctx.req.performance
    scrape = [
        ScrapeJob(name="node", role="gpu_client", port=NODE_EXPORTER, exporter="node_exporter"),
        ScrapeJob(name="node", role="storage_target", port=NODE_EXPORTER, exporter="node_exporter"),
        ScrapeJob(name="node", role="monitoring", port=NODE_EXPORTER, exporter="node_exporter"),
        ScrapeJob(name="prometheus", role="monitoring", port=PROMETHEUS, exporter="prometheus"),
        ScrapeJob(name="alertmanager", role="monitoring", port=ALERTMANAGER, exporter="alertmanager"),
    ]
    has_gpu = not ctx.is_lab
    if has_gpu:
        scrape.append(ScrapeJob(name="dcgm", role="gpu_client", port=DCGM_EXPORTER, exporter="dcgm-exporter"))

    recording, alerts = _storage_rules(ctx, compute, storage)
    fabric_recording, fabric_alerts = _fabric_rules(ctx, compute, storage)
    recording += fabric_recording
    alerts += fabric_alerts
    if has_gpu:
        alerts.append(_rule(
            "GpuSmUtilisationLow", "gpu", "GPU SM activity below 70 % while a job holds the GPU (input-bound?)",
            "avg by (instance) (DCGM_FI_PROF_SM_ACTIVE) < {threshold} "
            "and on (instance) max by (instance) (DCGM_FI_DEV_FB_USED) > 0",
            SM_UTIL_FLOOR, "ratio", "30m", "warning", ["compute.gpus"], "alert.sm_util_floor",
            "SM active < 70 % with frame buffer in use", "dcgm-exporter: DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_DEV_FB_USED"))
    if perf.serving is not None:
        p99 = perf.serving.p99_latency
        alerts.append(_rule(
            "ServingLatencyP99High", "serving", f"Serving p99 above the {p99} target",
            "histogram_quantile(0.99, sum by (le) (rate(serving_request_duration_seconds_bucket[5m]))) > {threshold}",
            p99.value, "s", "5m", "critical", ["performance.serving.p99_latency"], "alert.serving_p99",
            f"p99 > {p99.quantity}", "the serving application's own request-duration histogram"))

    lat = perf.storage.latency_p99.value
    buckets = tuple(sorted({float(f"{b:.12g}") for b in (*LATENCY_BOUNDS, lat)}))  # 100us is 1.0000000000000002e-4
    listen = None
    collect = COLLECT
    if isinstance(ctx.req.target, LabTarget):
        collect = LAB_COLLECT
        last = ctx.req.target.rails - 1
        listen = traced(f"10.77.{last}.0/24", ["target.rails"], "monitoring.lab_listen_on_last_rail",
                        f"the lab's VMs share no management segment; rail{last} carries monitoring, so cutting "
                        f"rail0 leaves scraping up")
    return MonitoringPlan(
        scrape_interval=Duration.parse("15s"), scrape=tuple(scrape), alerts=tuple(alerts),
        baseline_window=Duration.parse(BASELINE), recording=tuple(recording),
        evaluation_interval=Duration.parse("15s"), baseline_interval=Duration.parse("2m"),
        collect_interval=Duration.parse(collect), latency_buckets=buckets, listen_cidr=listen,
    )
