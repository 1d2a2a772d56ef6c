"""``promtool test rules`` cases generated from a Blueprint: each alert just past its threshold and just short.

Every threshold is read from the Blueprint's alert rule, never typed here. For each alert a case gives
the input series at a level that must fire and at one that must stay quiet, with the labels the alert
carries. How close to the threshold each pair sits:

- static thresholds on gauges or exact ratios: 0.5 % either side (hit ratio, SM activity) or the exact
  integer boundary (paths live, port state);
- histogram p99: 2 % versus 0.5 % of observations above the target, which is a bucket bound, so the
  quantile lands in the bucket above or at/below the target;
- jitter (coefficient of variation of a 1-minute rate): twice versus half the threshold, since the
  smoothing of ``rate`` blurs an exact construction;
- baselines (mean + k sigma over the window): twice versus half of the k sigma distance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from blueprints.blueprint import AlertRule, Blueprint
from tests.promtool import ceph

INSTANCE = "client-1"
STEP_S = 15  # input series interval, seconds
BASELINE_STEP_S = 60
# Coarser than the rendered 15s to keep hours of history cheap; every for: window is a multiple of it or shorter.
EVALUATION_INTERVAL = "1m"


def counter(segments: list[tuple[float, int]]) -> str:
    """promtool values for a counter rising by ``inc`` per step for ``n`` steps, segment after segment."""
    values = [0.0]
    for inc, n in segments:
        for _ in range(n):
            values.append(values[-1] + inc)
    return " ".join(f"{v:.12g}" for v in values)


def series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    body = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{body}}}", "values": values}


@dataclass
class Case:
    """One alert: input series that fire, series that stay quiet, the alert's labels, when to look."""

    alert: AlertRule
    firing: list[dict[str, str]]
    quiet: list[dict[str, str]]
    labels: dict[str, str]
    eval_minutes: int
    interval_s: int = STEP_S
    extra: dict[str, Any] = field(default_factory=dict)
    also: list[dict[str, str]] = field(default_factory=list)  # further alerts that fire, by their labels


def _minutes(duration: str) -> int:
    units = {"s": 1 / 60, "m": 1, "h": 60, "d": 1440}
    return max(1, round(float(duration[:-1]) * units[duration[-1]]))


def _steps(minutes: int, step_s: int = STEP_S) -> int:
    return minutes * 60 // step_s


def latency_p99(bp: Blueprint, a: AlertRule) -> Case:
    bounds = sorted(bp.monitoring.latency_buckets)
    t = float(f"{a.threshold:.12g}")  # as written into the rule
    assert t in bounds, f"the p99 target {t} must be a bucket bound of {bounds}"
    below = max(b for b in bounds if b < t)
    above = min(b for b in bounds if b > t)
    total = 1000
    n = _steps(5 + _minutes(a.for_) + 5)

    def hist(slow_share: float) -> list[dict[str, str]]:
        slow = total * slow_share
        out = []
        for le in [*(f"{b:.12g}" for b in bounds), "+Inf"]:
            bound = float(le)
            inc = (total - slow if bound >= below else 0) + (slow if bound >= above else 0)
            out.append(series("clustersmith_storage_read_latency_seconds_bucket",
                              {"instance": INSTANCE, "le": le}, f"0+{inc:.12g}x{n}"))
        return out

    return Case(a, hist(0.02), hist(0.005), {"instance": INSTANCE}, 5 + _minutes(a.for_) + 3)


def jitter(bp: Blueprint, a: AlertRule) -> Case:
    floor = float(a.expr.rsplit(">", 1)[1])
    mean = 2 * floor
    block = _steps(5)
    blocks = (10 + _minutes(a.for_) + 10) // 5

    def reads(amplitude: float) -> list[dict[str, str]]:
        segments = [(mean * (1 + (amplitude if i % 2 else -amplitude)) * STEP_S, block) for i in range(blocks)]
        return [series("node_disk_read_bytes_total", {"instance": INSTANCE, "role": "gpu_client",
                                                      "device": "nvme0n1"}, counter(segments))]

    amp_fire = min(1.0, 2 * a.threshold)
    return Case(a, reads(amp_fire), reads(a.threshold / 2), {"instance": INSTANCE, "role": "gpu_client"},
                10 + _minutes(a.for_) + 3)


CACHE_LABELS = {"instance": INSTANCE, "lv": "clustersmith-cache"}


def cache_counters(ratio: float, n: int) -> list[dict[str, str]]:
    """The exporter's dm-cache counters for ``n`` steps of 10000 reads each, ``ratio`` of them hits; writes all miss
    (a read hit ratio must not see them)."""
    per_step = 10000
    return [series("clustersmith_lvmcache_read_hits_total", CACHE_LABELS, f"0+{per_step * ratio:.12g}x{n}"),
            series("clustersmith_lvmcache_read_misses_total", CACHE_LABELS, f"0+{per_step * (1 - ratio):.12g}x{n}"),
            series("clustersmith_lvmcache_write_misses_total", CACHE_LABELS, f"0+{per_step}x{n}")]


def cache_hit(bp: Blueprint, a: AlertRule) -> Case:
    n = _steps(5 + _minutes(a.for_) + 5)
    return Case(a, cache_counters(a.threshold - 0.005, n), cache_counters(a.threshold + 0.005, n), CACHE_LABELS,
                5 + _minutes(a.for_) + 3)


def hit_ratio_tests(bp: Blueprint) -> list[dict[str, Any]]:
    """The plan's one hit ratio, as the alert reads it (the recorded series at the query's window) and as acceptance
    asks it (the query over a measurement's own window): both are read hits / (hits + misses). Only where dm-cache is
    planned: elsewhere no rule records it."""
    if bp.storage.cache is None:
        return []
    q = bp.monitoring.query("cache.read_hit_ratio")
    assert q.recorded is not None
    body = ",".join(f'{k}="{v}"' for k, v in CACHE_LABELS.items())
    tests = []
    for ratio in (0.5, 0.97):
        sample = [{"labels": f"{{{body}}}", "value": ratio}]
        tests.append({
            "name": f"{q.name} is read hits / (hits + misses): {ratio}",
            "interval": f"{STEP_S}s",
            "input_series": cache_counters(ratio, _steps(20)),
            "promql_expr_test": [
                {"expr": q.recorded, "eval_time": "10m", "exp_samples": [{**sample[0], "labels": f"{q.recorded}"
                                                                                               f"{{{body}}}"}]},
                {"expr": q.over("131s"), "eval_time": "10m", "exp_samples": sample},
            ],
        })
    return tests


FSCACHE_PASS_MINUTES = 5  # the first (uncached) read pass of the cache check, before the second pass begins


def fscache_counters(bp: Blueprint, second_pass: float | None, n: int, era: int = 0) -> list[dict[str, str]]:
    """The exporter's FS-Cache counters (clustersmith_fscache_events_total{line, key}) over ``n`` steps, as a kernel of
    the plan's counter set ``era`` prints them (sets newest first): a first pass of FSCACHE_PASS_MINUTES whose 10000
    reads a step all miss, then a second pass of which ``second_pass`` are hits. The misses are split over the set's
    miss counters (NFS up to 6.10: IO wr and NoSpace nwr) and the hits over its hit counters, so the rule must sum them.
    The counters of the older kernels' sets that this one's do not name move too, as if every read of the second pass
    were a hit there (a 6.12 file also prints the IO line NFS was judged by up to 6.10): a rule that judged by them
    instead of the newest set the kernel prints would stay quiet. ``second_pass`` None: no reads at all (flat
    counters: 0 / 0, no ratio)."""
    sets = bp.storage.shared.fscache.counters  # type: ignore[union-attr]
    first = _steps(FSCACHE_PASS_MINUTES)
    per_step = 10000.0

    def moving(pairs: tuple[tuple[str, str], ...], first_pass: float, later: float) -> list[dict[str, str]]:
        if not pairs:
            return []
        segments = [(0.0, n)] if second_pass is None else [(first_pass / len(pairs), first), (later / len(pairs),
                                                                                             n - first)]
        return [series("clustersmith_fscache_events_total", {"instance": INSTANCE, "line": line, "key": key},
                       counter(segments)) for line, key in pairs]

    judged = sets[era]
    ratio = second_pass or 0.0
    out = moving(judged.hits, 0.0, per_step * ratio) + moving(judged.misses, per_step, per_step * (1 - ratio))
    named = set(judged.hits) | set(judged.misses)
    for older in sets[era + 1:]:
        out += moving(tuple(c for c in older.hits if c not in named), 0.0, per_step)
        out += moving(tuple(c for c in older.misses if c not in named), per_step, 0.0)
        named |= set(older.hits) | set(older.misses)
    return out


def fscache_hit(bp: Blueprint, a: AlertRule) -> Case:
    """The second pass just under the plan's floor fires once it has held for the alert's for:; just over it, the first
    pass's misses (ratio 0, shorter than for:) raise nothing. Counted as the newest kernels print them."""
    after = FSCACHE_PASS_MINUTES + 5 + _minutes(a.for_) + 3
    n = _steps(after + 5)
    return Case(a, fscache_counters(bp, a.threshold - 0.005, n), fscache_counters(bp, a.threshold + 0.005, n),
                {"instance": INSTANCE}, after)


def fscache_kernel_tests(bp: Blueprint, rendered: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """FsCacheHitRatioLow fires on a kernel of each older counter set too (the rule's `or` falls through to the set the
    kernel prints), and stays quiet just over the floor."""
    alert = next((a for a in bp.monitoring.alerts if a.name == "FsCacheHitRatioLow"), None)
    if alert is None:
        return []
    after = FSCACHE_PASS_MINUTES + 5 + _minutes(alert.for_) + 3
    n = _steps(after + 5)
    rule = rendered[alert.name]
    fired = [{"exp_labels": {"instance": INSTANCE, **rule["labels"]}, "exp_annotations": rule["annotations"]}]
    sets = bp.storage.shared.fscache.counters  # type: ignore[union-attr]
    tests = []
    for era in range(1, len(sets)):
        for ratio, expected in ((alert.threshold - 0.005, fired), (alert.threshold + 0.005, [])):
            tests.append({"name": f"{alert.name} {'fires' if expected else 'stays quiet'} on kernels "
                                  f"{sets[era].kernels}", "interval": f"{STEP_S}s",
                          "input_series": fscache_counters(bp, ratio, n, era),
                          "alert_rule_test": [{"eval_time": f"{after}m", "alertname": alert.name,
                                               "exp_alerts": expected}]})
    return tests


def fscache_idle_tests(bp: Blueprint) -> list[dict[str, Any]]:
    """A node that reads nothing has no FS-Cache hit ratio: 0 / 0 records NaN (promtool showed the recorded series NaN
    here), which no `<` passes, so FsCacheHitRatioLow stays quiet."""
    alert = next((a for a in bp.monitoring.alerts if a.name == "FsCacheHitRatioLow"), None)
    if alert is None:
        return []
    at = _minutes(alert.for_) + 10
    return [{"name": "FsCacheHitRatioLow stays quiet with no reads", "interval": f"{STEP_S}s",
             "input_series": fscache_counters(bp, None, _steps(at + 5)),
             "alert_rule_test": [{"eval_time": f"{at}m", "alertname": alert.name, "exp_alerts": []}]}]


def path_down(bp: Blueprint, a: AlertRule) -> Case:
    paths = int(a.threshold)
    n = _steps(_minutes(a.for_) + 5)
    subsys = "nqn.2026-11.io.clustersmith:test:hot-1"

    def live(down: int) -> list[dict[str, str]]:
        return [series("clustersmith_nvme_path_live",
                       {"instance": INSTANCE, "subsys": subsys, "path": f"nvme{i}", "transport": "rdma",
                        "address": f"traddr=10.77.{i}.1,trsvcid=4420"}, f"{0 if i < down else 1}x{n}")
                for i in range(paths)]

    return Case(a, live(1), live(0), {"instance": INSTANCE, "subsys": subsys}, _minutes(a.for_) + 2)


def port_down(bp: Blueprint, a: AlertRule) -> Case:
    n = _steps(_minutes(a.for_) + 5)
    labels = {"instance": INSTANCE, "device": "rxe0", "port": "1", "netdev": "rail0"}

    def port(value: float) -> list[dict[str, str]]:
        return [series("clustersmith_rdma_port_active", labels, f"{value:g}x{n}")]

    return Case(a, port(a.threshold - 1), port(a.threshold), labels, _minutes(a.for_) + 2)


def baseline(metric: str, labels: dict[str, str]) -> Callable[[Blueprint, AlertRule], Case]:
    """Twelve hours of history alternating hourly between 0.8 and 1.2 events/s, then a level k sigma apart."""

    def build(bp: Blueprint, a: AlertRule) -> Case:
        mean, amplitude, hours = 1.0, 0.2, 12
        sigma = amplitude * mean  # a two-level square wave of +-a has standard deviation a
        history = [(60 * mean * (1 + (amplitude if h % 2 else -amplitude)), 60) for h in range(hours)]
        after = _minutes(a.for_) + 10

        def values(distance: float) -> list[dict[str, str]]:
            level = mean + distance * a.threshold * sigma
            return [series(metric, labels, counter([*history, (60 * level, after)]))]

        return Case(a, values(2.0), values(0.5), labels, hours * 60 + after - 1, interval_s=BASELINE_STEP_S)

    return build


def sm_util(bp: Blueprint, a: AlertRule) -> Case:
    n = _steps(_minutes(a.for_) + 5)
    labels = {"instance": INSTANCE, "gpu": "0"}

    def gpu(level: float) -> list[dict[str, str]]:
        return [series("DCGM_FI_PROF_SM_ACTIVE", labels, f"{level:.12g}x{n}"),
                series("DCGM_FI_DEV_FB_USED", labels, f"40000x{n}")]

    return Case(a, gpu(a.threshold - 0.005), gpu(a.threshold + 0.005), {"instance": INSTANCE}, _minutes(a.for_) + 3)


def ceph_case(firing: Callable[[Blueprint], list[ceph.Sample] | None], quiet: Callable[[], list[ceph.Sample]],
              fires: list[dict[str, str]]) -> Callable[[Blueprint, AlertRule], Case]:
    """A Ceph alert on recorded series (tests/promtool/ceph.py): ``firing`` None means no Ceph series at all (every
    manager a standby); ``fires`` the labels of each alert expected."""

    def build(bp: Blueprint, a: AlertRule) -> Case:
        n = _steps(_minutes(a.for_) + 5)
        names = ceph.used_names(list(bp.monitoring.alerts))
        hot = firing(bp)
        inputs = ceph.standby_only(bp, n) if hot is None else ceph.series(bp, hot, n, names)
        return Case(a, inputs, ceph.series(bp, quiet(), n, names), fires[0], _minutes(a.for_) + 2, also=fires[1:])

    return build


def mon_quorum(bp: Blueprint, a: AlertRule) -> Case:
    n = _steps(_minutes(a.for_) + 5)
    return Case(a, ceph.quorum(bp, 1, n), ceph.quorum(bp, 0, n), {}, _minutes(a.for_) + 2)


def _osd_down(bp: Blueprint) -> list[ceph.Sample]:
    return ceph.recording("osd-down")


BUILDERS: dict[str, Callable[[Blueprint, AlertRule], Case]] = {
    "StorageReadLatencyP99High": latency_p99,
    "StorageThroughputJitterHigh": jitter,
    "CacheHitRatioLow": cache_hit,
    "FsCacheHitRatioLow": fscache_hit,
    "NvmeofPathDown": path_down,
    "RdmaLinkDown": port_down,
    "PfcPauseStorm": baseline("clustersmith_pfc_pause_rx_frames_total",
                              {"instance": INSTANCE, "netdev": "rail0", "priority": "3"}),
    "CnpRateHigh": baseline("clustersmith_rdma_cnp_sent_total", {"instance": INSTANCE, "device": "mlx5_0",
                                                                 "port": "1"}),
    "GpuSmUtilisationLow": sm_util,
    # HEALTH_ERR was not recorded: the osd-down recording with ceph_health_status 2; quiet on it as recorded (WARN).
    "CephHealthError": ceph_case(lambda bp: ceph.changed(ceph.recording("osd-down"), "ceph_health_status", {}, 2),
                                 lambda: ceph.recording("osd-down"), [{}]),
    "CephHealthWarning": ceph_case(_osd_down, ceph.healthy, ceph.OSD_DOWN_FIRES["CephHealthWarning"]),
    # Every PG unknown, as the module served the healthy cluster right after it was enabled (just-enabled); the
    # osd-down recording has every PG active (undersized): quiet.
    "CephPgsInactive": ceph_case(lambda bp: ceph.recording("just-enabled"), lambda: ceph.recording("osd-down"),
                                 ceph.JUST_ENABLED_FIRES["CephPgsInactive"]),
    "CephPgsNotClean": ceph_case(_osd_down, ceph.healthy, ceph.OSD_DOWN_FIRES["CephPgsNotClean"]),
    "CephPgsDegraded": ceph_case(_osd_down, ceph.healthy, ceph.OSD_DOWN_FIRES["CephPgsDegraded"]),
    "CephOsdDown": ceph_case(_osd_down, ceph.healthy, ceph.OSD_DOWN_FIRES["CephOsdDown"]),
    # Not recorded (the monitors mark a down OSD out after 600 s): the osd-down recording with osd.3 out; quiet on it
    # as recorded (down, still in).
    "CephOsdOut": ceph_case(lambda bp: ceph.changed(ceph.recording("osd-down"), "ceph_osd_in",
                                                    {"ceph_daemon": "osd.3"}, 0),
                            lambda: ceph.recording("osd-down"), [{"ceph_daemon": "osd.3", "hostname": "vm"}]),
    # Not recorded: the healthy recording without its file system's MDS (what the module serves with an empty mdsmap).
    "CephFilesystemWithoutMds": ceph_case(
        lambda bp: ceph.changed(ceph.healthy(), "ceph_mds_metadata", {"fs_id": "1"}, None), ceph.healthy,
        [{"data_pools": "3,4", "fs_id": "1", "metadata_pool": "2", "name": "cephfs"}]),
    "CephMetricsAbsent": ceph_case(lambda bp: None, ceph.healthy, [{}]),
    "CephMonitorOutOfQuorum": mon_quorum,
}


def cases(bp: Blueprint) -> list[Case]:
    """A case for every alert of the Blueprint; an alert without a builder is an error, not a gap."""
    missing = [a.name for a in bp.monitoring.alerts if a.name not in BUILDERS]
    if missing:
        raise KeyError(f"no promtool case for alerts {missing}; add one to tests/promtool/cases.py")
    return [BUILDERS[a.name](bp, a) for a in bp.monitoring.alerts]


def ceph_recording_tests(bp: Blueprint, rendered: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each whole recording against every Ceph alert: healthy raises none; osd-down raises exactly
    ``ceph.OSD_DOWN_FIRES``; just-enabled (every PG unknown) raises nothing within CephPgsInactive's ``for:`` and
    ``ceph.JUST_ENABLED_FIRES`` once it has held past every Ceph ``for:``."""
    # The recordings' cluster has one monitor: a design that plans more would see it out of quorum, which its own case
    # (mon_quorum, the planned monitors) covers.
    alerts = [a for a in bp.monitoring.alerts if a.group == "ceph" and a.name != "CephMonitorOutOfQuorum"]
    if not alerts:
        return []
    names = ceph.used_names(alerts)
    longest = max(_minutes(a.for_) for a in alerts)
    n = _steps(longest + 5)
    inactive = next(a for a in alerts if a.name == "CephPgsInactive")

    def expect(at: int, fires: dict[str, list[dict[str, str]]]) -> list[dict[str, Any]]:
        return [{"eval_time": f"{at}m", "alertname": a.name,
                 "exp_alerts": [{"exp_labels": {**labels, **rendered[a.name]["labels"]},
                                 "exp_annotations": rendered[a.name]["annotations"]}
                                for labels in fires.get(a.name, [])]} for a in alerts]

    return [
        {"name": "ceph: the healthy recording raises no Ceph alert", "interval": f"{STEP_S}s",
         "input_series": ceph.series(bp, ceph.healthy(), n, names), "alert_rule_test": expect(longest + 2, {})},
        {"name": "ceph: the osd-down recording raises the OSD, PG and health alerts", "interval": f"{STEP_S}s",
         "input_series": ceph.series(bp, ceph.recording("osd-down"), n, names),
         "alert_rule_test": expect(longest + 2, ceph.OSD_DOWN_FIRES)},
        {"name": "ceph: PGs served unknown by a just-enabled module are quiet within for:, then fire",
         "interval": f"{STEP_S}s", "input_series": ceph.series(bp, ceph.recording("just-enabled"), n, names),
         "alert_rule_test": [*expect(_minutes(inactive.for_) - 1, {}),
                             *expect(longest + 2, ceph.JUST_ENABLED_FIRES)]},
    ]


def test_file(bp: Blueprint, rule_files: list[str], rendered: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The promtool test document: per alert, one test that fires and one that stays quiet.

    ``rendered`` maps alert name to its rule as written in rules/*.yml (labels, annotations), so the
    expected alert is exactly what the rule files produce.
    """
    tests = []
    for case in cases(bp):
        rule = rendered[case.alert.name]
        exp = [{"exp_labels": {**labels, **rule["labels"]}, "exp_annotations": rule["annotations"]}
               for labels in (case.labels, *case.also)]
        for inputs, expected in ((case.firing, exp), (case.quiet, [])):
            tests.append({
                "name": f"{case.alert.name} {'fires' if expected else 'stays quiet'}",
                "interval": f"{case.interval_s}s",
                "input_series": inputs,
                "alert_rule_test": [{"eval_time": f"{case.eval_minutes}m", "alertname": case.alert.name,
                                     "exp_alerts": expected}],
            })
    tests += hit_ratio_tests(bp) + fscache_idle_tests(bp) + fscache_kernel_tests(bp, rendered)
    tests += ceph_recording_tests(bp, rendered)
    return {"rule_files": rule_files, "evaluation_interval": EVALUATION_INTERVAL, "tests": tests}
