"""Unit parsing: shorthand in, SI base values out, text round-trips, clear errors."""

from __future__ import annotations

import pytest

from blueprints.units import Duration, Rate, Ratio, Size, UnitError, lower, upper


@pytest.mark.parametrize(
    ("cls", "text", "value"),
    [
        (Size, "500TB", 500e12),
        (Size, "1.5PiB", 1.5 * 2**50),
        (Size, "1TiB", 2**40),
        (Size, "2GiB", 2 * 2**30),
        (Size, "8Gb", 1e9),
        (Size, "1024", 1024),
        (Rate, "500GB/s", 500e9),
        (Rate, "400Gb/s", 50e9),
        (Rate, "400G", 50e9),
        (Rate, "100Gbps", 12.5e9),
        (Rate, "1.5GiB/s", 1.5 * 2**30),
        (Duration, "100us", 100e-6),
        (Duration, "100μs", 100e-6),
        (Duration, "100µs", 100e-6),
        (Duration, "50ms", 0.05),
        (Duration, "7d", 7 * 86400),
        (Ratio, "5%", 0.05),
        (Ratio, "0.05", 0.05),
        (Ratio, "100%", 1.0),
    ],
)
def test_parse_values(cls: type, text: str, value: float) -> None:
    q = cls.parse(text)
    assert q.value == pytest.approx(value)
    assert str(q) == text


def test_decimal_and_binary_prefixes_differ() -> None:
    assert Size.parse("1TB").value != Size.parse("1TiB").value


@pytest.mark.parametrize(
    ("cls", "value", "text"),
    [(Size, 500e12, "500TB"), (Rate, 540e9, "540GB/s"), (Duration, 1e-4, "100us"), (Ratio, 0.2, "20%")],
)
def test_render_readable_and_round_trip(cls: type, value: float, text: str) -> None:
    q = cls.of(value)
    assert q.text == text
    assert cls.parse(q.text).value == pytest.approx(value)


@pytest.mark.parametrize(
    ("cls", "text", "message"),
    [
        (Size, "500XB", "unknown unit 'XB' for a size"),
        (Size, "lots", "expected a size such as '500TB'"),
        (Rate, "fast", "expected a rate such as '500GB/s'"),
        (Duration, "100xs", "unknown unit 'xs' for a duration"),
        (Ratio, "150%", "expected a ratio between 0 and 1"),
        (Size, -5, "expected a non-negative size"),
        (Size, True, "expected a size"),
    ],
)
def test_parse_errors(cls: type, text: object, message: str) -> None:
    with pytest.raises(UnitError, match=message):
        cls.parse(text)


@pytest.mark.parametrize(
    ("bound", "text", "op", "value"),
    [
        (lower(Rate), ">=500GB/s", ">=", 500e9),
        (lower(Rate), "500GB/s", ">=", 500e9),
        (lower(Rate), "> 1TB/s", ">", 1e12),
        (upper(Duration), "<100us", "<", 1e-4),
        (upper(Duration), "≤50ms", "<=", 0.05),
        (upper(Ratio), "<5%", "<", 0.05),
    ],
)
def test_bounds(bound: object, text: str, op: str, value: float) -> None:
    b = bound.parse(text)  # type: ignore[attr-defined]
    assert b.op == op
    assert b.value == pytest.approx(value)


def test_bound_direction_is_checked() -> None:
    with pytest.raises(UnitError, match="expected a lower bound such as '>=500GB/s'; '<5GB/s' points the other way"):
        lower(Rate).parse("<5GB/s")
    with pytest.raises(UnitError, match=r"expected an upper bound such as .<100us.; .>100us. points the other way"):
        upper(Duration).parse(">100us")


def test_bound_satisfied_by() -> None:
    assert lower(Rate).parse(">=500GB/s").satisfied_by(500e9)
    assert not lower(Rate).parse(">500GB/s").satisfied_by(500e9)
    assert upper(Duration).parse("<100us").satisfied_by(99e-6)
    assert not upper(Duration).parse("<100us").satisfied_by(100e-6)
