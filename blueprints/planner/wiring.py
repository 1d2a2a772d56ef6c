"""Wiring: the switches of each fabric by tier, named, and the cable runs between the tiers with their lengths.

The counts are the fabric planners' (fabric.py, storage_fabric.py); this module names the switches, says how each
cable is placed and how long it is planned to be. Placement (blueprints.wiring expands it into rows):

- compute, rail-optimised (DGX SuperPOD's rail groups): node i's rail r lands on leaf (i // d) x rails + r, port
  i mod d, d = k/2 down-ports a leaf; without rails (one NIC a node) endpoint e = i x rails + r on leaf e // d;
- storage: the GPU nodes, then the storage nodes, in host order, d to a leaf; where every host has n storage NICs
  (storage_fabric.nics_per_host), host h's NIC j on leaf (h // d) x n + j, as the compute rails;
- on one switch (one tier) every endpoint takes the next port;
- leaf l's uplink u (ports d .. k-1) goes to spine u // c (c cables from each leaf to each spine), landing on that
  spine's port l x c + u mod c; on three tiers a pod's m <= d leaves share its m spines (leaf j of the pod sends
  uplink h = j x d + u to the pod's spine h mod m, port h // m), and spine s's uplink v goes to core g mod C, port
  g // C (g = s x d + v, C cores).

Cable lengths are SONiC's per pair of neighbour roles (sonic-buildimage files/build_templates/buffers_config.j2,
``ports2cable``): server to ToR 5m, ToR to leaf router 40m, leaf router to spine router 300m; our leaves are its ToRs,
our spines its leaf routers, our cores its spine routers. SONiC sizes a port's lossless headroom from that length.
InfiniBand fabrics have no such table here: their lengths are left unplanned.
"""

from __future__ import annotations

from blueprints.blueprint import (
    CableRun,
    ComputePlan,
    FabricPlan,
    StorageFabricPlan,
    SwitchTier,
    Traced,
    WiredFabric,
    WiringPlan,
    traced,
)
from blueprints.blueprint.wiring import RunKind, SwitchTierName
from blueprints.catalog import Switch
from blueprints.planner.context import PlanContext

SONIC_CABLES = "sonic-buildimage files/build_templates/buffers_config.j2 ports2cable"
LENGTH: dict[RunKind, tuple[str, str]] = {
    "node-leaf": ("5m", "torrouter_server"),
    "leaf-spine": ("40m", "leafrouter_torrouter"),
    "spine-core": ("300m", "spinerouter_leafrouter"),
}
PREFIX: dict[WiredFabric, str] = {"compute": "c", "storage": "s"}


def _length(kind: RunKind, switch: Switch, spec: list[str]) -> Traced[str] | None:
    if switch.ports.os != "sonic":
        return None
    value, roles = LENGTH[kind]
    return traced(value, spec, "wiring.cable_length_sonic_roles", f"{SONIC_CABLES}['{roles}'] = {value}")


def _fabric(node_run: CableRun, switch: Switch, counts: tuple[int, int, int], cables: int,
            spec: list[str]) -> tuple[list[SwitchTier], list[CableRun]]:
    """One fabric's switch tiers (leaf, spine, core counts) and its runs: the hosts' run, then the uplinks."""
    fabric = node_run.fabric
    tiers: tuple[SwitchTierName, ...] = ("leaf", "spine", "core")
    switches = [SwitchTier(fabric=fabric, tier=tier, count=n, name_prefix=f"{PREFIX[fabric]}{tier}-",
                           model=switch.name, port_speed=switch.port_speed,
                           ports=switch.ports) for tier, n in zip(tiers, counts, strict=True) if n]
    return switches, [node_run, *_uplink_runs(fabric, switch, *counts, cables, spec)]


def _uplink_runs(fabric: WiredFabric, switch: Switch, leaves: int, spines: int, cores: int, cables: int,
                 spec: list[str]) -> list[CableRun]:
    d = switch.radix // 2
    runs = []
    if spines:
        total = leaves * d
        rule = (f"leaf l's uplink u (ports {d + 1}-{switch.radix}) to spine u // {cables}, port l x {cables} + "
                f"u mod {cables}" if not cores else
                f"pods of up to {d} leaves and as many spines: the pod's leaf j sends uplink h = j x {d} + u to its "
                f"spine h mod m, port h // m (m: the pod's spines)")
        runs.append(CableRun(fabric=fabric, kind="leaf-spine", rule=rule, length=_length("leaf-spine", switch, spec),
                             cables=traced(total, spec, "wiring.leaf_spine_cables",
                                           f"{leaves} leaves x {d} uplinks = {total}")))
    if cores:
        total = spines * d
        runs.append(CableRun(fabric=fabric, kind="spine-core", length=_length("spine-core", switch, spec),
                             rule=f"spine s's uplink v (g = s x {d} + v) to core g mod {cores}, port g // {cores}",
                             cables=traced(total, spec, "wiring.spine_core_cables",
                                           f"{spines} spines x {d} uplinks = {total}")))
    return runs


def _compute(ctx: PlanContext, compute: ComputePlan, fabric: FabricPlan) -> tuple[list[SwitchTier], list[CableRun]]:
    assert fabric.switch is not None
    switch = ctx.catalog.switches[fabric.switch]
    spec = list(fabric.endpoints.derived_from.spec)
    leaves, spines, cores = (fabric.leaf_switches.value, fabric.spine_switches.value, fabric.core_switches.value)
    d = switch.radix // 2
    rails = compute.rails.value
    if leaves == 1 and not spines:
        place = f"node i's rail r on port i x {rails} + r of the one switch"
    elif fabric.rail_optimized.value:
        place = f"rail-optimised: node i's rail r on leaf (i // {d}) x {rails} + r, port i mod {d}"
    else:
        place = f"endpoint e = i x {rails} + r on leaf e // {d}, port e mod {d}"
    reserved = fabric.fabric_manager_positions.value if fabric.fabric_manager_positions is not None else 0
    if reserved:
        place += f"; the node position after the last node is the fabric manager's (UFM), its {rails} ports reserved"
    node_run = CableRun(fabric="compute", kind="node-leaf", rule=place, length=_length("node-leaf", switch, spec),
                        cables=traced(fabric.endpoints.value, spec, "wiring.node_leaf_cables",
                                      f"{compute.nodes.value} nodes x {rails} rails = {fabric.endpoints.value}"))
    return _fabric(node_run, switch, (leaves, spines, cores), fabric.leaf_spine_cables, spec)


def _storage(ctx: PlanContext, sf: StorageFabricPlan) -> tuple[list[SwitchTier], list[CableRun]]:
    assert sf.switch is not None
    switch = ctx.catalog.switches[sf.switch]
    spec = list(sf.endpoints.derived_from.spec)
    leaves, spines, cores = sf.leaf_switches.value, sf.spine_switches.value, sf.core_switches.value
    d = switch.radix // 2
    n = sf.nics_per_host
    if leaves == 1 and not spines:
        where = "endpoint e on port e of the one switch"
    elif n > 1:
        where = f"host h's NIC j on leaf (h // {d}) x {n} + j, port h mod {d} (each NIC on its own leaf group)"
    else:
        where = f"endpoint e on leaf e // {d}, port e mod {d}"
    place = "GPU nodes, then storage nodes, in host order: " + where
    node_run = CableRun(fabric="storage", kind="node-leaf", rule=place, length=_length("node-leaf", switch, spec),
                        cables=traced(sf.endpoints.value, spec, "wiring.storage_node_leaf_cables",
                                      sf.endpoints.derived_from.formula))
    return _fabric(node_run, switch, (leaves, spines, cores), sf.leaf_spine_cables, spec)


def plan_wiring(ctx: PlanContext, compute: ComputePlan, fabric: FabricPlan, sf: StorageFabricPlan) -> WiringPlan:
    if ctx.is_lab:
        return WiringPlan(none_because="lab: each rail is one vde_switch on the host; nothing to cable")
    if fabric.provider_managed:
        return WiringPlan(none_because=f"{ctx.provider} runs the fabrics: nothing to cable")
    switches, runs = _compute(ctx, compute, fabric)
    if not sf.provider_managed and sf.switch is not None:
        s_switches, s_runs = _storage(ctx, sf)
        switches, runs = switches + s_switches, runs + s_runs
    return WiringPlan(switches=tuple(switches), runs=tuple(runs))
