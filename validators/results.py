"""A results folder: the tool output of one acceptance run, as the runner writes it or a person lays it out.

    fio/<workload>/<host>.json            fio --output-format=json+ (or json), one file per client
    fio/<workload>/<host>_bw.<job>.log    its bandwidth logs (write_bw_log=<host>)
    nccl/<anything>.txt | .json           all_reduce_perf text output, or its -J JSON
    nccl/<anything>.debug.log             its NCCL_DEBUG=INFO lines, when not interleaved in the .txt (information)
    ib_write_bw/rail<i>/<host>.txt        the client side of ib_write_bw on rail i, one file per client host
    ib_read_lat/rail<i>/<host>.txt        the same for ib_read_lat
    nvme/<host>.json                      nvme list-subsys -o json
    qos/<host>/<file>                     what the QoS layers say on the host (see validators.qos)
    prometheus/targets.json               GET /api/v1/targets
    prometheus/cache_hit_ratio.json       GET /api/v1/query of the Blueprint's cache.read_hit_ratio over the fio window
    setup-errors.json                     written by the runner: {check id: {host: why the tool did not run}}
    host-facts.json                       written by the runner: {host: {"gpus": n, "rails": n}}
    runner-notes.json                     written by the runner: {check id: [what it did that a reader should know]}
    cache-hosts.json                      written by the runner: [the hosts storage_tiering puts a cache on]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from validators.errors import parse_error
from validators.fio import BwSample, FioRun, parse_bw_log, parse_fio

LOG_NAME = re.compile(r"^(?P<host>.+)_bw\.(?P<job>\d+)\.log$")


@dataclass(frozen=True)
class FioWorkloadResults:
    """One workload's output on every client that ran it."""

    runs: dict[str, FioRun]
    logs: dict[str, list[tuple[BwSample, ...]]] = field(default_factory=dict)


class Results:
    def __init__(self, root: Path) -> None:
        self.root = root

    def exists(self) -> bool:
        return self.root.is_dir()

    def setup_errors(self, check_id: str) -> dict[str, str]:
        path = self.root / "setup-errors.json"
        if not path.is_file():
            return {}
        data = _json(path)
        found = data.get(check_id, {}) if isinstance(data, dict) else {}
        return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}

    def runner_notes(self, check_id: str) -> tuple[str, ...]:
        path = self.root / "runner-notes.json"
        data = _json(path) if path.is_file() else {}
        found = data.get(check_id, []) if isinstance(data, dict) else []
        return tuple(str(n) for n in found) if isinstance(found, list) else ()

    def cache_hosts(self) -> tuple[str, ...] | None:
        """The hosts that should report a cache hit ratio, when the runner wrote them (not in hand-made results)."""
        path = self.root / "cache-hosts.json"
        data = _json(path) if path.is_file() else None
        return tuple(str(h) for h in data) if isinstance(data, list) else None

    def host_facts(self) -> dict[str, dict[str, int]]:
        path = self.root / "host-facts.json"
        data = _json(path) if path.is_file() else {}
        return data if isinstance(data, dict) else {}

    def fio(self, workload: str) -> FioWorkloadResults | None:
        folder = self.root / "fio" / workload
        if not folder.is_dir():
            return None
        runs = {p.stem: parse_fio(p.read_text(encoding="utf-8", errors="replace"), str(p))
                for p in sorted(folder.glob("*.json"))}
        logs: dict[str, list[tuple[BwSample, ...]]] = {}
        for p in sorted(folder.glob("*_bw.*.log")):
            m = LOG_NAME.match(p.name)
            if m:
                logs.setdefault(m.group("host"), []).append(parse_bw_log(p.read_text(encoding="utf-8"), str(p)))
        return FioWorkloadResults(runs=runs, logs=logs) if runs else None

    def files(self, *parts: str, pattern: str = "*") -> list[Path]:
        folder = self.root.joinpath(*parts)
        return sorted(p for p in folder.glob(pattern) if p.is_file()) if folder.is_dir() else []

    def text(self, *parts: str) -> str | None:
        path = self.root.joinpath(*parts)
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise parse_error(str(path), "JSON", f"(line {exc.lineno})", f"invalid JSON: {exc.msg}") from None
