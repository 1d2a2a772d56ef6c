"""nccl-tests parsing on published output (tests/fixtures/nccl, sources in its README): every layout, the
--tag-output prefixes, the JSON writer's format, and the rule that the footer average is not the measure."""

from __future__ import annotations

from pathlib import Path

import pytest

from validators.errors import ParseError
from validators.nccl import NcclRun, parse_nccl, parse_nccl_json, parse_nccl_text

NCCL = Path(__file__).resolve().parents[2] / "fixtures" / "nccl"


def load(name: str) -> NcclRun:
    path = NCCL / name
    return parse_nccl(path.read_text(), str(path))


def test_current_layout_sample_b() -> None:
    run = load("sample-b-1x8-h100.txt")
    assert run.layout == "current" and len(run.rows) == 4
    last = run.rows[-1]
    assert (last.size, last.count, last.type, last.redop, last.root) == (2147483648, 536870912, "float", "sum", -1)
    assert last.out_of_place is not None and last.in_place is not None
    assert (last.out_of_place.time_us, last.out_of_place.algbw, last.out_of_place.busbw) == (7983.5, 268.99, 470.73)
    assert last.in_place.busbw == 470.63 and last.out_of_place.wrong == 0
    assert run.avg_busbw == 448.212 and run.out_of_bounds == 0


def test_two_node_sweep_footer_average_is_far_below_the_large_sizes() -> None:
    run = load("a3mega-2x8-h100.txt")
    assert run.ranks == 16 and len(run.rows) == 31
    large = run.large(2 * 1024**3)
    assert [r.size for r in large] == [2147483648, 4294967296, 8589934592]
    assert min(r.out_of_place.busbw for r in large if r.out_of_place) == 318.40
    assert run.avg_busbw == 70.742  # the sweep average, small sizes included


def test_tag_output_prefixes_and_interleaved_nccl_info_lines() -> None:
    run = load("eks-efa-tag-output-2x1.txt")
    assert run.layout == "current" and len(run.rows) == 31
    assert run.rows[0].size == 0 and run.rows[-1].size == 1073741824
    assert run.rows[-1].out_of_place is not None and run.rows[-1].out_of_place.busbw == 3.11
    assert run.avg_busbw == 1.15327


def test_older_layout_without_root_and_with_an_error_column() -> None:
    run = load("efa-eks-old-layout-2x8-a100.txt")
    assert run.layout == "old" and run.ranks == 16 and len(run.rows) == 28
    last = run.rows[-1]
    assert last.root is None and last.redop == "sum"
    assert last.out_of_place is not None and last.out_of_place.busbw == 32.71
    assert last.out_of_place.wrong == pytest.approx(5e-07)  # max error, a float in this layout


def test_an_older_alltoall_with_an_empty_redop_column() -> None:
    """NVIDIA/nccl-tests#78: alltoall_perf of the 12-column layout leaves redop blank (8 nodes x 8 V100, 100G IB).
    The rows are read with no reduction, the columns after it in their places."""
    run = load("issue78-old-layout-alltoall-empty-redop.txt")
    assert run.layout == "old" and [r.size for r in run.rows] == [268435456, 536870912]
    first = run.rows[0]
    assert (first.type, first.redop, first.root) == ("float", None, None)
    assert first.out_of_place is not None and (first.out_of_place.time_us, first.out_of_place.busbw) == (520935, 0.51)
    assert first.in_place is not None and first.in_place.wrong == 1.0  # the old layout's max error, as printed
    assert run.avg_busbw == 0.507636 and run.failures() == ()


def test_a_current_alltoall_row_with_a_blank_redop_keeps_its_root() -> None:
    """The same blank redop under the 13-column header (root printed as -1): the blank is filled where the header
    has redop, never guessed for a row that is short for another reason."""
    header = "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   " \
             "algbw   busbw  #wrong"
    run = parse_nccl(f"{header}\n   268435456       1048576     float      -1   520935    0.52    0.51       0   "
                     "519562    0.52    0.51     N/A\n", "x")
    assert (run.rows[0].redop, run.rows[0].root) == (None, -1)
    with pytest.raises(ParseError, match="expected 13 columns as the header names, got 11"):
        parse_nccl(f"{header}\n   268435456       1048576     float   520935    0.52    0.51       0   519562  "
                   "  0.52    0.51     N/A\n", "x")


def test_oldest_layout_rows_without_a_header() -> None:
    run = load("issue44-oldest-layout-rows.txt")
    assert run.layout == "oldest" and run.rows[0].redop is None and run.rows[0].root is None
    assert run.rows[-1].size == 134217728 and run.rows[-1].in_place is not None
    assert run.rows[-1].in_place.busbw == 21.86


def test_json_output_from_the_source_format() -> None:
    run = load("sample-b-1x8-h100.from-source-format.json")
    text_run = load("sample-b-1x8-h100.txt")
    assert run.layout == "json" and run.ranks is None
    assert [(r.size, r.out_of_place.busbw if r.out_of_place else None) for r in run.rows] == \
        [(r.size, r.out_of_place.busbw if r.out_of_place else None) for r in text_run.rows]
    assert run.rows[0].root == -1 and run.avg_busbw == 448.212 and run.out_of_bounds == 0


def test_per_iteration_fields_in_json_are_read() -> None:
    text = (NCCL / "sample-b-1x8-h100.from-source-format.json").read_text()
    run = parse_nccl_json(text, "x.json")
    timed = [r for r in run.rows if r.out_of_place and r.out_of_place.times_us]
    assert timed == [], "sample B was run without -I"


@pytest.mark.parametrize(("text", "field", "message"), [
    ("", "(document)", "expected a results table"),
    ("NCCL INFO only noise\n", "(document)", "expected a results table"),
    ("#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
     "1024 256 float sum -1 10.0 0.1 0.1 0\n", "line 2", "expected 13 columns as the header names, got 9"),
    ("1024 256 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0 7\n", "line 1", "no known layout"),
    ("#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
     "1024 256 float sum -1 10.0 fast 0.1 0 10.0 0.1 0.1 0\n", "line 2: algbw", "expected a number"),
])
def test_bad_text_output_names_the_line(text: str, field: str, message: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_nccl_text(text, "bad.txt")
    assert err.value.problems[0].path == field and message in err.value.problems[0].message


@pytest.mark.parametrize(("text", "field", "message"), [
    ('{"results": []}', "results", "expected a non-empty results[] array"),
    ('{"results": [{"size": "big"}]}', "results.0.size", "expected an integer size"),
    ('{"results": [{"size": 8, "out_of_place": {"time": 1.0, "alg_bw": null, "bus_bw": 1.0}}]}',
     "results.0.out_of_place.alg_bw", "expected a number"),
    ('{"results": [', "(line 1)", "invalid JSON"),
])
def test_bad_json_output_names_the_field(text: str, field: str, message: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_nccl_json(text, "bad.json")
    assert err.value.problems[0].path == field and message in err.value.problems[0].message
