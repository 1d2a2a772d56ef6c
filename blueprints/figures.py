"""Figures as people read them: a number in positional notation, and a count with its noun in the right number.

Every table, explanation, report and derivation prints numbers through these, so that no figure turns up as
``2e+04`` or ``1 nodes``.
"""

from __future__ import annotations

import math
from decimal import Decimal

POSITIONAL = (1e-6, 1e15)  # magnitudes written out in full; beyond them (only in messages about absurd input) %g


def plain(x: float, digits: int = 6) -> str:
    """``x`` to ``digits`` significant digits, positional, trailing zeros dropped: 20000 -> "20000", 2.5e-05 ->
    "0.000025", 41.927523 -> "41.9275", 3.0 -> "3"; a whole number whole: 123456789 -> "123456789"."""
    if math.isfinite(x) and x == int(x) and abs(x) < POSITIONAL[1]:
        return str(int(x))
    if not math.isfinite(x) or (x and not POSITIONAL[0] <= abs(x) < POSITIONAL[1]):
        return f"{x:.{digits}g}"
    text = format(Decimal(f"{x:.{digits}g}"), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def long_integer(value: int) -> str:
    """An integer too long to write whole in a message (a hexadecimal or octal number YAML read has no digit limit;
    Python refuses to write more than 4300 decimal digits, and a float cannot hold one past 1e308), by its size."""
    return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} decimal digits"


def counted(n: int, one: str, many: str = "") -> str:
    """``n`` and its noun: counted(1, "node") -> "1 node", counted(2, "leaf", "leaves") -> "2 leaves"."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def usd(amount: float) -> str:
    """US dollars to the cent with thousands separators: 112721.92 -> "$112,721.92"."""
    return f"${amount:,.2f}"


def quantity(q: float, one: str, many: str = "") -> str:
    """``q`` and its unit: a whole number counted (quantity(2048, "instance") -> "2048 instances"), any other
    positional (quantity(0.5, "GiB") -> "0.5 GiB")."""
    return counted(int(q), one, many) if q == int(q) else f"{plain(q)} {one}"
