"""The kernel's FS-Cache counters (``/proc/fs/fscache/stats``) as the cache check reads them before and after each
read pass, and the hit ratio the plan defines from them (``storage.shared.fscache.counters``: per kernel range, which
counters count reads the cache served and which reads it did not; the check's ``args.counters``)."""

from __future__ import annotations

from blueprints.blueprint.check_args import CounterSet
from validators.errors import parse_error

Counter = tuple[str, str]
HEADING = "FS-Cache statistics"


def parse_stats(text: str, source: str) -> dict[Counter, float]:
    """``/proc/fs/fscache/stats`` -> {(line label, key): value}; lines look like ``IO     : rd=12 wr=3``. FS-Cache's
    lines follow the heading "FS-Cache statistics"; netfs's come after them up to 6.7 and before the heading from 6.8
    (``Netfs  : DL=...``, ``DownOps: DL=...`` from 6.11), where the heading reads ``-- FS-Cache statistics --``. A
    file without the heading is not this file."""
    lines = text.splitlines()
    if not any(line.strip(" -") == HEADING for line in lines):
        raise parse_error(source, "/proc/fs/fscache/stats", "heading", f"expected a line '{HEADING}'",
                          lines[0] if lines else "")
    found: dict[Counter, float] = {}
    for line in lines:
        label, sep, rest = line.partition(":")
        for pair in rest.split() if sep else ():
            key, eq, value = pair.partition("=")
            if eq and value.lstrip("-").isdigit():
                found[(label.strip(), key)] = float(value)
    return found


def choose(sets: tuple[CounterSet, ...], readings: list[dict[Counter, float]], source: str) -> CounterSet:
    """The first of the plan's counter sets (newest kernels first) whose every counter each reading prints: the one
    this host's kernel counts its reads by. None of them is an error naming what the kernel prints instead."""
    for counter_set in sets:
        wanted = counter_set.hit_counters + counter_set.miss_counters
        if all(c in reading for reading in readings for c in wanted):
            return counter_set
    labels = sorted({line for reading in readings for line, _ in reading})
    raise parse_error(source, "/proc/fs/fscache/stats", "counters",
                      "the kernel prints none of the plan's counter sets (for kernels "
                      + ", ".join(c.kernels for c in sets) + f"; it prints the lines {', '.join(labels)}): expected "
                      "the counters the plan's hit ratio is defined from (storage.shared.fscache.counters)")


def delta(before: dict[Counter, float], after: dict[Counter, float], names: tuple[Counter, ...],
          source: str) -> float:
    """How much the named counters rose between two readings; a counter the kernel does not print is an error naming
    it (another kernel counts otherwise, and the plan's definition must follow it)."""
    missing = [f"{line} {key}" for line, key in names if (line, key) not in after or (line, key) not in before]
    if missing:
        raise parse_error(source, "/proc/fs/fscache/stats", "counters",
                          f"the kernel prints no {', '.join(missing)}; expected the counters the plan's hit ratio is "
                          "defined from (storage.shared.fscache.counters)")
    return sum(after[n] - before[n] for n in names)
