"""Grafana dashboards built in code with Grafana's own Python SDK (grafana-foundation-sdk).

``storage``: I/O heatmap by device and the small-read latency distribution; ``fabric``: rail round-trip
p99, rail and NVMe-oF path health; ``gpu`` (GPU clusters only): SM activity, HBM activity, NVLink and XID
errors; ``ceph`` (bare metal and the lab): health, PGs per pool, OSDs up and in, pool usage; ``targets``: one
row per spec target with the target next to what is measured. Targets and thresholds are the Blueprint's.
"""

from __future__ import annotations

import json

from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.builders import heatmap, prometheus, stat, statetimeline, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, Threshold, ThresholdsMode
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from blueprints.blueprint import Blueprint, CephPlan

# The role provisions its Prometheus data source under this uid.
DATASOURCE = DataSourceRef(type_val="prometheus", uid="clustersmith-prometheus")
GREEN, RED = "green", "red"


def _series(bp: Blueprint, name: str) -> str:
    """What a panel plots for the monitoring plan's query ``name``: its recorded series, or its PromQL."""
    return bp.monitoring.query(name).series


def _query(expr: str, legend: str = "", fmt: PromQueryFormat | None = None) -> prometheus.Dataquery:
    q = prometheus.Dataquery().expr(expr).datasource(DATASOURCE)
    if legend:
        q = q.legend_format(legend)
    if fmt is not None:
        q = q.format(fmt)
    return q


def _thresholds(limit: float, good_below: bool) -> db.ThresholdsConfig:
    low, high = (GREEN, RED) if good_below else (RED, GREEN)
    return db.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(
        [Threshold(value=None, color=low), Threshold(value=limit, color=high)])


def _new(bp: Blueprint, uid: str, title: str) -> db.Dashboard:
    return (db.Dashboard(f"{bp.name}: {title}").uid(f"cs-{bp.name}-{uid}"[:40]).tags(["clustersmith", bp.name])
            .time("now-6h", "now").refresh("30s").editable())


def storage(bp: Blueprint) -> db.Dashboard:
    d = _new(bp, "storage", "storage I/O")
    d = d.with_row(db.Row("I/O by device"))
    d = d.with_panel(
        heatmap.Panel().title("Busy time by device (share of each second with I/O in flight)")
        .with_target(_query(_series(bp, "storage.disk_busy_by_device"),
                            "{{instance}} {{device}}"))
        .calculate(False).unit("percentunit").span(24).height(10))
    d = d.with_panel(
        heatmap.Panel().title("Read bytes/s by device")
        .with_target(_query(_series(bp, "storage.disk_read_bytes_by_device"),
                            "{{instance}} {{device}}"))
        .calculate(False).unit("Bps").span(12).height(8))
    d = d.with_panel(
        heatmap.Panel().title("Write bytes/s by device")
        .with_target(_query(_series(bp, "storage.disk_written_bytes_by_device"),
                            "{{instance}} {{device}}"))
        .calculate(False).unit("Bps").span(12).height(8))
    d = d.with_row(db.Row("Small-read latency (probe)"))
    d = d.with_panel(
        heatmap.Panel().title("4 KiB read latency distribution")
        .with_target(_query(_series(bp, "storage.read_latency_buckets"),
                            "{{le}}", PromQueryFormat.HEATMAP))
        .calculate(False).unit("s").span(24).height(8))
    return d


def fabric(bp: Blueprint) -> db.Dashboard:
    d = _new(bp, "fabric", "rails and paths")
    d = d.with_row(db.Row("Network latency"))
    d = d.with_panel(
        heatmap.Panel().title("Rail round-trip time distribution")
        .with_target(_query(_series(bp, "fabric.rail_rtt_buckets"), "{{le}}",
                            PromQueryFormat.HEATMAP))
        .calculate(False).unit("s").span(12).height(8))
    d = d.with_panel(
        timeseries.Panel().title("Rail round-trip time p99")
        .with_target(_query(_series(bp, "fabric.rail_rtt_p99"), "{{instance}} {{netdev}}"))
        .unit("s").span(12).height(8))
    d = d.with_row(db.Row("Rail and path health"))
    d = d.with_panel(
        statetimeline.Panel().title("RDMA ports ACTIVE")
        .with_target(_query(_series(bp, "fabric.rdma_port_active"), "{{instance}} {{device}}/{{port}}"))
        .thresholds(_thresholds(1, good_below=False)).span(12).height(8))
    d = d.with_panel(
        statetimeline.Panel().title("NVMe-oF paths live")
        .with_target(_query(_series(bp, "fabric.nvme_path_live"), "{{instance}} {{subsys}} {{path}} {{address}}"))
        .thresholds(_thresholds(1, good_below=False)).span(12).height(8))
    d = d.with_panel(
        timeseries.Panel().title("PFC pause frames received /s")
        .with_target(_query(_series(bp, "fabric.pfc_pause_rx_rate"),
                            "{{instance}} {{netdev}} prio {{priority}}"))
        .unit("pps").span(12).height(8))
    d = d.with_panel(
        timeseries.Panel().title("CNPs sent /s")
        .with_target(_query(_series(bp, "fabric.cnp_sent_rate"), "{{instance}} {{device}}"))
        .unit("pps").span(12).height(8))
    return d


def gpu(bp: Blueprint) -> db.Dashboard:
    mon = bp.monitoring
    floor = next(a.threshold for a in mon.alerts if a.name == "GpuSmUtilisationLow")
    d = _new(bp, "gpu", "GPU utilisation")
    d = d.with_row(db.Row("SM activity"))
    d = d.with_panel(
        timeseries.Panel().title(f"SM active per node (alert below {floor:.0%})")
        .with_target(_query(mon.query("gpu.sm_active").series, "{{instance}}"))
        .unit("percentunit").min(0).max(1).thresholds(_thresholds(floor, good_below=False))
        .span(24).height(10))
    d = d.with_row(db.Row("Memory and errors"))
    d = d.with_panel(
        timeseries.Panel().title("HBM (DRAM) active per GPU")
        .with_target(_query(mon.query("gpu.dram_active").series, "{{instance}} GPU {{gpu}}"))
        .unit("percentunit").min(0).max(1).span(12).height(8))
    d = d.with_panel(
        timeseries.Panel().title("NVLink errors /s per GPU (CRC, replay, recovery)")
        .with_target(_query(mon.query("gpu.nvlink_errors").series, "{{instance}} GPU {{gpu}}"))
        .unit("short").min(0).span(12).height(8))
    d = d.with_panel(
        statetimeline.Panel().title("Last XID error per GPU (0: none)")
        .with_target(_query(mon.query("gpu.xid_last").series, "{{instance}} GPU {{gpu}}"))
        .thresholds(_thresholds(1, good_below=True)).span(24).height(8))
    return d


def targets(bp: Blueprint) -> db.Dashboard:
    mon = bp.monitoring
    d = _new(bp, "targets", "spec targets vs measured")
    for t in mon.targets:
        measured = f"{t.aggregate}({mon.query(t.query).series})"
        line = bp.spec_lines.get(t.spec[0])
        where = ", ".join(t.spec) + (f" ({bp.spec_file}:{line})" if line else "")
        d = d.with_row(db.Row(t.title))
        d = d.with_panel(
            stat.Panel().title("Measured").description(f"Spec: {where}")
            .with_target(_query(measured, "measured")).unit(t.unit)
            .thresholds(_thresholds(t.threshold, t.good_below)).span(6).height(6))
        d = d.with_panel(
            timeseries.Panel().title("Target vs measured").description(f"Spec: {where}")
            .with_target(_query(measured, "measured"))
            .with_target(_query(f"vector({t.threshold:.12g})", "target").ref_id("B"))
            .unit(t.unit).span(18).height(6))
    return d


def ceph(bp: Blueprint, cluster: CephPlan) -> db.Dashboard:
    """Health, placement groups per pool, OSDs up and in, pool usage: the plan's ceph.* queries, so every series is one
    the mgr prometheus module serves (and the alerts read)."""
    mon = bp.monitoring
    d = _new(bp, "ceph", "Ceph cluster")
    d = d.with_row(db.Row("Health"))
    health = db.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(
        [Threshold(value=None, color=GREEN), Threshold(value=1, color="orange"), Threshold(value=2, color=RED)])
    d = d.with_panel(
        stat.Panel().title("Health (0 HEALTH_OK, 1 HEALTH_WARN, 2 HEALTH_ERR)")
        .with_target(_query(mon.query("ceph.health_status").series, "health")).thresholds(health).span(8).height(6))
    d = d.with_panel(
        stat.Panel().title("Managers serving metrics (the active one; standbys answer empty)")
        .with_target(_query(mon.query("ceph.managers_serving").series, "managers"))
        .thresholds(_thresholds(1, good_below=False)).span(8).height(6))
    d = d.with_panel(
        stat.Panel().title("OSDs up / in / planned")
        .with_target(_query(mon.query("ceph.osds_up").series, "up"))
        .with_target(_query(mon.query("ceph.osds_in").series, "in").ref_id("B"))
        .with_target(_query(f"vector({cluster.osds.value})", "planned").ref_id("C"))
        .span(8).height(6))
    d = d.with_row(db.Row("Placement groups per pool"))
    for name, title in (("ceph.pgs_not_active", "PGs not active"), ("ceph.pgs_not_clean", "PGs not active+clean"),
                        ("ceph.pgs_degraded", "PGs degraded")):
        d = d.with_panel(
            timeseries.Panel().title(title).with_target(_query(mon.query(name).series, "{{name}}"))
            .unit("short").min(0).span(8).height(8))
    d = d.with_row(db.Row("OSDs"))
    for name, title in (("ceph.osd_up", "OSD up"), ("ceph.osd_in", "OSD in")):
        d = d.with_panel(
            statetimeline.Panel().title(title)
            .with_target(_query(mon.query(name).series, "{{ceph_daemon}} on {{hostname}}"))
            .thresholds(_thresholds(1, good_below=False)).span(12).height(8))
    d = d.with_row(db.Row("Pools"))
    for name, title, unit in (("ceph.pool_used_ratio", "Pool capacity used", "percentunit"),
                              ("ceph.pool_stored_bytes", "Bytes stored per pool (before copies or erasure coding)",
                               "bytes")):
        d = d.with_panel(
            timeseries.Panel().title(title).with_target(_query(mon.query(name).series, "{{name}}"))
            .unit(unit).min(0).span(12).height(8))
    return d


def dashboards(bp: Blueprint) -> dict[str, str]:
    """Dashboard JSON by file stem."""
    built = {"storage": storage(bp), "fabric": fabric(bp), "targets": targets(bp)}
    if any(a.name == "GpuSmUtilisationLow" for a in bp.monitoring.alerts):
        built["gpu"] = gpu(bp)
    if bp.storage.ceph is not None:
        built["ceph"] = ceph(bp, bp.storage.ceph)
    return {name: json.dumps(d.build(), cls=JSONEncoder, indent=2, sort_keys=True) + "\n"
            for name, d in built.items()}
