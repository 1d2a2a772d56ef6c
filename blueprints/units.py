"""Typed physical quantities parsed once from the shorthand people write in specs.

Sizes (``500TB``, ``1.5PiB``), rates (``500GB/s``, ``400Gb/s``, ``400G`` for links), durations
(``100us``, ``100μs``, ``50ms``), ratios (``5%``, ``0.05``) and bounds (``>=500GB/s``, ``<100us``).
Decimal and binary prefixes stay distinct (1 TB = 10**12 B, 1 TiB = 2**40 B); ``B`` is bytes and
``b`` is bits. Every value keeps the text it was parsed from, so it round-trips to what the user wrote.

The classes plug into pydantic: a field annotated ``Size`` accepts ``"500TB"`` (or a plain number of
bytes) and serialises back to the string. Rates and durations need their unit (``"<100"`` is refused, not
read as seconds), and every kind has a largest value, so no arithmetic on it overflows.
"""

from __future__ import annotations

import math
import re
import typing
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar, Literal, Self

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from blueprints.figures import plain

_NUMBER = r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+"
_QUANTITY = re.compile(rf"^\s*(?P<num>{_NUMBER})\s*(?P<unit>[A-Za-zμµ/%]*)\s*$")
_BOUND = re.compile(r"^\s*(?P<op>>=|<=|>|<|≥|≤)?\s*(?P<rest>.+?)\s*$")

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}


class UnitError(ValueError):
    """A quantity that could not be parsed; the message says what was expected."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """A value in SI base units (bytes, bytes/s, seconds, or a plain ratio) plus its source text."""

    value: float
    text: str

    kind: ClassVar[str] = "quantity"
    example: ClassVar[str] = ""
    units: ClassVar[dict[str, float]] = {}
    bare_unit: ClassVar[str | None] = None  # unit assumed for a bare number, None: SI base
    needs_unit: ClassVar[bool] = False  # a bare number is refused: "100" as a latency means nothing
    maximum: ClassVar[float] = math.inf  # largest value in base units; beyond it arithmetic loses meaning

    @classmethod
    def parse(cls, raw: object) -> Self:
        if isinstance(raw, cls):
            return raw
        if isinstance(raw, bool) or raw is None:
            raise UnitError(f"expected a {cls.kind} such as {cls.example!r}")
        if isinstance(raw, int | float):
            if cls.needs_unit:
                raise UnitError(f"a number with no unit; expected a {cls.kind} with its unit, such as {cls.example!r}")
            try:
                value = float(raw)
            except OverflowError:
                value = math.inf
            if not math.isfinite(value) or value < 0:
                raise UnitError(f"expected a non-negative {cls.kind} such as {cls.example!r}")
            return cls._checked(value, cls._render(value), raw)
        if not isinstance(raw, str):
            raise UnitError(f"expected a {cls.kind} such as {cls.example!r}")
        m = _QUANTITY.match(raw)
        if not m:
            raise UnitError(f"expected a {cls.kind} such as {cls.example!r}")
        unit = m.group("unit").replace("µ", "μ")
        if unit == "" and cls.needs_unit:
            raise UnitError(f"a number with no unit; expected a {cls.kind} with its unit, such as {cls.example!r}")
        if unit == "" and cls.bare_unit is not None:
            unit = cls.bare_unit
        if unit not in cls.units:
            known = ", ".join(sorted(u for u in cls.units if u))
            raise UnitError(cls.unknown_unit(float(m.group("num")), unit)
                            or f"unknown unit {m.group('unit')!r} for a {cls.kind}; expected one of {known}")
        value = float(m.group("num")) * cls.units[unit]
        if not math.isfinite(value):
            raise UnitError(f"expected a finite {cls.kind} such as {cls.example!r}")
        return cls._checked(value, raw.strip(), raw)

    @classmethod
    def _checked(cls, value: float, text: str, raw: object) -> Self:
        if value > cls.maximum:
            raise UnitError(f"above the largest {cls.kind} clustersmith plans for, {cls._render(cls.maximum)}; "
                            f"expected a {cls.kind} such as {cls.example!r}")
        return cls(value, text)

    @classmethod
    def _render(cls, value: float) -> str:
        return plain(value)

    @classmethod
    def unknown_unit(cls, number: float, unit: str) -> str | None:
        """A message of its own for a unit this kind refuses by name (a size in bits), else None."""
        return None

    @classmethod
    def of(cls, value: float) -> Self:
        """Build from a value in base units, rendered in a readable unit."""
        return cls(float(value), cls._render(float(value)))

    def __str__(self) -> str:
        return self.text

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def validate(raw: object) -> Quantity:
            try:
                return cls.parse(raw)
            except UnitError as exc:
                raise ValueError(str(exc)) from None

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(lambda q: q.text),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        units = "|".join(re.escape(u) for u in sorted(cls.units, key=len, reverse=True))
        text = {"type": "string", "pattern": rf"^\s*(?:{_NUMBER})\s*(?:{units})\s*$"}
        if cls.needs_unit:
            return {**text, "description": f"a {cls.kind} with its unit, e.g. {cls.example}"}
        return {"anyOf": [text, {"type": "number", "minimum": 0}], "description": f"a {cls.kind}, e.g. {cls.example}"}


def _prefixed(symbol: str, scale: float = 1.0) -> dict[str, float]:
    out = {p + symbol: f * scale for p, f in _DECIMAL.items()}
    out.update({p + symbol: f * scale for p, f in _BINARY.items()})
    return out


EXACT_DIGITS = 6  # a size is written exactly where that takes no more digits than the rounded form would


def _positional(x: float) -> str:
    """The shortest decimal that reads back as ``x``, without an exponent: 1966.08, 2, 0.5."""
    text = format(Decimal(repr(x)), "f")
    return text.removesuffix(".0")


def _digits(text: str) -> int:
    """The digits a quantity's text is written with, leading zeros aside: "1.96608PB" 6, "0.5GB" 1."""
    return len(re.sub(r"[^0-9]", "", text).lstrip("0"))


def _readable(value: float, symbol: str, suffix: str = "") -> str:
    for prefix in ("E", "P", "T", "G", "M", "k"):
        f = _DECIMAL[prefix]
        if abs(value) >= f:
            return f"{plain(value / f)}{prefix}{symbol}{suffix}"
    return f"{plain(value)}{symbol}{suffix}"


class Size(Quantity):
    """Bytes. ``500TB`` is 500 * 10**12, ``1.5PiB`` is 1.5 * 2**50."""

    kind = "size"
    example = "500TB"
    units = _prefixed("B")
    needs_unit = True  # "500" could be bytes or terabytes; rates and durations are refused bare too
    maximum = 1e21  # 1 ZB: a thousand times the largest data sets (EB); products of sizes stay finite
    bits = _prefixed("b")  # refused by name: "500Tb" is terabits, an eighth of the bytes meant

    @classmethod
    def _checked(cls, value: float, text: str, raw: object) -> Self:
        if 0 < value < 1 or (text.endswith("B") and text[:-1].strip().replace(".", "", 1).isdigit()
                             and value != int(value)):
            raise UnitError(f"a fraction of a byte; expected whole bytes, or a size with its unit such as "
                            f"{cls.example!r}")
        return super()._checked(value, text, raw)

    @classmethod
    def unknown_unit(cls, number: float, unit: str) -> str | None:
        if unit in cls.bits:
            return (f"{unit} is bits (b), and a size is bytes (B): {plain(number)}{unit} is "
                    f"{_readable(number * cls.bits[unit] / 8, 'B')}; expected a size in bytes such as "
                    f"{cls.example!r}")
        return None

    @classmethod
    def _render(cls, value: float) -> str:
        """The text that parses back to exactly these whole bytes with the fewest digits, at most ``EXACT_DIGITS``,
        in the largest unit that holds it: 2**31 -> "2GiB" (not "2.14748GB"), 1966080 * 10**9 -> "1.96608PB". A size
        no unit writes that briefly (a share of a share) is rounded as rates are: 10**12 / 3 -> "333.333GB"."""
        whole = round(value)
        prefixes = [(p + "B", f) for p, f in (*reversed(_DECIMAL.items()), *reversed(_BINARY.items()))
                    if p != "K" and f <= whole <= cls.maximum]
        exact = [number + unit for unit, f in prefixes if float(number := _positional(whole / f)) * f == whole]
        best = min(exact, key=_digits, default="")
        return best if best and _digits(best) <= EXACT_DIGITS else _readable(round(value, 3), "B")


class Rate(Quantity):
    """Bytes per second. ``500GB/s``; ``400Gb/s`` and the link shorthand ``400G`` are bits per second."""

    kind = "rate"
    example = "500GB/s"
    units = {
        **{k + "/s": v for k, v in _prefixed("B").items()},
        **{k + "/s": v for k, v in _prefixed("b", 1 / 8).items()},
        **{k + "bps": v for k, v in _prefixed("", 1 / 8).items() if k},
        **{p: f / 8 for p, f in _DECIMAL.items() if p and p != "k"},  # link speeds: 400G, 100M
    }
    needs_unit = True  # "100" could be B/s, GB/s or Gb/s
    maximum = 1e18  # 1 EB/s: a thousand times the largest storage systems built (~1 TB/s-1 PB/s)

    @classmethod
    def _render(cls, value: float) -> str:
        return _readable(round(value, 3), "B", "/s")

    @property
    def gbit(self) -> float:
        """The rate in Gb/s, the unit NIC speeds are quoted in."""
        return self.value * 8 / 1e9


class Duration(Quantity):
    """Seconds. ``100us``, ``100μs``, ``50ms``, ``2s``, ``5m``."""

    kind = "duration"
    example = "100us"
    units = {"ns": 1e-9, "us": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0,
             "h": 3600.0, "d": 86400.0}
    needs_unit = True  # "<100" could be 100 us or 100 s: a check that always passes
    maximum = 366 * 86400.0  # a year: longer than any latency target or monitoring window

    @classmethod
    def _render(cls, value: float) -> str:
        for unit, f in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
            if abs(value) >= f:
                return f"{plain(round(value / f, 6))}{unit}"
        return f"{plain(round(value / 1e-9, 3))}ns"


class Ratio(Quantity):
    """A fraction. ``5%`` and ``0.05`` are the same value."""

    kind = "ratio"
    example = "5%"
    units = {"": 1.0, "%": 0.01}

    @classmethod
    def _render(cls, value: float) -> str:
        return f"{plain(round(value * 100, 6))}%"

    @classmethod
    def parse(cls, raw: object) -> Self:
        q = super().parse(raw)
        if q.value > 1.0:
            raise UnitError("expected a ratio between 0 and 1 (or 0% to 100%)")
        return q


Op = Literal[">=", ">", "<=", "<"]
_OP_ALIASES = {"≥": ">=", "≤": "<="}


@dataclass(frozen=True, slots=True)
class Bound:
    """A target such as ``>=500GB/s`` or ``<100us``: a comparison and a quantity."""

    op: Op
    quantity: Quantity

    @property
    def value(self) -> float:
        return self.quantity.value

    @property
    def is_lower(self) -> bool:
        return self.op in (">=", ">")

    def satisfied_by(self, measured: float) -> bool:
        v = self.quantity.value
        return {">=": measured >= v, ">": measured > v, "<=": measured <= v, "<": measured < v}[self.op]

    def __str__(self) -> str:
        return f"{self.op}{self.quantity.text}"


@dataclass(frozen=True, slots=True)
class Floor:
    """The least an upper bound may ask for, and why nothing can measure below it (a published source)."""

    quantity: Quantity
    why: str


class _BoundOf:
    """pydantic annotation: ``Annotated[Bound, lower(Rate)]`` parses ``">=500GB/s"``.

    A bound that cannot fail or cannot hold is refused: a lower bound of zero (``>=0GB/s``: any cluster meets it,
    a check that cannot fail), an upper bound of zero (``<0%``: nothing measures below it) and an upper bound under
    the field's ``floor`` (``<1ns`` for a latency: no read across a network completes that fast).
    """

    def __init__(self, quantity: type[Quantity], direction: Literal["lower", "upper"],
                 floor: Floor | None = None) -> None:
        self.quantity = quantity
        self.direction = direction
        self.floor = floor

    @property
    def _what(self) -> str:
        return "a lower bound" if self.direction == "lower" else "an upper bound"

    def describe(self) -> str:
        """``a lower bound such as '>=500GB/s'``."""
        want = ">=" if self.direction == "lower" else "<"
        return f"{self._what} such as {want + self.quantity.example!r}"

    def _holdable(self, bound: Bound) -> Bound:
        if bound.value == 0 and bound.op == ">=":
            raise UnitError(f"a lower bound of 0, which any cluster meets: its check could never fail; expected a "
                            f"target such as '>={self.quantity.example}'")
        if bound.value == 0 and bound.op in ("<", "<="):
            raise UnitError(f"an upper bound of 0, which nothing measures below; expected a target such as "
                            f"'<{self.quantity.example}'")
        if self.floor is not None and bound.value < self.floor.quantity.value:
            raise UnitError(f"below {self.floor.quantity.text}, which no system meets ({self.floor.why}); "
                            f"expected a target such as '<{self.quantity.example}'")
        return bound

    def parse(self, raw: object) -> Bound:
        if isinstance(raw, Bound):
            return raw
        want = ">=" if self.direction == "lower" else "<"
        example = f"{want}{self.quantity.example}"
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            bound = Bound(">=" if self.direction == "lower" else "<=", self.quantity.parse(raw))
            return self._holdable(bound)
        if not isinstance(raw, str):
            raise UnitError(f"expected {self._what} such as {example!r}")
        m = _BOUND.match(raw)
        if not m:
            raise UnitError(f"expected {self._what} such as {example!r}")
        op = _OP_ALIASES.get(m.group("op") or "", m.group("op"))
        if op is None:
            op = ">=" if self.direction == "lower" else "<="
        if (op in (">=", ">")) != (self.direction == "lower"):
            raise UnitError(f"expected {self._what} such as {example!r}; {m.group('op')} points the other way")
        try:
            q = self.quantity.parse(m.group("rest"))
        except UnitError as exc:
            raise UnitError(f"{exc} (as in {example!r})") from None
        return self._holdable(Bound(op, q))  # type: ignore[arg-type]

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def validate(raw: object) -> Bound:
            try:
                return self.parse(raw)
            except UnitError as exc:
                raise ValueError(str(exc)) from None

        return core_schema.no_info_plain_validator_function(
            validate, serialization=core_schema.plain_serializer_function_ser_schema(str)
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        want = ">=" if self.direction == "lower" else "<"
        return {
            "type": "string",
            "pattern": r"^\s*(>=|>|<=|<|≥|≤)?\s*[0-9.]+",
            "description": f"a {self.direction} bound on a {self.quantity.kind}, e.g. {want}{self.quantity.example}",
        }


def lower(quantity: type[Quantity]) -> _BoundOf:
    return _BoundOf(quantity, "lower")


def upper(quantity: type[Quantity], floor: Floor | None = None) -> _BoundOf:
    return _BoundOf(quantity, "upper", floor)


def bound_of(annotation: Any, metadata: list[Any]) -> str | None:
    """What a bound field expects, in words (``a lower bound such as '>=500GB/s'``), or None for other fields."""
    found = [m for m in metadata if isinstance(m, _BoundOf)]
    if not found:
        found = [m for a in _annotated(annotation) for m in a if isinstance(m, _BoundOf)]
    return found[0].describe() if found else None


def _annotated(annotation: Any) -> list[tuple[Any, ...]]:
    """The metadata of every ``Annotated`` inside ``annotation`` (``Annotated[Bound, lower(Rate)] | None``)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return [annotation.__metadata__]
    return [m for a in typing.get_args(annotation) for m in _annotated(a)]
