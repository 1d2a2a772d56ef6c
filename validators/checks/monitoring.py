"""Monitoring rules on Prometheus answers: every scrape target up (every one the Blueprint plans, each once: a
target missing from Prometheus is not counted as up), and the dm-cache read hit ratio over the fio
workloads' window (the Blueprint's monitoring query, asked by the runner), one series per GPU node (its
``instance`` label is the host name): a GPU node without one, or an instance the Blueprint does not name, is a
setup error."""

from __future__ import annotations

import math

from blueprints.blueprint import Check
from blueprints.blueprint.check_args import PrometheusArgs, args_as
from validators.checks import one_file, rule
from validators.coverage import Planned, cover
from validators.monitoring import parse_targets, parse_vector
from validators.outcome import Detail, Measurement
from validators.results import Results


@rule("monitoring.targets_up",
      measures="the share of Prometheus's active scrape targets that are up (`GET /api/v1/targets`, asked from the "
               "monitoring host over HTTPS against the cluster CA with basic auth), each target as `job instance`",
      passes="1, every target up (a fixed bar), held against every target the Blueprint plans",
      setup_error="no `prometheus/targets.json` (Prometheus not reached, or no `clustersmith_secrets_file` for its "
                  "password: the runner's record); Prometheus with no active target; a planned target missing, one "
                  "the Blueprint does not plan, or one listed twice")
def targets_up(check: Check, results: Results, planned: Planned) -> Measurement:
    found = one_file(check, results, "Prometheus targets", "prometheus", "targets.json")
    if isinstance(found, Measurement):
        return found
    targets = parse_targets(*found)
    if targets.up_ratio is None:
        return Measurement(setup_error="Prometheus has no active scrape targets")
    details = tuple(Detail(where=f"{t.labels.get('job', '?')} {t.labels.get('instance', t.scrapeUrl)}",
                           value=1.0 if t.health == "up" else 0.0, unit="up", note=t.lastError)
                    for t in targets.active)
    down = [d.where for d in details if not d.value]
    # "job instance" against the plan's: a job or host missing from prometheus.yml's targets would leave the ratio
    # of the others at 1 (the relabelling makes instance the host name, as the build's target files list it)
    coverage = (cover("targets", [d.where for d in details], planned.scrape_targets),)
    return Measurement(value=targets.up_ratio, details=details, coverage=coverage,
                       notes=(f"down: {', '.join(down)}",) if down else ())


@rule("cache.hit_ratio",
      measures="the dm-cache read hit ratio of each GPU node over the fio workloads' window: the Blueprint's "
               "monitoring query `cache.read_hit_ratio` (read hits / (hits + misses)) asked of Prometheus at the end "
               "of the last workload, one series per node (its `instance` label); the lowest node counts",
      passes="the planner's cache hit-ratio floor (its formula is in `plan.yaml`)",
      setup_error="no `prometheus/cache_hit_ratio.json` (or the runner's record that Prometheus was not asked); no "
                  "series at all; a host storage_tiering puts a cache on (`cache-hosts.json`) without a series, or "
                  "whose cache saw no read in the window; a GPU node missing, or an instance the Blueprint does not "
                  "name")
def cache_hit_ratio(check: Check, results: Results, planned: Planned) -> Measurement:
    """The plan's hit ratio query (``check.args.query``), counted over the fio workloads' window, per client."""
    found = one_file(check, results, "answer to the cache hit ratio query", "prometheus", "cache_hit_ratio.json")
    if isinstance(found, Measurement):
        return found
    samples = parse_vector(*found)
    series = args_as(check.args, PrometheusArgs).query or "hit ratio"
    coverage = (cover("hosts", [s.labels.get("instance", "?") for s in samples], planned.gpu_nodes),)
    if not samples:
        return Measurement(coverage=coverage, setup_error=f"Prometheus has no {series} series over the fio "
                           "workloads' window (exporter not scraped, or no cache)")
    details = tuple(Detail(where=s.labels.get("instance", "?"), value=None if math.isnan(s.value) else s.value,
                           unit="ratio", note="no reads reached the cache in the window" if math.isnan(s.value) else "")
                    for s in samples)
    idle = sorted(d.where for d in details if d.value is None)
    unsampled = sorted(set(results.cache_hosts() or ()) - {d.where for d in details})
    if unsampled or idle:  # the lowest ratio of the others says nothing about these hosts' caches
        why = [f"Prometheus has no {series} for {', '.join(unsampled)}, where storage_tiering puts a cache "
               "(exporter not scraped, or no cache there)"] if unsampled else []
        why += [f"no reads reached the cache of {', '.join(idle)} while the fio workloads ran"] if idle else []
        return Measurement(details=details, setup_error="; ".join(why), coverage=coverage)
    return Measurement(value=min(s.value for s in samples), details=details, coverage=coverage,
                       notes=("the lowest host counts: every GPU node (storage_tiering's cache hosts) must answer",))
