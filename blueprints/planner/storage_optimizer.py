"""Rule ``storage.least_cost``: the server shape (and so the media), the protection and the server count of each
storage tier, at the least cost that meets every target, as a mixed-integer program solved by HiGHS (through
scipy.optimize.milp, which wraps it; issue 41 item 2).

For each candidate c of a tier (a server shape of the tier's latency class x a protection option) there are two
variables, n_c (integer: the servers) and y_c (binary: the tier takes c), and these constraints:

- one candidate a tier: the sum of the tier's y_c is 1;
- read: n_c x the per-server read under c's protection >= the tier's read target x y_c (write the same);
- capacity: n_c x the raw capacity of one server >= the raw capacity c's protection needs x y_c;
- failure domains: n_c >= k+m+1 (EC k+m) or replicas+1 x y_c;
- size: n_c <= MAX_STORAGE_NODES x y_c.

The objective is the sum of n_c x the server's monthly cost (its list price amortised over ``costs.amortise_months``),
plus a fraction of a cent a server, so that of two equal costs the fewer servers win. A tier is optimized only where
every eligible shape has a known list price in the price catalogue; elsewhere the planner's rules decide
(planner/storage.py) and ``plan`` names the rows that would let the optimizer decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from blueprints.blueprint import ProtectionOption, TierOption
from blueprints.catalog import StorageServer
from blueprints.planner.ceph import NodeRates, protection_label
from blueprints.planner.context import ceil_div
from blueprints.units import Rate, Size

# A fraction of a dollar a server a month: breaks a tie of equal costs towards fewer servers, and is far below any
# list price's monthly share (a server priced at $1 over 240 months is $0.004 a month).
TIE_BREAK = 1e-6


@dataclass(frozen=True)
class Candidate:
    """One server shape under one protection option, for one tier: what each target needs of it."""

    tier: str
    server: StorageServer
    media: str
    option: ProtectionOption
    rates: NodeRates
    per_node_raw: float
    read_target: float
    write_target: float
    per_month: float | None  # one server's monthly cost; None where its list price is unknown

    def needs(self) -> dict[str, int]:
        """Servers each constraint needs on its own, in the order a tie names them."""
        needs = {"read": ceil_div(self.read_target, self.rates.read.value) if self.read_target else 0,
                 "write": ceil_div(self.write_target, self.rates.write.value) if self.write_target else 0,
                 "capacity": ceil_div(self.option.raw.value, self.per_node_raw),
                 "failure domains": self.option.min_nodes}
        return needs

    @property
    def nodes(self) -> int:
        return max(self.needs().values())

    @property
    def binding(self) -> str:
        """The constraint that sets the server count (the first of equals: read, write, capacity, domains)."""
        needs = self.needs()
        return max(needs, key=lambda k: needs[k])

    @property
    def label(self) -> str:
        return f"{self.server.name} {protection_label(self.option)}"


def solve(tiers: dict[str, Sequence[Candidate]], max_nodes: int) -> dict[str, Candidate] | None:
    """The least-cost candidate of every tier, every candidate priced; None where some tier has no feasible one.

    Columns 2i and 2i+1 are n_i and y_i of candidate i. scipy (and numpy) are imported here, when a tier is priced:
    at module level they cost every clustersmith command 0.4 s of start-up (python -X importtime)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    flat = [(tier, c) for tier, cands in tiers.items() for c in cands]
    if not flat or any(c.per_month is None for _, c in flat):
        raise ValueError("the optimizer weighs priced candidates only")
    cols = 2 * len(flat)
    cost = np.zeros(cols)
    rows: list[Any] = []
    lower: list[float] = []
    upper: list[float] = []

    def row(entries: dict[int, float], lo: float, hi: float) -> None:
        r = np.zeros(cols)
        for col, value in entries.items():
            r[col] = value
        rows.append(r)
        lower.append(lo)
        upper.append(hi)

    for i, (_, c) in enumerate(flat):
        n, y = 2 * i, 2 * i + 1
        cost[n] = (c.per_month or 0.0) + TIE_BREAK
        if c.read_target:
            row({n: c.rates.read.value, y: -c.read_target}, 0.0, np.inf)
        if c.write_target:
            row({n: c.rates.write.value, y: -c.write_target}, 0.0, np.inf)
        row({n: c.per_node_raw, y: -c.option.raw.value}, 0.0, np.inf)
        row({n: 1.0, y: -float(c.option.min_nodes)}, 0.0, np.inf)
        row({n: 1.0, y: -float(max_nodes)}, -np.inf, 0.0)
    for tier in tiers:
        row({2 * i + 1: 1.0 for i, (t, _) in enumerate(flat) if t == tier}, 1.0, 1.0)
    ub = np.array([float(max_nodes) if col % 2 == 0 else 1.0 for col in range(cols)])
    # rows are scaled to their largest coefficient: bytes a second and bytes sit near 1e12-1e16, counts near 1
    matrix = np.array(rows)
    scale = np.abs(matrix).max(axis=1)
    result = milp(c=cost, integrality=np.ones(cols), bounds=Bounds(np.zeros(cols), ub),
                  constraints=LinearConstraint(matrix / scale[:, None], np.array(lower) / scale,
                                               np.array(upper) / scale))
    if result.status != 0 or result.x is None:
        return None
    chosen = {tier: c for i, (tier, c) in enumerate(flat) if round(result.x[2 * i + 1]) == 1}
    return chosen if len(chosen) == len(tiers) else None


def options(cands: Sequence[Candidate], chosen: Candidate) -> tuple[TierOption, ...]:
    """The candidates as the plan shows them: each one's servers, what sets their count, its raw capacity, read
    headroom and monthly cost, its Pareto mark, and the one taken."""
    out = []
    for c in cands:
        aggregate = c.nodes * c.rates.read.value
        out.append(TierOption(
            server=c.server.name, media=c.media, protection=protection_label(c.option), nodes=c.nodes,
            binding=c.binding, raw=Size.of(c.nodes * c.per_node_raw), aggregate_read=Rate.of(aggregate),
            headroom=aggregate / c.read_target - 1 if c.read_target else None,
            per_month=c.nodes * c.per_month if c.per_month is not None else None, pareto=False, chosen=c is chosen))
    return pareto_marked(out)


def pareto_marked(opts: Sequence[TierOption]) -> tuple[TierOption, ...]:
    """Each option marked ``pareto`` where no other is at least as good on every known figure (monthly cost and raw
    capacity lower, read headroom higher) and better on one."""

    def beats(a: TierOption, b: TierOption) -> bool:
        pairs = [(-a.raw.value, -b.raw.value)]
        if a.per_month is not None and b.per_month is not None:
            pairs.append((-a.per_month, -b.per_month))
        if a.headroom is not None and b.headroom is not None:
            pairs.append((a.headroom, b.headroom))
        return all(x >= y for x, y in pairs) and any(x > y for x, y in pairs)

    return tuple(o.model_copy(update={"pareto": not any(beats(p, o) for p in opts if p is not o)}) for o in opts)
