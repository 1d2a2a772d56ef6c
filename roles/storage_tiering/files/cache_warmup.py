#!/usr/bin/python3
"""Warm the dm-cache with the hot set: read the most recently written files under the hot paths, up to the
node's hot-shard budget, with O_DIRECT so every read reaches dm-cache (the page cache would absorb repeats).

Run by ``clustersmith-cache-warmup.service`` at boot and on demand: ``cache_warmup.py <config.json>``;
the config holds ``paths``, ``budget_bytes``, ``passes`` (dm-cache's smq promotes blocks that are hit
again) and ``metrics_file``. Newest files first: the data a job wrote last is the data it reads next.
"""

from __future__ import annotations

import json
import mmap
import os
import sys
import time
from collections.abc import Iterable

CHUNK = 1 << 20  # 1 MiB, a multiple of every logical block size


def hot_files(paths: Iterable[str]) -> list[tuple[str, int]]:
    """Regular files under ``paths``, newest first: (path, size)."""
    found: list[tuple[float, str, int]] = []
    for top in paths:
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "lost+found"]
            for name in files:
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path, follow_symlinks=False)
                except OSError:
                    continue
                if os.path.isfile(path) and not os.path.islink(path):
                    found.append((st.st_mtime, path, st.st_size))
    found.sort(key=lambda item: (-item[0], item[1]))
    return [(path, size) for _, path, size in found]


def select(files: list[tuple[str, int]], budget: int) -> list[tuple[str, int]]:
    """Newest files first, each read only as far as the budget left allows."""
    chosen = []
    left = budget
    for path, size in files:
        if left <= 0:
            break
        take = min(size, left)
        if take > 0:
            chosen.append((path, take))
            left -= take
    return chosen


def read_direct(path: str, length: int, buffer: mmap.mmap) -> int:
    """Read ``length`` bytes of ``path`` (rounded up to whole chunks) with O_DIRECT; buffered if refused."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECT", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        fd = os.open(path, os.O_RDONLY)
    done = 0
    try:
        while done < length:
            got = os.readv(fd, [buffer])
            if got <= 0:
                break
            done += got
    finally:
        os.close(fd)
    return min(done, length)


def warm(config: dict[str, object]) -> dict[str, float]:
    paths = [str(p) for p in config.get("paths", [])]  # type: ignore[attr-defined]
    budget = int(config.get("budget_bytes", 0))  # type: ignore[call-overload]
    passes = max(1, int(config.get("passes", 2)))  # type: ignore[call-overload]
    chosen = select(hot_files(paths), budget)
    started = time.monotonic()
    total = 0
    buffer = mmap.mmap(-1, CHUNK)  # page-aligned, as O_DIRECT needs
    for _ in range(passes):
        for path, length in chosen:
            total += read_direct(path, length, buffer)
    return {"files": len(chosen), "bytes": total, "passes": passes, "seconds": time.monotonic() - started,
            "finished": time.time()}


def render(result: dict[str, float]) -> str:
    rows = [
        ("clustersmith_cache_warmup_files", "Files of the hot set read by the last warm-up", result["files"]),
        ("clustersmith_cache_warmup_bytes", "Bytes read by the last warm-up, all passes", result["bytes"]),
        ("clustersmith_cache_warmup_seconds", "Duration of the last warm-up", result["seconds"]),
        ("clustersmith_cache_warmup_last_run_timestamp_seconds", "When the last warm-up ended", result["finished"]),
    ]
    lines = []
    for name, help_text, value in rows:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name} {value:.6g}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: cache_warmup.py <config.json>", file=sys.stderr)
        return 2
    with open(argv[1]) as handle:
        config = json.load(handle)
    result = warm(config)
    metrics = str(config.get("metrics_file") or "")
    if metrics:
        tmp = metrics + ".tmp"
        with open(tmp, "w") as out:
            out.write(render(result))
        os.chmod(tmp, 0o644)
        os.replace(tmp, metrics)
    print(f"cache_warmup: read {result['bytes']:.0f} bytes of {result['files']:.0f} files "
          f"in {result['seconds']:.1f} s ({result['passes']:.0f} passes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
