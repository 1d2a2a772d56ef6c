"""``clustersmith plan``: what the design costs (blueprints/planner/costs.py), each price with its row and source,
every unpriced part named, and a warning for each row read longer ago than the catalogue's max_age_days."""

from __future__ import annotations

from datetime import date

from rich.table import Table

from blueprints.blueprint import CostPlan, TierPlan
from blueprints.blueprint.costs import UNIT_PLURAL
from blueprints.figures import quantity, usd


def read_on(read: str) -> date:
    """The first day a row's ``read`` can mean: 2025-12-21 that day, 2025-12 the 1st of December, 2025 New Year's
    Day (so a row dated by its month or year is counted at its oldest)."""
    parts = [int(p) for p in read.split("-")]
    return date(parts[0], *[*parts[1:], 1, 1][:2])


def stale_rows(costs: CostPlan, today: date) -> list[str]:
    """Each price row the plan used that was read more than ``max_age_days`` before ``today``, with its age."""
    found: dict[str, str] = {}
    for line in costs.lines:
        if line.row is not None and (age := (today - read_on(line.row.read)).days) > costs.max_age_days:
            found[line.row.name] = (f"price row {line.row.name} was read {line.row.read}, {age} days ago (more than "
                                    f"{costs.max_age_days}): check {line.row.url}")
    return list(found.values())


def costs_table(costs: CostPlan) -> Table:
    """One row per part: how many, how bought, per hour and per month (or unknown), and the price row."""
    whole = "" if costs.complete else "; priced parts only"
    table = Table(title=f"costs ({costs.currency}, {costs.hours_per_month} h a month{whole})", title_justify="left")
    for col in ("part", "what x how many", "bought", "per hour", "per month", "price (source, read)"):
        table.add_column(col, justify="right" if col.startswith("per ") else "left", overflow="fold")
    for line in costs.lines:
        what = f"{line.item} x {quantity(line.quantity, line.unit, UNIT_PLURAL.get(line.unit, ''))}"
        if line.per_hour is None or line.per_month is None:
            table.add_row(line.part, what, line.purchase, "unknown", "unknown", line.unknown)
            continue
        if line.row is None:
            table.add_row(line.part, what, line.purchase, usd(line.per_hour.value), usd(line.per_month.value),
                          f"stated: {line.stated}")
            continue
        table.add_row(line.part, what, line.purchase, usd(line.per_hour.value), usd(line.per_month.value),
                      f"{line.row.name}: {usd(line.row.price)}/{line.row.unit.replace('_', '-')} "
                      f"({line.row.url}, read {line.row.read})")
    if costs.total_per_hour is not None and costs.total_per_month is not None:
        unknown = len(costs.unpriced())
        table.add_row("total" if costs.complete else f"total of the priced parts ({unknown} unknown)", "", "",
                      usd(costs.total_per_hour.value), usd(costs.total_per_month.value), "")
    elif costs.lines:
        table.add_row("total", "", "", "unknown", "unknown", "no part of the design has a known price")
    else:
        table.add_row("nothing to price", "", "", "", "", "the lab runs on this machine")
    return table


def storage_options_table(tiers: tuple[TierPlan, ...]) -> Table:
    """Each storage tier's options (server shape x protection): the servers each needs and what sets them, the raw
    capacity they hold, the read headroom over the tier's target and the monthly cost; "pareto" where no other option
    is as good on all three and better on one. The caption says whether cost or the rules chose, and which price rows
    would let cost choose."""
    table = Table(title="storage options (cost against read headroom and raw capacity)", title_justify="left")
    for col in ("tier", "server (media)", "protection", "nodes (set by)", "raw", "read headroom", "per month", ""):
        table.add_column(col, justify="right" if col in ("read headroom", "per month") else "left", overflow="fold")
    notes = []
    for tier in tiers:
        for o in tier.options:
            mark = ", ".join(m for m, on in (("chosen", o.chosen), ("pareto", o.pareto)) if on)
            headroom = f"{o.headroom * 100:+.1f}%" if o.headroom is not None else "no target"
            nodes = f"{o.nodes} ({o.binding})" if o.protection != "provider-managed" else f"managed ({o.binding})"
            table.add_row(tier.name, f"{o.server} ({o.media})", o.protection, nodes, str(o.raw),
                          headroom, usd(o.per_month) if o.per_month is not None else
                          "-" if o.binding == "target.storage_targets" else "unknown", mark)
        if not tier.options:
            continue
        if tier.options[0].binding == "target.storage_targets":
            notes.append(f"{tier.name}: the lab's storage VMs (target.storage_targets), nothing bought")
        else:
            notes.append(f"{tier.name}: least cost (HiGHS)" if tier.decided_by == "cost" else
                         f"{tier.name}: rules (unpriced: {', '.join(tier.unpriced)})")
    table.caption = "; ".join(notes)
    table.caption_justify = "left"
    return table
