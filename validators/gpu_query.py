"""``nvidia-smi --query-gpu=... --format=csv``: one typed row per GPU, driven by the header's columns.

nvidia-smi prints a header of the queried properties, separated by ``, ``, each with its unit in brackets where it
has one (``memory.total [MiB]``), then one row per GPU with the unit after the number (``16376 MiB``); with
``nounits`` neither. Any subset of columns, in any order, is read: the properties below become typed fields, every
other column is kept as text in ``other``. ``[N/A]``, ``N/A`` and ``[Not Supported]`` read as None. A file without
the header (``--format=csv,noheader``) is refused: its columns cannot be known.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field, ValidationError

from blueprints.model import Frozen
from validators.errors import invalid, parse_error
from validators.source import lines

TOOL = "nvidia-smi --query-gpu CSV"
UNAVAILABLE = {"[N/A]", "N/A", "[Not Supported]"}
COLUMN = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?: \[(?P<unit>[^\]]+)\])?$")
# property as nvidia-smi prints it in the header -> (field, kind); r525 renamed clocks_throttle_reasons to
# clocks_event_reasons, so both spellings fill the one field.
TYPED: dict[str, tuple[str, type]] = {
    "index": ("index", int), "name": ("name", str), "pci.bus_id": ("pci_bus_id", str), "serial": ("serial", str),
    "uuid": ("uuid", str), "persistence_mode": ("persistence_mode", str),
    "ecc.errors.uncorrected.volatile.total": ("ecc_uncorrected_volatile", int),
    "ecc.errors.uncorrected.aggregate.total": ("ecc_uncorrected_aggregate", int),
    "retired_pages.pending": ("retired_pages_pending", str),
    "clocks_throttle_reasons.active": ("clocks_reasons_active", str),
    "clocks_event_reasons.active": ("clocks_reasons_active", str),
    "pcie.link.gen.max": ("pcie_gen_max", int), "pcie.link.gen.current": ("pcie_gen_current", int),
    "pcie.link.width.max": ("pcie_width_max", int), "pcie.link.width.current": ("pcie_width_current", int),
    "driver_version": ("driver_version", str),
}


class GpuRow(Frozen):
    """One GPU; a field is None where its column was not queried or nvidia-smi printed N/A."""

    index: int | None = Field(default=None, ge=0)
    name: str | None = None
    pci_bus_id: str | None = Field(default=None, description="e.g. 00000000:3B:00.0")
    serial: str | None = None
    uuid: str | None = None
    persistence_mode: str | None = Field(default=None, description="Enabled or Disabled")
    ecc_uncorrected_volatile: int | None = Field(default=None, ge=0)
    ecc_uncorrected_aggregate: int | None = Field(default=None, ge=0)
    retired_pages_pending: str | None = Field(default=None, description="Yes or No")
    clocks_reasons_active: str | None = Field(default=None, description="bit mask as printed, e.g. 0x0000000000000000")
    pcie_gen_max: int | None = Field(default=None, ge=0)
    pcie_gen_current: int | None = Field(default=None, ge=0)
    pcie_width_max: int | None = Field(default=None, ge=0)
    pcie_width_current: int | None = Field(default=None, ge=0)
    driver_version: str | None = None
    other: dict[str, str | None] = Field(default_factory=dict, description="Every other column, by its property "
                                         "name, the unit removed, None for N/A")


class GpuQuery(Frozen):
    source: str
    columns: tuple[str, ...] = Field(description="The properties as the header names them, units removed")
    units: dict[str, str] = Field(default_factory=dict, description="property -> unit, where the header gave one")
    gpus: tuple[GpuRow, ...]


def parse_query_gpu(text: str, source: str = "<nvidia-smi --query-gpu>") -> GpuQuery:
    return parse_query_gpu_lines(text.splitlines(), source)


def parse_query_gpu_file(path: Path) -> GpuQuery:
    return parse_query_gpu_lines(lines(path), str(path))


def _columns(header: list[str], source: str) -> tuple[list[str], dict[str, str]]:
    names: list[str] = []
    units: dict[str, str] = {}
    for cell in header:
        m = COLUMN.match(cell.strip())
        if m is None:
            raise parse_error(source, TOOL, "line 1", "expected the header of property names, e.g. 'index, name, "
                              "memory.total [MiB]' (run with --format=csv, not noheader)", cell.strip())
        names.append(m["name"])
        if m["unit"]:
            units[m["name"]] = m["unit"]
    if len(set(names)) != len(names):
        raise parse_error(source, TOOL, "line 1", "a property named twice in the header", ", ".join(names))
    return names, units


def parse_query_gpu_lines(text_lines: Iterable[str], source: str = "<nvidia-smi --query-gpu>") -> GpuQuery:
    rows = [(n, line) for n, line in enumerate(text_lines, start=1) if line.strip()]
    if not rows:
        raise parse_error(source, TOOL, "(document)", "expected a header and one row per GPU", "an empty file")
    table = list(csv.reader([line for _, line in rows], skipinitialspace=True))
    names, units = _columns(table[0], source)
    gpus = []
    for (n, _), cells in zip(rows[1:], table[1:], strict=True):
        if len(cells) != len(names):
            raise parse_error(source, TOOL, f"line {n}", f"expected {len(names)} values as the header names, got "
                              f"{len(cells)}", ", ".join(cells))
        gpus.append(_gpu(n, names, units, [c.strip() for c in cells], source))
    return GpuQuery(source=source, columns=tuple(names), units=units, gpus=tuple(gpus))


def _gpu(n: int, names: list[str], units: dict[str, str], cells: list[str], source: str) -> GpuRow:
    typed: dict[str, object] = {}
    other: dict[str, str | None] = {}
    for name, cell in zip(names, cells, strict=True):
        value = None if cell in UNAVAILABLE else cell
        if value is not None and (unit := units.get(name)) and value.endswith(f" {unit}"):
            value = value[: -len(unit) - 1]
        if name not in TYPED:
            other[name] = value
            continue
        field, kind = TYPED[name]
        if value is not None and kind is int:
            if not re.fullmatch(r"\d+", value):
                raise parse_error(source, TOOL, f"line {n}: {name}", "expected a whole number, or [N/A]", cell)
            typed[field] = int(value)
        else:
            typed[field] = value
    try:
        return GpuRow.model_validate({**typed, "other": other})
    except ValidationError as exc:
        raise invalid(source, TOOL, f"line {n}", exc) from None
