"""Every kind of bad file given to ``parse`` or found by ``accept --results`` is a ParseError naming the file (exit 2,
no traceback), and the text parsers stream (issue 16 item 4). Inputs are the recorded fixtures, mutated here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import build
from tests.big_logs import NCCL, PERFTEST, nccl_log, nccl_runs_log, peak_rss
from validators.errors import ParseError
from validators.parse import parse_file, write_parsed

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
RECORDED = {"fio": FIXTURES / "fio" / "results" / "fio" / "seq_read" / "client-1.json", "nccl": NCCL,
            "ib_write_bw": PERFTEST, "ib_read_lat": FIXTURES / "rdma" / "lab-ib_read_lat-rail0.client.txt"}
TABLE_MISSING = {"fio": "expected fio JSON output", "nccl": "expected a results table",
                 "ib_write_bw": "expected a results table starting with '#bytes'",
                 "ib_read_lat": "expected a results table starting with '#bytes'"}


def _truncated(tool: str, path: Path) -> str:
    data = RECORDED[tool].read_bytes()
    path.write_bytes(data[: {"fio": len(data) // 2}.get(tool, data.index(b"#bytes") if b"#bytes" in data else 40)])
    return {"fio": "invalid JSON"}.get(tool, TABLE_MISSING[tool])


def _binary(tool: str, path: Path) -> str:
    path.write_bytes(RECORDED[tool].read_bytes()[:100] + b"\0\x01\x02" + RECORDED[tool].read_bytes()[100:])
    return "binary data (a NUL byte on line"


def _latin1(tool: str, path: Path) -> str:
    data = RECORDED[tool].read_bytes()
    path.write_bytes(data.replace(b" ", b" \xe9", 1))
    line = data[: data.index(b" ")].count(b"\n") + 1
    return f"not UTF-8 text: byte 0xe9 on line {line}"


def _wrong_json(tool: str, path: Path) -> str:
    path.write_text({"fio": '{"fio version": "fio-3.33", "jobs": {"read": 1}}',
                     "nccl": '{"results": [{"size": "big"}]}'}.get(tool, '{"#bytes": 1}'))
    return {"fio": "jobs: expected a non-empty array of jobs",
            "nccl": "results.0.size: expected an integer size in bytes"}.get(tool, TABLE_MISSING[tool])


def _empty(tool: str, path: Path) -> str:
    path.write_bytes(b"")
    return TABLE_MISSING[tool]


def _unreadable(tool: str, path: Path) -> str:
    shutil.copy(RECORDED[tool], path)
    path.chmod(0)
    return "cannot open it: Permission denied"


def _directory(tool: str, path: Path) -> str:
    path.mkdir()
    return "is a directory, expected a regular file of tool output"


def _loop(tool: str, path: Path) -> str:
    path.symlink_to(path.name)
    return "a symlink loop (too many levels of symbolic links)"


def _fifo(tool: str, path: Path) -> str:
    os.mkfifo(path)
    return "is a FIFO, expected a regular file of tool output"


KINDS: dict[str, Callable[[str, Path], str]] = {
    "truncated": _truncated, "binary": _binary, "non-UTF-8": _latin1, "wrong-shaped JSON": _wrong_json,
    "empty": _empty, "unreadable": _unreadable, "directory": _directory, "symlink loop": _loop, "FIFO": _fifo}


@pytest.mark.parametrize("tool", sorted(RECORDED))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_bad_file_is_a_parse_error_naming_it(tool: str, kind: str, tmp_path: Path) -> None:
    if kind == "unreadable" and os.geteuid() == 0:
        pytest.skip("root reads a mode-000 file")
    path = tmp_path / f"bad-{tool}.out"
    message = KINDS[kind](tool, path)
    with pytest.raises(ParseError) as err:
        parse_file(tool, path)
    assert str(path) in str(err.value) and message in str(err.value), str(err.value)


def test_the_recorded_files_still_parse() -> None:
    for tool, path in RECORDED.items():
        assert parse_file(tool, path).source == str(path)  # type: ignore[attr-defined]


def test_fio_json_over_the_bound_is_refused_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("validators.fio.MAX_JSON", 1024)
    path = tmp_path / "big.json"
    shutil.copy(RECORDED["fio"], path)
    with pytest.raises(ParseError, match=r"larger than 0 MiB, the bound on fio JSON output \(it is read whole\)"):
        parse_file("fio", path)


def test_an_integer_past_pythons_digit_limit_is_a_parse_error(tmp_path: Path) -> None:
    """Issue 43 item 3: an integer of 5,000 digits in fio's JSON raised ValueError (Python's 4,300-digit int-string
    limit) from inside the JSON decoder, a traceback. It is read as a float, inf, which the models refuse."""
    text = RECORDED["fio"].read_text()
    number = re.search(r'(?<="bw_bytes" : )[0-9]+', text)
    assert number is not None
    path = tmp_path / "huge.json"
    path.write_text(text[:number.start()] + "9" * 5000 + text[number.end():])
    with pytest.raises(ParseError) as err:
        parse_file("fio", path)
    assert str(path) in str(err.value) and "bw_bytes: input should be a finite number" in str(err.value)
    assert "9" * 100 not in str(err.value)


def test_a_line_longer_than_the_bound_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("validators.source.MAX_LINE", 1 << 20)
    path = tmp_path / "one-line.txt"
    path.write_bytes(b"x" * ((1 << 20) + 10))
    with pytest.raises(ParseError, match="line 1 is longer than 1 MiB; expected text tool output"):
        parse_file("nccl", path)


@pytest.mark.parametrize(("text", "message"), [
    ("#  size count busbw\n1024 256 float sum -1 1 2 3 0 1 2 3 0\n", "the table's header names no time column"),
    (NCCL.read_text() + "# Avg bus bandwidth    :\n", "expected a number after the colon"),
    (NCCL.read_text().replace(" 6.36 ", " inf ", 1), "expected a number"),
])
def test_mutated_nccl_text_is_a_parse_error(text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "nccl.txt"
    path.write_text(text)
    with pytest.raises(ParseError, match=message):
        parse_file("nccl", path)


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "validators", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=60)


def test_parse_of_a_fifo_exits_2_at_once(tmp_path: Path) -> None:
    os.mkfifo(fifo := tmp_path / "nccl.txt")
    r = _cli("parse", "nccl", fifo)
    assert r.returncode == 2 and f"{fifo}: (file): is a FIFO" in r.stderr and "Traceback" not in r.stderr


def test_accept_results_with_a_bad_file_exits_2_naming_it(tmp_path: Path) -> None:
    out, _ = build(plan(load_requirements(REPO / "examples" / "cv-training-500tb.yaml")), tmp_path / "out")
    results = tmp_path / "results"
    (results / "nccl").mkdir(parents=True)
    (loop := results / "nccl" / "run.txt").symlink_to("run.txt")
    r = _cli("accept", out, "--results", results, "--report-dir", tmp_path / "report", "--only",
             "nccl.allreduce_busbw")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{loop}: (file): a symlink loop" in r.stderr and "Traceback" not in r.stderr


def test_nccl_parse_memory_stays_flat_on_a_long_log(tmp_path: Path) -> None:
    """The unit tier's proportional check; tests/bench_parse_memory.py runs the same at 300 MB and 1 GB."""
    _, base, _ = peak_rss("nccl", NCCL)
    rc, rss, err = peak_rss("nccl", nccl_log(tmp_path / "big.txt", 24 << 20))
    assert rc == 0, err
    assert rss - base < 16 * 1024, f"peak RSS grew {(rss - base) / 1024:.1f} MiB on a 24 MiB log"


def test_nccl_parse_streams_a_log_of_many_runs(tmp_path: Path) -> None:
    """Issue 43 item 3: the parser streamed, the command held every run and then their JSON (2.4 GiB for a 100 MB
    log of runs, 2026-12-07). It writes a run at a time, the same text as the whole model's JSON."""
    log = nccl_runs_log(tmp_path / "runs.txt", 4 << 20)
    _, base, _ = peak_rss("nccl", NCCL)
    rc, rss, err = peak_rss("nccl", log)
    assert rc == 0, err
    assert rss - base < 16 * 1024, f"peak RSS grew {(rss - base) / 1024:.1f} MiB on a 4 MiB log of runs"
    few = tmp_path / "few.txt"
    few.write_bytes(NCCL.read_bytes() * 3)
    for path in (NCCL, few):
        streamed: list[str] = []
        write_parsed("nccl", path, streamed.append)
        assert "".join(streamed) == parse_file("nccl", path).model_dump_json(indent=2)
    assert len(parse_file("nccl", few).runs) == 3  # type: ignore[attr-defined]


# Values no hardware produces (issue 37, item 5): each recorded file with one number made negative is refused where it
# is read, naming the file, the field and the value, so it never reaches a verdict.
NEGATIVE = [
    ("fio", FIXTURES / "fio" / "results" / "fio" / "seq_read" / "client-1.json", '"99.000000" : 244318208',
     '"99.000000" : -244318208', "jobs.0.read.clat_ns.percentile", "99.000000: -244318208"),
    ("fio", FIXTURES / "fio" / "results" / "fio" / "seq_read" / "client-1.json", '"bw_bytes" : ',
     '"bw_bytes" : -', "jobs.0.read.bw_bytes", "-"),
    ("ib_write_bw", FIXTURES / "rdma" / "lab-ib_write_bw-rail0.client.txt", "0.013789", "-0.013789",
     "row 1.average_gbit", "-0.013789"),
    ("nccl", FIXTURES / "nccl" / "a3mega-2x8-h100.txt", "47535  180.71  338.82", "47535  180.71  -338.82",
     "line 54.busbw", "-338.82"),
]


@pytest.mark.parametrize(("tool", "src", "old", "new", "field", "shown"), NEGATIVE,
                         ids=["fio-percentile", "fio-bandwidth", "perftest-bandwidth", "nccl-busbw"])
def test_a_negative_measure_is_refused_naming_the_field(tmp_path: Path, tool: str, src: Path, old: str, new: str,
                                                        field: str, shown: str) -> None:
    text = src.read_text()
    assert old in text, f"the recording changed: {old!r} not in {src.name}"
    path = tmp_path / src.name
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ParseError) as err:
        parse_file(tool, path)
    problem = err.value.problems[0]
    assert problem.path == field and "expected" in problem.message and ">= 0" in problem.message, problem
    assert shown in f"{problem.message} {problem.value}", problem  # a map's entry is named in the message
    assert str(path) in str(err.value)


@pytest.mark.parametrize(("factor", "refused"), [(2.0, True), (0.5, True), (1.005, False)],
                         ids=["twice-the-max", "half-the-min", "within-fio-bucket-error"])
def test_a_percentile_outside_the_runs_min_and_max_is_refused(tmp_path: Path, factor: float, refused: bool) -> None:
    """The lab's recorded seq_read with its p99 edited to twice the record's max or half its min: no run measures that,
    refused naming the file, the field and the value. Just past the max, as fio's bucket middles can be (within 1/128
    of the value), it stands."""
    import json

    src = FIXTURES / "fio" / "results" / "fio" / "seq_read" / "client-1.json"
    text = src.read_text()
    clat = json.loads(text)["jobs"][0]["read"]["clat_ns"]
    bound = clat["min"] if factor < 1 else clat["max"]
    value = int(bound * factor)
    old = f'"99.000000" : {int(clat["percentile"]["99.000000"])}'
    assert old in text, f"the recording changed: {old!r} not in {src.name}"
    path = tmp_path / src.name
    path.write_text(text.replace(old, f'"99.000000" : {value}', 1))
    if not refused:
        assert parse_file("fio", path).jobs[0].read.clat_ns.at(99.0) == value  # type: ignore[union-attr]
        return
    with pytest.raises(ParseError) as err:
        parse_file("fio", path)
    problem = err.value.problems[0]
    assert problem.path == "jobs.0.read.clat_ns", problem
    assert f"percentile 99.000000: {value} ns lies outside this record's min {clat['min']} and max " \
           f"{clat['max']} ns" in problem.message, problem
    assert str(path) in str(err.value)


LIMIT_TOKENS = [repr(sys.float_info.max), repr(-sys.float_info.max), repr(sys.float_info.min), "5e-324", "1e309",
                "-1e309", "nan", "inf"]
LIMIT_SEEDS = [("fio", FIXTURES / "fio" / "results" / "fio" / "seq_read" / "client-1.json"),
               ("nccl", FIXTURES / "nccl" / "a3mega-2x8-h100.txt"),
               ("ib_write_bw", FIXTURES / "rdma" / "lab-ib_write_bw-rail0.client.txt"),
               ("ib_read_lat", FIXTURES / "rdma" / "lab-ib_read_lat-rail0.client.txt")]


@pytest.mark.parametrize(("tool", "src"), LIMIT_SEEDS, ids=[t for t, _ in LIMIT_SEEDS])
def test_numbers_at_the_float_limits_parse_or_are_refused_by_name(tmp_path: Path, tool: str, src: Path) -> None:
    """Issue 37 item 7: a recorded output with one number at a time (every fifth, up to 40) replaced by a float limit
    (the largest and smallest doubles, one past the largest, inf, nan): read, or refused with a ParseError naming the
    file; never another exception."""
    import re

    text = src.read_text()
    numbers = list(re.finditer(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])", text))[::5][:40]
    refused = 0
    for m in numbers:
        for token in LIMIT_TOKENS:
            path = tmp_path / src.name
            path.write_text(text[: m.start()] + token + text[m.end():])
            try:
                parse_file(tool, path)
            except ParseError as err:
                refused += 1
                assert str(path) in str(err) and err.problems, err
    assert len(numbers) >= 5 and refused > 0


def test_every_sample_past_fios_histogram_reads_at_its_last_group() -> None:
    """Every I/O slower than the ~17.2 s fio's histogram tracks: fio counts them in its last group, so the percentiles
    read there, below the record's min. That is fio's arithmetic, not an edit: it stands."""
    from validators.fio import HISTOGRAM_CEILING_NS, ClatNs

    top = float(HISTOGRAM_CEILING_NS)
    record = ClatNs(min=40e9, max=90e9, mean=60e9, stddev=1e9, percentile={"50.000000": top, "99.000000": top})
    assert record.at(99.0) == top


def test_a_negative_bandwidth_log_sample_is_refused(tmp_path: Path) -> None:
    from validators.fio import parse_bw_log_file

    path = tmp_path / "client-1_bw.1.log"
    path.write_text("500, 194560, 0, 0, 0\n1001, -163840, 0, 0, 0\n")
    with pytest.raises(ParseError) as err:
        parse_bw_log_file(path)
    problem = err.value.problems[0]
    assert problem.path == "line 2.kib_s" and "expected a value >= 0" in problem.message and problem.value == "-163840"
