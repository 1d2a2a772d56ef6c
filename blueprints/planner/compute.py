"""Compute: node type, node count, rails per node and their speed."""

from __future__ import annotations

from blueprints.blueprint import ComputePlan, traced
from blueprints.catalog import GpuServer, InstanceType
from blueprints.errors import InfeasibleError
from blueprints.figures import counted
from blueprints.planner.context import PlanContext, ceil_div
from blueprints.spec import LabTarget
from blueprints.units import Rate

# GPU networks the stacks build (stacks/aws.py EFA, stacks/gcp.py RoCE/MRDMA, stacks/azure.py InfiniBand). A catalog
# type on any other network (GCP's GPUDirect-TCPXO on a3-megagpu-8g) is refused here, so that `build` never writes
# a Pulumi program its stack refuses.
BUILT_NETWORKS = ("efa", "roce", "infiniband")
NETWORK_NAMES = {"tcpxo": "GPUDirect-TCPXO"}


def _unbuilt(ctx: PlanContext, inst: InstanceType, path: str) -> InfeasibleError:
    """The error for a catalog type whose GPU network no stack builds: names the types that would do."""
    types = ctx.catalog.instance_types.values()
    built = sorted((t.accelerator, t.name) for t in types if t.provider == ctx.provider and t.network in BUILT_NETWORKS)
    offer = ", ".join(f"{gpu} ({name})" for gpu, name in built)
    value = inst.name if path == "compute.instance_type" else inst.accelerator
    return ctx.infeasible(
        path,
        f"{value!r} on target.provider {ctx.provider}: {inst.name} networks its GPUs with "
        f"{NETWORK_NAMES.get(inst.network, inst.network)}, which clustersmith does not build; expected "
        f"compute.accelerator one of the GPUs {ctx.provider}'s RDMA machine types in the catalog carry: {offer}, "
        "or another target.provider",
    )


def _cloud_instance(ctx: PlanContext) -> InstanceType:
    req = ctx.req
    types = ctx.catalog.instance_types
    if req.compute.instance_type is not None:
        chosen = types.get(req.compute.instance_type)
        if chosen is None or chosen.provider != ctx.provider:
            known = ", ".join(sorted(n for n, t in types.items() if t.provider == ctx.provider))
            raise ctx.infeasible(
                "compute.instance_type",
                f"{req.compute.instance_type!r} is not a {ctx.provider} GPU instance type in the catalog; "
                f"expected one of: {known}",
            )
        if chosen.accelerator != req.compute.accelerator:
            raise ctx.infeasible(
                "compute.instance_type",
                f"{chosen.name} carries {chosen.accelerator}, not compute.accelerator {req.compute.accelerator}",
            )
        if chosen.network not in BUILT_NETWORKS:
            raise _unbuilt(ctx, chosen, "compute.instance_type")
        return chosen
    fitting = [t for t in types.values() if t.provider == ctx.provider and t.accelerator == req.compute.accelerator]
    if not fitting:
        raise ctx.infeasible(
            "compute.accelerator",
            f"no {ctx.provider} instance type in the catalog carries {req.compute.accelerator}",
        )
    built = [t for t in fitting if t.network in BUILT_NETWORKS]
    if not built:
        raise _unbuilt(ctx, max(fitting, key=lambda t: t.name), "compute.accelerator")
    return max(built, key=lambda t: (t.network_bandwidth.value, t.name))


def _server(ctx: PlanContext) -> GpuServer:
    req = ctx.req
    if ctx.is_lab:
        return ctx.catalog.gpu_servers["lab-vm"]
    if req.compute.instance_type is not None:
        server = ctx.catalog.gpu_servers.get(req.compute.instance_type)
        if server is None or server.accelerator != req.compute.accelerator:
            known = ", ".join(s.name for s in ctx.catalog.gpu_servers.values()
                              if s.accelerator == req.compute.accelerator)
            raise ctx.infeasible(
                "compute.instance_type",
                f"{req.compute.instance_type!r} is not a {req.compute.accelerator} server in the catalog; "
                f"expected one of: {known}",
            )
        return server
    for server in ctx.catalog.gpu_servers.values():
        if server.accelerator == req.compute.accelerator:
            return server
    raise ctx.infeasible("compute.accelerator", f"no server in the catalog carries {req.compute.accelerator}")


def plan_compute(ctx: PlanContext) -> ComputePlan:
    req = ctx.req
    gpus = req.compute.gpus
    reference = _server(ctx) if not ctx.is_cloud else None
    if ctx.is_cloud:
        inst = _cloud_instance(ctx)
        ref = next(s for s in ctx.catalog.gpu_servers.values() if s.accelerator == inst.accelerator)
        per_node, rails = inst.gpus_per_node, inst.rdma_interfaces
        rail_speed = Rate.of(inst.network_bandwidth.value / rails)
        node_type = traced(inst.name, ["compute.instance_type", "compute.accelerator", "target.provider"],
                           "compute.instance_type", f"{inst.name}: {per_node}x {inst.accelerator}, "
                           f"{rails}x {inst.network} ({inst.network_bandwidth} per instance)")
        storage_nics, storage_speed = 0, rail_speed
        local_nvme, read_per_node = inst.local_nvme, ref.storage_read_per_node
    else:
        assert reference is not None
        srv = reference
        per_node, rails = srv.gpus_per_node, srv.compute_rails
        rail_speed = ctx.catalog.nics[srv.compute_nic].speed
        node_type = traced(srv.name, ["compute.accelerator", "target.provider"], "compute.server_for_accelerator",
                           f"{srv.name}: {per_node}x {srv.accelerator}, {rails}x {rail_speed} rails")
        storage_nics = srv.storage_nics
        storage_speed = ctx.catalog.nics[srv.storage_nic].speed
        local_nvme, read_per_node = srv.local_nvme, srv.storage_read_per_node

    target = req.target
    if isinstance(target, LabTarget):
        rails = target.rails
        nodes = traced(target.clients, ["target.clients"], "lab.one_vm_per_client",
                       f"{target.clients} client VMs (no GPU inside)")
        rails_t = traced(rails, ["target.rails"], "lab.rails", f"{rails} rails")
        storage_nics = rails
    else:
        n = ceil_div(gpus, per_node)
        if n * per_node != gpus:  # rounding up silently built GPUs nobody asked for (issue 43)
            lower, upper = (n - 1) * per_node, n * per_node
            built = f"{counted(n, 'node')}, {upper} GPUs"
            raise ctx.infeasible("compute.gpus", f"{gpus} GPUs do not fill whole nodes: {node_type.value} holds "
                                 f"{per_node}, so the plan would build {built}; expected a multiple of {per_node}, "
                                 "such as " + (f"{lower} or {upper}" if lower else f"{upper}"))
        nodes = traced(n, ["compute.gpus"], "compute.nodes_from_gpus", f"{gpus} / {per_node} = {n}")
        rails_t = traced(rails, ["compute.accelerator"], "compute.one_rail_per_nic",
                         f"{rails} NICs per {node_type.value}")
    return ComputePlan(
        node_type=node_type,
        accelerator=req.compute.accelerator,
        gpus=gpus,
        gpus_per_node=per_node,
        nodes=nodes,
        rails=rails_t,
        rail_speed=rail_speed,
        storage_nics=storage_nics,
        storage_nic_speed=storage_speed,
        local_nvme=local_nvme,
        storage_read_per_node=read_per_node,
    )
