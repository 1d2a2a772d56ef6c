"""perftest (``ib_write_bw``, ``ib_read_lat`` and their siblings): text output into typed results.

perftest prints a banner (test name, device, link type, QPs), then one results table between dashed
lines. Bandwidth tables: ``#bytes #iterations BW peak[..] BW average[..] MsgRate[Mpps]``, the unit in the
brackets (``Gb/sec`` with ``--report_gbits``, else ``MB/sec``, perftest's MB being 2^20 bytes). Latency
tables: ``#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% percentile 99.9% percentile``, in usec.

The server side prints the same table (``Waiting for client to connect...`` above its banner): it is recognised as
server output (``server``), which the checks do not judge as a measurement. perftest's own error lines
(``Couldn't connect to ...``, ``Completion with error at client``, ``Failed status ...``) are kept as ``errors``, in
its words; a client that failed before its table yields a result with no rows and those errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from blueprints.model import Finite
from validators.errors import invalid, parse_error
from validators.source import lines

BW_COLUMN = re.compile(r"(#bytes|#iterations|BW peak\[([^\]]+)\]|BW average\[([^\]]+)\]|MsgRate\[Mpps\])")
LAT_COLUMN = re.compile(r"(#bytes|#iterations|t_min\[usec\]|t_max\[usec\]|t_typical\[usec\]|t_avg\[usec\]"
                        r"|t_stdev\[usec\]|99% percentile\[usec\]|99\.9% percentile\[usec\])")
LAT_KEYS = {"#bytes": "bytes", "#iterations": "iterations", "t_min[usec]": "t_min_us", "t_max[usec]": "t_max_us",
            "t_typical[usec]": "t_typical_us", "t_avg[usec]": "t_avg_us", "t_stdev[usec]": "t_stdev_us",
            "99% percentile[usec]": "p99_us", "99.9% percentile[usec]": "p99_9_us"}
TO_GBIT = {"Gb/sec": 1.0, "MB/sec": 8 * 1048576 / 1e9, "MiB/sec": 8 * 1048576 / 1e9}
BANNER = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z ]*?)\s*:\s*(?P<value>\S+)")
SERVER = "Waiting for client to connect"
# perftest's own warnings, printed where they happen: between the table's header and its rows, or between rows, on
# hosts whose CPU frequency scaling is on (perftest's get_cpu_mhz; NVIDIA/deepops' RoCE guide shows one). They are
# kept as the run's warnings, never read as rows or as the table's end.
WARNING_LINE = re.compile(r"^\s*(Conflicting CPU frequency values detected|Test integrity may be harmed|"
                          r"Warning: measured timestamp frequency)")
ERROR_LINE = re.compile(r"^\s*(Did not detect devices|Couldn't|Could not|Couldnt|Unable to|Failed|"
                        r"Completion with error|Problems with|Error|ERROR|No IB devices found|IB device .* not found)")


# The banner's title as perftest prints it (src/perftest_parameters.c, ctx_print_test_info, linux-rdma/perftest at
# 00b55b6): the verb, an atomic's type, "Bidirectional " (-b), "Post List " (-l > 1), "BW " or "Latency ", then
# "forwarding " and "Multicast " where set, and "Test".
TITLE = re.compile(r"^(?P<verb>Send_imm|Send|RDMA_Write_imm|RDMA_Write|RDMA_Read|Atomic)(?: (?P<atomic>[A-Z_]+))?"
                   r"(?P<bidirectional> Bidirectional)?(?P<post_list> Post List)? (?P<kind>BW|Latency)"
                   r"(?: forwarding)?(?: Multicast)? Test$")


class Banner(Finite):
    test: str = Field(description="e.g. RDMA_Write BW Test")
    verb: str | None = Field(default=None, description="Send, Send_imm, RDMA_Write, RDMA_Write_imm, RDMA_Read, "
                             "Atomic: None where the title is not one perftest prints")
    kind: Literal["BW", "Latency"] | None = None
    bidirectional: bool = Field(default=False, description="-b: both directions added together")
    post_list: int = Field(default=1, ge=1, description="-l: work requests posted per call")
    device: str | None = None
    link_type: str | None = None
    qps: int | None = None
    connection: str | None = None

    def describe(self) -> str:
        """The test as the title names it, e.g. ``RDMA_Write BW (one direction)``."""
        if self.verb is None:
            return repr(self.test) if self.test else "no test title"
        return (f"{self.verb} {self.kind} ({'both directions added' if self.bidirectional else 'one direction'}"
                + (f", post list {self.post_list}" if self.post_list > 1 else "") + ")")


class BwRow(Finite):
    bytes: int = Field(ge=0)
    iterations: int = Field(ge=0)
    peak_gbit: float = Field(ge=0, description="Gb/s")
    average_gbit: float = Field(ge=0, description="Gb/s")
    msg_rate_mpps: float = Field(ge=0)


class PerftestBw(Finite):
    source: str
    banner: Banner
    rows: tuple[BwRow, ...]
    server: bool = Field(default=False, description="The server side's output: not a measurement")
    errors: tuple[str, ...] = Field(default=(), description="perftest's error lines, verbatim")
    warnings: tuple[str, ...] = Field(default=(), description="perftest's warnings inside its table (CPU frequency)")

    @property
    def average_gbit(self) -> float | None:
        """The average bandwidth of the largest message size measured (None: no row, the run failed)."""
        return max(self.rows, key=lambda r: r.bytes).average_gbit if self.rows else None


class LatRow(Finite):
    bytes: int = Field(ge=0)
    iterations: int = Field(ge=0)
    t_min_us: float = Field(ge=0)
    t_max_us: float = Field(ge=0)
    t_typical_us: float = Field(ge=0)
    t_avg_us: float = Field(ge=0)
    t_stdev_us: float | None = Field(default=None, ge=0)
    p99_us: float | None = Field(default=None, ge=0)
    p99_9_us: float | None = Field(default=None, ge=0)


class PerftestLat(Finite):
    source: str
    banner: Banner
    rows: tuple[LatRow, ...]
    server: bool = False
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


BANNER_KEYS = ("Device", "Link type", "Number of qps", "Connection type", "Post List")


class _BannerReader:
    """The banner's fields, gathered a line at a time; only the keys it needs are kept, so noise costs nothing."""

    def __init__(self) -> None:
        self.test = ""
        self.found: dict[str, str] = {}
        self.server = False
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def add(self, line: str) -> None:
        self.server = self.server or SERVER in line
        if ERROR_LINE.match(line) and len(self.errors) < 20:
            self.errors.append(line.strip()[:300])
        if not self.test and line.strip().endswith("Test"):
            self.test = line.strip()
        for part in line.split("\t"):
            m = BANNER.match(part)
            if m and m.group("key").strip() in BANNER_KEYS:
                self.found.setdefault(m.group("key").strip(), m.group("value"))

    def banner(self) -> Banner:
        qps, post_list = self.found.get("Number of qps"), self.found.get("Post List", "")
        title = TITLE.match(self.test)
        return Banner(test=self.test, verb=title["verb"] if title else None,
                      kind=title["kind"] if title else None,
                      bidirectional=bool(title and title["bidirectional"]),
                      post_list=int(post_list) if post_list.isdigit() and int(post_list) > 1 else 1,
                      device=self.found.get("Device"), link_type=self.found.get("Link type"),
                      qps=int(qps) if qps and qps.isdigit() else None,
                      connection=self.found.get("Connection type"))


def _table(text_lines: Iterable[str], source: str, tool: str,
           first: str) -> tuple[_BannerReader, str | None, list[list[str]]]:
    """The banner, the header line and the data rows that follow it; reading stops after the table, except for
    error lines after it. No header is a parse error unless perftest printed an error line (then it failed)."""
    banner = _BannerReader()
    header: str | None = None
    last = ""
    rows: list[list[str]] = []
    ended = False
    for n, line in enumerate(text_lines, start=1):
        stripped = line.strip()
        if (banner.test and TITLE.match(stripped)) \
                or (header is not None and stripped.startswith(first)):
            raise parse_error(source, tool, f"line {n}", "expected one perftest run per file; a second run's "
                              f"{'header' if stripped.startswith(first) else 'banner'} begins here: the output of "
                              "two runs or two processes went into one file (run each client to its own file)",
                              stripped[:200])
        if header is None:
            if stripped.startswith(first):
                header = line
            else:
                banner.add(line)
                last = stripped[:200] or last
            continue
        if ended:
            banner.add(line)
            continue
        if WARNING_LINE.match(line):
            if len(banner.warnings) < 20:
                banner.warnings.append(stripped[:300])
            continue
        if not stripped or stripped.startswith("-"):
            ended = bool(rows)
            continue
        if not stripped[0].isdigit():
            ended = True
            banner.add(line)
            continue
        rows.append(stripped.split())
    if header is None and not banner.errors:
        raise parse_error(source, tool, "(document)", f"expected a results table starting with {first!r}",
                          last or "an empty file")
    if header is not None and not rows and not banner.errors:
        raise parse_error(source, tool, "(table)", "expected at least one result row under the header",
                          header.strip())
    return banner, header, rows


def parse_perftest_bw(text: str, source: str = "<ib_write_bw>") -> PerftestBw:
    return parse_perftest_bw_lines(text.splitlines(), source)


def parse_perftest_bw_file(path: Path) -> PerftestBw:
    return parse_perftest_bw_lines(lines(path), str(path))


def parse_perftest_bw_lines(text_lines: Iterable[str], source: str = "<ib_write_bw>") -> PerftestBw:
    reader, header, raw_rows = _table(text_lines, source, "perftest bandwidth", "#bytes")
    banner = reader.banner()
    if header is None:
        return PerftestBw(source=source, banner=banner, rows=(), server=reader.server, errors=tuple(reader.errors),
                           warnings=tuple(reader.warnings))
    columns = [m.group(1) for m in BW_COLUMN.finditer(header)]
    units = {m.group(2) or m.group(3) for m in BW_COLUMN.finditer(header) if m.group(2) or m.group(3)}
    if len(columns) != 5 or len(units) != 1:
        raise parse_error(source, "perftest bandwidth", "(header)",
                          "expected '#bytes #iterations BW peak[unit] BW average[unit] MsgRate[Mpps]'", header)
    unit = units.pop()
    if unit not in TO_GBIT:
        raise parse_error(source, "perftest bandwidth", "(header)", f"expected a bandwidth unit of "
                          f"{', '.join(TO_GBIT)}", unit)
    rows = []
    for n, fields in enumerate(raw_rows, start=1):
        try:
            if len(fields) != 5:
                raise ValueError
            rows.append(BwRow(bytes=int(fields[0]), iterations=int(fields[1]),
                              peak_gbit=float(fields[2]) * TO_GBIT[unit], average_gbit=float(fields[3]) * TO_GBIT[unit],
                              msg_rate_mpps=float(fields[4])))
        except ValidationError as exc:
            raise invalid(source, "perftest bandwidth", f"row {n}", exc) from None
        except ValueError:
            raise parse_error(source, "perftest bandwidth", f"row {n}", "expected 5 numbers as the header names",
                              " ".join(fields)) from None
    return PerftestBw(source=source, banner=banner, rows=tuple(rows), server=reader.server,
                      errors=tuple(reader.errors), warnings=tuple(reader.warnings))


def parse_perftest_lat(text: str, source: str = "<ib_read_lat>") -> PerftestLat:
    return parse_perftest_lat_lines(text.splitlines(), source)


def parse_perftest_lat_file(path: Path) -> PerftestLat:
    return parse_perftest_lat_lines(lines(path), str(path))


def parse_perftest_lat_lines(text_lines: Iterable[str], source: str = "<ib_read_lat>") -> PerftestLat:
    reader, header, raw_rows = _table(text_lines, source, "perftest latency", "#bytes")
    banner = reader.banner()
    if header is None:
        return PerftestLat(source=source, banner=banner, rows=(), server=reader.server, errors=tuple(reader.errors),
                           warnings=tuple(reader.warnings))
    keys = [LAT_KEYS[m.group(1)] for m in LAT_COLUMN.finditer(header)]
    if keys[:6] != ["bytes", "iterations", "t_min_us", "t_max_us", "t_typical_us", "t_avg_us"]:
        raise parse_error(source, "perftest latency", "(header)",
                          "expected '#bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] ...'",
                          header)
    rows = []
    for n, fields in enumerate(raw_rows, start=1):
        if len(fields) != len(keys):
            raise parse_error(source, "perftest latency", f"row {n}",
                              f"expected {len(keys)} numbers as the header names", " ".join(fields))
        try:
            rows.append(LatRow.model_validate({k: float(v) if k not in ("bytes", "iterations") else int(v)
                                               for k, v in zip(keys, fields, strict=True)}))
        except ValidationError as exc:
            raise invalid(source, "perftest latency", f"row {n}", exc) from None
        except ValueError:
            raise parse_error(source, "perftest latency", f"row {n}", "expected numbers", " ".join(fields)) from None
    return PerftestLat(source=source, banner=banner, rows=tuple(rows), server=reader.server,
                       errors=tuple(reader.errors), warnings=tuple(reader.warnings))
