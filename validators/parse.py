"""``clustersmith parse TOOL FILE``: any supported tool output as its typed result, printed as JSON.

Each reader takes the path, so it can refuse what is not a regular text file and stream what may be long
(validators.source).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from validators.fio import parse_fio_file
from validators.monitoring import parse_targets
from validators.nccl import parse_nccl_file
from validators.nccl_debug import parse_nccl_debug_file
from validators.nvmeof import parse_list_subsys
from validators.rdma import parse_perftest_bw_file, parse_perftest_lat_file
from validators.source import document

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
}


def parse_file(tool: str, path: Path) -> BaseModel:
    return PARSERS[tool](path)
