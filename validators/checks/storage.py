"""Storage rules on fio output: throughput summed over the clients that ran at once, p99 read latency (of the
percentiles fio recorded: completion, total or submission latency), jitter as the coefficient of variation of the
summed per-interval bandwidth, and the mixed workload's errors.

Every rule judges only a complete workload: one report from each planned GPU node, the host named by the report
itself where fio says it (the ``write_bw_log`` prefix, set from ``CLUSTERSMITH_HOST``), else by the file name. A
missing, foreign or twice-reported host is a setup error; a job fio says ended with an error fails the check."""

from __future__ import annotations

from blueprints.blueprint import Check
from blueprints.blueprint.check_args import FioArgs, args_as
from blueprints.figures import plain
from validators.checks import missing, rule, setup_failure
from validators.coverage import Planned, cover
from validators.errors import ParseError
from validators.fio import (
    DIRECTIONS,
    LATENCY_WORDS,
    Direction,
    coefficient_of_variation,
    interval_series,
    latency_kinds,
    merged_percentile,
    worst_percentile,
)
from validators.fscache import choose, delta, parse_stats
from validators.outcome import Coverage, Detail, Measurement, Reference, Series
from validators.results import FioWorkloadResults, Results

RATE_UNITS = {"B/s": 1.0, "kB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12}
TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
LOG_DIRECTION = {"read": 0, "write": 1, "trim": 2}


def _workload(check: Check, results: Results, planned: Planned) -> FioWorkloadResults | Measurement:
    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed.model_copy(update={"coverage": (cover("hosts", [], planned.gpu_nodes),)})
    name = args_as(check.args, FioArgs).workload
    found = results.fio(name)
    if found is None:
        return missing(f"fio output of workload {name!r}", f"fio/{name}/<host>.json").model_copy(
            update={"coverage": (cover("hosts", [], planned.gpu_nodes),)})
    cut = [f"{stem}.json: {why}" for stem, run in sorted(found.runs.items()) if not run.errors
           for why in run.cut_short()]
    if cut:
        return Measurement(coverage=(_coverage(found, planned)[0],), setup_error=(
            f"fio ended before its workload's runtime, with no job error (killed or timed out): {'; '.join(cut)}; "
            "nothing a cut-short run measured counts"))
    return found


def _coverage(found: FioWorkloadResults, planned: Planned) -> tuple[Coverage, tuple[str, ...]]:
    """The hosts the reports name (each report's own word first, its file name else) against the GPU nodes,
    and a note for every report filed under another host's name."""
    names: list[str] = []
    notes: list[str] = []
    for stem, run in sorted(found.runs.items()):
        said = run.hosts() or (stem,)
        names += said
        if not run.client_server and run.host and run.host != stem:
            notes.append(f"{stem}.json reports host {run.host} (its write_bw_log prefix)")
    return cover("hosts", names, planned.gpu_nodes), tuple(notes)


def _failures(found: FioWorkloadResults) -> tuple[str, ...]:
    return tuple(f"{stem}.json: {f}" for stem, run in sorted(found.runs.items()) for f in run.failures())


def _throughput_series(found: FioWorkloadResults, direction: Direction, interval_ms: int) -> tuple[Series, ...]:
    out = []
    for host, logs in sorted(found.logs.items()):
        points = interval_series(logs, LOG_DIRECTION[direction], interval_ms)
        if points:
            out.append(Series(kind="throughput", name=f"{host} {direction}", points=tuple(points)))
    return tuple(out)


def _throughput(check: Check, results: Results, planned: Planned, direction: Direction) -> Measurement:
    found = _workload(check, results, planned)
    if isinstance(found, Measurement):
        return found
    scale = RATE_UNITS.get(check.unit)
    if scale is None:
        return Measurement(setup_error=f"unit {check.unit!r} is not a rate this rule knows ({', '.join(RATE_UNITS)})")
    coverage, notes = _coverage(found, planned)
    absent = [stem for stem, run in sorted(found.runs.items()) if all(
        j.direction(direction) is None for j in ([run.aggregate] if run.aggregate else run.jobs))]
    if absent:
        mixed = any(j.mixed is not None for stem in absent for j in found.runs[stem].jobs)
        return Measurement(coverage=(coverage,), setup_error=f"fio reported no {direction!r} section in "
                           f"{', '.join(f'{a}.json' for a in absent)}" + (
                               " (unified_rw_reporting=mixed: read and write are one 'mixed' figure)" if mixed else ""))
    details = tuple(Detail(where=host, value=run.bw_bytes(direction) / scale, unit=check.unit)
                    for host, run in sorted(found.runs.items()))
    total = sum(d.value or 0.0 for d in details)
    interval = args_as(check.args, FioArgs).interval_ms
    logs = [log for host_logs in found.logs.values() for log in host_logs]
    summed = interval_series(logs, LOG_DIRECTION[direction], interval)
    series = ((Series(kind="throughput", name=f"all clients {direction}", points=tuple(summed)),) if summed else ()) \
        + _throughput_series(found, direction, interval)
    line = Reference(kind="throughput", y=check.threshold * scale,
                     label=f"{check.op} {plain(check.threshold)} {check.unit} (all clients)")
    return Measurement(value=total, details=details, series=series, references=(line,),
                       notes=(f"sum of {len(details)} client(s) running at once", *_system(check), *notes),
                       coverage=(coverage,), failed_runs=_failures(found))


# What every fio rule takes for a setup error (``_workload``, ``_coverage``), before its own.
FIO_SETUP_ERROR = ("a GPU node where fio did not run (the runner's record: unreachable, no fio, or fio ended non-zero "
                   "with no job error: killed, timed out); no `fio/{workload}/<host>.json`; a time_based report that "
                   "measured under 95 % of its runtime with no job error (cut short); a planned GPU node without a "
                   "report, a host the Blueprint does not name, or one reported twice")


def fio_setup_error(workload: str, *own: str) -> str:
    """The setup errors of a rule on ``workload``'s reports: every fio rule's, then the rule's own."""
    return "; ".join((FIO_SETUP_ERROR.format(workload=workload), *own))


FIO_JOB_ERROR = "any fio job that ended with an error (I/O error, verify mismatch) fails the check"


@rule("storage.read_throughput",
      measures="aggregate sequential read throughput: fio's read `bw_bytes` of the `seq_read` workload (1M blocks, "
               "iodepth 32, 4 in the lab, one job per GPU) summed over every GPU node, all running at once on the "
               "shared file system, so it measures the storage system, not one client",
      passes=f"the spec's read throughput; {FIO_JOB_ERROR}",
      setup_error=fio_setup_error("seq_read", "a report with no `read` section (`unified_rw_reporting=mixed`)",
                                  "a planned unit that is not a rate"))
def read_throughput(check: Check, results: Results, planned: Planned) -> Measurement:
    return _throughput(check, results, planned, "read")


@rule("storage.write_throughput",
      measures="aggregate sequential write throughput: fio's write `bw_bytes` of the `seq_write` workload (1M blocks, "
               "iodepth 32, 4 in the lab, one job per GPU) summed over every GPU node, all running at once on the "
               "shared file system",
      passes=f"the spec's write throughput (planned only where the spec gives one); {FIO_JOB_ERROR}",
      setup_error=fio_setup_error("seq_write", "a report with no `write` section (`unified_rw_reporting=mixed`)",
                                  "a planned unit that is not a rate"))
def write_throughput(check: Check, results: Results, planned: Planned) -> Measurement:
    return _throughput(check, results, planned, "write")


NO_PERCENTILES = ("fio recorded no read latency percentiles in any report: run the job with clat_percentiles=1 "
                  "(fio's default, which percentile_list or clat_percentiles=0 may have turned off) or "
                  "lat_percentiles=1")


@rule("storage.latency_p99",
      measures="p99 read latency of the `rand_read_4k` workload (4k random reads, iodepth 1), from the percentiles "
               "fio recorded: completion latency (clat, its default), else total latency (lat, `lat_percentiles=1`), "
               "else submission latency (slat), the source named in the notes; the p99 of every GPU node's json+ "
               "latency bins merged, else the worst node's own p99; it runs on each node's tiered file system (its "
               "own NVMe-oF namespace behind dm-cache) where the nodes own one, else on the shared file system",
      passes=f"the spec's p99 latency; {FIO_JOB_ERROR}",
      setup_error=fio_setup_error("rand_read_4k", "no read latency percentiles in any report (the message says "
                                  "what to add to the job)", "reports whose percentiles are of different latencies",
                                  "a planned unit that is not a duration"))
def latency_p99(check: Check, results: Results, planned: Planned) -> Measurement:
    found = _workload(check, results, planned)
    if isinstance(found, Measurement):
        return found
    scale = TIME_UNITS_NS.get(check.unit)
    if scale is None:
        return Measurement(setup_error=f"unit {check.unit!r} is not a duration ({', '.join(TIME_UNITS_NS)})")
    runs = list(found.runs.values())
    kinds = latency_kinds(runs, "read")
    coverage, notes = _coverage(found, planned)
    if not kinds:
        return Measurement(coverage=(coverage,), setup_error=NO_PERCENTILES, failed_runs=_failures(found))
    if len(kinds) > 1:  # a p99 of completion latency on one client and of total latency on another is no p99
        said = "; ".join(f"{LATENCY_WORDS[k]} in {', '.join(jobs[:3])}" for k, jobs in kinds.items())
        return Measurement(coverage=(coverage,), failed_runs=_failures(found), setup_error=(
            f"the reports' percentiles are of different latencies ({said}): run every client with the same job file"))
    (kind,) = kinds
    merged = merged_percentile(runs, "read", 99.0)
    value, how = (merged, "p99 of every client's json+ latency bins merged") if merged is not None else (
        worst_percentile(runs, "read", 99.0), "worst client's p99 (no json+ bins to merge)")
    how += f", of {LATENCY_WORDS[kind]}"
    details, series = [], []
    for host, run in sorted(found.runs.items()):
        for job in run.jobs:
            recorded = job.latency("read")
            if recorded is None:
                continue
            clat = recorded[1]
            p99 = clat.at(99.0)
            details.append(Detail(where=host, value=None if p99 is None else p99 / scale, unit=check.unit))
            points = sorted((float(k), v / 1e3) for k, v in clat.percentile.items())
            series.append(Series(kind="latency", name=host, points=tuple(points)))
    line = Reference(kind="latency", y=check.threshold * scale / 1e3, label=f"p99 {check.op} {plain(check.threshold)} "
                     f"{check.unit}")
    return Measurement(value=None if value is None else value / scale, details=tuple(details),
                       series=tuple(series), references=(line,), notes=(how, *_system(check), *notes),
                       coverage=(coverage,),
                       failed_runs=_failures(found))


@rule("storage.jitter",
      measures="coefficient of variation (stddev / mean, in %) of the `seq_read` workload's read bandwidth summed "
               "over every GPU node per logging interval (`bwavgtime`, the plan's `log_avg_msec`), from the "
               "bandwidth logs; without logs, the worst job's `bw_dev / bw_mean` from fio's per-interval statistics",
      passes=f"the spec's jitter, as a percentage; {FIO_JOB_ERROR}",
      setup_error=fio_setup_error("seq_read", "neither bandwidth logs (`fio/seq_read/<host>_bw.<job>.log`) nor a "
                                  "job with two or more bandwidth samples"))
def jitter(check: Check, results: Results, planned: Planned) -> Measurement:
    found = _workload(check, results, planned)
    if isinstance(found, Measurement):
        return found
    coverage, host_notes = _coverage(found, planned)
    judged = Measurement(coverage=(coverage,), failed_runs=_failures(found))
    interval = args_as(check.args, FioArgs).interval_ms
    logs = [log for host_logs in found.logs.values() for log in host_logs]
    summed = interval_series(logs, LOG_DIRECTION["read"], interval)
    cv = coefficient_of_variation([bw for _, bw in summed])
    if cv is not None:
        series = (Series(kind="throughput", name="all clients read", points=tuple(summed)),)
        mean = sum(bw for _, bw in summed) / len(summed)
        band = tuple(Reference(kind="throughput", y=mean * (1 + sign * check.threshold / 100.0),
                               label=f"mean {'+' if sign > 0 else '-'} {plain(check.threshold)} %") for sign in (1, -1))
        return judged.model_copy(update={
            "value": cv, "series": series + _throughput_series(found, "read", interval), "references": band,
            "notes": (f"{len(summed)} intervals of {interval} ms, {len(logs)} job log(s) summed", *host_notes)})
    per_job = [(host, d.bw_dev / d.bw_mean * 100.0) for host, run in found.runs.items() for j in run.jobs
               if (d := j.read) is not None and d.bw_mean > 0 and d.bw_samples >= 2]
    if not per_job:
        gone = missing("bandwidth logs or per-interval statistics",
                       f"fio/{args_as(check.args, FioArgs).workload}/<host>_bw.*.log")
        return judged.model_copy(update={"setup_error": gone.setup_error})
    worst = max(per_job, key=lambda p: p[1])
    return judged.model_copy(update={
        "value": worst[1], "details": tuple(Detail(where=h, value=v, unit="%") for h, v in per_job),
        "notes": ("no bandwidth logs: the worst job's bw_dev / bw_mean instead of the summed series", *host_notes)})


@rule("storage.mixed",
      measures="fio jobs that ended with an error in the design's `mixed` workload (randrw 70/30, 4k-1M blocks, "
               "data checksummed with crc32c and read back), summed over every GPU node on the shared file system; "
               "each node's bytes moved are shown",
      passes="no job error anywhere: a fixed bar, not a spec figure (the check is traced to the spec's read and "
             "write throughput, the load it runs at); a verify mismatch or I/O error fails it",
      setup_error=fio_setup_error("mixed"))
def mixed(check: Check, results: Results, planned: Planned) -> Measurement:
    found = _workload(check, results, planned)
    if isinstance(found, Measurement):
        return found
    details = []
    for host, run in sorted(found.runs.items()):
        moved = sum(d.io_bytes for j in run.jobs for name in DIRECTIONS if (d := j.direction(name)) is not None)
        codes = sorted({j.error for j in run.jobs if j.error})
        note = f"{moved / 1e6:.0f} MB moved" + (f"; fio error {', '.join(map(str, codes))}" if codes else "")
        details.append(Detail(where=host, value=float(run.errors), unit="errors", note=note))
    coverage, notes = _coverage(found, planned)
    return Measurement(value=float(sum(d.value or 0.0 for d in details)), details=tuple(details),
                       notes=("jobs that ended with an error (verify mismatch, I/O error)", *_system(check), *notes),
                       coverage=(coverage,), failed_runs=_failures(found))


@rule("cache.fscache_hit_ratio",
      measures="FS-Cache read hit ratio of the `cache_read` workload's second buffered read pass of the shared mount "
               "(the first pass fills the cache) on each GPU node: hits / (hits + misses) between the "
               "`/proc/fs/fscache/stats` counters read before and after each pass (the counters the plan names per "
               "kernel range, `args.counters`: the first set the node's kernel prints); the worst node counts",
      passes=f"the planner's FS-Cache hit-ratio floor (its formula is in `plan.yaml`); {FIO_JOB_ERROR}",
      setup_error=fio_setup_error("cache_read", "a node without its three counter readings "
                                  "(`fio/cache_read/<host>.fscache.0`, `.1`, `.2`), with counters that do not "
                                  "parse or that print none of the plan's counter sets",
                                  "a node whose second pass counted no FS-Cache read (the mount has no `fsc`, or "
                                  "cachefilesd binds no cache)"))
def fscache_hit_ratio(check: Check, results: Results, planned: Planned) -> Measurement:
    """Per GPU node: the FS-Cache counters the plan names for its kernel (args.counters, `choose`) before the first
    read pass and after each; the verdict is the worst node's hit ratio of the second pass, which the first pass filled
    the cache for."""
    found = _workload(check, results, planned)
    if isinstance(found, Measurement):
        return found
    coverage, notes = _coverage(found, planned)
    args = args_as(check.args, FioArgs)
    folder = f"fio/{args.workload}"
    details, wrong, used = [], [], []
    for host in sorted(found.runs):
        try:
            read = [parse_stats(text, f"{folder}/{host}.fscache.{i}") if (text := results.text(
                "fio", args.workload, f"{host}.fscache.{i}")) is not None else None
                for i in range(3)]
            if any(r is None for r in read):
                wrong.append(f"{host}: no FS-Cache counters ({folder}/{host}.fscache.0, .1, .2)")
                continue
            before, first, second = (r for r in read if r is not None)
            source = f"{folder}/{host}.fscache"
            chosen = choose(args.counters, [before, first, second], source)
            hits, misses = chosen.hit_counters, chosen.miss_counters
            h1, m1 = delta(before, first, hits, source), delta(before, first, misses, source)
            h2, m2 = delta(first, second, hits, source), delta(first, second, misses, source)
        except ParseError as exc:
            wrong.append(f"{host}: " + "; ".join(pr.message for pr in exc.problems))
            continue
        if h2 + m2 <= 0:
            wrong.append(f"{host}: the second pass counted no FS-Cache read ({chosen.formula}: hits + misses rose by "
                         "0): the mount has no fsc, or no cache is bound (cachefilesd)")
            continue
        used.append(f"{host}: {chosen.kernels}, {chosen.formula}")
        first_ratio = f"{h1 / (h1 + m1):.3f}" if h1 + m1 > 0 else "none counted"
        details.append(Detail(where=host, value=h2 / (h2 + m2), unit="ratio",
                              note=f"second pass: hits +{plain(h2)}, misses +{plain(m2)}; first pass: hits "
                                   f"+{plain(h1)}, misses +{plain(m1)} (ratio {first_ratio}); counted as on kernels "
                                   f"{chosen.kernels}"))
    if wrong:
        return Measurement(coverage=(coverage,), details=tuple(details), setup_error="; ".join(wrong),
                           failed_runs=_failures(found))
    return Measurement(value=min(d.value or 0.0 for d in details), details=tuple(details), coverage=(coverage,),
                       notes=("worst node's second-pass ratio, from /proc/fs/fscache/stats by the counters its kernel "
                              "prints: " + "; ".join(used), *_system(check), *notes), failed_runs=_failures(found))


def _system(check: Check) -> tuple[str, ...]:
    """What the check measured, where the plan names it: the user's own system is measured like any other."""
    args = args_as(check.args, FioArgs)
    if not args.system:
        return ()
    own = " (the user's own system, not one clustersmith built)" if args.owner == "user" else ""
    return (f"measured on {args.system}, mounted at {args.mount or '?'}{own}",)
