"""Figures as printed: no exponent, whole numbers whole, counts with their noun in the right number, sizes exact."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from blueprints.figures import counted, plain
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.summary import print_summary
from blueprints.units import Size

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


@pytest.mark.parametrize(("x", "digits", "shown"), [
    (20000.0, 4, "20000"),  # accept's table printed the lab's latency bound as "<= 2e+04"
    (4e9, 6, "4000000000"),  # the jitter alert's floor was "4e+09 B/s"
    (1e-4, 6, "0.0001"), (9.999999999999999e-05, 6, "0.0001"), (2.5e-05, 6, "0.000025"),
    (0.9500000000000001, 6, "0.95"), (41.927523, 6, "41.9275"), (41.927523, 4, "41.93"), (3.0, 6, "3"),
    (123456789.0, 4, "123456789"), (0.0, 6, "0"), (-3.5, 6, "-3.5"),
    (float("inf"), 6, "inf"), (1e300, 6, "1e+300"),  # outside what any plan holds: %g, not 301 digits
])
def test_plain(x: float, digits: int, shown: str) -> None:
    assert plain(x, digits) == shown


@pytest.mark.parametrize(("n", "one", "many", "shown"), [
    (1, "node", "", "1 node"), (2, "node", "", "2 nodes"), (0, "OSD", "", "0 OSDs"),
    (1, "leaf", "leaves", "1 leaf"), (32, "leaf", "leaves", "32 leaves"),
])
def test_counted(n: int, one: str, many: str, shown: str) -> None:
    assert counted(n, one, many) == shown


@pytest.mark.parametrize(("value", "text"), [
    (2**31, "2GiB"),  # the lab's local cache printed as "2.14748GB"
    (512 * 2**20, "512MiB"), (2044 * 2**20, "2044MiB"), (1875 * 2**40, "1875TiB"), (108000 * 2**30, "108000GiB"),
    (1966080 * 10**9, "1.96608PB"), (104 * 10**12, "104TB"), (10**12, "1TB"), (1024, "1KiB"), (1000, "1kB"),
    (999, "999B"), (0, "0B"),
])
def test_a_size_prints_exactly_and_reads_back(value: float, text: str) -> None:
    assert str(Size.of(value)) == text
    assert Size.parse(text).value == value


def test_a_size_no_unit_writes_briefly_is_rounded_as_before() -> None:
    assert str(Size.of(10**12 / 3)) == "333.333GB"
    assert str(Size.of(2441404 * 2**20)) == "2.56TB"  # 7 digits exact (2441404MiB): the rounded form reads better


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_plan_prints_no_exponent_and_no_one_of_many(example: Path) -> None:
    """Issue 43 item 6: `plan` printed '1 nodes x 100MB/s', '1 leaves', '1 GPUs', '2.14748GB' for 2GiB."""
    buffer = io.StringIO()
    print_summary(plan(load_requirements(example)), Console(file=buffer, width=300))
    text = buffer.getvalue()
    assert not re.findall(r"\d[eE][+-]?\d", text)
    assert not re.findall(r"\b1 (?:nodes|leaves|drives|files|GPUs|jobs|OSDs|hosts|targets|fleets)\b", text)
    assert not re.findall(r"\b2\.14748GB|\b536\.871MB|\b2\.19902TB", text)
    if example.stem == "cv-training-500tb":  # a published figure in its source's unit, not re-rounded (1.74698GB/s)
        assert "24 OSDs x 1.627GiB/s replicated = 41.9275GB/s" in text
