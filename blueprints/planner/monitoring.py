"""Monitoring: scrape targets per host role, recording rules and alert rules whose thresholds are the spec's.

Metric names prefixed ``clustersmith_`` come from the project's textfile exporter (monitoring role,
``roles/monitoring/files/clustersmith-exporter``); ``node_*`` from node_exporter; ``DCGM_*`` from
dcgm-exporter on GPU hosts; ``ceph_*`` from the Ceph managers' prometheus module where the design runs Ceph
(planner.monitoring_ceph). Rules without a spec target (PFC pause storms, CNP rate) alert on deviation
from a historical baseline: recording rules keep the mean and standard deviation of the rate over
``baseline_window`` and the alert fires above mean + k standard deviations.
"""

from __future__ import annotations

from blueprints.blueprint import (
    AlertRule,
    ComputePlan,
    FsCacheCounters,
    MonitoringAuth,
    MonitoringPlan,
    Query,
    RecordingRule,
    RuleGroup,
    ScrapeJob,
    ScrapeSet,
    StoragePlan,
    TargetPanel,
    Traced,
    traced,
)
from blueprints.figures import plain
from blueprints.hosts import HostGroup, names_by_role
from blueprints.planner.alerts import alert_rule
from blueprints.planner.context import PlanContext
from blueprints.planner.lab import rail_subnet
from blueprints.planner.monitoring_ceph import ceph_alerts, ceph_queries, ceph_scrape
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

PROBE_SOURCE = ("clustersmith-exporter: O_DIRECT 4 KiB reads at random offsets of each NVMe-oF namespace, "
                "timed one by one (a probe, so it measures small-read latency whatever the workload reads)")
NODE_READS = "node_exporter: node_disk_read_bytes_total, summed over a client's block devices"
CACHE_SOURCE = "clustersmith-exporter: read hits and misses of each dm-cache target (dmsetup status)"
FSCACHE_SOURCE = ("clustersmith-exporter: the kernel's FS-Cache and netfs counters (/proc/fs/fscache/stats), "
                  "clustersmith_fscache_events_total{line, key}")
FSCACHE_METRIC = "clustersmith_fscache_events_total"

# Names of the queries other layers read (acceptance, dashboards, tests).
HIT_RATIO = "cache.read_hit_ratio"
FSCACHE_HIT_RATIO = "fscache.read_hit_ratio"
LATENCY_P99 = "storage.read_latency_p99"
JITTER = "storage.read_jitter_cv"
READ_RATE = "storage.read_rate"
CLIENT_READS = "storage.client_read_bytes"
CLIENT_WRITES = "storage.client_written_bytes"
SM_ACTIVE = "gpu.sm_active"
DISK_BUSY = "storage.disk_busy_by_device"
DISK_READS = "storage.disk_read_bytes_by_device"
DISK_WRITES = "storage.disk_written_bytes_by_device"
LATENCY_BUCKETS = "storage.read_latency_buckets"
RTT_BUCKETS = "fabric.rail_rtt_buckets"
RTT_P99 = "fabric.rail_rtt_p99"
PORT_ACTIVE = "fabric.rdma_port_active"
PATH_LIVE = "fabric.nvme_path_live"
LIVE_PATHS = "fabric.nvme_live_paths"
PFC_PAUSES = "fabric.pfc_pause_rx_rate"
CNPS = "fabric.cnp_sent_rate"
DRAM_ACTIVE = "gpu.dram_active"
XID = "gpu.xid_last"
NVLINK_ERRORS = "gpu.nvlink_errors"
_CLIENT_DISKS = 'role="gpu_client", device!~"dm-.*"'
EXPORTER = "clustersmith-exporter"
# Where the monitoring role puts the web config, the TLS files and the scrape password on each host (prometheus
# reads them all: Debian runs Prometheus, Alertmanager and node_exporter as the prometheus user).
AUTH = MonitoringAuth(
    username="clustersmith", web_config_file="/etc/prometheus/clustersmith-web.yml",
    tls_dir="/etc/prometheus/clustersmith-tls", ca_file="/etc/prometheus/clustersmith-tls/ca.crt",
    password_file="/etc/prometheus/clustersmith-scrape.password",
)


def _gpu_queries() -> list[Query]:
    """What the GPU dashboard and alert read; every field is in the role's counters file
    (roles/monitoring/files/dcgm-exporter-counters.csv), which dcgm-exporter is started with."""
    nvlink = " + ".join(f"rate(DCGM_FI_DEV_NVLINK_{kind}_ERROR_COUNT_TOTAL[{{window}}])"
                        for kind in ("CRC_FLIT", "CRC_DATA", "REPLAY", "RECOVERY"))
    return [
        Query(name=SM_ACTIVE, measures="mean SM activity of a node's GPUs",
              expr="avg by (instance) (DCGM_FI_PROF_SM_ACTIVE)", unit="ratio",
              source="dcgm-exporter: DCGM_FI_PROF_SM_ACTIVE"),
        Query(name=DRAM_ACTIVE, measures="share of cycles each GPU's memory (HBM) interface is busy",
              expr="max by (instance, gpu) (DCGM_FI_PROF_DRAM_ACTIVE)", unit="ratio",
              source="dcgm-exporter: DCGM_FI_PROF_DRAM_ACTIVE"),
        Query(name=XID, measures="the last XID error code each GPU reported (0: none)",
              expr="max by (instance, gpu) (DCGM_FI_DEV_XID_ERRORS)", unit="code",
              source="dcgm-exporter: DCGM_FI_DEV_XID_ERRORS"),
        Query(name=NVLINK_ERRORS, measures="NVLink CRC, replay and recovery errors per second, per GPU",
              expr=f"sum by (instance, gpu) ({nvlink})", window="5m", unit="1/s",
              source="dcgm-exporter: DCGM_FI_DEV_NVLINK_{CRC_FLIT,CRC_DATA,REPLAY,RECOVERY}_ERROR_COUNT_TOTAL"),
    ]


def fscache_query(counters: tuple[FsCacheCounters, ...]) -> Query:
    """The FS-Cache read hit ratio from the counters the plan names (``shared.fscache.counters``), summed per host: one
    ratio per kernel range, newest first, joined by ``or``, so a host is judged by the first set its kernel prints (a
    set's series exist only on the kernels that print its lines; the last one's on every kernel)."""
    def total(pairs: tuple[tuple[str, str], ...]) -> str:
        return " + ".join(f'sum by (instance) (increase({FSCACHE_METRIC}{{line="{line}", key="{key}"}}[{{window}}]))'
                          for line, key in pairs)
    ratios = [f"({total(c.hits)}) / ({total(c.hits)} + {total(c.misses)})" for c in counters]
    shown = "; ".join(f"{c.kernels}: {c.formula}" for c in counters)
    return Query(name=FSCACHE_HIT_RATIO, measures="FS-Cache reads served / all reads over the window, by the counters "
                                                  "the host's kernel prints",
                 expr=" or ".join(f"({r})" for r in ratios), window="5m",
                 unit="ratio", source=f"{FSCACHE_SOURCE}; by kernel: {shown} (why each: storage.shared.fscache."
                                      "counters)",
                 recorded="instance:clustersmith_fscache_read_hit_ratio:increase5m")


def _storage_queries() -> list[Query]:
    read_rate = "instance:node_disk_read_bytes:rate1m"
    mean = f'avg_over_time({read_rate}{{role="gpu_client"}}[{{window}}])'
    hits = "increase(clustersmith_lvmcache_read_hits_total[{window}])"
    return [
        Query(name=READ_RATE, measures="bytes read per second by each host, over its block devices",
              expr="sum by (instance, role) (rate(node_disk_read_bytes_total[{window}]))", window="1m", unit="B/s",
              source=NODE_READS, recorded=read_rate),
        Query(name=LATENCY_P99, measures="p99 of the probe's 4 KiB read latency, per host",
              expr="histogram_quantile(0.99, sum by (le, instance) "
                   "(rate(clustersmith_storage_read_latency_seconds_bucket[{window}])))",
              window="5m", unit="s", source=PROBE_SOURCE),
        Query(name="storage.read_rate_mean", measures="mean of a GPU client's 1-minute read rate", expr=mean,
              window="10m", unit="B/s", source=NODE_READS),
        Query(name=JITTER, measures="coefficient of variation (stddev / mean) of a GPU client's 1-minute read rate",
              expr=f'stddev_over_time({read_rate}{{role="gpu_client"}}[{{window}}]) / {mean}', window="10m",
              unit="ratio", source=NODE_READS),
        # One hit ratio for alerts, dashboards and acceptance: read hits / (hits + misses) counted over a window,
        # the alert's (5m) or the acceptance measurement's own, from the kernel's dm-cache counters.
        Query(name=HIT_RATIO, measures="dm-cache read hits / (read hits + read misses) over the window",
              expr=f"{hits} / ({hits} + increase(clustersmith_lvmcache_read_misses_total[{{window}}]))",
              window="5m", unit="ratio", source=CACHE_SOURCE,
              recorded="instance_lv:clustersmith_lvmcache_read_hit_ratio:increase5m"),
        Query(name=CLIENT_READS, measures="bytes read per second from a GPU client's disks (dm devices excluded)",
              expr=f"rate(node_disk_read_bytes_total{{{_CLIENT_DISKS}}}[{{window}}])", window="1m", unit="B/s",
              source="node_exporter: node_disk_read_bytes_total"),
        Query(name=CLIENT_WRITES, measures="bytes written per second to a GPU client's disks (dm devices excluded)",
              expr=f"rate(node_disk_written_bytes_total{{{_CLIENT_DISKS}}}[{{window}}])", window="1m", unit="B/s",
              source="node_exporter: node_disk_written_bytes_total"),
    ]


def _fabric_queries(storage: StoragePlan) -> list[Query]:
    """The rails' and paths' series: what the fabric alerts and the fabric and storage dashboards read."""
    rtt = "rate(clustersmith_rail_rtt_seconds_bucket[{window}])"
    found = [
        Query(name=DISK_BUSY, measures="share of each second a block device had I/O in flight",
              expr="sum by (instance, device) (rate(node_disk_io_time_seconds_total[{window}]))", window="1m",
              unit="ratio", source="node_exporter: node_disk_io_time_seconds_total"),
        Query(name=DISK_READS, measures="bytes read per second by block device",
              expr="sum by (instance, device) (rate(node_disk_read_bytes_total[{window}]))", window="1m",
              unit="B/s", source="node_exporter: node_disk_read_bytes_total"),
        Query(name=DISK_WRITES, measures="bytes written per second by block device",
              expr="sum by (instance, device) (rate(node_disk_written_bytes_total[{window}]))", window="1m",
              unit="B/s", source="node_exporter: node_disk_written_bytes_total"),
        Query(name=LATENCY_BUCKETS, measures="the probe's 4 KiB read latency histogram over the cluster",
              expr="sum by (le) (rate(clustersmith_storage_read_latency_seconds_bucket[{window}]))", window="1m",
              unit="s", source=PROBE_SOURCE),
        Query(name=RTT_BUCKETS, measures="round-trip time histogram of pings over the rails",
              expr=f"sum by (le) ({rtt})", window="5m", unit="s",
              source=f"{EXPORTER}: ping over each rail netdev to its peers"),
        Query(name=RTT_P99, measures="p99 round-trip time over each rail of each host",
              expr=f"histogram_quantile(0.99, sum by (le, instance, netdev) ({rtt}))", window="5m", unit="s",
              source=f"{EXPORTER}: ping over each rail netdev to its peers"),
        Query(name=PORT_ACTIVE, measures="1 when an RDMA port is ACTIVE", expr="clustersmith_rdma_port_active",
              unit="state", source=f"{EXPORTER}: /sys/class/infiniband/<dev>/ports/<n>/state"),
        Query(name=PFC_PAUSES, measures="PFC pause frames received per second, per rail netdev and priority",
              expr="rate(clustersmith_pfc_pause_rx_frames_total[{window}])", window="5m", unit="pps",
              source=f"{EXPORTER}: ethtool -S rx_prio<N>_pause of each rail netdev (mlx5 naming)",
              recorded="instance_device:clustersmith_pfc_pause_rx_frames:rate5m"),
        Query(name=CNPS, measures="congestion notification packets sent per second, per RDMA device",
              expr="rate(clustersmith_rdma_cnp_sent_total[{window}])", window="5m", unit="pps",
              source=f"{EXPORTER}: /sys/class/infiniband/<dev>/ports/<n>/hw_counters/np_cnp_sent",
              recorded="instance_device:clustersmith_rdma_cnp_sent:rate5m"),
    ]
    paths = f"{EXPORTER}: state of each fabric controller of each nvme-subsystem (sysfs), 1 when live"
    found.append(Query(name=PATH_LIVE, measures="1 when an NVMe-oF path (controller) is live",
                       expr="clustersmith_nvme_path_live", unit="state", source=paths))
    if storage.nvmeof is not None:
        found.append(Query(name=LIVE_PATHS, measures="live fabric paths of each subsystem of each host",
                           expr='sum by (instance, subsys) (clustersmith_nvme_path_live{transport!="pcie"})',
                           unit="paths", source=paths))
    return found


def _baseline(q: Query) -> tuple[list[RecordingRule], str]:
    """Recording rules for a rate and its historical mean and deviation; the alert expr."""
    rate = q.series
    rules = [
        _recorded(q, "fabric"),
        RecordingRule(record=f"{rate}:avg_over_time_{BASELINE}", expr=f"avg_over_time({rate}[{BASELINE}])",
                      group="baseline"),
        RecordingRule(record=f"{rate}:stddev_over_time_{BASELINE}", expr=f"stddev_over_time({rate}[{BASELINE}])",
                      group="baseline"),
    ]
    expr = (f"{rate} > {rate}:avg_over_time_{BASELINE} + {{threshold}} * {rate}:stddev_over_time_{BASELINE}")
    return rules, expr


def _by_name(queries: list[Query]) -> dict[str, Query]:
    return {q.name: q for q in queries}


def _recorded(q: Query, group: RuleGroup) -> RecordingRule:
    assert q.recorded is not None, q.name
    return RecordingRule(record=q.recorded, expr=q.over(), group=group)


def _storage_rules(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan, queries: dict[str, Query]) -> tuple[
        list[RecordingRule], list[AlertRule]]:
    perf = ctx.req.performance
    lat = perf.storage.latency_p99
    jitter = perf.storage.jitter
    floor = JITTER_ACTIVE_SHARE * compute.storage_read_per_node.value
    hit_ratio = queries[HIT_RATIO]
    recording = [_recorded(queries[READ_RATE], "storage")]
    alerts = [
        alert_rule("StorageReadLatencyP99High", "storage", f"Storage p99 small-read latency above the {lat} target",
              f"{queries[LATENCY_P99].over()} > {{threshold}}",
              lat.value, "s", "10m", "critical", ["performance.storage.latency_p99"], "alert.latency_p99",
              f"p99 > {lat.quantity} ({plain(lat.value)} s); the target is a histogram bucket bound, so the quantile "
              f"crosses it exactly", queries[LATENCY_P99].source),
        alert_rule("StorageThroughputJitterHigh", "storage", f"Read throughput jitter above the {jitter} target",
              f"({queries[JITTER].over()} > {{threshold}}) and {queries['storage.read_rate_mean'].over()} > "
              f"{plain(floor)}",
              jitter.value, "ratio", "15m", "warning", ["performance.storage.jitter"], "alert.jitter_cv",
              f"coefficient of variation of the 1-minute read rate > {jitter.quantity}, while the node reads at "
              f"least {JITTER_ACTIVE_SHARE:.0%} of its planned {compute.storage_read_per_node} ({plain(floor)} B/s)",
              queries[JITTER].source),
    ]
    if storage.cache is not None:
        hit = storage.cache.min_hit_ratio
        recording.append(_recorded(hit_ratio, "storage"))
        alerts.append(alert_rule(
            "CacheHitRatioLow", "storage", f"dm-cache read hit ratio below the planned {hit.value} floor",
            f"{hit_ratio.series} < {{threshold}}", hit.value.value, "ratio",
            "30m", "warning", list(hit.derived_from.spec), "alert.cache_hit_ratio",
            f"read hits / (hits + misses) over {hit_ratio.window} < {hit.value}", hit_ratio.source))
    fscache = storage.shared.fscache
    if fscache is not None:
        ratio = queries[FSCACHE_HIT_RATIO]
        cache_floor = fscache.min_hit_ratio
        recording.append(_recorded(ratio, "storage"))
        # only while the node reads through the cache: an idle node's ratio is 0 / 0 = NaN, which no `<` passes
        alerts.append(alert_rule(
            "FsCacheHitRatioLow", "storage", f"FS-Cache read hit ratio of the shared file system below the planned "
            f"{cache_floor.value} floor", f"{ratio.series} < {{threshold}}", cache_floor.value.value, "ratio", "30m",
            "warning", list(cache_floor.derived_from.spec), "alert.fscache_hit_ratio",
            f"{ratio.measures} < {cache_floor.value}", ratio.source))
    return recording, alerts


def _targets(ctx: PlanContext, alerts: list[AlertRule]) -> list[TargetPanel]:
    """The targets dashboard's rows: each spec target beside the query that measures it, worst host or total."""
    st = ctx.req.performance.storage
    found = [TargetPanel(spec=("performance.storage.read_throughput",), query=CLIENT_READS, aggregate="sum",
                         title=f"Aggregate read throughput (target {st.read_throughput})",
                         threshold=st.read_throughput.value, unit="Bps", good_below=False)]
    if st.write_throughput is not None:
        found.append(TargetPanel(spec=("performance.storage.write_throughput",), query=CLIENT_WRITES,
                                 aggregate="sum", title=f"Aggregate write throughput (target {st.write_throughput})",
                                 threshold=st.write_throughput.value, unit="Bps", good_below=False))
    shown = {"StorageReadLatencyP99High": (LATENCY_P99, f"Small-read p99 latency (target {st.latency_p99})", "s"),
             "StorageThroughputJitterHigh": (JITTER, f"Read throughput jitter (target {st.jitter})", "percentunit")}
    for alert in alerts:
        if alert.name in shown:
            query, title, unit = shown[alert.name]
            found.append(TargetPanel(spec=alert.derived_from.spec, query=query, aggregate="max", title=title,
                                     threshold=alert.threshold, unit=unit, good_below=True))
        elif alert.name in ("CacheHitRatioLow", "FsCacheHitRatioLow"):
            found.append(TargetPanel(spec=alert.derived_from.spec,
                                     query=HIT_RATIO if alert.name == "CacheHitRatioLow" else FSCACHE_HIT_RATIO,
                                     aggregate="min", title=f"Cache read hit ratio ({alert.summary})",
                                     threshold=alert.threshold, unit="percentunit", good_below=False))
    return found


def _fabric_rules(compute: ComputePlan, storage: StoragePlan, queries: dict[str, Query]) -> tuple[
        list[RecordingRule], list[AlertRule]]:
    recording: list[RecordingRule] = []
    alerts: list[AlertRule] = []
    if storage.nvmeof is not None:
        paths = storage.nvmeof.paths_per_subsystem
        live = queries[LIVE_PATHS]
        alerts.append(alert_rule(
            "NvmeofPathDown", "fabric", f"Fewer than the planned {paths.value} live NVMe-oF paths to a subsystem",
            f"{live.over()} < {{threshold}}", paths.value, "paths", "30s", "critical", list(paths.derived_from.spec),
            "alert.path_down", f"live paths < {paths.value} planned ({paths.derived_from.formula})", live.source))
    port = queries[PORT_ACTIVE]
    alerts.append(alert_rule(
        "RdmaLinkDown", "fabric", "An RDMA port is not ACTIVE", f"{port.over()} < {{threshold}}", 1,
        "state", "30s", "critical", list(compute.rails.derived_from.spec), "alert.rdma_link_down",
        f"every port of the {compute.rails.value} rails per node must be ACTIVE", port.source))
    sigma_spec = ["performance.storage.jitter", "performance.storage.latency_p99"]
    for name, query, for_, what in (("PfcPauseStorm", PFC_PAUSES, "5m", "PFC pause frames received"),
                                    ("CnpRateHigh", CNPS, "10m", "Congestion notification packets sent")):
        q = queries[query]
        rules, expr = _baseline(q)
        recording += rules
        alerts.append(alert_rule(
            name, "fabric", f"{what} above their {BASELINE} baseline", expr, SIGMAS, "sigma", for_, "warning",
            sigma_spec, "alert.dynamic_baseline",
            f"{q.window} rate > {BASELINE} mean + {plain(SIGMAS)} standard deviations (three-sigma rule)", q.source))
    return recording, alerts


def scrape_sets(scrape: list[ScrapeJob], hosts: tuple[HostGroup, ...]) -> tuple[ScrapeSet, ...]:
    """What Prometheus scrapes, per job and role, in the plan's order: a host once per job, under the first of its
    roles the job lists (the lab's storage-1 is a storage target and the monitoring host: one node target). A set
    with no host left is dropped; the sets name roles, and only the hosts skipped, never every host."""
    roles = names_by_role(hosts)
    seen: dict[str, set[str]] = {}
    found: list[ScrapeSet] = []
    for job in scrape:
        done = seen.setdefault(job.name, set())
        chosen = job.scraped(roles)
        skip = tuple(h for h in chosen if h in done)
        kept = [h for h in chosen if h not in done]
        done.update(kept)
        if kept:
            found.append(ScrapeSet(job=job.name, role=job.role, exporter=job.exporter, port=job.port,
                                   hosts=job.hosts, skip=skip))
    return tuple(found)


def plan_monitoring(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan,
                    network: Traced[str] | None, hosts: tuple[HostGroup, ...]) -> MonitoringPlan:
    """``network``: the management network (planner.network); the lab, which has none, listens on its last rail.
    ``hosts``: the plan's host groups, which the scrape targets name."""
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

    queries = _storage_queries() + _fabric_queries(storage)
    if storage.shared.fscache is not None:
        queries.append(fscache_query(storage.shared.fscache.counters))
    if has_gpu:
        queries += _gpu_queries()
    if storage.ceph is not None:
        scrape.append(ceph_scrape(storage.ceph))
        queries += ceph_queries()
    named = _by_name(queries)
    recording, alerts = _storage_rules(ctx, compute, storage, named)
    fabric_recording, fabric_alerts = _fabric_rules(compute, storage, named)
    recording += fabric_recording
    alerts += fabric_alerts
    if storage.ceph is not None:
        alerts += ceph_alerts(storage.ceph, named)
    if has_gpu:
        alerts.append(alert_rule(
            "GpuSmUtilisationLow", "gpu", "GPU SM activity below 70 % while a job holds the GPU (input-bound?)",
            f"{named[SM_ACTIVE].over()} < {{threshold}} "
            "and on (instance) max by (instance) (DCGM_FI_DEV_FB_USED) > 0",
            SM_UTIL_FLOOR, "ratio", "30m", "warning", ["compute.gpus"], "alert.sm_util_floor",
            "SM active < 70 % with frame buffer in use", "dcgm-exporter: DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_DEV_FB_USED"))

    lat = perf.storage.latency_p99.value
    buckets = tuple(sorted({float(f"{b:.12g}") for b in (*LATENCY_BOUNDS, lat)}))  # 100us is 1.0000000000000002e-4
    listen = network
    collect = COLLECT
    if isinstance(ctx.req.target, LabTarget):
        collect = LAB_COLLECT
        last = ctx.req.target.rails - 1
        listen = traced(rail_subnet(last), ["target.rails"], "monitoring.lab_listen_on_last_rail",
                        f"the lab's VMs share no management segment; rail{last} carries monitoring, so cutting "
                        f"rail0 leaves scraping up")
    if listen is None:
        raise AssertionError(f"no management network planned for target {ctx.provider}: the spec requires one")
    return MonitoringPlan(
        scrape_interval=Duration.parse("15s"), scrape=tuple(scrape), scrape_targets=scrape_sets(scrape, hosts),
        alerts=tuple(alerts),
        baseline_window=Duration.parse(BASELINE), recording=tuple(recording),
        evaluation_interval=Duration.parse("15s"), baseline_interval=Duration.parse("2m"),
        collect_interval=Duration.parse(collect), latency_buckets=buckets, listen_cidr=listen, auth=AUTH,
        queries=tuple(queries), targets=tuple(_targets(ctx, alerts)),
    )
