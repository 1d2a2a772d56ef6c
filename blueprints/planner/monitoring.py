"""Monitoring: scrape targets per host role and alert rules whose thresholds are the spec's targets.

Metric names prefixed ``clustersmith_`` come from the project's textfile exporter (monitoring role);
``node_*`` from node_exporter; ``DCGM_*`` from dcgm-exporter on GPU hosts. Rules without a spec target
(pause storms, CNP rate) alert on deviation from a recorded historical baseline.
"""

from __future__ import annotations

from blueprints.blueprint import AlertRule, ComputePlan, MonitoringPlan, Provenance, ScrapeJob, StoragePlan
from blueprints.planner.context import PlanContext
from blueprints.units import Duration

NODE_EXPORTER = 9100
DCGM_EXPORTER = 9400
PROMETHEUS = 9090
SM_UTIL_FLOOR = 0.70
BASELINE = "7d"


def _rule(name: str, summary: str, expr: str, threshold: float, unit: str, for_: str, severity: str,
          spec: list[str], rule: str, formula: str = "") -> AlertRule:
    return AlertRule.model_validate({
        "name": name, "summary": summary, "expr": expr, "threshold": threshold, "unit": unit, "for": for_,
        "severity": severity, "derived_from": Provenance(spec=tuple(spec), rule=rule, formula=formula),
    })


def plan_monitoring(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan) -> MonitoringPlan:
    perf = ctx.req.performance
    scrape = [
        ScrapeJob(name="node", role="gpu_client", port=NODE_EXPORTER, exporter="node_exporter"),
        ScrapeJob(name="node", role="storage_target", port=NODE_EXPORTER, exporter="node_exporter"),
        ScrapeJob(name="node", role="monitoring", port=NODE_EXPORTER, exporter="node_exporter"),
        ScrapeJob(name="prometheus", role="monitoring", port=PROMETHEUS, exporter="prometheus"),
    ]
    has_gpu = not ctx.is_lab
    if has_gpu:
        scrape.append(ScrapeJob(name="dcgm", role="gpu_client", port=DCGM_EXPORTER, exporter="dcgm-exporter"))

    lat = perf.storage.latency_p99
    jitter = perf.storage.jitter
    alerts = [
        _rule("StorageReadLatencyP99High", f"Storage p99 read latency above the {lat} target",
              "histogram_quantile(0.99, sum by (le, instance) "
              "(rate(clustersmith_storage_read_latency_seconds_bucket[5m]))) > {threshold}",
              lat.value, "s", "10m", "critical", ["performance.storage.latency_p99"], "alert.latency_p99",
              f"p99 > {lat.quantity} ({lat.value:g} s)"),
        _rule("StorageThroughputJitterHigh", f"Read throughput jitter above the {jitter} target",
              "stddev_over_time(instance:node_disk_read_bytes:rate1m[10m]) / "
              "avg_over_time(instance:node_disk_read_bytes:rate1m[10m]) > {threshold}",
              jitter.value, "ratio", "15m", "warning", ["performance.storage.jitter"], "alert.jitter_cv",
              f"coefficient of variation > {jitter.quantity}"),
        _rule("CacheHitRatioLow", "dm-cache read hit ratio below the planned floor",
              "clustersmith_lvmcache_read_hit_ratio < {threshold}", storage.cache.min_hit_ratio.value.value,
              "ratio", "30m", "warning", list(storage.cache.min_hit_ratio.derived_from.spec),
              "alert.cache_hit_ratio", "hit ratio < 95 %"),
        _rule("NvmeofPathDown", "An NVMe-oF path is not live", "clustersmith_nvme_path_live < {threshold}",
              1, "paths", "30s", "critical",
              list(storage.nvmeof.paths_per_subsystem.derived_from.spec) if storage.nvmeof else ["target.provider"],
              "alert.path_down", "every planned path must be live"),
        _rule("RdmaLinkDown", "An RDMA port is not ACTIVE", "clustersmith_rdma_port_active < {threshold}",
              1, "state", "30s", "critical", ["compute.accelerator"], "alert.rdma_link_down", "state ACTIVE"),
        _rule("PfcPauseStorm", "PFC pause frames far above their baseline",
              "rate(clustersmith_pfc_pause_rx_frames_total[1m]) > "
              "{threshold} * avg_over_time(rate(clustersmith_pfc_pause_rx_frames_total[1m])[" + BASELINE + ":5m])",
              3, "x baseline", "5m", "warning", ["target.provider"], "alert.dynamic_baseline",
              f"3x the {BASELINE} average"),
        _rule("CnpRateHigh", "Congestion notifications far above their baseline",
              "rate(clustersmith_rdma_cnp_sent_total[1m]) > "
              "{threshold} * avg_over_time(rate(clustersmith_rdma_cnp_sent_total[1m])[" + BASELINE + ":5m])",
              3, "x baseline", "10m", "warning", ["target.provider"], "alert.dynamic_baseline",
              f"3x the {BASELINE} average"),
    ]
    if has_gpu:
        alerts.append(_rule("GpuSmUtilisationLow", "GPU SM activity below 70 % (input-bound training?)",
                            "avg by (instance) (DCGM_FI_PROF_SM_ACTIVE) < {threshold}", SM_UTIL_FLOOR, "ratio",
                            "30m", "warning", ["compute.gpus"], "alert.sm_util_floor", "SM active < 70 %"))
    if perf.serving is not None:
        p99 = perf.serving.p99_latency
        alerts.append(_rule("ServingLatencyP99High", f"Serving p99 above the {p99} target",
                            "histogram_quantile(0.99, sum by (le) (rate(serving_request_duration_seconds_bucket[5m])))"
                            " > {threshold}", p99.value, "s", "5m", "critical",
                            ["performance.serving.p99_latency"], "alert.serving_p99", f"p99 > {p99.quantity}"))
    return MonitoringPlan(scrape_interval=Duration.parse("15s"), scrape=tuple(scrape), alerts=tuple(alerts),
                          baseline_window=Duration.parse(BASELINE))
