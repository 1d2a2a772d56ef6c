"""``clustersmith plan``: a readable summary of a Blueprint, with the arithmetic visible."""

from __future__ import annotations

from datetime import date
from typing import Any

from rich.console import Console, Group
from rich.table import Table

from blueprints.blueprint import AcceptancePlan, Blueprint, Check, FioFootprint, Traced, WiringPlan
from blueprints.figures import plain
from blueprints.fleet_plan import FleetsPlan
from blueprints.summary_ceph import ceph_tables
from blueprints.summary_costs import costs_table, stale_rows, storage_options_table


def _t(value: Traced[Any]) -> str:
    return str(value.value)


def _why(value: Traced[Any]) -> str:
    return value.derived_from.formula or value.derived_from.rule


def summary(bp: Blueprint) -> Group:
    c, f, q, s = bp.compute, bp.fabric, bp.qos, bp.storage
    compute = Table(title=f"{bp.name}: compute", title_justify="left", show_header=True)
    compute.add_column("what")
    compute.add_column("value", justify="right")
    compute.add_column("because")
    compute.add_row("node type", _t(c.node_type), _why(c.node_type))
    compute.add_row("GPU nodes", _t(c.nodes), _why(c.nodes))
    compute.add_row("rails per node", _t(c.rails), f"{plain(c.rail_speed.gbit)} Gb/s each")
    compute.add_row("storage NICs per node", str(c.storage_nics), f"{plain(c.storage_nic_speed.gbit)} Gb/s each")

    fabric = Table(title="fabric", title_justify="left")
    for col in ("what", "value", "because"):
        fabric.add_column(col)
    fabric.add_row("kind", _t(f.kind), _why(f.kind))
    fabric.add_row("endpoints", _t(f.endpoints), _why(f.endpoints))
    if f.provider_managed:
        fabric.add_row("switches", "provider-managed", _why(f.tiers))
    else:
        fabric.add_row("switch", f"{f.switch} (radix {f.radix})", "")
        if f.scalable_units is not None:
            fabric.add_row("scalable units (rounded up)", _t(f.scalable_units), _why(f.scalable_units))
        if f.fabric_manager_positions is not None:
            fabric.add_row("fabric-manager positions", _t(f.fabric_manager_positions),
                           _why(f.fabric_manager_positions))
        if f.designed_endpoints is not None:
            fabric.add_row("designed endpoints", _t(f.designed_endpoints), _why(f.designed_endpoints))
        fabric.add_row("fat-tree tiers", _t(f.tiers), _why(f.tiers))
        fabric.add_row("leaf switches", _t(f.leaf_switches), _why(f.leaf_switches))
        fabric.add_row("spine switches", _t(f.spine_switches), _why(f.spine_switches))
        fabric.add_row("core switches", _t(f.core_switches), _why(f.core_switches))
    fabric.add_row("rail-optimised", _t(f.rail_optimized), _why(f.rail_optimized))
    fabric.add_row("MTU", _t(f.mtu), f.mtu.derived_from.rule)

    sf = bp.storage_fabric
    storage_net = Table(title="storage fabric (its own switches)", title_justify="left")
    for col in ("what", "value", "because"):
        storage_net.add_column(col)
    storage_net.add_row("endpoints", _t(sf.endpoints), _why(sf.endpoints))
    if sf.switch is None:
        storage_net.add_row("switches", "provider-managed" if sf.provider_managed else "shared with compute",
                            _why(sf.tiers))
    else:
        storage_net.add_row("switch", f"{sf.switch} (radix {sf.radix}, {sf.port_speed})", "")
        storage_net.add_row("fat-tree tiers", _t(sf.tiers), _why(sf.tiers))
        storage_net.add_row("leaf / spine / core", f"{_t(sf.leaf_switches)} / {_t(sf.spine_switches)} / "
                            f"{_t(sf.core_switches)}", f"{_why(sf.leaf_switches)}; {_why(sf.spine_switches)}")

    qos = Table(title="QoS (one plan for NIC, NCCL, NVMe-oF, switch)", title_justify="left")
    for col in ("what", "value"):
        qos.add_column(col)
    qos.add_row("applies", "yes" if q.applies else "no (provider-managed QoS)")
    qos.add_row("RoCE priority / DSCP", f"{q.roce_priority.value} / {q.dscp.value}")
    qos.add_row("PFC priorities", ",".join(map(str, q.pfc_priorities)) or "none")
    qos.add_row("CNP DSCP / priority", f"{q.cnp_dscp.value} / {q.cnp_priority}")
    qos.add_row("ToS = NCCL_IB_TC = NVMe-oF tos", f"{q.traffic_class.value} ({q.traffic_class.derived_from.formula})")

    storage = Table(title="storage tiers", title_justify="left")
    for col in ("tier", "media", "usable", "protection", "raw", "nodes", "aggregate read"):
        storage.add_column(col)
    for tier in s.tiers:
        storage.add_row(tier.name, tier.media, _t(tier.usable), tier.protection.value, _t(tier.raw),
                        _t(tier.nodes), f"{tier.aggregate_read.value}  [{_why(tier.aggregate_read)}]")
    protection = storage_options_table(s.tiers)
    designed = Table(title="targets versus design", title_justify="left")
    for col in ("target", "spec", "design", "how"):
        designed.add_column(col)
    asked = bp.spec_values
    designed.add_row("read throughput", asked.get("performance.storage.read_throughput", ""), _t(s.read_throughput),
                     _why(s.read_throughput))
    if "performance.storage.write_throughput" in asked:
        designed.add_row("write throughput", asked["performance.storage.write_throughput"], _t(s.write_throughput),
                         _why(s.write_throughput))
    if s.nvmeof is not None:
        designed.add_row("NVMe-oF paths", "", f"{s.nvmeof.paths_per_subsystem.value} per subsystem, "
                         f"{len(s.nvmeof.subsystems)} subsystems", f"iopolicy {s.nvmeof.iopolicy.value}")
        designed.add_row("NVMe-oF namespaces", "", f"{_t(s.nvmeof.namespace_size)} each, one per GPU node, "
                         "its owner alone attaches it", _why(s.nvmeof.namespace_size))

    checks = Table(title="acceptance checks", title_justify="left")
    for col in ("id", "tool", "threshold", "predicted", "severity", "from spec"):
        checks.add_column(col)
    for ch in bp.acceptance.checks:
        checks.add_row(ch.id, ch.tool, f"{ch.op} {plain(ch.threshold)} {ch.unit}", _predicted(ch), ch.severity,
                       ", ".join(ch.derived_from.spec))
    ceph = ceph_tables(s.ceph) if s.ceph is not None else []
    fleets = [_fleets(bp.fleets)] if bp.fleets is not None else []
    wiring = [_wiring(bp.wiring)] if bp.wiring is not None else []
    options = [protection] if any(t.options for t in s.tiers) else []
    parts: list[Table] = [compute, *fleets, fabric, storage_net, *wiring, qos, storage, *options, *ceph, designed,
                          checks]
    if bp.acceptance.footprint is not None:
        parts.append(_footprint(bp.acceptance.footprint, bp.acceptance))
    parts.append(costs_table(bp.costs))
    return Group(*parts)


def _predicted(check: Check) -> str:
    """What the built cluster should measure and the floor below which a measure is a finding (or a miss, gated);
    "-" where the plan predicts nothing (the lab, a check no model predicts yet)."""
    p = check.predicted
    if p is None:
        return "-"
    return f"{plain(round(p.figure.value, 2))} {check.unit} ({'gate' if p.gate.value else 'floor'} " \
           f"{p.floor.value:.0%})"


def _wiring(plan: WiringPlan) -> Table:
    """The wiring plan: switches by fabric and tier with their names, and each cable run (switch/cabling.csv)."""
    table = Table(title="wiring (switch/cabling.csv: one row per cable)", title_justify="left")
    for col in ("what", "value", "because"):
        table.add_column(col)
    if plan.none_because is not None:
        table.add_row("cables", "none", plan.none_because)
        return table
    for t in plan.switches:
        names = t.names()
        table.add_row(f"{t.fabric} {t.tier} switches", f"{t.count} x {t.model}",
                      f"{names[0]}" + (f" .. {names[-1]}" if len(names) > 1 else "") + f"; ports named as {t.ports.os}")
    for run in plan.runs:
        length = f", {run.length.value} each ({_why(run.length)})" if run.length is not None else ""
        table.add_row(f"{run.fabric} {run.kind} cables", _t(run.cables), f"{_why(run.cables)}{length}; {run.rule}")
    return table


def _fleets(plan: FleetsPlan) -> Table:
    """How many fleet resources, which hosts each names, and (Azure) which InfiniBand partition each is."""
    table = Table(title=f"fleets ({plan.kind}): {_t(plan.count)}, because {_why(plan.count)}", title_justify="left")
    partitions = any(f.ib_partition is not None for f in plan.fleets)
    for col in ("fleet", "hosts", "instances", *(("InfiniBand partition",) if partitions else ())):
        table.add_column(col)
    for f in plan.fleets:
        row = [f.name, f"{f.name_prefix}{f.first} .. {f.name_prefix}{f.last}", str(f.size)]
        table.add_row(*row, *((str(f.ib_partition),) if partitions else ()))
    table.add_row("fabric", plan.fabric, "")
    capacity = plan.capacity
    table.add_row("capacity", capacity.source.value + (f" {capacity.reservation}" if capacity.reservation else ""),
                  _why(capacity.source))
    return table


WHERE = {"shared": "the shared file system, every GPU node at once", "tier": "each node's own tiered file system"}


def _footprint(f: FioFootprint, plan: AcceptancePlan) -> Table:
    table = Table(title="acceptance working set (fio, on the hot tier)", title_justify="left")
    for col in ("what", "value", "because"):
        table.add_column(col)
    table.add_row("scratch files", f"{f.files} x {f.per_file}", "one per fio job on every GPU node; every "
                  "workload reuses them")
    table.add_row("footprint", _t(f.footprint), _why(f.footprint) + f" (at most half of {f.tier_usable} usable)")
    table.add_row("time to lay it out", _t(f.fill_time), _why(f.fill_time))
    for area in plan.scratch:
        if area.kind == "directory" and area.fs is not None:
            names = [w.name for w in plan.workloads if w.on == area.fs]
            if names:
                table.add_row(f"runs in {area.path}", ", ".join(names), f"on {WHERE[area.fs]}")
    return table


def print_summary(bp: Blueprint, console: Console, today: date | None = None) -> None:
    console.print(summary(bp))
    for note in bp.notes:
        console.print(f"[yellow]note:[/] {note}")
    for stale in stale_rows(bp.costs, today or date.today()):
        console.print(f"[yellow]warning:[/] {stale}")
