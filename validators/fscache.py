"""The kernel's FS-Cache counters (``/proc/fs/fscache/stats``) as the cache check reads them before and after each
read pass, and the hit ratio the plan defines from them (``storage.shared.fscache.counters``: which counters count
reads the cache served, which reads it did not; the check's ``args.hits`` and ``args.misses``)."""

from __future__ import annotations

from validators.errors import parse_error

Counter = tuple[str, str]


def parse_stats(text: str, source: str) -> dict[Counter, float]:
    """``/proc/fs/fscache/stats`` -> {(line label, key): value}; lines look like ``IO     : rd=12 wr=3``. A file
    without the "FS-Cache statistics" heading is not this file."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "FS-Cache statistics":
        raise parse_error(source, "/proc/fs/fscache/stats", "line 1", "expected the heading 'FS-Cache statistics'",
                          lines[0] if lines else "")
    found: dict[Counter, float] = {}
    for line in lines[1:]:
        label, sep, rest = line.partition(":")
        for pair in rest.split() if sep else ():
            key, eq, value = pair.partition("=")
            if eq and value.lstrip("-").isdigit():
                found[(label.strip(), key)] = float(value)
    return found


def counters(arg: str) -> tuple[Counter, ...]:
    """``IO:rd,NoSpace:nwr`` (counters written LINE:KEY, comma-separated) -> (("IO", "rd"), ("NoSpace", "nwr"))."""
    out = []
    for part in arg.split(","):
        line, _, key = part.partition(":")
        out.append((line, key))
    return tuple(out)


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
