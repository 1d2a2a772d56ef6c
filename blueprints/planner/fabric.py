"""Fabric: RoCE, InfiniBand or EFA by target, and non-blocking fat-tree sizing from switch radix.

A k-radix non-blocking fat tree connects k endpoints on one switch, k^2/2 with two tiers (leaf/spine)
and k^3/4 with three (Al-Fares et al., SIGCOMM 2008; field-numbers section 5). Each leaf gives half
its ports to endpoints and half to uplinks.

How the counts are made (field-numbers 10.2, DGX SuperPOD RA-11333-001 tables 3 and 4):

- InfiniBand is built in whole scalable units (SU). One rail-leaf's k/2 down-ports serve one rail of
  k/2 nodes, so an SU is k/2 node positions (32 on QM9700) and one leaf per rail. A partial system is
  designed "to support the full SU": positions round up to whole SUs. Where the fabric manager (UFM)
  sits follows the published rows: a two-tier fabric (at most k leaves) has every spine port on a leaf,
  so the UFM takes one node position (table 4: 31 DGX in 1 SU, 63 in 2, 95 in 3, 127 in 4); a fabric
  that needs three tiers attaches it outside the SUs, which hold nodes only (table 3: 512 DGX in 16 SU,
  1,024 in 32, 2,048 in 64). In between, the same rule: 8 SU of 8 rails (64 leaves, two tiers) hold
  255 DGX and the UFM; 256 DGX would leave the UFM no port on two tiers, so they take 8 SU on three.
- RoCE rail-optimised designs round their leaves up to a multiple of the rails (one leaf per rail per
  group); RoCE has no fabric-manager position.
- Spines: the fewest spines, at least ceil(leaves x uplinks / k), that divide each leaf's k/2 uplinks
  evenly (3 SU: 24 leaves x 32 uplinks need 12 spines; 32 does not divide by 12, so 16, 2 cables to
  each). Above k leaves two tiers cannot reach every leaf: three tiers, spines = leaves (pods of k/2),
  core = spines x (k/2) / k.
"""

from __future__ import annotations

from blueprints.blueprint import ComputePlan, FabricKind, FabricPlan, Traced, traced
from blueprints.figures import counted
from blueprints.planner.context import PlanContext, ceil_div
from blueprints.spec import BaremetalTarget

GCP_VPC_MAX_MTU = 8896  # field-numbers 10.4 (cloud.google.com VPC MTU page)
FABRIC_MANAGER_POSITIONS = 1  # UFM takes one node position of the IB fabric (field-numbers 10.2: 31 DGX in 1 SU)
_CLOUD_FABRIC: dict[str, FabricKind] = {"aws": "efa", "gcp": "roce", "azure": "infiniband", "lab": "roce"}


def balanced_tree(leaves: int, radix: int, tiers: int = 1) -> tuple[int, int, int, int] | None:
    """(tiers, spines, core, cables from each leaf to each spine) above ``leaves`` leaves, with at least ``tiers``
    tiers; None past 3 tiers."""
    up = radix // 2
    if leaves <= 1 and tiers <= 1:
        return 1, 0, 0, 0
    if leaves <= radix and tiers <= 2:
        need = max(ceil_div(leaves * up, radix), 1)
        spines = next(s for s in range(need, up + 1) if up % s == 0)
        return 2, spines, 0, up // spines
    if leaves <= radix * radix // 2:
        return 3, leaves, ceil_div(leaves * up, radix), 1
    return None


def ib_scalable_units(nodes: int, radix: int, rails: int) -> tuple[int, int, int]:
    """(SUs, node positions per SU, of them the fabric manager's) for ``nodes`` GPU nodes of ``rails`` rails: the
    UFM takes a node position while the SUs' leaves fit two tiers (k leaves), and attaches outside the SUs once the
    fabric needs three (field-numbers 10.2: 127 DGX in 4 SU, 512 in 16)."""
    su_nodes = radix // 2
    with_manager = ceil_div(nodes + FABRIC_MANAGER_POSITIONS, su_nodes)
    if with_manager * rails <= radix:
        return with_manager, su_nodes, FABRIC_MANAGER_POSITIONS
    return ceil_div(nodes, su_nodes), su_nodes, 0


def _managed(kind_t: Traced[FabricKind], ep: Traced[int], rail_opt: Traced[bool], mtu: Traced[int],
             provider: str) -> FabricPlan:
    zero = traced(0, ["target.provider"], "fabric.provider_managed", f"{provider} runs the switches")
    return FabricPlan(kind=kind_t, provider_managed=True, switch=None, radix=None, endpoints=ep,
                      tiers=zero, leaf_switches=zero, spine_switches=zero, core_switches=zero,
                      rail_optimized=rail_opt, ecmp=True, mtu=mtu)


def plan_fabric(ctx: PlanContext, compute: ComputePlan) -> FabricPlan:
    target = ctx.req.target
    if isinstance(target, BaremetalTarget):
        kind: FabricKind = target.fabric
        kind_t = traced(kind, ["target.fabric"], "fabric.as_specified")
    else:
        kind = _CLOUD_FABRIC[target.provider]
        kind_t = traced(kind, ["target.provider"], "fabric.by_target", f"{target.provider} -> {kind}")
    nodes, rails = compute.nodes.value, compute.rails.value
    endpoints = nodes * rails
    ep = traced(endpoints, ["compute.gpus", "compute.accelerator"], "fabric.endpoints",
                f"{nodes} nodes x {rails} rails = {endpoints}")
    multi_gpu = compute.gpus_per_node > 1 and rails > 1
    rail_opt = traced(multi_gpu or ctx.is_lab, ["compute.accelerator"], "fabric.rail_optimized_when_multi_gpu",
                      f"{counted(compute.gpus_per_node, 'GPU')} and {counted(rails, 'rail')} per node")
    mtu_value = {"roce": 9000, "infiniband": 4096, "efa": 9001}[kind]
    mtu_rule, mtu_why = f"fabric.mtu_{kind}", ""
    if ctx.is_lab:
        mtu_value, mtu_rule = 1500, "fabric.mtu_lab"
    elif ctx.provider == "gcp":
        # the stack's VPCs and the roles use this one value (field-numbers 10.4: GCP's VPC maximum)
        mtu_value, mtu_rule, mtu_why = GCP_VPC_MAX_MTU, "fabric.mtu_gcp_vpc_max", "GCP VPC maximum MTU (8896)"
    mtu = traced(mtu_value, ["target.provider"], mtu_rule, mtu_why)
    if ctx.is_cloud:
        return _managed(kind_t, ep, rail_opt, mtu, target.provider)

    family = "infiniband" if kind == "infiniband" else "ethernet"
    candidates = [s for s in ctx.catalog.switches.values()
                  if s.fabric == family and s.port_speed.value == compute.rail_speed.value
                  and (s.name.endswith("-lab") == ctx.is_lab)]
    if not candidates:
        raise ctx.infeasible("target.fabric", f"no {family} switch in the catalog has {compute.rail_speed} ports "
                             f"for the {compute.node_type.value} rails")
    switch = max(candidates, key=lambda s: s.radix)
    k, half = switch.radix, switch.radix // 2
    spec = ["compute.gpus", "target.fabric" if isinstance(target, BaremetalTarget) else "target.provider"]
    sus: Traced[int] | None = None
    fm: Traced[int] | None = None
    if kind == "infiniband":
        su, su_nodes, in_su = ib_scalable_units(nodes, k, rails)
        positions = nodes + in_su
        fm = traced(in_su, spec, "fabric.fabric_manager_position",
                    "one node position serves the subnet manager (UFM) on two tiers, as DGX SuperPOD reserves it"
                    if in_su else
                    f"0: {nodes} nodes + the UFM need more than two tiers of {k}-port switches ({k // rails} SU of "
                    f"{rails} rails); on three the UFM attaches outside the SUs, as DGX SuperPOD's 16-64 SU rows")
        sus = traced(su, spec, "fabric.whole_scalable_units",
                     f"ceil(({nodes} nodes + {in_su} UFM) / {su_nodes} per SU) = {su} SU "
                     f"({su * su_nodes} positions, {su * su_nodes - positions} spare)")
        min_tiers = 1 if in_su else 3
        leaf = su * rails
        designed = su * su_nodes * rails
        leaf_why = f"{su} SU x {rails} rails (one leaf per rail per SU) = {leaf}"
    elif endpoints <= k:
        min_tiers = 1
        leaf, designed, leaf_why = 1, k, f"{endpoints} endpoints fit one {k}-port switch"
    else:
        min_tiers = 1
        raw = ceil_div(endpoints, half)
        leaf = ceil_div(raw, rails) * rails if rail_opt.value else raw
        designed = leaf * half
        leaf_why = (f"ceil({endpoints} / {half}) = {raw}, up to a multiple of {rails} rails = {leaf}"
                    if rail_opt.value else f"ceil({endpoints} / {half}) = {leaf}")
    shape = balanced_tree(leaf, k, min_tiers)
    if shape is None:
        cap = k**3 // 4
        raise ctx.infeasible("compute.gpus", f"gpus {compute.gpus} need {endpoints} fabric endpoints "
                             f"({nodes} nodes x {rails} rails), more than a 3-tier fat "
                             f"tree of {switch.name} connects (radix {k}: k^3/4 = {cap} endpoints)")
    tiers, spine, core, cables = shape
    spine_why = {1: "none: one switch",
                 2: f"fewest >= ceil({leaf} x {half} / {k}) dividing {half} uplinks = {spine} "
                    f"({cables} cable(s) from each leaf to each spine)",
                 3: f"= leaf = {spine} (3 tiers: pods of {half} leaves)"}[tiers]
    return FabricPlan(
        kind=kind_t, provider_managed=False, switch=switch.name, radix=k, endpoints=ep,
        tiers=traced(tiers, spec, "fabric.fat_tree_tiers",
                     f"{counted(leaf, 'leaf', 'leaves')}; radix {k}: 1 tier = 1 leaf, 2 tiers <= {k} leaves, "
                     f"3 tiers <= {k * k // 2}"
                     + ("; 3 here: two tiers would leave the UFM no port" if min_tiers == 3 and leaf <= k else "")),
        leaf_switches=traced(leaf, spec, "fabric.leaf", leaf_why),
        spine_switches=traced(spine, spec, "fabric.spine_balanced", spine_why),
        core_switches=traced(core, spec, "fabric.core",
                             f"{spine} spines x {half} uplinks / {k} = {core}" if core else "none"),
        rail_optimized=rail_opt, ecmp=tiers > 1, mtu=mtu,
        scalable_units=sus, fabric_manager_positions=fm,
        designed_endpoints=traced(designed, spec, "fabric.designed_endpoints",
                                  f"{leaf} leaves x {half} down-ports" if tiers > 1 else f"one {k}-port switch"),
        leaf_spine_cables=cables,
    )
