"""Monitoring rules on Prometheus answers: every scrape target up, and the dm-cache read hit ratio."""

from __future__ import annotations

from blueprints.blueprint import Check
from validators.checks import one_file, rule
from validators.monitoring import parse_targets, parse_vector
from validators.outcome import Detail, Measurement
from validators.results import Results


@rule("monitoring.targets_up")
def targets_up(check: Check, results: Results) -> Measurement:
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
    return Measurement(value=targets.up_ratio, details=details,
                       notes=(f"down: {', '.join(down)}",) if down else ())


@rule("cache.hit_ratio")
def cache_hit_ratio(check: Check, results: Results) -> Measurement:
    found = one_file(check, results, "answer to the cache hit ratio query", "prometheus", "cache_hit_ratio.json")
    if isinstance(found, Measurement):
        return found
    samples = parse_vector(*found)
    if not samples:
        return Measurement(setup_error="Prometheus has no clustersmith_lvmcache_read_hit_ratio series yet "
                                       "(exporter not scraped, or no cache)")
    details = tuple(Detail(where=s.labels.get("instance", "?"), value=s.value, unit="ratio") for s in samples)
    unsampled = sorted(set(results.cache_hosts() or ()) - {d.where for d in details})
    if unsampled:  # the lowest ratio of the others says nothing about these hosts' caches
        return Measurement(details=details, setup_error=(
            f"Prometheus has no clustersmith_lvmcache_read_hit_ratio for {', '.join(unsampled)}, where "
            "storage_tiering puts a cache (exporter not scraped, or no cache there)"))
    return Measurement(value=min(s.value for s in samples), details=details,
                       notes=("the lowest host counts",))
