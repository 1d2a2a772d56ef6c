"""nccl-tests (``all_reduce_perf`` and friends): text and JSON output into typed results.

Text: the table is read by its header, so every layout parses: the current one
(``size count type redop root | time algbw busbw #wrong`` twice), the older one without ``root`` whose
``error`` column holds a float, the oldest without ``redop``, and the per-iteration (``-I``) and bitwise
columns; alltoall rows of older versions that leave ``redop`` blank (nccl-tests#78) are read with no reduction.
``mpirun --tag-output`` prefixes (``[1,0]<stdout>:``) are stripped wherever they sit in a line (ranks
writing at once interleave them mid-row), so is Slurm's ``srun --label`` prefix (``0: ``) at the start of one, and
interleaved ``NCCL INFO`` lines skipped. A log may hold several runs
one after another (all_reduce_perf, all_gather_perf, ... as cluster scripts write them): each is its own
``NcclRun``, begun by nccl-tests' ``# nccl-tests version`` / ``# Collective test starting`` / ``# nThread`` lines
or a new table header, ended by its own footer; runs are never merged. JSON (``-J``): the ``results[]`` the
writer in nccl-tests' ``src/util.cu`` emits, with ``*_per_iter`` timing when run with ``-I``. GB/s here is
10^9 B/s, as nccl-tests computes it.

The footer's "Avg bus bandwidth" averages every size of the sweep (small ones included), so it is kept
for reference only; the check reads busbw at the large sizes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from blueprints.figures import plain
from blueprints.model import ParsedFinite
from validators.errors import invalid, parse_error
from validators.source import MAX_JSON, document, json_loads, lines

TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err)>:")
LABEL = re.compile(r"^\s*\d+: ")  # Slurm's srun --label: the task's number, a colon and a space
RANK = re.compile(r"^#\s*Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)")
STARTED = re.compile(r"^#\s*Collective test starting:\s*(?P<test>\S+)")
SWEEP = re.compile(r"^#\s*nThread\s+\d+\s+nGpus\s+\d+\s+minBytes\s+(?P<min>\d+)\s+maxBytes\s+(?P<max>\d+)")
HEADER_WORDS = {"size", "count", "busbw"}
BLOCK_NAMES = {"time": "time_us", "cputime": "time_us", "algbw": "algbw", "busbw": "busbw", "#wrong": "wrong",
               "error": "wrong", "#bitdiff": "bitdiff", "i_min": "iter_min_us", "i_max": "iter_max_us",
               "i_p99": "iter_p99_us", "i_cv%": "iter_cv_pct"}
DEFAULT_HEADERS = {  # when a file carries rows but no header: column count -> the layout's header
    13: "size count type redop root time algbw busbw #wrong time algbw busbw #wrong",
    12: "size count type redop time algbw busbw error time algbw busbw error",
    11: "size count type time algbw busbw error time algbw busbw error",
}
Layout = Literal["current", "old", "oldest", "json"]


class NcclBlock(ParsedFinite):
    """One half of a row: out-of-place or in-place."""

    time_us: float = Field(ge=0)
    algbw: float = Field(ge=0, description="GB/s (10^9 B/s)")
    busbw: float = Field(ge=0, description="GB/s (10^9 B/s)")
    wrong: float | None = Field(default=None, description="#wrong elements (current), max error (old); None: N/A")
    iter_cv_pct: float | None = Field(default=None, description="-I: coefficient of variation of iteration times")
    iter_p99_us: float | None = None
    times_us: tuple[float, ...] = Field(default=(), description="JSON -I: every iteration's time")


class NcclRow(ParsedFinite):
    size: int = Field(ge=0, description="bytes")
    count: int = Field(ge=0)
    type: str
    redop: str | None = None
    root: int | None = None
    out_of_place: NcclBlock | None
    in_place: NcclBlock | None


class NcclRun(ParsedFinite):
    source: str
    layout: Layout
    rows: tuple[NcclRow, ...]
    test: str | None = Field(default=None, description="'# Collective test starting: <program>', when printed")
    ranks: int | None = Field(default=None, description="Ranks listed in the device report")
    hosts: tuple[str, ...] = Field(default=(), description="Distinct hosts of the device report's ranks")
    max_bytes: int | None = Field(default=None, description="The sweep's maxBytes from the '# nThread' line")
    avg_busbw: float | None = Field(default=None, description='Footer "Avg bus bandwidth" (whole sweep)')
    out_of_bounds: int | None = None
    out_of_bounds_line: str | None = Field(default=None, description="The footer line, as nccl-tests wrote it")
    footer: bool = Field(default=False, description="The run printed its footer (a complete sweep)")
    first_line: int = 1

    def large(self, min_bytes: int) -> tuple[NcclRow, ...]:
        return tuple(r for r in self.rows if r.size >= min_bytes)

    @property
    def name(self) -> str:
        return f"{self.test or 'run'} at line {self.first_line}"

    def failures(self) -> tuple[str, ...]:
        """Errors nccl-tests itself reported, in its words: ``#wrong`` > 0 in a row (the current and JSON
        layouts count wrong elements; the old layouts' ``error`` column is a float deviation) and
        ``Out of bounds values : N FAILED`` with N > 0."""
        out = []
        if self.layout in ("current", "json"):
            for r in self.rows:
                for label, block in (("out-of-place", r.out_of_place), ("in-place", r.in_place)):
                    if block is not None and block.wrong is not None and block.wrong > 0:
                        out.append(f"#wrong {plain(block.wrong)} at {r.size} B ({label})")
        if self.out_of_bounds:
            out.append(self.out_of_bounds_line or f"Out of bounds values : {self.out_of_bounds} FAILED")
        return tuple(out)


class NcclLog(ParsedFinite):
    """Every nccl-tests run of one file, in the order they were written."""

    source: str
    runs: tuple[NcclRun, ...]


def _number(token: str) -> float | None:
    if token in ("N/A", "nan", "-nan"):
        return None
    value = float(token)
    if not math.isfinite(value):
        raise ValueError(token)
    return value


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _block(names: list[str], tokens: list[str], source: str, line: int) -> NcclBlock:
    values: dict[str, float | None] = {}
    for name, token in zip(names, tokens, strict=True):
        key = BLOCK_NAMES.get(name)
        if key is None:
            continue
        try:
            values[key] = _number(token)
        except ValueError:
            raise parse_error(source, "nccl-tests", f"line {line}: {name}", "expected a number", token) from None
    try:
        return NcclBlock.model_validate(values)
    except ValidationError as exc:
        raise invalid(source, "nccl-tests", f"line {line}", exc) from None


def _layout(header: list[str]) -> Layout:
    if "root" in header:
        return "current"
    return "old" if "redop" in header else "oldest"


def _row(header: list[str], tokens: list[str], source: str, line: int) -> NcclRow:
    first_time = next((i for i, h in enumerate(header) if h in ("time", "cputime")), None)
    if first_time is None:
        raise parse_error(source, "nccl-tests", f"line {line}", "the table's header names no time column",
                          " ".join(header))
    ident, rest = header[:first_time], header[first_time:]
    width = next((i for i, h in enumerate(rest[1:], start=1) if h in ("time", "cputime")), len(rest))
    block_names = rest[:width]
    if "redop" in ident and len(tokens) == len(ident) - 1 + 2 * width and _is_number(tokens[ident.index("redop")]):
        # alltoall and its siblings in older nccl-tests print an empty redop (printf "%6s" of ""): the column is blank
        tokens = [*tokens[: ident.index("redop")], "", *tokens[ident.index("redop"):]]
    if len(tokens) != len(ident) + 2 * width:
        raise parse_error(source, "nccl-tests", f"line {line}",
                          f"expected {len(ident) + 2 * width} columns as the header names, got {len(tokens)}",
                          " ".join(tokens))
    fields = dict(zip(ident, tokens[: len(ident)], strict=True))
    try:
        size, count = int(fields["size"]), int(fields["count"])
        root = int(fields["root"]) if "root" in fields else None
    except ValueError:
        raise parse_error(source, "nccl-tests", f"line {line}", "expected integer size, count and root",
                          " ".join(tokens)) from None
    oop = tokens[len(ident): len(ident) + width]
    ip = tokens[len(ident) + width:]
    out_of_place, in_place = _block(block_names, oop, source, line), _block(block_names, ip, source, line)
    try:
        return NcclRow(size=size, count=count, type=fields.get("type", ""), redop=fields.get("redop") or None,
                       root=root,
                       out_of_place=out_of_place, in_place=in_place)
    except ValidationError as exc:
        raise invalid(source, "nccl-tests", f"line {line}", exc) from None


def _footer_number(line: str, source: str, n: int) -> str:
    parts = line.split(":", 1)[1].split() if ":" in line else []
    if not parts:
        raise parse_error(source, "nccl-tests", f"line {n}", "expected a number after the colon", line)
    return parts[0]


class _Run:
    """One run being read: its header, rows and footer."""

    def __init__(self, first_line: int) -> None:
        self.first_line = first_line
        self.header: list[str] | None = None
        self.rows: list[NcclRow] = []
        self.hosts: list[str] = []
        self.ranks = 0
        self.test: str | None = None
        self.max_bytes: int | None = None
        self.avg: float | None = None
        self.oob: int | None = None
        self.oob_line: str | None = None
        self.footer = False

    @property
    def started(self) -> bool:
        return bool(self.rows) or self.footer

    def done(self, source: str) -> NcclRun:
        assert self.header is not None
        return NcclRun(source=source, layout=_layout(self.header), rows=tuple(self.rows), test=self.test,
                       ranks=self.ranks or None, hosts=tuple(dict.fromkeys(self.hosts)), max_bytes=self.max_bytes,
                       avg_busbw=self.avg, out_of_bounds=self.oob, out_of_bounds_line=self.oob_line,
                       footer=self.footer, first_line=self.first_line)


def parse_nccl_log_lines(text_lines: Iterable[str], source: str = "<nccl-tests>", start: int = 1) -> NcclLog:
    """Every run of nccl-tests text output, read a line at a time (memory does not grow with the NCCL INFO lines
    around it)."""
    return NcclLog(source=source, runs=tuple(iter_nccl_runs(text_lines, source, start)))


def iter_nccl_runs(text_lines: Iterable[str], source: str = "<nccl-tests>", start: int = 1) -> Iterator[NcclRun]:
    """Each run of nccl-tests text output as soon as it ends, so a log of many runs is never held whole (``parse
    nccl`` streams them out); a file with none is a ParseError once it is read."""
    found = 0
    run = _Run(start)
    first = ""
    for n, raw in enumerate(text_lines, start=start):
        line = TAG.sub("", LABEL.sub("", raw, count=1)).strip()
        first = first or line[:60]
        if line.startswith("#"):
            words = line.lstrip("#").split()
            opens = (line.startswith(("# nccl-tests version", "# Collective test starting")) or SWEEP.match(line)
                     or (set(words) >= HEADER_WORDS and run.rows))
            if opens and run.started:  # the next run begins: the one before ends here, footer or not
                if run.rows:
                    found += 1
                    yield run.done(source)
                run = _Run(n)
            try:
                if set(words) >= HEADER_WORDS:
                    run.header = words
                elif (m := STARTED.match(line)) is not None:
                    run.test = m.group("test")
                elif (m := SWEEP.match(line)) is not None:
                    run.max_bytes = int(m.group("max"))
                elif (m := RANK.match(line)) is not None:
                    run.ranks += 1
                    run.hosts.append(m.group("host"))
                elif words[:1] == ["Rank"]:
                    run.ranks += 1
                elif line.startswith("# Avg bus bandwidth"):
                    run.avg = _number(_footer_number(line, source, n))
                    run.footer = True
                elif line.startswith("# Out of bounds values"):
                    run.oob = int(_footer_number(line, source, n))
                    run.oob_line = line.lstrip("# ").strip()
            except ValueError:
                raise parse_error(source, "nccl-tests", f"line {n}", "expected a number after the colon",
                                  line) from None
            continue
        tokens = line.split()
        if len(tokens) < 2 or not tokens[0].isdigit() or not tokens[1].isdigit():
            continue  # NCCL INFO lines, blank lines, launcher noise: a row starts with size and count
        if run.header is None:
            known = DEFAULT_HEADERS.get(len(tokens))
            if known is None:
                raise parse_error(source, "nccl-tests", f"line {n}", "a data row before any header, with a column "
                                  f"count of no known layout ({', '.join(map(str, sorted(DEFAULT_HEADERS)))})",
                                  line)
            run.header = known.split()
        run.rows.append(_row(run.header, tokens, source, n))
    if run.rows:
        found += 1
        yield run.done(source)
    if not found:
        raise parse_error(source, "nccl-tests", "(document)", "expected a results table (a '#  size  count ... busbw' "
                          "header and data rows)", first or "an empty file")


def parse_nccl_lines(text_lines: Iterable[str], source: str = "<nccl-tests>", start: int = 1) -> NcclRun:
    """The one run of a single-test log (a log of several runs: ``parse_nccl_log_lines``)."""
    log = parse_nccl_log_lines(text_lines, source, start)
    if len(log.runs) > 1:
        raise parse_error(source, "nccl-tests", "(document)", f"expected one run, found {len(log.runs)} (at lines "
                          f"{', '.join(str(r.first_line) for r in log.runs)}): read it as a log of runs",
                          log.runs[1].test or "a second table")
    return log.runs[0]


def parse_nccl_text(text: str, source: str = "<nccl-tests>") -> NcclRun:
    return parse_nccl_lines(text.splitlines(), source)


def _json_block(raw: object, per_iter: object, source: str, where: str) -> NcclBlock | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise parse_error(source, "nccl-tests JSON", where, "expected an object or null", raw)
    values = {"time_us": raw.get("time", raw.get("cpu_time")), "algbw": raw.get("alg_bw"),
              "busbw": raw.get("bus_bw"), "wrong": raw.get("nwrong")}
    if isinstance(per_iter, dict):
        times = per_iter.get("times_us", ())
        values.update(iter_cv_pct=per_iter.get("cv_pct"), iter_p99_us=per_iter.get("p99_us"),
                      times_us=tuple(times) if isinstance(times, list | tuple) else times)
    for key in ("time_us", "algbw", "busbw"):
        if not isinstance(values[key], int | float) or isinstance(values[key], bool):
            name = {"time_us": "time", "algbw": "alg_bw", "busbw": "bus_bw"}[key]
            raise parse_error(source, "nccl-tests JSON", f"{where}.{name}", "expected a number", values[key])
    return NcclBlock.model_validate(values)


def parse_nccl_json(text: str, source: str = "<nccl-tests.json>") -> NcclRun:
    try:
        doc = json_loads(text)
    except json.JSONDecodeError as exc:
        raise parse_error(source, "nccl-tests JSON", f"(line {exc.lineno})", f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise parse_error(source, "nccl-tests JSON", "(document)", "nested too deeply to be -J output") from None
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(results, list) or not results:
        raise parse_error(source, "nccl-tests JSON", "results", "expected a non-empty results[] array (-J output)",
                          results)
    rows = []
    for i, item in enumerate(results):
        where = f"results.{i}"
        if not isinstance(item, dict) or not isinstance(item.get("size"), int):
            raise parse_error(source, "nccl-tests JSON", f"{where}.size", "expected an integer size in bytes",
                              item.get("size") if isinstance(item, dict) else item)
        root = str(item.get("root", "")).strip()
        count = item.get("count", 0)
        if not isinstance(count, int):
            raise parse_error(source, "nccl-tests JSON", f"{where}.count", "expected an integer", count)
        try:
            rows.append(NcclRow(
                size=item["size"], count=count, type=str(item.get("type", "")),
                redop=item.get("redop"), root=int(root) if root.lstrip("-").isdigit() else None,
                out_of_place=_json_block(item.get("out_of_place"), item.get("out_of_place_per_iter"), source,
                                         f"{where}.out_of_place"),
                in_place=_json_block(item.get("in_place"), item.get("in_place_per_iter"), source,
                                     f"{where}.in_place"),
            ))
        except ValidationError as exc:
            raise invalid(source, "nccl-tests JSON", where, exc) from None
    config = found if isinstance(found := doc.get("config"), dict) else {}
    devices = doc.get("devices", config.get("devices"))
    avg = doc.get("average_bus_bandwidth")
    oob = doc.get("out_of_bounds")
    try:
        return NcclRun(source=source, layout="json", rows=tuple(rows),
                       ranks=len(devices) if isinstance(devices, list) else None,
                       avg_busbw=avg.get("bandwidth") if isinstance(avg, dict) else None,
                       out_of_bounds=oob.get("count") if isinstance(oob, dict) else None,
                       footer=isinstance(avg, dict))
    except ValidationError as exc:
        raise invalid(source, "nccl-tests JSON", "", exc) from None


def parse_nccl(text: str, source: str = "<nccl-tests>") -> NcclRun:
    """JSON when the file is a JSON object, else the text table."""
    return parse_nccl_json(text, source) if text.lstrip().startswith("{") else parse_nccl_text(text, source)


def parse_nccl_file(path: Path) -> NcclLog:
    """A file of nccl-tests output: JSON (bounded, read whole, one run) when its first non-blank line opens an
    object, else every run of the text, streamed."""
    return NcclLog(source=str(path), runs=tuple(iter_nccl_file(path)))


def iter_nccl_file(path: Path) -> Iterator[NcclRun]:
    """The runs of ``parse_nccl_file``, one at a time."""
    stream = lines(path)
    head, skipped = "", 0
    for head in stream:
        if head.strip():
            break
        skipped += 1
    if head.lstrip().startswith("{"):
        stream.close()
        yield parse_nccl_json(document(path, "nccl-tests JSON", MAX_JSON), str(path))
        return
    yield from iter_nccl_runs(chain([head], stream), str(path), start=skipped + 1)
