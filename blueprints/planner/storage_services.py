"""Storage clustersmith builds no server of: the cloud provider's managed file system (sized for the data and the
throughput target, the cheapest fitting tier where every tier is priced, else the fastest per TiB) and the user's
own file system (its stated capability checked against the targets)."""

from __future__ import annotations

from blueprints.blueprint import ComputePlan, ManagedFsPlan, StoragePlan, TierOption, TierPlan, traced
from blueprints.catalog import ManagedFileSystem
from blueprints.errors import InfeasibleError, Problem
from blueprints.planner.context import PlanContext, ceil_div
from blueprints.planner.shared_fs import plan_external_mount, plan_managed_mount
from blueprints.planner.storage_optimizer import pareto_marked
from blueprints.spec import ExternalStorage
from blueprints.units import Rate, Size


def raise_all(ctx: PlanContext, problems: list[Problem]) -> None:
    """Every infeasible target at once, in the spec's order."""
    if problems:
        raise InfeasibleError(problems, ctx.spec_file, "targets cannot be met")


def managed_capacity(fs: ManagedFileSystem, need: float) -> float:
    """The smallest size (bytes) the service accepts that holds ``need``: its minimum, else the next step
    (FSx: 1200 GiB, then multiples of 2400 GiB; GCP: multiples of a larger step above a threshold)."""
    if need <= fs.min_capacity.value:
        return fs.min_capacity.value
    step = fs.capacity_step.value
    if fs.large_step is not None and fs.large_step_above is not None and need > fs.large_step_above.value:
        step = fs.large_step.value
    return ceil_div(need, step) * step


def plan_managed(ctx: PlanContext, compute: ComputePlan, usable: float, read_t: float, write_t: float) -> StoragePlan:
    """Size the provider's managed file system: capacity for the data and for the throughput target at
    the tier's throughput per TiB, rounded to a size the service accepts. A tier whose largest size is too small is
    left out; none fitting is an error that names the numbers. Of those that fit, the cheapest a month where every
    one has a price (rule storage.least_cost), else the fastest per TiB (the rules)."""
    services = sorted((f for f in ctx.catalog.file_systems.values() if f.provider == ctx.provider),
                      key=lambda f: -f.throughput_per_tib.value)
    if not services:
        raise ctx.infeasible("target.provider", f"no managed file system for {ctx.provider} in the catalog")
    tib, gib = 2.0**40, 2.0**30
    need_tp = max(read_t, write_t)
    refused: list[str] = []
    fitting: list[tuple[ManagedFileSystem, float, float]] = []
    data_bound = True
    for fs in services:
        cap_for_tp = need_tp / fs.throughput_per_tib.value * tib
        need = max(usable, cap_for_tp)
        capacity = managed_capacity(fs, need)
        if fs.max_capacity is not None and capacity > fs.max_capacity.value:
            data_bound = data_bound and usable > fs.max_capacity.value
            top = Rate.of(fs.max_capacity.value / tib * fs.throughput_per_tib.value)
            refused.append(f"{fs.name} needs {Size.of(capacity)} (data {Size.of(usable)}, throughput "
                           f"{Rate.of(need_tp)} / {fs.throughput_per_tib} per TiB = {Size.of(cap_for_tp)}) but "
                           f"holds at most {fs.max_capacity} ({top})")
            continue
        fitting.append((fs, cap_for_tp, capacity))
    if not fitting:
        path = "data.training_set" if data_bound else "performance.storage.read_throughput"
        raise ctx.infeasible(path, f"no {ctx.provider} managed file system in the catalog fits: " + "; ".join(refused))
    region = ctx.region
    monthly: dict[str, float | None] = {}
    unpriced: list[str] = []
    for fs, _, capacity in fitting:
        row = ctx.catalog.prices.find(fs.name, region, "on_demand")
        known = row is not None and row.price != "unknown" and row.unit == "gb_month"
        monthly[fs.name] = round(capacity / gib) * float(row.price) if known and row is not None else None
        if not known:
            unpriced.append(row.name if row is not None else f"{fs.name}/{region}/on_demand (no row)")
    by_cost = not unpriced
    fs, cap_for_tp, capacity = min(fitting, key=lambda f: monthly[f[0].name] or 0.0) if by_cost else fitting[0]
    opts = pareto_marked([TierOption(
        server=f.name, media=f.service, protection="provider-managed", nodes=0,
        binding="capacity" if usable >= tp_cap else "read", raw=Size.of(cap),
        aggregate_read=Rate.of(cap / tib * f.throughput_per_tib.value),
        headroom=cap / tib * f.throughput_per_tib.value / read_t - 1 if read_t else None,
        per_month=monthly[f.name], pareto=False, chosen=f is fs) for f, tp_cap, cap in fitting])
    plan = _managed_plan(ctx, compute, fs, usable, need_tp, cap_for_tp, capacity, gib, tib)
    hot = plan.tiers[0].model_copy(update={"options": opts, "decided_by": "cost" if by_cost else "rules",
                                           "unpriced": tuple(unpriced)})
    return plan.model_copy(update={"tiers": (hot,)})


def _managed_plan(ctx: PlanContext, compute: ComputePlan, fs: ManagedFileSystem, usable: float, need_tp: float,
                  cap_for_tp: float, capacity: float, gib: float, tib: float) -> StoragePlan:
    agg = Rate.of(capacity / tib * fs.throughput_per_tib.value)
    spec = ["data.training_set", "data.validation_set", "performance.storage.read_throughput"]
    large = (f", {fs.large_step} above {fs.large_step_above}"
             if fs.large_step is not None and fs.large_step_above is not None else "")
    formula = (f"max(data {Size.of(usable)}, {Rate.of(need_tp)} / {fs.throughput_per_tib} per TiB "
               f"= {Size.of(cap_for_tp)}), rounded to a size {fs.name} accepts (min {fs.min_capacity}, "
               f"steps of {fs.capacity_step}{large}) = {Size.of(capacity)} ({round(capacity / gib)} GiB)")
    throughput_formula = f"{Size.of(capacity)} x {fs.throughput_per_tib} per TiB = {agg}"
    hot = TierPlan(
        name="hot", media=fs.service, server=fs.name,
        usable=traced(Size.of(capacity), spec, "storage.managed_capacity", formula),
        protection=traced("provider-managed", ["target.provider"], "storage.managed_protection"),
        alternatives=(), raw=traced(Size.of(capacity), spec, "storage.managed_capacity", formula),
        nodes=traced(0, ["target.provider"], "storage.managed_has_no_servers"),
        per_node_read=agg,
        aggregate_read=traced(agg, spec, "storage.managed_throughput", throughput_formula),
    )
    provider = fs.provider
    managed = ManagedFsPlan(
        service=fs.name, provider=provider, product=fs.service, sku=fs.sku,
        capacity=traced(Size.of(capacity), spec, "storage.managed_capacity", formula),
        capacity_gib=round(capacity / gib), throughput_per_tib=fs.throughput_per_tib,
        per_unit_throughput=round(fs.throughput_per_tib.value / 1e6),
        throughput=traced(agg, spec, "storage.managed_throughput", throughput_formula),
        max_capacity=fs.max_capacity,
    )
    return StoragePlan(
        managed_service=fs.name, managed=managed, tiers=(hot,), read_throughput=hot.aggregate_read,
        write_throughput=hot.aggregate_read, nvmeof=None, cache=None,
        shared=plan_managed_mount(ctx, fs.name),
    )


def plan_external(ctx: PlanContext, compute: ComputePlan, ext: ExternalStorage, data: float,
              problems: list[Problem]) -> StoragePlan:
    """The user's own file system: no servers, no NVMe-oF, no dm-cache; the spec's stated capability checked against
    its targets and data, every figure it does not state taken from the spec's targets (acceptance measures them)."""
    perf = ctx.req.performance.storage
    cap = ext.capability
    cap_path = "storage.external.capability"
    for stated, target, what in ((cap.read_throughput, perf.read_throughput.value, "read_throughput"),
                                 (cap.write_throughput, perf.write_throughput.value if perf.write_throughput else None,
                                  "write_throughput")):
        if stated is not None and target is not None and stated.value < target:
            problems.append(Problem(
                f"{cap_path}.{what}", f"{what} {stated} is below performance.storage.{what} {Rate.of(target)}: the "
                f"{ext.type} system at {ext.source} cannot meet the target; expected at least {Rate.of(target)}"))
    if cap.capacity is not None and cap.capacity.value < data:
        problems.append(Problem(
            f"{cap_path}.capacity", f"capacity {cap.capacity} is below the data it must hold (training + validation "
            f"sets + 2 checkpoints = {Size.of(data)}); expected at least {Size.of(data)}"))
    raise_all(ctx, problems)
    shared = plan_external_mount(ctx, compute, ext)
    rates = {}
    write_target = perf.write_throughput.value if perf.write_throughput else perf.read_throughput.value
    for name, stated, target in (("read", cap.read_throughput, perf.read_throughput.value),
                                 ("write", cap.write_throughput, write_target)):
        if stated is not None:
            rates[name] = traced(stated, [f"{cap_path}.{name}_throughput"], "storage.external_capability_as_stated",
                                 f"{stated}, as the spec states it; acceptance measures it")
        else:
            spec_path = f"performance.storage.{name}_throughput" if name == "read" or perf.write_throughput else \
                "performance.storage.read_throughput"
            rates[name] = traced(Rate.of(target), [spec_path], "storage.external_target_unstated",
                                 f"not stated in storage.external.capability: the spec's target {Rate.of(target)}, "
                                 "which acceptance measures on the user's system")
    usable = (traced(cap.capacity, [f"{cap_path}.capacity"], "storage.external_capability_as_stated",
                     f"{cap.capacity}, as the spec states it")
              if cap.capacity is not None else
              traced(Size.of(data), ["data.training_set", "data.validation_set"], "storage.external_capacity_unstated",
                     f"not stated: the data it holds, training + validation sets + 2 checkpoints = {Size.of(data)}"))
    hot = TierPlan(
        name="hot", media=ext.type, server="external", usable=usable,
        protection=traced("user-managed", ["storage.external.type"], "storage.external_protection",
                          "the user's system protects its own data"),
        alternatives=(), raw=usable,
        nodes=traced(0, ["storage.external.type"], "storage.external_has_no_servers",
                     "clustersmith builds no server of it"),
        per_node_read=rates["read"].value, aggregate_read=rates["read"])
    return StoragePlan(managed_service=None, tiers=(hot,), read_throughput=rates["read"],
                       write_throughput=rates["write"], nvmeof=None, cache=None, shared=shared)
