"""``clustersmith parse TOOL FILE``: any supported tool output as its typed result, printed as JSON."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from validators.fio import parse_fio
from validators.monitoring import parse_targets
from validators.nccl import parse_nccl
from validators.nccl_debug import parse_nccl_debug, parse_nccl_debug_file
from validators.nvmeof import parse_list_subsys
from validators.rdma import parse_perftest_bw, parse_perftest_lat

PARSERS: dict[str, Callable[[str, str], BaseModel]] = {
    "fio": parse_fio,
    "nccl": parse_nccl,
    "nccl-debug": parse_nccl_debug,
    "ib_write_bw": parse_perftest_bw,
    "ib_read_lat": parse_perftest_lat,
    "nvme-list-subsys": parse_list_subsys,
    "prometheus-targets": parse_targets,
}


STREAMED: dict[str, Callable[[Path], BaseModel]] = {"nccl-debug": parse_nccl_debug_file}  # logs of gigabytes


def parse_file(tool: str, path: Path) -> BaseModel:
    if tool in STREAMED:
        return STREAMED[tool](path)
    return PARSERS[tool](path.read_text(encoding="utf-8", errors="replace"), str(path))
