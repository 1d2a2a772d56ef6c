"""Fabric: RoCE, InfiniBand or EFA by target, and non-blocking fat-tree sizing from switch radix.

A k-radix non-blocking fat tree connects k endpoints on one switch, k^2/2 with two tiers (leaf/spine)
and k^3/4 with three (Al-Fares et al., SIGCOMM 2008; field-numbers section 5).
"""

from __future__ import annotations

from blueprints.blueprint import ComputePlan, FabricKind, FabricPlan, traced
from blueprints.planner.context import PlanContext, ceil_div
from blueprints.spec import BaremetalTarget

GCP_VPC_MAX_MTU = 8896  # field-numbers 10.4 (cloud.google.com VPC MTU page)
_CLOUD_FABRIC: dict[str, FabricKind] = {"aws": "efa", "gcp": "roce", "azure": "infiniband", "lab": "roce"}


def fat_tree(endpoints: int, radix: int) -> tuple[int, int, int, int] | None:
    """(tiers, leaf, spine, core) of a non-blocking fat tree, or None when 3 tiers are not enough."""
    half = radix // 2
    if endpoints <= radix:
        return 1, 1, 0, 0
    if endpoints <= radix * radix // 2:
        return 2, ceil_div(endpoints, half), ceil_div(endpoints, radix), 0
    if endpoints <= radix**3 // 4:
        leaf = ceil_div(endpoints, half)
        return 3, leaf, leaf, ceil_div(endpoints, radix)
    return None


def plan_fabric(ctx: PlanContext, compute: ComputePlan) -> FabricPlan:
    target = ctx.req.target
    if isinstance(target, BaremetalTarget):
        kind: FabricKind = target.fabric
        kind_t = traced(kind, ["target.fabric"], "fabric.as_specified")
    else:
        kind = _CLOUD_FABRIC[target.provider]
        kind_t = traced(kind, ["target.provider"], "fabric.by_target", f"{target.provider} -> {kind}")
    endpoints = compute.nodes.value * compute.rails.value
    ep = traced(endpoints, ["compute.gpus", "compute.accelerator"], "fabric.endpoints",
                f"{compute.nodes.value} nodes x {compute.rails.value} rails = {endpoints}")
    multi_gpu = compute.gpus_per_node > 1 and compute.rails.value > 1
    rail_opt = traced(multi_gpu or ctx.is_lab, ["compute.accelerator"], "fabric.rail_optimized_when_multi_gpu",
                      f"{compute.gpus_per_node} GPUs and {compute.rails.value} rails per node")
    mtu_value = {"roce": 9000, "infiniband": 4096, "efa": 9001}[kind]
    mtu_rule, mtu_why = f"fabric.mtu_{kind}", ""
    if ctx.is_lab:
        mtu_value, mtu_rule = 1500, "fabric.mtu_lab"
    elif ctx.provider == "gcp":
        # the stack's VPCs and the roles use this one value (field-numbers 10.4: GCP's VPC maximum)
        mtu_value, mtu_rule, mtu_why = GCP_VPC_MAX_MTU, "fabric.mtu_gcp_vpc_max", "GCP VPC maximum MTU (8896)"
    mtu = traced(mtu_value, ["target.provider"], mtu_rule, mtu_why)

    if ctx.is_cloud:
        zero = traced(0, ["target.provider"], "fabric.provider_managed", f"{target.provider} runs the switches")
        return FabricPlan(kind=kind_t, provider_managed=True, switch=None, radix=None, endpoints=ep,
                          tiers=zero, leaf_switches=zero, spine_switches=zero, core_switches=zero,
                          rail_optimized=rail_opt, ecmp=True, mtu=mtu)

    family = "infiniband" if kind == "infiniband" else "ethernet"
    candidates = [s for s in ctx.catalog.switches.values()
                  if s.fabric == family and s.port_speed.value == compute.rail_speed.value
                  and (s.name.endswith("-lab") == ctx.is_lab)]
    if not candidates:
        raise ctx.infeasible("target.fabric", f"no {family} switch in the catalog has {compute.rail_speed} ports "
                             f"for the {compute.node_type.value} rails")
    switch = max(candidates, key=lambda s: s.radix)
    shape = fat_tree(endpoints, switch.radix)
    if shape is None:
        cap = switch.radix**3 // 4
        raise ctx.infeasible("compute.gpus", f"gpus {compute.gpus} need {endpoints} fabric endpoints "
                             f"({compute.nodes.value} nodes x {compute.rails.value} rails), more than a 3-tier fat "
                             f"tree of {switch.name} connects (radix {switch.radix}: k^3/4 = {cap} endpoints)")
    tiers, leaf, spine, core = shape
    k = switch.radix
    spec = ["compute.gpus", "target.fabric" if isinstance(target, BaremetalTarget) else "target.provider"]
    return FabricPlan(
        kind=kind_t,
        provider_managed=False,
        switch=switch.name,
        radix=k,
        endpoints=ep,
        tiers=traced(tiers, spec, "fabric.fat_tree_tiers",
                     f"{endpoints} endpoints; radix {k}: 1 tier <= {k}, 2 tiers <= {k * k // 2}, "
                     f"3 tiers <= {k**3 // 4}"),
        leaf_switches=traced(leaf, spec, "fabric.leaf", f"ceil({endpoints} / ({k}/2)) = {leaf}"),
        spine_switches=traced(spine, spec, "fabric.spine",
                              f"ceil({endpoints} / {k}) = {spine}" if tiers == 2 else f"= leaf = {spine}"),
        core_switches=traced(core, spec, "fabric.core", f"ceil({endpoints} / {k}) = {core}" if core else "none"),
        rail_optimized=rail_opt,
        ecmp=tiers > 1,
        mtu=mtu,
    )
