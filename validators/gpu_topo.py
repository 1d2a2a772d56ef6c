"""``nvidia-smi topo -m``: the GPU/NIC matrix into typed devices, links and affinities.

nvidia-smi prints a header row of device columns (``GPU0 .. GPUn``, ``NIC0 .. NICm``; drivers before the NIC legend
named NICs by their RDMA device, ``mlx5_0``) followed by the attribute columns ``CPU Affinity``, ``NUMA Affinity`` and
(newer drivers) ``GPU NUMA ID``; then one row per device: its name, the link to every device (``X`` for itself,
``SYS``, ``NODE``, ``PHB``, ``PXB``, ``PIX``, ``NV<n>``) and, on GPU rows, the attribute values (``N/A`` where there is
none). Cells are tab-separated as printed, space-separated where a terminal copy turned tabs to spaces: both are read.
The ``Legend:`` block is skipped; ``NIC Legend:`` lines (``NIC0: mlx5_0``) name each NIC column.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field

from blueprints.model import Frozen
from validators.errors import parse_error
from validators.source import lines

TOOL = "nvidia-smi topo -m"
LINK = re.compile(r"^(X|SYS|NODE|PHB|PXB|PIX|NV\d+)$")
DEVICE = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+|\w+_\w+)$")
ATTRIBUTES = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
NIC_LEGEND = re.compile(r"^\s*(NIC\d+):\s*(\S+)\s*$")
NONE = {"N/A", ""}


class GpuAffinity(Frozen):
    name: str = Field(description="The row's name, e.g. GPU0")
    index: int = Field(ge=0, description="The GPU's index (GPU3 -> 3)")
    cpu_affinity: str | None = Field(default=None, description="CPU list as printed, e.g. 0-47,96-143")
    numa_affinity: str | None = Field(default=None, description="NUMA node(s) as printed; None for N/A")
    gpu_numa_id: str | None = Field(default=None, description="GPU NUMA ID (newer drivers); None for N/A or absent")


class TopoMatrix(Frozen):
    source: str
    devices: tuple[str, ...] = Field(description="Column names in the order printed: GPUs, then NICs")
    links: dict[str, dict[str, str]] = Field(description="links[a][b]: the link type from device a to device b")
    gpus: tuple[GpuAffinity, ...]
    nics: dict[str, str] = Field(default_factory=dict, description="NIC column -> RDMA device, from the NIC legend")

    def nic_column(self, nic: str) -> str:
        """The column of ``nic``, given as its column (``NIC0``) or its RDMA device (``mlx5_0``)."""
        if nic in self.devices and not nic.startswith("GPU"):
            return nic
        for column, device in self.nics.items():
            if device == nic:
                return column
        known = ", ".join(f"{c} ({d})" for c, d in self.nics.items()) or ", ".join(
            d for d in self.devices if not d.startswith("GPU")) or "none"
        raise KeyError(f"{self.source}: no NIC {nic!r} in the matrix; its NICs: {known}")

    def link(self, gpu: int, nic: str) -> str:
        """The link type between GPU ``gpu`` and ``nic`` (``NIC0`` or ``mlx5_0``), e.g. ``PIX`` or ``SYS``."""
        name = f"GPU{gpu}"
        if name not in self.links:
            raise KeyError(f"{self.source}: no {name} in the matrix; its GPUs: "
                           f"{', '.join(g.name for g in self.gpus) or 'none'}")
        return self.links[name][self.nic_column(nic)]


def parse_topo(text: str, source: str = "<nvidia-smi topo -m>") -> TopoMatrix:
    return parse_topo_lines(text.splitlines(), source)


def parse_topo_file(path: Path) -> TopoMatrix:
    return parse_topo_lines(lines(path), str(path))


def _header(line: str, n: int, source: str) -> tuple[list[str], list[str]]:
    """The device columns and attribute columns of the header line."""
    rest = line.strip()
    attributes: list[str] = []
    cut = len(rest)
    for name in ATTRIBUTES:
        at = rest.find(name)
        if at != -1:
            attributes.append(name)
            cut = min(cut, at)
    devices = rest[:cut].split()
    for d in devices:
        if not DEVICE.match(d):
            raise parse_error(source, TOOL, f"line {n}", "expected device columns (GPU0, NIC0, mlx5_0) before "
                              f"{', '.join(ATTRIBUTES)}", d)
    return devices, sorted(attributes, key=rest.find)


def parse_topo_lines(text_lines: Iterable[str], source: str = "<nvidia-smi topo -m>") -> TopoMatrix:
    devices: list[str] | None = None
    attributes: list[str] = []
    links: dict[str, dict[str, str]] = {}
    gpus: list[GpuAffinity] = []
    nics: dict[str, str] = {}
    section = "matrix"
    for n, line in enumerate(text_lines, start=1):
        stripped = line.strip()
        if stripped in ("Legend:", "NIC Legend:"):
            section = stripped
            continue
        if section == "NIC Legend:":
            if (m := NIC_LEGEND.match(line)) is not None:
                nics[m.group(1)] = m.group(2)
            elif stripped:
                raise parse_error(source, TOOL, f"line {n}", "expected a NIC legend line 'NICn: <device>'", stripped)
            continue
        if section == "Legend:" or not stripped:
            continue
        if devices is None:
            if stripped.split()[0] == "GPU0" and "CPU Affinity" in stripped:
                devices, attributes = _header(line, n, source)
            continue
        _row(stripped.split(), n, devices, attributes, source, links, gpus)
    if devices is None:
        raise parse_error(source, TOOL, "(document)", "expected the matrix header 'GPU0 ... CPU Affinity ...' "
                          "(run nvidia-smi topo -m)")
    missing = [d for d in devices if d not in links]
    if missing:
        raise parse_error(source, TOOL, "(matrix)", "expected one row per column; no row for "
                          f"{', '.join(missing)}")
    for column in nics:
        if column not in devices:
            raise parse_error(source, TOOL, "NIC Legend", "names a NIC the matrix has no column for", column)
    return TopoMatrix(source=source, devices=tuple(devices), links=links, gpus=tuple(gpus), nics=nics)


def _row(cells: list[str], n: int, devices: list[str], attributes: list[str], source: str,
         links: dict[str, dict[str, str]], gpus: list[GpuAffinity]) -> None:
    name = cells[0]
    if name not in devices:
        raise parse_error(source, TOOL, f"line {n}", f"expected a row of one of the columns ({', '.join(devices)})",
                          name)
    if name in links:
        raise parse_error(source, TOOL, f"line {n}", "a second row for the same device", name)
    values = cells[1:]
    width = len(devices)
    extra = values[width:]
    if len(values) < width or (extra and len(extra) != len(attributes)):
        raise parse_error(source, TOOL, f"line {n}", f"expected {width} link cells"
                          f"{f' and {len(attributes)} attribute values' if name.startswith('GPU') else ''}, "
                          f"got {len(values)} cells", " ".join(cells))
    row: dict[str, str] = {}
    for column, cell in zip(devices, values[:width], strict=True):
        if not LINK.match(cell):
            raise parse_error(source, TOOL, f"line {n}", f"{name} to {column}: expected a link type of X, SYS, NODE, "
                              "PHB, PXB, PIX or NV<n>", cell)
        if (cell == "X") != (column == name):
            raise parse_error(source, TOOL, f"line {n}", f"{name} to {column}: expected X on the diagonal only",
                              cell)
        row[column] = cell
    links[name] = row
    if name.startswith("GPU"):
        found = {a: (None if v in NONE else v) for a, v in zip(attributes, extra, strict=False)}
        gpus.append(GpuAffinity(name=name, index=int(name[3:]), cpu_affinity=found.get("CPU Affinity"),
                                numa_affinity=found.get("NUMA Affinity"), gpu_numa_id=found.get("GPU NUMA ID")))
