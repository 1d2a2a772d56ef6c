"""The planner: pure, deterministic functions from Requirements to a Blueprint.

One module per concern (compute, fabric, qos, nccl, storage, monitoring, acceptance, lab); each reads
the spec and the plans decided before it, and records for every derived value where it came from.
"""

from __future__ import annotations

from blueprints.blueprint import Blueprint, ComputePlan, HostGroup, StoragePlan
from blueprints.catalog import Catalog, load_catalog
from blueprints.planner.acceptance import plan_acceptance
from blueprints.planner.compute import plan_compute
from blueprints.planner.context import PlanContext
from blueprints.planner.fabric import plan_fabric
from blueprints.planner.lab import plan_lab
from blueprints.planner.monitoring import plan_monitoring
from blueprints.planner.nccl import plan_nccl
from blueprints.planner.qos import plan_qos
from blueprints.planner.qos_rules import enforce_qos_layers
from blueprints.planner.storage import plan_storage
from blueprints.spec import LabTarget, Requirements

__all__ = ["plan"]


def _host_groups(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan) -> tuple[HostGroup, ...]:
    if isinstance(ctx.req.target, LabTarget):
        t = ctx.req.target
        return (
            HostGroup(role="storage_target", count=t.storage_targets, name_prefix="storage-", node_type="lab-target"),
            HostGroup(role="gpu_client", count=t.clients, name_prefix="client-", node_type="lab-vm"),
            HostGroup(role="monitoring", count=1, name_prefix="storage-", node_type="lab-target"),
        )
    groups = [HostGroup(role="gpu_client", count=compute.nodes.value, name_prefix="gpu-",
                        node_type=compute.node_type.value)]
    groups += [HostGroup(role="storage_target", count=t.nodes.value, name_prefix=f"{t.name}-", node_type=t.server)
               for t in storage.tiers if t.name != "local_cache" and t.nodes.value > 0]
    groups.append(HostGroup(role="monitoring", count=1, name_prefix="mon-", node_type="monitoring"))
    return tuple(groups)


def plan(req: Requirements, catalog: Catalog | None = None, spec_file: str = "<spec>",
         spec_lines: dict[str, int] | None = None) -> Blueprint:
    """Plan a cluster. Raises InfeasibleError when the targets cannot be met."""
    ctx = PlanContext(req=req, catalog=catalog or load_catalog(), spec_file=spec_file)
    compute = plan_compute(ctx)
    fabric = plan_fabric(ctx, compute)
    qos = plan_qos(ctx, fabric)
    nccl = plan_nccl(ctx, compute, fabric, qos)
    storage = plan_storage(ctx, compute, fabric, qos)
    monitoring = plan_monitoring(ctx, compute, storage)
    acceptance = plan_acceptance(ctx, compute, fabric, qos, storage)
    lab = plan_lab(req.target, fabric) if isinstance(req.target, LabTarget) else None
    notes: list[str] = []
    if lab is not None:
        notes.append("lab: real kernels, emulated throughput; performance checks are informational")
    if req.performance.serving is not None:
        notes.append("serving p99 is watched by an alert; acceptance does not run inference load")
    bp = Blueprint(
        name=req.metadata.name, spec_file=spec_file, spec_lines=spec_lines or {}, requirements=req,
        hosts=_host_groups(ctx, compute, storage), compute=compute, fabric=fabric, qos=qos, nccl=nccl,
        storage=storage, monitoring=monitoring, acceptance=acceptance, lab=lab, notes=tuple(notes),
    )
    enforce_qos_layers(bp, spec_file)
    return bp
