"""Rule ``costs.*``: what each part of the design costs an hour and a month, from the price catalogue
(blueprints/catalog/prices.yaml), and which parts no published price covers.

Clouds: every host group's instances at the price of the way the fleets buy them (on demand, or a Capacity Block;
a reservation's price is the user's contract, so unknown), and the managed file system per GB-month. Bare metal:
servers and switches are bought, not rented: a list price (purchase list) spread over the spec's
costs.amortise_months prices each (the shipped catalogue has none found yet, so each is named unpriced); power at each
server's rated maximum input times the PUE and price per kWh the spec states (costs.power), where the catalogue has
the server's power figure. The lab runs on this machine: nothing to price.
"""

from __future__ import annotations

from blueprints import figures
from blueprints.blueprint import ComputePlan, CostLine, CostPlan, ManagedFsPlan, PriceRow, WiringPlan
from blueprints.blueprint.costs import HOURS_PER_MONTH, UNIT_PLURAL
from blueprints.catalog import PricePurchase, Prices
from blueprints.figures import counted, usd
from blueprints.fleet_plan import FleetsPlan
from blueprints.hosts import HostGroup
from blueprints.planner.context import PlanContext
from blueprints.traced import Traced, traced

PURCHASE: dict[str, PricePurchase | None] = {"on-demand": "on_demand", "capacity-block": "capacity_block",
                                             "reservation": None}
# What sets each bought host group's count: the GPUs for the GPU nodes, the data and targets for the storage servers
OWNED_SPEC = {"gpu_client": ("compute.gpus",), "monitoring": ("target.provider",),
              "storage_target": ("data.training_set", "performance.storage.read_throughput")}
ROLE_PART = {"gpu_client": "GPU nodes", "storage_target": "storage servers", "monitoring": "monitoring host"}


def _hosts_part(group: HostGroup) -> str:
    names = group.names() if group.count <= 2 else [group.name(1), "..", group.name(group.count)]
    return f"{ROLE_PART[group.role]} ({' '.join(names)})"


def _row(prices: Prices, item: str, region: str | None, purchase: PricePurchase) -> tuple[PriceRow | None, str]:
    found = prices.find(item, region, purchase)
    if found is None:
        return None, f"no row for {item} ({purchase}, {region or 'any region'}) in the price catalogue"
    if found.price == "unknown":
        return None, f"{found.name}: unknown ({found.searched})"
    return PriceRow(name=found.name, price=found.price, unit=found.unit, source=found.source, url=found.url,
                    read=found.read), ""


def _cited(row: PriceRow) -> str:
    return f"price row {row.name}, read {row.read} from {row.url}"


def _priced(part: str, item: str, quantity: float, unit: str, purchase: str, row: PriceRow,
            spec: tuple[str, ...]) -> CostLine:
    units = figures.quantity(quantity, unit, UNIT_PLURAL.get(unit, ""))
    if row.unit == "hour":
        hour = quantity * row.price
        per_hour = traced(hour, spec, "costs.instance_hours",
                          f"{units} x {usd(row.price)}/h = {usd(hour)}/h ({_cited(row)})")
        month = hour * HOURS_PER_MONTH
        per_month = traced(month, spec, "costs.month",
                           f"{usd(hour)}/h x {HOURS_PER_MONTH} h = {usd(month)}/month")
    else:
        month = quantity * row.price
        per_month = traced(month, spec, "costs.gb_months",
                           f"{units} x {usd(row.price)}/GB-month = {usd(month)}/month ({_cited(row)})")
        hour = month / HOURS_PER_MONTH
        per_hour = traced(hour, spec, "costs.month", f"{usd(month)}/month / {HOURS_PER_MONTH} h = {usd(hour)}/h")
    return CostLine(part=part, item=item, quantity=quantity, unit=unit, purchase=purchase, row=row,
                    per_hour=per_hour, per_month=per_month)


def _cloud_hosts(ctx: PlanContext, group: HostGroup, fleets: FleetsPlan | None, compute: ComputePlan) -> CostLine:
    part = _hosts_part(group)
    capacity = fleets.capacity.source.value if fleets is not None and group.role == "gpu_client" else "on-demand"
    purchase = PURCHASE[capacity]
    bought = capacity.replace("-", "_")
    row, why = (None, "a reservation's price is the user's contract with the provider") if purchase is None \
        else _row(ctx.catalog.prices, group.node_type, ctx.region, purchase)
    if row is None:
        return CostLine(part=part, item=group.node_type, quantity=group.count, unit="instance", purchase=bought,
                        unknown=why)
    spec = (*compute.nodes.derived_from.spec, "target.region") if group.role == "gpu_client" else (
        "target.provider", "target.region")
    return _priced(part, group.node_type, group.count, "instance", bought, row, spec)


def _file_system(ctx: PlanContext, managed: ManagedFsPlan) -> CostLine:
    part = f"managed file system ({managed.product})"
    row, why = _row(ctx.catalog.prices, managed.service, ctx.region, "on_demand")
    if row is None:
        return CostLine(part=part, item=managed.service, quantity=managed.capacity_gib, unit="GiB",
                        purchase="on_demand", unknown=why)
    return _priced(part, managed.service, managed.capacity_gib, "GiB", "on_demand", row,
                   managed.capacity.derived_from.spec)


def _owned(ctx: PlanContext, part: str, item: str, count: int, unit: str, spec: tuple[str, ...]) -> CostLine:
    """A bought part: its list price spread over the spec's costs.amortise_months, or why it has none. Power is not
    in it: the catalogue holds no power draw for a server shape."""
    row, why = _row(ctx.catalog.prices, item, None, "list")
    if row is None:
        return CostLine(part=part, item=item, quantity=count, unit=unit, purchase="owned",
                        unknown=f"{why}; bare metal is priced by its list price amortised over costs.amortise_months")
    months = ctx.req.costs.amortise_months
    month = count * row.price / months
    units = figures.quantity(count, unit, UNIT_PLURAL.get(unit, ""))
    spec = (*spec, "costs.amortise_months")
    per_month = traced(month, spec, "costs.amortised",
                       f"{units} x {usd(row.price)} / {months} months = {usd(month)}/month ({_cited(row)})")
    per_hour = traced(month / HOURS_PER_MONTH, spec, "costs.month",
                      f"{usd(month)}/month / {HOURS_PER_MONTH} h = {usd(month / HOURS_PER_MONTH)}/h")
    return CostLine(part=part, item=item, quantity=count, unit=unit, purchase="owned", row=row,
                    per_hour=per_hour, per_month=per_month)


def _power(ctx: PlanContext, hosts: tuple[HostGroup, ...]) -> list[CostLine]:
    """Power of the bought hosts at their rated maximum input (an upper bound: a training node draws less on
    average), times the site's PUE and its price per kWh, both stated in the spec's costs.power; one line per host
    group, unknown where the catalogue has no power figure for the server, one line in all where no price is stated."""
    power = ctx.req.costs.power
    if power is None:
        return [CostLine(part="power (every host)", item="power", quantity=sum(g.count for g in hosts), unit="host",
                         purchase="power", unknown="no price stated: costs.power (price_per_kwh and pue, from your "
                                                   "contract and site) prices it")] if hosts else []
    spec = ("costs.power.price_per_kwh", "costs.power.pue")
    stated = f"{usd(power.price_per_kwh)}/kWh and PUE {power.pue:g} (costs.power)"
    lines = []
    for g in hosts:
        server = ctx.catalog.gpu_servers.get(g.node_type)
        part = f"power of {_hosts_part(g)}"
        if server is None or server.max_power_kw is None:
            lines.append(CostLine(part=part, item=g.node_type, quantity=g.count, unit="host", purchase="power",
                                  unknown=f"no rated power for {g.node_type} in the catalogue"))
            continue
        kw = server.max_power_kw
        hour = g.count * kw * power.pue * power.price_per_kwh
        per_hour = traced(hour, (*OWNED_SPEC[g.role], *spec), "costs.power",
                          f"{counted(g.count, 'host')} x {kw:g} kW at most ({g.node_type}'s rated maximum input) x "
                          f"PUE {power.pue:g} x {usd(power.price_per_kwh)}/kWh = {usd(hour)}/h")
        per_month = traced(hour * HOURS_PER_MONTH, per_hour.derived_from.spec, "costs.month",
                           f"{usd(hour)}/h x {HOURS_PER_MONTH} h = {usd(hour * HOURS_PER_MONTH)}/month")
        lines.append(CostLine(part=part, item=g.node_type, quantity=g.count, unit="host", purchase="power",
                              stated=stated, per_hour=per_hour, per_month=per_month))
    return lines


def _total(lines: list[CostLine], field: str, unit: str) -> Traced[float] | None:
    priced: list[tuple[str, Traced[float]]] = [(line.part, getattr(line, field)) for line in lines
                                                if getattr(line, field) is not None]
    if not priced:
        return None
    total = sum(p.value for _, p in priced)
    spec = tuple(dict.fromkeys(path for _, p in priced for path in p.derived_from.spec))
    unpriced = len(lines) - len(priced)
    left_out = f"; {counted(unpriced, 'part')} unpriced, not in it" if unpriced else ""
    return traced(total, spec, "costs.total",
                  " + ".join(f"{usd(p.value)} ({part})" for part, p in priced) + f" = {usd(total)}{unit}{left_out}")


def plan_costs(ctx: PlanContext, compute: ComputePlan, hosts: tuple[HostGroup, ...], fleets: FleetsPlan | None,
               managed: ManagedFsPlan | None, wiring: WiringPlan | None) -> CostPlan:
    provider = ctx.req.target.provider
    lines: list[CostLine] = []
    if provider in ("aws", "gcp", "azure"):
        lines += [_cloud_hosts(ctx, g, fleets, compute) for g in hosts if g.count]
        if managed is not None:
            lines.append(_file_system(ctx, managed))
    elif provider == "baremetal":
        lines += [_owned(ctx, _hosts_part(g), g.node_type, g.count, "host", OWNED_SPEC[g.role])
                  for g in hosts if g.count]
        lines += [_owned(ctx, f"{t.fabric} {t.tier} switches", t.model, t.count, "switch", ("compute.gpus",))
                  for t in (wiring.switches if wiring is not None else ())]
        lines += _power(ctx, tuple(g for g in hosts if g.count))
    return CostPlan(max_age_days=ctx.catalog.prices.max_age_days, lines=tuple(lines),
                    total_per_hour=_total(lines, "per_hour", "/h"),
                    total_per_month=_total(lines, "per_month", "/month"),
                    complete=all(line.per_month is not None for line in lines))
