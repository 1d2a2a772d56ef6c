"""Unit parsing: shorthand in, SI base values out, text round-trips, clear errors."""

from __future__ import annotations

import pytest

from blueprints.units import Duration, Floor, Rate, Ratio, Size, UnitError, lower, upper

WIRE = Floor(Duration.parse("1us"), "the wire")


@pytest.mark.parametrize(
    ("cls", "text", "value"),
    [
        (Size, "500TB", 500e12),
        (Size, "1.5PiB", 1.5 * 2**50),
        (Size, "1TiB", 2**40),
        (Size, "2GiB", 2 * 2**30),
        (Size, "1024B", 1024),
        (Size, "1.3GiB", 1.3 * 2**30),  # a fraction of a byte after a prefix is the user's rounding, not an error
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
        (Size, -5, "a number with no unit; expected a size with its unit, such as '500TB'"),
        (Size, True, "expected a size"),
        # Issue 43: a size in bits was divided by 8, a bare number taken as bytes, fractions of a byte accepted
        (Size, "8Gb", "Gb is bits .b., and a size is bytes .B.: 8Gb is 1GB; expected a size in bytes such as '500TB'"),
        (Size, "500Tbps", "unknown unit 'Tbps' for a size"),
        (Size, "1024", "a number with no unit; expected a size with its unit, such as '500TB'"),
        (Size, 1024, "a number with no unit; expected a size with its unit"),
        (Size, "1.5B", "a fraction of a byte; expected whole bytes"),
        (Size, "0.0001KB", "a fraction of a byte; expected whole bytes"),
        (Duration, 5, "a number with no unit; expected a duration with its unit, such as '100us'"),
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
    with pytest.raises(UnitError, match="expected a lower bound such as '>=500GB/s'; < points the other way"):
        lower(Rate).parse("<5GB/s")
    with pytest.raises(UnitError, match=r"expected an upper bound such as .<100us.; > points the other way"):
        upper(Duration).parse(">100us")


@pytest.mark.parametrize(
    ("bound", "text", "message"),
    [
        (lower(Rate), ">=0GB/s", "a lower bound of 0, which any cluster meets: its check could never fail"),
        (upper(Ratio), "<0%", "an upper bound of 0, which nothing measures below; expected a target such as '<5%'"),
        (upper(Ratio), "<=0", "an upper bound of 0, which nothing measures below"),
        (upper(Duration, WIRE), "<1ns", r"below 1us, which no system meets \(the wire\)"),
        (upper(Duration, WIRE), "<999ns", "below 1us"),
    ],
)
def test_bounds_that_cannot_fail_or_cannot_hold_are_refused(bound: object, text: object, message: str) -> None:
    with pytest.raises(UnitError, match=message):
        bound.parse(text)  # type: ignore[attr-defined]


def test_bounds_at_the_floor_and_above_zero_hold() -> None:
    assert upper(Duration, WIRE).parse("<1us").value == pytest.approx(1e-6)
    assert lower(Rate).parse(">0GB/s").op == ">"  # something must flow: a check that can fail
    assert upper(Ratio).parse("<0.1%").value == pytest.approx(0.001)


def test_bound_satisfied_by() -> None:
    assert lower(Rate).parse(">=500GB/s").satisfied_by(500e9)
    assert not lower(Rate).parse(">500GB/s").satisfied_by(500e9)
    assert upper(Duration).parse("<100us").satisfied_by(99e-6)
    assert not upper(Duration).parse("<100us").satisfied_by(100e-6)
