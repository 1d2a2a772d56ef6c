"""A results folder: the tool output of one acceptance run, as the runner writes it or a person lays it out.

    fio/<workload>/<host>.json            fio --output-format=json+ (or json), one file per GPU node; the host
                                          its write_bw_log names (CLUSTERSMITH_HOST) wins over the file name
    fio/<workload>/<host>_bw.<job>.log    its bandwidth logs (write_bw_log=<host>)
    nccl/<anything>.txt | .json           nccl-tests text output (one run or several, each with its footer), or -J
    nccl/<anything>.debug.log             its NCCL_DEBUG=INFO lines, when not interleaved in the .txt (information)
    ib_write_bw/rail<i>/<host>.txt        the client side of ib_write_bw on rail i, one file per GPU node and rail
    ib_read_lat/rail<i>/<host>.txt        the same for ib_read_lat
    nvme/<host>.json                      nvme list-subsys -o json
    qos/<host>/<file>                     what the QoS layers say on the host (see validators.qos)
    prometheus/targets.json               GET /api/v1/targets
    prometheus/cache_hit_ratio.json       GET /api/v1/query of the Blueprint's cache.read_hit_ratio over the fio window
    ceph/status.json, osd-pool-ls-detail.json, osd-tree.json
                                          ceph status, osd pool ls detail, osd tree (-f json) on one monitor host
    setup-errors.json                     written by the runner: {check id: {host: why the tool did not run}}
    host-facts.json                       written by the runner: {host: {"gpus": n, "rails": n}}
    runner-notes.json                     written by the runner: {check id: [what it did that a reader should know]}
    cache-hosts.json                      written by the runner: [the hosts storage_tiering puts a cache on]
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from validators.errors import parse_error
from validators.fio import BwSample, FioRun, parse_bw_log_file, parse_fio_file
from validators.source import document, json_loads

SMALL = 16 << 20  # the bound on the small JSON and text files of a results folder (KB per host in practice)

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
        if not os.path.lexists(path):
            return {}
        data = _json(path)
        found = data.get(check_id, {}) if isinstance(data, dict) else {}
        return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}

    def runner_notes(self, check_id: str) -> tuple[str, ...]:
        path = self.root / "runner-notes.json"
        data = _json(path) if os.path.lexists(path) else {}
        found = data.get(check_id, []) if isinstance(data, dict) else []
        return tuple(str(n) for n in found) if isinstance(found, list) else ()

    def cache_hosts(self) -> tuple[str, ...] | None:
        """The hosts that should report a cache hit ratio, when the runner wrote them (not in hand-made results)."""
        path = self.root / "cache-hosts.json"
        data = _json(path) if os.path.lexists(path) else None
        return tuple(str(h) for h in data) if isinstance(data, list) else None

    def host_facts(self) -> dict[str, dict[str, int]]:
        path = self.root / "host-facts.json"
        data = _json(path) if os.path.lexists(path) else {}
        if not isinstance(data, dict):
            raise parse_error(str(path), "host facts", "(document)", "expected an object of host: facts", data)
        for host, facts in data.items():
            if not isinstance(facts, dict) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                      for v in facts.values()):
                raise parse_error(str(path), "host facts", str(host), 'expected {"gpus": n, "rails": n}', facts)
        return data

    def fio(self, workload: str) -> FioWorkloadResults | None:
        folder = self.root / "fio" / workload
        if not folder.is_dir():
            return None
        runs = {p.stem: parse_fio_file(p) for p in sorted(folder.glob("*.json"))}
        logs: dict[str, list[tuple[BwSample, ...]]] = {}
        for p in sorted(folder.glob("*_bw.*.log")):
            m = LOG_NAME.match(p.name)
            if m:
                logs.setdefault(m.group("host"), []).append(parse_bw_log_file(p))
        return FioWorkloadResults(runs=runs, logs=logs) if runs else None

    def files(self, *parts: str, pattern: str = "*") -> list[Path]:
        """Every entry but folders: a FIFO, a broken link or a link loop is kept, so its reader refuses it by name
        instead of the check calling the output missing."""
        folder = self.root.joinpath(*parts)
        return sorted(p for p in folder.glob(pattern) if not p.is_dir()) if folder.is_dir() else []

    def text(self, *parts: str) -> str | None:
        path = self.root.joinpath(*parts)
        return self.small_text(path, "this file") if os.path.lexists(path) else None

    def small_text(self, path: Path, what: str) -> str:
        return document(path, what, SMALL)

    def json_file(self, path: Path) -> object:
        return _json(path)


def _json(path: Path) -> object:
    try:
        return json_loads(document(path, "this JSON file", SMALL))
    except json.JSONDecodeError as exc:
        raise parse_error(str(path), "JSON", f"(line {exc.lineno})", f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise parse_error(str(path), "JSON", "(document)", "nested too deeply") from None
