"""Fleets: how the clouds' GPU nodes are provisioned, as the providers' fleet resources (``FleetsPlan``).

Per provider (desk research, sources named where the limit is used):
- AWS: one Auto Scaling group over the launch template, in the cluster placement group. An Auto Scaling group's
  size is bounded by the account's instance quota only, so the GPU nodes are one fleet.
- GCP: zonal managed instance groups. A zonal MIG holds at most 1,000 VMs by default (Google Cloud, "Increase a
  managed instance group's (MIG's) size limit": 1,000 VMs, 2,000 with paginated listing), so more GPU nodes are
  split into MIGs of at most 1,000, each with its own compact placement policy.
- Azure: scale sets in Flexible orchestration, at most 1,000 VMs each (Microsoft Learn, "Flexible orchestration for
  virtual machine scale sets": "high availability guarantees (up to 1000 VMs)"). A scale set is one InfiniBand
  group: VMs in different scale sets have no InfiniBand path between them (Azure CycleCloud, "Availability Sets":
  putting several node arrays in one InfiniBand group "is currently not supported with VMSS"), so each scale set is
  its own InfiniBand partition, and the split is even so that no partition is much smaller than the rest.

A split is even: n = ceil(nodes / max) fleets, the first nodes mod n of them one host larger.
"""

from __future__ import annotations

from typing import Literal

from blueprints.blueprint import Traced, traced
from blueprints.figures import counted
from blueprints.fleet_plan import CapacityPlan, Fleet, FleetKind, FleetsPlan
from blueprints.hosts import HostGroup
from blueprints.planner.context import PlanContext, ceil_div
from blueprints.spec import AwsTarget, GcpTarget

KIND: dict[str, FleetKind] = {"aws": "aws-autoscaling-group", "gcp": "gcp-managed-instance-group",
                              "azure": "azure-scale-set-flexible"}
MAX_SIZE: dict[str, tuple[int, str] | None] = {
    "aws": None,
    "gcp": (1000, "a zonal managed instance group holds at most 1,000 VMs (Google Cloud, MIG size limit)"),
    "azure": (1000, "a Flexible scale set holds at most 1,000 VMs (Microsoft Learn, Flexible orchestration)"),
}
FABRIC = {
    "aws": "one EFA fabric: every Auto Scaling group launches into the one cluster placement group",
    "gcp": "one RoCE network (the zone's RDMA network profile) across every managed instance group; each group "
           "has its own compact placement policy",
    "azure": "one InfiniBand partition per scale set: NCCL reaches over InfiniBand only the VMs of its own scale "
             "set",
}
HOST_TAG = {"aws": "clustersmith:host", "gcp": "clustersmith-host", "azure": "clustersmith:host"}


def _capacity(ctx: PlanContext) -> CapacityPlan:
    t = ctx.req.target
    source: Literal["on-demand", "reservation", "capacity-block"] = "on-demand"
    reservation: str | None = None
    paths = ["target.provider"]
    if isinstance(t, AwsTarget) and t.capacity_reservation is not None:
        source = "capacity-block" if t.capacity_block else "reservation"
        reservation, paths = t.capacity_reservation, ["target.capacity_reservation", "target.capacity_block"]
    elif isinstance(t, GcpTarget) and t.reservation is not None:
        source, reservation, paths = "reservation", t.reservation, ["target.reservation"]
    why = {"on-demand": "no reservation named: on-demand capacity",
           "reservation": f"the GPU nodes launch into reservation {reservation}",
           "capacity-block": f"the GPU nodes launch into Capacity Block {reservation} (market type capacity-block)"}
    return CapacityPlan(source=traced(source, paths, "fleets.capacity", why[source]), reservation=reservation)


def plan_fleets(ctx: PlanContext, groups: tuple[HostGroup, ...]) -> FleetsPlan | None:
    """The GPU nodes' fleets on a cloud target, over the GPU group's host names; None elsewhere (bare metal and the
    lab have no fleets)."""
    if not ctx.is_cloud:
        return None
    provider = ctx.provider
    (gpu,) = [g for g in groups if g.role == "gpu_client"]
    nodes = gpu.count
    limit = MAX_SIZE[provider]
    max_size: Traced[int] | None = None
    if limit is None:
        count = 1
        formula = f"one {KIND[provider]} of {nodes} instances: an Auto Scaling group is bounded by the account's " \
                  "instance quota only"
    else:
        cap, why = limit
        max_size = traced(cap, ["target.provider"], "fleets.max_size", why)
        count = max(1, ceil_div(nodes, cap))
        formula = f"ceil({nodes} / {cap}) = {counted(count, 'fleet')} ({why})"
    base, extra = divmod(nodes, count)
    sizes = [base + 1 if i < extra else base for i in range(count)]
    if count > 1:
        formula += f"; {', '.join(str(s) for s in sorted(set(sizes), reverse=True))} hosts each, split evenly"
    fleets: list[Fleet] = []
    first = 1
    for i, size in enumerate(sizes):
        fleets.append(Fleet(name=f"{gpu.name_prefix}fleet-{i + 1}", role=gpu.role, node_type=gpu.node_type,
                            name_prefix=gpu.name_prefix, first=first, size=size,
                            ib_partition=i if provider == "azure" else None))
        first += size
    return FleetsPlan(kind=KIND[provider], max_size=max_size, fleets=tuple(fleets),
                      count=traced(count, ["compute.gpus", "target.provider"], "fleets.split", formula),
                      fabric=FABRIC[provider], capacity=_capacity(ctx), host_tag=HOST_TAG[provider])
