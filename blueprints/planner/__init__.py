"""The planner: pure, deterministic functions from Requirements to a Blueprint.

One module per concern (compute, fabric, qos, nccl, storage, hosts, monitoring, acceptance, lab); each reads
the spec and the plans decided before it, and records for every derived value where it came from. It is the
only code besides ``blueprints.spec`` and ``blueprints.loader`` that reads the spec: the Blueprint it returns
resolves everything downstream needs (``target``, ``hosts``, and ``spec_values`` for ``explain``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from blueprints.blueprint import Blueprint, TargetPlan, Traced
from blueprints.catalog import Catalog, load_catalog
from blueprints.planner.acceptance import plan_acceptance
from blueprints.planner.compute import plan_compute
from blueprints.planner.context import PlanContext
from blueprints.planner.costs import plan_costs
from blueprints.planner.fabric import plan_fabric
from blueprints.planner.fleets import plan_fleets
from blueprints.planner.hosts import host_groups
from blueprints.planner.lab import plan_lab, with_own_namespaces
from blueprints.planner.monitoring import plan_monitoring
from blueprints.planner.nccl import plan_nccl
from blueprints.planner.network import check_management_fits, plan_management_network
from blueprints.planner.qos import plan_qos
from blueprints.planner.storage import plan_storage
from blueprints.planner.storage_fabric import plan_storage_fabric
from blueprints.planner.wiring import plan_wiring
from blueprints.spec import AwsTarget, BaremetalTarget, GcpTarget, LabTarget, Requirements

__all__ = ["plan"]


def plan_target(req: Requirements, network: Traced[str] | None) -> TargetPlan:
    t = req.target
    common = {"provider": t.provider, "description": req.metadata.description, "management_network": network}
    if isinstance(t, AwsTarget):
        return TargetPlan(**common, region=t.region, zone=t.availability_zone)
    if isinstance(t, GcpTarget):
        return TargetPlan(**common, region=t.region, zone=t.zone, project=t.project)
    if isinstance(t, BaremetalTarget):
        return TargetPlan(**common, machines=t.machines)
    if isinstance(t, LabTarget):
        return TargetPlan(**common)
    return TargetPlan(**common, region=t.region)


def _cited_paths(node: Any, found: dict[str, None]) -> None:
    if isinstance(node, dict):
        prov = node.get("derived_from")
        if isinstance(prov, dict):
            found.update(dict.fromkeys(prov.get("spec", ())))
        for value in node.values():
            _cited_paths(value, found)
    elif isinstance(node, list):
        for value in node:
            _cited_paths(value, found)


def _spec_value(spec: Any, dotted: str) -> str | None:
    node = spec
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return None if node is None else str(node)


def spec_values(bp: Blueprint, req: Requirements) -> dict[str, str]:
    """The spec's value at every path a ``derived_from`` of ``bp`` names (defaults included), for explain."""
    cited: dict[str, None] = {}
    _cited_paths(bp.model_dump(mode="json", by_alias=True, exclude={"spec_values"}), cited)
    spec = req.model_dump(mode="json", by_alias=True)
    values = {path: _spec_value(spec, path) for path in sorted(cited)}
    return {path: value for path, value in values.items() if value is not None}


def plan(req: Requirements, catalog: Catalog | None = None, spec_file: str = "<spec>",
         spec_lines: dict[str, int] | None = None) -> Blueprint:
    """Plan a cluster. Raises InfeasibleError when the targets cannot be met."""
    ctx = PlanContext(req=req, catalog=catalog or load_catalog(), spec_file=spec_file)
    compute = plan_compute(ctx)
    fabric = plan_fabric(ctx, compute)
    lab = plan_lab(req.target, fabric) if isinstance(req.target, LabTarget) else None
    ctx = replace(ctx, lab=lab)
    qos = plan_qos(ctx, fabric)
    nccl = plan_nccl(ctx, compute, fabric, qos)
    storage = plan_storage(ctx, compute, qos)
    if lab is not None and storage.nvmeof is not None:
        lab = with_own_namespaces(lab, storage.nvmeof)
    network = plan_management_network(req)
    hosts = host_groups(ctx, compute, storage)
    check_management_fits(ctx, network, hosts)
    monitoring = plan_monitoring(ctx, compute, storage, network, hosts)
    acceptance = plan_acceptance(ctx, compute, fabric, qos, nccl, storage)
    notes: list[str] = []
    if lab is not None:
        notes.append("lab: real kernels, emulated throughput; performance checks are informational")
    if req.performance.serving is not None:
        notes.append("serving p99 (performance.serving.p99_latency) is not monitored: no exporter the design "
                     "deploys measures request latency, so no alert reads it; acceptance does not run inference "
                     "load")
    notes.extend(nccl.notes)
    fleets = plan_fleets(ctx, hosts)
    storage_fabric = plan_storage_fabric(ctx, compute, storage)
    if fleets is not None and fleets.count.value > 1 and req.target.provider == "azure":
        notes.append(f"azure: {fleets.count.value} scale sets, so {fleets.count.value} InfiniBand partitions; NCCL "
                     "has no InfiniBand path between them: a job must stay within one partition, and an NCCL run over "
                     "every GPU node (acceptance's) cannot use InfiniBand across them")
    wiring = plan_wiring(ctx, compute, fabric, storage_fabric)
    costs = plan_costs(ctx, compute, hosts, fleets, storage.managed, wiring)
    bp = Blueprint(
        name=req.metadata.name, spec_file=spec_file, spec_lines=spec_lines or {}, target=plan_target(req, network),
        hosts=hosts, fleets=fleets, compute=compute, fabric=fabric, storage_fabric=storage_fabric, wiring=wiring,
        qos=qos, nccl=nccl, storage=storage, monitoring=monitoring, acceptance=acceptance, costs=costs, lab=lab,
        notes=tuple(notes),
    )
    return bp.model_copy(update={"spec_values": spec_values(bp, req)})
