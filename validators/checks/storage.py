"""Storage rules on fio output: throughput summed over the clients that ran at once, p99 completion latency,
jitter as the coefficient of variation of the summed per-interval bandwidth, and the mixed workload's errors."""

from __future__ import annotations

from blueprints.blueprint import Check
from validators.checks import missing, rule, setup_failure
from validators.fio import (
    DIRECTIONS,
    Direction,
    coefficient_of_variation,
    interval_series,
    merged_percentile,
    worst_percentile,
)
from validators.outcome import Detail, Measurement, Series
from validators.results import FioWorkloadResults, Results

RATE_UNITS = {"B/s": 1.0, "kB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12}
TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
LOG_DIRECTION = {"read": 0, "write": 1, "trim": 2}


def _workload(check: Check, results: Results) -> FioWorkloadResults | Measurement:
    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed
    name = check.args.get("workload", "")
    found = results.fio(name)
    if found is None:
        return missing(f"fio output of workload {name!r}", f"fio/{name}/<host>.json")
    return found


def _throughput_series(found: FioWorkloadResults, direction: Direction, interval_ms: int) -> tuple[Series, ...]:
    out = []
    for host, logs in sorted(found.logs.items()):
        points = interval_series(logs, LOG_DIRECTION[direction], interval_ms)
        if points:
            out.append(Series(kind="throughput", name=f"{host} {direction}", points=tuple(points)))
    return tuple(out)


def _throughput(check: Check, results: Results, direction: Direction) -> Measurement:
    found = _workload(check, results)
    if isinstance(found, Measurement):
        return found
    scale = RATE_UNITS.get(check.unit)
    if scale is None:
        return Measurement(setup_error=f"unit {check.unit!r} is not a rate this rule knows ({', '.join(RATE_UNITS)})")
    details = tuple(Detail(where=host, value=run.bw_bytes(direction) / scale, unit=check.unit)
                    for host, run in sorted(found.runs.items()))
    total = sum(d.value or 0.0 for d in details)
    interval = int(check.args.get("bwavgtime", "500"))
    return Measurement(value=total, details=details, series=_throughput_series(found, direction, interval),
                       notes=(f"sum of {len(details)} client(s) running at once",))


@rule("storage.read_throughput")
def read_throughput(check: Check, results: Results) -> Measurement:
    return _throughput(check, results, "read")


@rule("storage.write_throughput")
def write_throughput(check: Check, results: Results) -> Measurement:
    return _throughput(check, results, "write")


@rule("storage.latency_p99")
def latency_p99(check: Check, results: Results) -> Measurement:
    found = _workload(check, results)
    if isinstance(found, Measurement):
        return found
    scale = TIME_UNITS_NS.get(check.unit)
    if scale is None:
        return Measurement(setup_error=f"unit {check.unit!r} is not a duration ({', '.join(TIME_UNITS_NS)})")
    runs = list(found.runs.values())
    merged = merged_percentile(runs, "read", 99.0)
    value, how = (merged, "p99 of every client's json+ latency bins merged") if merged is not None else (
        worst_percentile(runs, "read", 99.0), "worst client's p99 (no json+ bins to merge)")
    details, series = [], []
    for host, run in sorted(found.runs.items()):
        for job in run.jobs:
            clat = job.read.clat_ns
            if clat is None:
                continue
            p99 = clat.at(99.0)
            details.append(Detail(where=host, value=None if p99 is None else p99 / scale, unit=check.unit))
            points = sorted((float(k), v / 1e3) for k, v in clat.percentile.items())
            series.append(Series(kind="latency", name=host, points=tuple(points)))
    return Measurement(value=None if value is None else value / scale, details=tuple(details),
                       series=tuple(series), notes=(how,))


@rule("storage.jitter")
def jitter(check: Check, results: Results) -> Measurement:
    found = _workload(check, results)
    if isinstance(found, Measurement):
        return found
    interval = int(check.args.get("bwavgtime", "500"))
    logs = [log for host_logs in found.logs.values() for log in host_logs]
    summed = interval_series(logs, LOG_DIRECTION["read"], interval)
    cv = coefficient_of_variation([bw for _, bw in summed])
    if cv is not None:
        series = (Series(kind="throughput", name="all clients read", points=tuple(summed)),)
        return Measurement(value=cv, series=series + _throughput_series(found, "read", interval),
                           notes=(f"{len(summed)} intervals of {interval} ms, {len(logs)} job log(s) summed",))
    per_job = [(host, d.bw_dev / d.bw_mean * 100.0) for host, run in found.runs.items() for j in run.jobs
               if (d := j.read).bw_mean > 0 and d.bw_samples >= 2]
    if not per_job:
        return missing("bandwidth logs or per-interval statistics", f"fio/{check.args.get('workload')}/<host>_bw.*.log")
    worst = max(per_job, key=lambda p: p[1])
    return Measurement(value=worst[1], details=tuple(Detail(where=h, value=v, unit="%") for h, v in per_job),
                       notes=("no bandwidth logs: the worst job's bw_dev / bw_mean instead of the summed series",))


@rule("storage.mixed")
def mixed(check: Check, results: Results) -> Measurement:
    found = _workload(check, results)
    if isinstance(found, Measurement):
        return found
    details = []
    for host, run in sorted(found.runs.items()):
        moved = sum(d.io_bytes for j in run.jobs for name in DIRECTIONS if (d := j.direction(name)) is not None)
        codes = sorted({j.error for j in run.jobs if j.error})
        note = f"{moved / 1e6:.0f} MB moved" + (f"; fio error {', '.join(map(str, codes))}" if codes else "")
        details.append(Detail(where=host, value=float(run.errors), unit="errors", note=note))
    return Measurement(value=float(sum(d.value or 0.0 for d in details)), details=tuple(details),
                       notes=("jobs that ended with an error (verify mismatch, I/O error)",))
