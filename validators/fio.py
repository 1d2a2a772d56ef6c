"""fio: JSON / JSON+ output and bandwidth logs into typed results, and the storage measures taken from them.

- ``parse_fio`` reads ``--output-format=json`` or ``json+``: stand-alone ``jobs[]``, or client/server
  ``client_stats[]`` whose ``"All clients"`` entry is the aggregate. Text fio writes into the same file
  ahead of the document (client/server prefixes, verify messages) is skipped; with ``--status-interval``
  the last document counts. Units as fio writes them: ``bw_bytes`` B/s, ``clat_ns`` ns (field-numbers 2.1).
  Latency percentiles are read from whichever record fio kept them in: ``clat_ns`` (its default), ``lat_ns``
  (``lat_percentiles=1``) or ``slat_ns`` (``slat_percentiles=1``); ``FioJob.latency`` says which.
  fio older than 3.2 writes no ``bw_bytes``, only ``bw`` in KiB/s (field-numbers 10.5), which is read instead;
  ``unified_rw_reporting=mixed`` writes one ``mixed`` section in place of ``read`` and ``write``.
- A report names its host where fio can: the ``write_bw_log`` prefix the job file sets from ``CLUSTERSMITH_HOST``
  (``FioRun.host``), or each client's ``hostname`` in client/server mode.
- ``parse_bw_log`` reads a ``write_bw_log`` file: ``time (ms), bandwidth (KiB/s), direction, bs, offset``.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from blueprints.figures import plain
from blueprints.model import ParsedFinite
from validators.errors import invalid, parse_error
from validators.source import JSON, MAX_JSON, document, lines

Direction = Literal["read", "write", "trim", "mixed"]
DIRECTIONS: tuple[Direction, ...] = ("read", "write", "trim", "mixed")
AGGREGATE = "All clients"
CUT_SHORT = 0.95  # a time_based job that measured under 95 % of its runtime ended early
_SECONDS = {"": 1000, "s": 1000, "ms": 1, "m": 60_000, "h": 3_600_000}


PERCENTILE_SLACK = 2 / 128  # twice fio's histogram error (ClatNs._percentiles_within_the_run)
# The largest latency fio's histogram tracks: 2^(FIO_IO_U_PLAT_GROUP_NR + FIO_IO_U_PLAT_BITS - 1) ns, 29 groups and 6
# bits in fio 3.x (stat.h), about 17.2 s; a larger sample is counted in the last group.
HISTOGRAM_CEILING_NS = 2 ** (29 + 6 - 1)


class ClatNs(ParsedFinite):
    """One latency record of a direction (fio's ``clat_ns``, ``lat_ns``, ``slat_ns``): no part of it can be
    negative."""

    min: float = Field(ge=0)
    max: float = Field(ge=0)
    mean: float = Field(ge=0)
    stddev: float = Field(ge=0)
    percentile: dict[str, float] = Field(default_factory=dict, description='"99.000000" -> ns')
    bins: dict[str, int] = Field(default_factory=dict, description="json+ only: latency ns -> I/O count")

    @field_validator("percentile", "bins")
    @classmethod
    def _numeric_keys(cls, value: dict[str, float]) -> dict[str, float]:
        for key, number in value.items():
            try:
                if not math.isfinite(float(key)) or float(key) < 0:
                    raise ValueError
            except ValueError:
                raise ValueError(f"expected keys that are numbers >= 0, got {key[:40]!r}") from None
            if number < 0:
                raise ValueError(f"expected values >= 0 (no tool measures a negative latency or count): {key}: "
                                 f"{number}")
        return value

    @model_validator(mode="after")
    def _percentiles_within_the_run(self) -> ClatNs:
        """A percentile lies between the same record's minimum and maximum, give or take fio's histogram: a
        percentile is its bucket's middle, within 1/2^(FIO_IO_U_PLAT_BITS+1) = 1/128 of the value (fio's stat.h,
        FIO_IO_U_PLAT_BITS 6); twice that, and 1 ns for the exact buckets below 128 ns, is allowed."""
        if self.max <= 0:  # no I/O in this direction: fio writes zeros throughout
            return self
        # a sample past the histogram's last group counts in it: a percentile there can read below a larger min
        low = min(self.min, HISTOGRAM_CEILING_NS) * (1 - PERCENTILE_SLACK) - 1
        high = self.max * (1 + PERCENTILE_SLACK) + 1
        for key, value in self.percentile.items():
            if float(key) == 0:  # fio 3.1 ends its list with "0.00": 0 (tests/fixtures/fio/old-3.1): no percentile
                continue
            if not low <= value <= high:
                raise ValueError(f"percentile {key}: {value:.15g} ns lies outside this record's min {self.min:.15g} "
                                 f"and max {self.max:.15g} ns: no run measures that (an edited or corrupted report?)")
        return self

    def at(self, pct: float) -> float | None:
        """The ``pct`` percentile in ns, if fio reported it."""
        for key, value in self.percentile.items():
            if math.isclose(float(key), pct):
                return value
        return None


LatencyKind = Literal["clat", "lat", "slat"]
# Where fio keeps a direction's latency percentiles (fio's HOWTO.rst: clat_percentiles, on by default;
# lat_percentiles and slat_percentiles put them under lat_ns and slat_ns instead), in the order they are taken.
LATENCY_KINDS: tuple[LatencyKind, ...] = ("clat", "lat", "slat")
LATENCY_WORDS: dict[LatencyKind, str] = {
    "clat": "completion latency (clat_ns)", "lat": "total latency, submission + completion (lat_ns)",
    "slat": "submission latency (slat_ns)"}


class FioDirection(ParsedFinite):
    io_bytes: int = Field(ge=0)
    bw_bytes: int = Field(ge=0, description="B/s (fio < 3.2: ``bw`` KiB/s x 1024)")
    iops: float = Field(ge=0)
    runtime: int = Field(ge=0, description="ms")
    total_ios: int = Field(ge=0)
    clat_ns: ClatNs | None = None
    lat_ns: ClatNs | None = Field(default=None, description="total latency; its percentiles with lat_percentiles=1")
    slat_ns: ClatNs | None = Field(default=None, description="submission latency; percentiles with slat_percentiles=1")
    bw_mean: float = Field(default=0.0, ge=0, description="KiB/s, mean of the per-interval samples")
    bw_dev: float = Field(default=0.0, ge=0, description="KiB/s, standard deviation of the per-interval samples")
    bw_samples: int = Field(default=0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _old_fio(cls, data: object) -> object:
        """fio before 3.2 has no ``bw_bytes``: its ``bw`` is KiB/s."""
        if isinstance(data, dict) and "bw_bytes" not in data and isinstance(data.get("bw"), int | float):
            return {**data, "bw_bytes": int(data["bw"] * 1024)}
        return data


class FioJob(ParsedFinite):
    jobname: str
    groupid: int = 0
    error: int = Field(description="errno of the first error, 0 when none")
    hostname: str | None = Field(default=None, description="client/server: the server")
    port: int | None = None
    read: FioDirection | None = None
    write: FioDirection | None = None
    trim: FioDirection | None = None
    mixed: FioDirection | None = Field(default=None, description="unified_rw_reporting=mixed: read and write as one")
    options: dict[str, str] = Field(default_factory=dict, alias="job options")

    @model_validator(mode="after")
    def _some_direction(self) -> FioJob:
        if self.read is None and self.write is None and self.mixed is None:
            raise ValueError("expected a read, write or mixed section")
        return self

    def direction(self, name: Direction) -> FioDirection | None:
        return getattr(self, name)  # type: ignore[no-any-return]

    def latency(self, name: Direction) -> tuple[LatencyKind, ClatNs] | None:
        """The latency record of direction ``name`` that holds fio's percentiles (or json+ bins): completion latency
        where fio recorded it (its default), else total, else submission latency; None when none does."""
        d = self.direction(name)
        for kind in LATENCY_KINDS:
            found: ClatNs | None = getattr(d, f"{kind}_ns", None)
            if found is not None and (found.percentile or found.bins):
                return kind, found
        return None


class FioRun(ParsedFinite):
    """One fio output document."""

    source: str
    version: str
    jobs: tuple[FioJob, ...] = Field(description="Stand-alone jobs, or the clients' entries in client/server mode")
    aggregate: FioJob | None = Field(default=None, description='client/server: the "All clients" entry')
    client_server: bool = False
    host: str | None = Field(default=None, description="The host the report says it ran on: the write_bw_log "
                             "prefix (CLUSTERSMITH_HOST); None when it does not say")
    time_based_ms: int | None = Field(default=None, description="The runtime a time_based run was asked for (its "
                                      "``runtime`` option), ms; None when the run was not time_based")

    def hosts(self) -> tuple[str, ...]:
        """Who ran it, in the report's own words: each client's hostname (client/server), else ``host``."""
        if self.client_server:
            return tuple(j.hostname for j in self.jobs if j.hostname)
        return (self.host,) if self.host else ()

    def failures(self) -> tuple[str, ...]:
        """Each job fio says ended with an error, in fio's words (``error`` is the errno of the first error)."""
        return tuple(f"job {j.jobname!r}" + (f" on {j.hostname}" if j.hostname else "") + f": \"error\" : {j.error} "
                     f"({_errno(j.error)})" for j in self.jobs if j.error != 0)

    def cut_short(self) -> tuple[str, ...]:
        """Each job of a time_based run that measured less than its runtime, though it reports no error: fio ended
        early (killed, or its timeout hit), and still wrote a report of the part it ran. A complete run measures at
        least its runtime (fio 3.33 here: 4001-4161 ms for runtime=4); ``CUT_SHORT`` allows for clock granularity."""
        if self.time_based_ms is None:
            return ()
        out = []
        for j in self.jobs:
            measured = max((d.runtime for d in (j.read, j.write, j.trim, j.mixed) if d is not None), default=0)
            if j.error == 0 and measured < self.time_based_ms * CUT_SHORT:
                out.append(f"job {j.jobname!r}" + (f" on {j.hostname}" if j.hostname else "") +
                           f" measured {plain(measured / 1000)} s of its time_based runtime of "
                           f"{plain(self.time_based_ms / 1000)} s")
        return tuple(out)

    @property
    def errors(self) -> int:
        return sum(1 for j in self.jobs if j.error != 0)

    def bw_bytes(self, direction: Direction) -> float:
        """Bandwidth of the whole run: the aggregate when fio gives one, else the sum of the jobs."""
        if self.aggregate is not None:
            d = self.aggregate.direction(direction)
            return float(d.bw_bytes) if d else 0.0
        return float(sum(d.bw_bytes for j in self.jobs if (d := j.direction(direction)) is not None))


def _errno(code: int) -> str:
    """``EIO, Input/output error`` for 5; fio's ``error`` is the errno of the job's first error."""
    try:
        return f"{errno.errorcode.get(code, '?')}, {os.strerror(code)}"
    except (ValueError, OverflowError):
        return "not an errno"


def _document(text: str, source: str) -> dict[str, object]:
    """The last complete JSON document in ``text``. fio's own messages may precede it, even on the same line as
    its opening brace (stderr and the JSON share the --output file), so it starts at the brace before the
    first ``"fio version"`` key, else at the first line that opens an object."""
    key = text.find('"fio version"')
    start = text.rfind("{", 0, key) if key != -1 else next(
        (m.start() for m in re.finditer(r"(?m)^\{", text)), -1)
    if start == -1:
        raise parse_error(source, "fio", "(document)", "expected fio JSON output (--output-format=json or json+)",
                          text[:60] or "an empty file")
    decoder = JSON
    last: object = None  # only the last complete document is kept
    pos = start
    while pos < len(text):
        pos = text.find("{", pos)
        if pos == -1:
            break
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except RecursionError:
            raise parse_error(source, "fio", "(document)", "JSON nested too deeply to be fio output") from None
        except json.JSONDecodeError as exc:
            if last is not None:
                break  # a run cut short after complete status documents: keep the last complete one
            raise parse_error(source, "fio", f"(line {exc.lineno})", f"invalid JSON: {exc.msg}") from None
        last = doc
    if not isinstance(last, dict):
        raise parse_error(source, "fio", "(document)", "expected a JSON object")
    return last


def parse_fio(text: str, source: str = "<fio>") -> FioRun:
    doc = _document(text, source)
    if "jobs" in doc:
        key, raw = "jobs", doc["jobs"]
    elif "client_stats" in doc:
        key, raw = "client_stats", doc["client_stats"]
    else:
        raise parse_error(source, "fio", "jobs", "expected a jobs[] (stand-alone) or client_stats[] (client/server) "
                          "array", ", ".join(sorted(doc)) or "no keys")
    if not isinstance(raw, list) or not raw:
        raise parse_error(source, "fio", key, "expected a non-empty array of jobs", raw)
    jobs = []
    for i, item in enumerate(raw):
        try:
            jobs.append(FioJob.model_validate(item))
        except ValidationError as exc:
            raise invalid(source, "fio", f"{key}.{i}", exc) from None
    aggregate = next((j for j in jobs if j.jobname == AGGREGATE), None)
    options = doc.get("global options")
    named = options.get("write_bw_log") if isinstance(options, dict) else None
    named = named or next((j.options["write_bw_log"] for j in jobs if "write_bw_log" in j.options), None)
    return FioRun(source=source, version=str(doc.get("fio version", "")),
                  jobs=tuple(j for j in jobs if j.jobname != AGGREGATE), aggregate=aggregate,
                  client_server=key == "client_stats", host=str(named) if named else None,
                  time_based_ms=_time_based_ms(options if isinstance(options, dict) else {}, jobs))


# How a report's options say time_based was not set. Set, fio writes the value given ("1", "true", ...) or, for a bare
# `time_based` line, "" (stat.c json_add_job_opts writes "" for an option without a value, in the versions that
# guard it; fio 3.33 leaves such an option out of "job options", recorded here: then nothing says it was set).
NOT_SET = ("0", "false", "no", "off")


def _time_based_ms(options: dict[str, object], jobs: list[FioJob]) -> int | None:
    """The runtime (ms) a time_based run asked for, from its global options or, failing those, its jobs' options;
    None when it was not time_based or the value is not one fio's time units express (then nothing is claimed)."""
    merged = {**{k: v for j in jobs for k, v in j.options.items()}, **{str(k): v for k, v in options.items()}}
    if str(merged.get("time_based", "0")).strip().lower() in NOT_SET:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|h|)\s*", str(merged.get("runtime", "")))
    return int(m.group(1)) * _SECONDS[m.group(2)] if m else None


def parse_fio_file(path: Path) -> FioRun:
    """A fio JSON report, read whole up to ``validators.source.MAX_JSON`` (a report is some hundred KB per job)."""
    return parse_fio(document(path, "fio JSON output", MAX_JSON), str(path))


class BwSample(ParsedFinite):
    t_ms: int = Field(ge=0)
    kib_s: int = Field(ge=0, description="KiB/s averaged over the log interval")
    direction: int = Field(description="0 read, 1 write, 2 trim")


def parse_bw_log(text: str, source: str = "<bw log>") -> tuple[BwSample, ...]:
    return parse_bw_log_lines(text.splitlines(), source)


def parse_bw_log_file(path: Path) -> tuple[BwSample, ...]:
    return parse_bw_log_lines(lines(path), str(path))


def parse_bw_log_lines(text_lines: Iterable[str], source: str = "<bw log>") -> tuple[BwSample, ...]:
    samples = []
    for n, line in enumerate(text_lines, start=1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        try:
            if len(fields) < 3:
                raise ValueError
            samples.append(BwSample(t_ms=int(fields[0]), kib_s=int(fields[1]), direction=int(fields[2])))
        except ValidationError as exc:
            raise invalid(source, "fio bandwidth log", f"line {n}", exc) from None
        except ValueError:
            raise parse_error(source, "fio bandwidth log", f"line {n}",
                              "expected 'time_ms, KiB/s, direction, bs, offset'", line) from None
    return tuple(samples)


# measures -----------------------------------------------------------------------------------------


def latency_kinds(runs: Iterable[FioRun], direction: Direction) -> dict[LatencyKind, list[str]]:
    """Which latency each job recorded its percentiles of (``FioJob.latency``), with the jobs (``<source>: <job>``)
    under each; a job that recorded none is not listed."""
    kinds: dict[LatencyKind, list[str]] = defaultdict(list)
    for run in runs:
        for job in run.jobs:
            if (found := job.latency(direction)) is not None:
                kinds[found[0]].append(f"{run.source}: {job.jobname}")
    return dict(kinds)


def merged_percentile(runs: Iterable[FioRun], direction: Direction, pct: float) -> float | None:
    """The ``pct`` latency percentile (ns) over every job of every run, from json+ bins of the latency each job
    recorded (``FioJob.latency``; the caller checks that every job recorded the same one)."""
    counts: dict[float, int] = defaultdict(int)
    for run in runs:
        for job in run.jobs:
            found = job.latency(direction)
            if found is None or not found[1].bins:
                return None
            for bin_ns, count in found[1].bins.items():
                counts[float(bin_ns)] += count
    total = sum(counts.values())
    if total == 0:
        return None
    rank = math.ceil(total * pct / 100.0)
    seen = 0
    for ns in sorted(counts):
        seen += counts[ns]
        if seen >= rank:
            return ns
    return max(counts)


def worst_percentile(runs: Iterable[FioRun], direction: Direction, pct: float) -> float | None:
    """The highest per-job ``pct`` percentile (ns) fio reported, when no bins can be merged."""
    values = [v for run in runs for j in run.jobs
              if (found := j.latency(direction)) is not None and (v := found[1].at(pct)) is not None]
    return max(values) if values else None


def interval_series(logs: Iterable[tuple[BwSample, ...]], direction: int,
                    interval_ms: int) -> list[tuple[float, float]]:
    """Summed bandwidth (B/s) per log interval over several job logs: (seconds, B/s), only for intervals
    every log covers, so a job that started late or ended early does not fake a dip."""
    per_log: list[dict[int, float]] = []
    for samples in logs:
        buckets: dict[int, float] = {}
        for s in samples:
            if s.direction == direction:
                buckets[round(s.t_ms / interval_ms)] = buckets.get(round(s.t_ms / interval_ms), 0.0) + s.kib_s * 1024.0
        per_log.append(buckets)
    if not per_log:
        return []
    common = set(per_log[0]).intersection(*per_log[1:])
    return [(b * interval_ms / 1000.0, sum(p[b] for p in per_log)) for b in sorted(common)]


def coefficient_of_variation(values: list[float]) -> float | None:
    """Population standard deviation over mean, in percent; None below two samples or a zero mean."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.pstdev(values) / mean * 100.0 if mean else None
