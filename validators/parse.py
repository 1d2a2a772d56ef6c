"""``clustersmith parse TOOL FILE``: any supported tool output as its typed result, printed as JSON.

Each reader takes the path, so it can refuse what is not a regular text file and stream what may be long
(validators.source).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from itertools import chain
from pathlib import Path

from pydantic import BaseModel

from validators.fio import parse_fio_file
from validators.gpu_query import parse_query_gpu_file
from validators.gpu_topo import parse_topo_file
from validators.monitoring import parse_targets
from validators.nccl import iter_nccl_file, parse_nccl_file
from validators.nccl_debug import parse_nccl_debug_file
from validators.nvmeof import parse_list_subsys
from validators.rdma import parse_perftest_bw_file, parse_perftest_lat_file
from validators.source import document
from validators.xid import parse_xid_file

SMALL_JSON = 16 << 20  # nvme list-subsys and Prometheus' targets: some KB per host


def _list_subsys(path: Path) -> BaseModel:
    return parse_list_subsys(document(path, "nvme list-subsys JSON", SMALL_JSON), str(path))


def _targets(path: Path) -> BaseModel:
    return parse_targets(document(path, "Prometheus targets JSON", SMALL_JSON), str(path))


PARSERS: dict[str, Callable[[Path], BaseModel]] = {
    "fio": parse_fio_file,
    "nccl": parse_nccl_file,
    "nccl-debug": parse_nccl_debug_file,  # NCCL_DEBUG=INFO logs of gigabytes: streamed
    "ib_write_bw": parse_perftest_bw_file,
    "ib_read_lat": parse_perftest_lat_file,
    "nvme-list-subsys": _list_subsys,
    "prometheus-targets": _targets,
    "nvidia-smi-topo": parse_topo_file,
    "nvidia-smi-query-gpu": parse_query_gpu_file,
    "kernel-xid": parse_xid_file,  # a whole kernel log: streamed, only the Xid and SXid lines kept
}


def parse_file(tool: str, path: Path) -> BaseModel:
    return PARSERS[tool](path)


def write_parsed(tool: str, path: Path, write: Callable[[str], object]) -> None:
    """``parse_file(tool, path).model_dump_json(indent=2)``, given to ``write`` in pieces, the same text. A log of
    nccl-tests runs is written a run at a time, so memory stays that of one run however many the log holds (a
    log of a hundred MB of runs held them all, then their JSON, gigabytes: issue 43)."""
    if tool != "nccl":
        write(parse_file(tool, path).model_dump_json(indent=2))
        return
    runs = iter_nccl_file(path)
    first = next(runs)  # a file with no run raises here, before anything is written
    write("{\n  \"source\": " + json.dumps(str(path), ensure_ascii=False) + ",\n  \"runs\": [\n")
    for run in chain([first], runs):
        if run is not first:
            write(",\n")
        write(textwrap.indent(run.model_dump_json(indent=2), "    "))
    write("\n  ]\n}")
