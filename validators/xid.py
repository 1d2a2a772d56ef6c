"""Kernel log lines of the NVIDIA driver's Xid and NVSwitch SXid events into typed events, and the Xid catalogue.

An Xid line, whatever precedes it (dmesg's ``[  65.315783]`` or ``[Fri Aug 30 11:43:09 2024]``, journalctl's
``Mar 21 20:18:56 host kernel:``)::

    NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
    NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008, errorString ...
    NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus

``pid=`` and ``name=`` are there on newer drivers only. An SXid line (NVSwitch)::

    nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up

Every other line is skipped; a line that says ``NVRM: Xid`` or ``SXid (`` but is not of this form is refused, so a
changed format cannot hide an event. ``xid_action`` reads ``xid_catalogue.yaml``: what NVIDIA's documentation says
to do, ``unknown`` wherever it has not been read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field

from blueprints.model import Frozen
from validators.errors import parse_error
from validators.source import lines

TOOL = "kernel log (NVRM Xid)"
XID = re.compile(r"NVRM: Xid \(PCI:(?P<bus>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
                 r"(?P<xid>\d+)(?:, (?P<rest>.*))?$")
PID = re.compile(r"^pid=(?:'(?P<quoted>[^']*)'|(?P<plain>[^,]*)), name=(?P<name>[^,]*)(?:, (?P<rest>.*))?$")
SXID = re.compile(r"(?P<switch>nvidia-nvswitch\d+): SXid \(PCI:(?P<bus>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:"
                  r"[0-9A-Fa-f]{2}\.[0-7])\): (?P<sxid>\d+), (?P<rest>.*)$")
Action = Literal["reset_or_service", "application", "no_action", "unknown"]


class XidEvent(Frozen):
    line: int = Field(ge=1, description="Line number in the log")
    prefix: str = Field(description="What precedes 'NVRM:' (the log's timestamp and host), stripped")
    bus_id: str = Field(description="The GPU's PCI bus id as the driver prints it, e.g. 0000:3b:00")
    xid: int = Field(ge=0)
    pid: str | None = Field(default=None, description="As printed ('<unknown>' kept); None where the driver printed "
                            "no pid")
    process: str | None = Field(default=None, description="name=, None where the driver printed none")
    text: str = Field(description="The message after the number (and pid/name)")


class SXidEvent(Frozen):
    line: int = Field(ge=1)
    prefix: str
    switch: str = Field(description="e.g. nvidia-nvswitch1")
    bus_id: str = Field(description="The NVSwitch's PCI bus id, e.g. 0000:06:00.0")
    sxid: int = Field(ge=0)
    text: str


class KernelXids(Frozen):
    source: str
    lines: int = Field(ge=0, description="Lines read")
    xids: tuple[XidEvent, ...]
    sxids: tuple[SXidEvent, ...]


def parse_xid(text: str, source: str = "<kernel log>") -> KernelXids:
    return parse_xid_lines(text.splitlines(), source)


def parse_xid_file(path: Path) -> KernelXids:
    return parse_xid_lines(lines(path), str(path))


def parse_xid_lines(text_lines: Iterable[str], source: str = "<kernel log>") -> KernelXids:
    xids: list[XidEvent] = []
    sxids: list[SXidEvent] = []
    n = 0
    for n, line in enumerate(text_lines, start=1):
        if "NVRM: Xid" in line:
            xids.append(_xid(n, line, source))
        elif "SXid (" in line:
            if (m := SXID.search(line)) is None:
                raise parse_error(source, TOOL, f"line {n}", "expected 'nvidia-nvswitchN: SXid (PCI:dddd:bb:dd.f): "
                                  "<number>, <message>'", line.strip())
            sxids.append(SXidEvent(line=n, prefix=line[:m.start()].strip(), switch=m["switch"], bus_id=m["bus"],
                                   sxid=int(m["sxid"]), text=m["rest"].strip()))
    return KernelXids(source=source, lines=n, xids=tuple(xids), sxids=tuple(sxids))


def _xid(n: int, line: str, source: str) -> XidEvent:
    m = XID.search(line)
    if m is None:
        raise parse_error(source, TOOL, f"line {n}", "expected 'NVRM: Xid (PCI:dddd:bb:dd): <number>, <message>'",
                          line.strip())
    rest = (m["rest"] or "").strip()
    pid = process = None
    if rest.startswith("pid="):
        p = PID.match(rest)
        if p is None:
            raise parse_error(source, TOOL, f"line {n}", "expected 'pid=<pid>, name=<name>, <message>' after the "
                              "Xid number", rest)
        pid = p["quoted"] if p["quoted"] is not None else p["plain"]
        process, rest = p["name"], (p["rest"] or "").strip()
    return XidEvent(line=n, prefix=line[:m.start()].strip(), bus_id=m["bus"], xid=int(m["xid"]), pid=pid,
                    process=process, text=rest)


class CatalogueEntry(Frozen):
    action: Action
    name: str | None = None
    page: str | None = Field(default=None, description="The documentation page the action was read on")
    says: str | None = Field(default=None, description="What that page says, quoted")


class XidCatalogue(Frozen):
    source: str = Field(description="NVIDIA's Xid documentation")
    read_on: str
    xids: dict[int, CatalogueEntry]


@cache
def xid_catalogue() -> XidCatalogue:
    """``validators/xid_catalogue.yaml``, read once."""
    return XidCatalogue.model_validate(yaml.safe_load((Path(__file__).parent / "xid_catalogue.yaml").read_text()))


def xid_action(xid: int) -> Action:
    """What NVIDIA's documentation says an Xid needs, as far as the catalogue records it; ``unknown`` otherwise."""
    entry = xid_catalogue().xids.get(xid)
    return "unknown" if entry is None else entry.action
