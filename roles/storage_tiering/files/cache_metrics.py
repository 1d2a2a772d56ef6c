#!/usr/bin/python3
"""Write the dm-cache counters of the tier volume as Prometheus text for node_exporter's textfile collector.

Run by ``clustersmith-cache-metrics.timer``: ``cache_metrics.py <dm name> <volume label> <output .prom file>``.
The hit ratio the monitoring role alerts on is ``clustersmith_dmcache_read_hit_ratio`` (read hits over
reads since the volume was activated); the raw counters let PromQL take rates over any window.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile


@dataclasses.dataclass(frozen=True)
class CacheStatus:
    """One ``dmsetup status`` line of a cache target (Documentation/admin-guide/device-mapper/cache.rst)."""

    metadata_used: int
    metadata_total: int
    block_sectors: int
    used_blocks: int
    total_blocks: int
    read_hits: int
    read_misses: int
    write_hits: int
    write_misses: int
    demotions: int
    promotions: int
    dirty: int
    mode: str
    policy: str

    @property
    def read_hit_ratio(self) -> float | None:
        reads = self.read_hits + self.read_misses
        return self.read_hits / reads if reads else None


def parse_status(line: str) -> CacheStatus:
    """``<start> <len> cache <md block size> <md used>/<md total> <block size> <used>/<total> <read hits> ...``."""
    words = line.split()
    if len(words) < 18 or words[2] != "cache":
        raise ValueError(f"not a dm-cache status line: {line.strip()!r}")
    md_used, md_total = (int(x) for x in words[4].split("/"))
    used, total = (int(x) for x in words[6].split("/"))
    nfeatures = int(words[14])
    features = words[15:15 + nfeatures]
    mode = next((f for f in features if f in ("writethrough", "writeback", "passthrough")), "writethrough")
    core_at = 15 + nfeatures
    ncore = int(words[core_at])
    policy = words[core_at + 1 + ncore]
    return CacheStatus(metadata_used=md_used, metadata_total=md_total, block_sectors=int(words[5]), used_blocks=used,
                       total_blocks=total, read_hits=int(words[7]), read_misses=int(words[8]),
                       write_hits=int(words[9]), write_misses=int(words[10]), demotions=int(words[11]),
                       promotions=int(words[12]), dirty=int(words[13]), mode=mode, policy=policy)


def render(status: CacheStatus, volume: str) -> str:
    label = f'volume="{volume}"'
    lines = []

    def metric(name: str, kind: str, help_text: str, value: float, extra: str = "") -> None:
        labels = label + (f",{extra}" if extra else "")
        lines.extend([f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name}{{{labels}}} {value:g}"])

    metric("clustersmith_dmcache_read_hits_total", "counter", "Reads served by the cache device", status.read_hits)
    metric("clustersmith_dmcache_read_misses_total", "counter", "Reads sent to the origin device", status.read_misses)
    metric("clustersmith_dmcache_write_hits_total", "counter", "Writes to cached blocks", status.write_hits)
    metric("clustersmith_dmcache_write_misses_total", "counter", "Writes to uncached blocks", status.write_misses)
    metric("clustersmith_dmcache_promotions_total", "counter", "Blocks promoted to the cache", status.promotions)
    metric("clustersmith_dmcache_demotions_total", "counter", "Blocks demoted from the cache", status.demotions)
    metric("clustersmith_dmcache_dirty_blocks", "gauge", "Cache blocks not yet written back", status.dirty)
    metric("clustersmith_dmcache_used_blocks", "gauge", "Cache blocks in use", status.used_blocks)
    metric("clustersmith_dmcache_blocks", "gauge", "Cache blocks in total", status.total_blocks)
    metric("clustersmith_dmcache_block_bytes", "gauge", "Size of one cache block", status.block_sectors * 512)
    ratio = status.read_hit_ratio
    if ratio is not None:
        metric("clustersmith_dmcache_read_hit_ratio", "gauge", "Read hits over reads since activation", ratio)
    metric("clustersmith_dmcache_info", "gauge", "Cache mode and policy in force", 1,
           f'mode="{status.mode}",policy="{status.policy}"')
    return "\n".join(lines) + "\n"


def write_atomically(path: str, text: str) -> None:
    """node_exporter must never read half a file: write beside it, then rename."""
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".clustersmith-", suffix=".tmp", dir=folder)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: cache_metrics.py <dm name> <volume label> <output .prom>", file=sys.stderr)
        return 2
    dm_name, volume, output = argv[1:]
    done = subprocess.run(["dmsetup", "status", dm_name], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"cache_metrics: dmsetup status {dm_name}: {done.stderr.strip()}", file=sys.stderr)
        return 1
    write_atomically(output, render(parse_status(done.stdout), volume))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
