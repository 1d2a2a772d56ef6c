"""What the design costs to run: one line per priced part, each with the catalogue row it was priced from, and the
parts no published price covers, named (issue 41: priced plans; the optimizer and predicted figures come later).

A total sums the priced lines only; ``complete`` says whether that is every part. Amounts are US dollars.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.model import Frozen
from blueprints.traced import Traced

UNIT_PLURAL = {"switch": "switches", "GiB": "GiB"}  # the units a cost line counts in; the others take an s
HOURS_PER_MONTH = 730  # 8760 hours a year / 12: the month clouds bill hourly prices by


class PriceRow(Frozen):
    """The catalogue row (blueprints/catalog/prices.yaml) a line was priced from, copied with its source."""

    name: str = Field(description="<item>/<region>/<purchase>")
    price: float = Field(gt=0, description="US dollars per unit")
    unit: Literal["hour", "gb_month", "each"]
    source: str
    url: str
    read: str = Field(description="When the source was read: YYYY-MM-DD, or YYYY-MM / YYYY")


class CostLine(Frozen):
    """One part of the design: what it is, how many, and what it costs an hour and a month, or why that is unknown."""

    part: str = Field(description="What is bought, e.g. 'GPU nodes (gpu-fleet-1)', 'managed file system'")
    item: str = Field(description="The catalogue's name for it: instance type, server, switch, file system tier")
    quantity: float = Field(gt=0, description="How many units of ``unit`` the design has")
    unit: str = Field(description="What quantity counts, in the singular: instance, host, switch, GiB")
    purchase: str = Field(description="on_demand, capacity_block, reservation, owned (bare metal) or power")
    row: PriceRow | None = Field(default=None, description="The price row used; None when unknown or stated")
    stated: str = Field(default="", description="A price the spec states instead of a row (power's price per kWh)")
    per_hour: Traced[float] | None = None
    per_month: Traced[float] | None = None
    unknown: str = Field(default="", description="Why the part has no price (no row, an unknown row, ...)")


class CostPlan(Frozen):
    currency: Literal["USD"] = "USD"
    hours_per_month: int = HOURS_PER_MONTH
    max_age_days: int = Field(description="The catalogue's: a row read longer ago is a warning in plan")
    lines: tuple[CostLine, ...] = Field(description="Every part the design buys, priced or not")
    total_per_hour: Traced[float] | None = Field(default=None, description="Sum of the priced lines; None if none")
    total_per_month: Traced[float] | None = None
    complete: bool = Field(description="Every line is priced: the totals are the design's whole cost")

    def unpriced(self) -> tuple[CostLine, ...]:
        return tuple(line for line in self.lines if line.per_month is None)
