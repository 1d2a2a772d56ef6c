"""Storage fabric: its own leaf/spine tree for the GPU nodes' storage NICs and the storage nodes' NICs.

DGX systems carry storage NICs apart from the compute rails (field-numbers 8: "DGX H100 storage NICs");
the storage servers' NIC counts are catalog shapes (catalog/storage_servers.yaml). The tree is sized like
the compute fabric's (balanced spines, fabric.balanced_tree) and has no fabric manager position. Where every host
has the same number of storage NICs, NIC j of each host lands on leaf group j (leaves rounded up to a multiple of
the NICs, as the compute fabric's rails): one leaf lost takes one of a host's paths, never all of them.
Clouds: the provider's network; the lab: both rails carry storage and compute.
"""

from __future__ import annotations

from blueprints.blueprint import ComputePlan, StorageFabricPlan, StoragePlan, Traced, traced
from blueprints.figures import counted
from blueprints.planner.context import PlanContext, ceil_div
from blueprints.planner.fabric import balanced_tree


def client_rails(ctx: PlanContext, compute: ComputePlan) -> Traced[tuple[int, ...]]:
    """Which of a GPU node's rails (inventory rail indices) are its storage NICs: in the lab the compute rails carry
    storage too; elsewhere the storage NICs follow the compute rails in the node's rails list."""
    if ctx.is_lab:
        return traced(tuple(range(compute.storage_nics)), ["target.rails"], "storage_fabric.client_rails_shared",
                      f"lab: rails 0..{compute.storage_nics - 1} carry storage and compute")
    first = compute.rails.value
    rails = tuple(range(first, first + compute.storage_nics))
    return traced(rails, ["compute.accelerator"], "storage_fabric.client_rails_after_compute",
                  f"{compute.storage_nics} storage NIC(s) after the {first} compute rails: "
                  + (f"rails {rails[0]}..{rails[-1]}" if rails else "none"))


def plan_storage_fabric(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan) -> StorageFabricPlan:
    spec = ["compute.gpus", "data.training_set", "performance.storage.read_throughput"]
    gpu_ports = compute.nodes.value * compute.storage_nics
    parts = [f"{compute.nodes.value} GPU nodes x {compute.storage_nics} storage NICs"]
    ports, speeds = gpu_ports, [compute.storage_nic_speed.value] if compute.storage_nics else []
    # NIC counts per host and the hosts: NIC j of every host on leaf group j where all have as many (below)
    counts = {compute.storage_nics} if compute.storage_nics else set()
    hosts = compute.nodes.value if compute.storage_nics else 0
    for tier in storage.tiers:
        srv = ctx.catalog.storage_servers.get(tier.server)
        if srv is None or tier.nodes.value == 0:
            continue
        ports += tier.nodes.value * srv.nics
        speeds.append(ctx.catalog.nics[srv.nic].speed.value)
        parts.append(f"{tier.nodes.value} {tier.name} nodes x {srv.nics}")
        counts.add(srv.nics)
        hosts += tier.nodes.value
    ep = traced(ports, spec, "storage_fabric.endpoints", " + ".join(parts) + f" = {ports}")
    clients = client_rails(ctx, compute)
    if ctx.is_cloud or ctx.is_lab:
        why = (f"{ctx.provider} provides the managed file system's network" if ctx.is_cloud
               else "lab: both rails carry storage and compute")
        zero = traced(0, ["target.provider"], "storage_fabric.not_separate", why)
        return StorageFabricPlan(provider_managed=ctx.is_cloud, shared_with_compute=ctx.is_lab, switch=None,
                                 client_rails=clients, endpoints=ep, tiers=zero, leaf_switches=zero,
                                 spine_switches=zero, core_switches=zero)
    # every host's NIC j on leaf group j where all hosts have the same NIC count: a leaf lost leaves every host its
    # other paths (NVMe-oF multipath, a bond), where NICs side by side on one leaf would lose them together
    nics = counts.pop() if len(counts) == 1 else 1
    fastest = max(speeds, default=compute.storage_nic_speed.value)
    candidates = [s for s in ctx.catalog.switches.values() if s.fabric == "ethernet"
                  and s.port_speed.value == fastest and not s.name.endswith("-lab")]
    if not candidates:
        raise ctx.infeasible("target.fabric", f"no ethernet switch in the catalog has {compute.storage_nic_speed} "
                             "ports for the storage fabric")
    switch = max(candidates, key=lambda s: s.radix)
    k, half = switch.radix, switch.radix // 2
    if ports <= k:
        leaf, leaf_why = 1, f"{ports} ports fit one {k}-port switch"
    elif nics > 1:
        leaf = ceil_div(hosts, half) * nics
        leaf_why = (f"ceil({hosts} hosts / {half}) x {nics} NICs = {leaf}: each host's NIC j on its own leaf group j, "
                    "so a leaf lost takes one path of a host, never all")
    else:
        leaf, leaf_why = ceil_div(ports, half), f"ceil({ports} / {half}) = {ceil_div(ports, half)}"
    shape = balanced_tree(leaf, k)
    if shape is None:
        raise ctx.infeasible("compute.gpus", f"the storage fabric needs {ports} ports, more than a 3-tier fat tree "
                             f"of {switch.name} connects (k^3/4 = {k**3 // 4})")
    tiers, spine, core, cables = shape
    return StorageFabricPlan(
        provider_managed=False, switch=switch.name, radix=k, port_speed=str(switch.port_speed), endpoints=ep,
        client_rails=clients,
        tiers=traced(tiers, spec, "storage_fabric.tiers", f"{counted(leaf, 'leaf', 'leaves')}; radix {k}"),
        leaf_switches=traced(leaf, spec, "storage_fabric.leaf", leaf_why),
        nics_per_host=nics,
        spine_switches=traced(spine, spec, "storage_fabric.spine_balanced",
                              f"fewest >= ceil({leaf} x {half} / {k}) dividing {half} uplinks = {spine}"
                              if tiers == 2 else f"{spine}"),
        core_switches=traced(core, spec, "storage_fabric.core", f"{core}" if core else "none"),
        leaf_spine_cables=cables,
    )
