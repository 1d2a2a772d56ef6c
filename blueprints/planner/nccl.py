"""NCCL environment: HCAs per rail, GID index, traffic class from the QoS plan, algorithm choice."""

from __future__ import annotations

from typing import Literal

from blueprints.blueprint import ComputePlan, EnvVar, FabricPlan, NcclPlan, Provenance, QosPlan, traced
from blueprints.planner.context import PlanContext

TREE_ABOVE_GPUS = 64
NVSWITCH_BASEBOARD_GPUS = 8  # NVLS needs the NVSwitch of an 8-GPU baseboard


def _var(name: str, value: object, spec: list[str], rule: str, formula: str = "") -> EnvVar:
    return EnvVar(name=name, value=str(value),
                  derived_from=Provenance(spec=tuple(spec), rule=rule, formula=formula))


def plan_nccl(ctx: PlanContext, compute: ComputePlan, fabric: FabricPlan, qos: QosPlan) -> NcclPlan:
    kind = fabric.kind.value
    rails = compute.rails.value
    gpus = compute.gpus
    env: list[EnvVar] = []
    if kind in ("roce", "infiniband"):
        prefix = "rxe" if ctx.is_lab else "mlx5_"
        hcas = ",".join(f"{prefix}{i}" for i in range(rails))
        env.append(_var("NCCL_IB_HCA", hcas, ["compute.accelerator"], "nccl.one_hca_per_rail",
                        f"{rails} rails -> {hcas}"))
    if kind == "roce":
        gid = 1 if ctx.is_lab else 3
        env.append(_var("NCCL_IB_GID_INDEX", gid, ["target.provider"], "nccl.roce_v2_gid",
                        "Soft-RoCE: RoCEv2 IPv4 GID at index 1" if ctx.is_lab
                        else "RoCEv2 GID, usually index 3 on ConnectX (field-numbers 3.3)"))
        # NCCL_IB_TC is qos.traffic_class, added where the environment is read (Blueprint.nccl_environment)
    if kind == "efa":
        env.append(_var("FI_PROVIDER", "efa", ["target.provider"], "nccl.efa_libfabric"))
        env.append(_var("FI_EFA_USE_DEVICE_RDMA", 1, ["target.provider"], "nccl.efa_device_rdma"))
    env.append(_var("NCCL_SOCKET_IFNAME", "^lo,docker", ["target.provider"], "nccl.bootstrap_not_loopback"))
    algo = "Tree" if gpus > TREE_ABOVE_GPUS else "Ring"
    env.append(_var("NCCL_ALGO", algo, ["compute.gpus"], "nccl.tree_above_64_gpus",
                    f"{gpus} GPUs {'>' if gpus > TREE_ABOVE_GPUS else '<='} {TREE_ABOVE_GPUS} -> {algo}"))
    env.append(_var("NCCL_PROTO", "LL,LL128,Simple", ["compute.gpus"], "nccl.all_protocols"))
    env.append(_var("NCCL_SOCKET_NTHREADS", 4, ["target.provider"], "nccl.socket_threads"))
    env.append(_var("NCCL_NSOCKS_PERTHREAD", 4, ["target.provider"], "nccl.socket_threads"))

    gdr = not ctx.is_lab
    gdr_t = traced(gdr, ["target.provider"], "nccl.gpudirect_rdma_on_gpu_hosts",
                   "GPU hosts with RDMA NICs" if gdr else "lab: no GPU")
    if gdr:
        env.append(_var("NCCL_NET_GDR_LEVEL", "PIX", ["target.provider"], "nccl.gpudirect_rdma_on_gpu_hosts"))
    inr, inr_why = _in_network_reduction(ctx, compute, fabric)
    if inr == "sharp":
        env.append(_var("NCCL_COLLNET_ENABLE", 1, ["target.fabric"], "nccl.sharp_on_infiniband", inr_why))
    elif inr == "nvls":
        env.append(_var("NCCL_NVLS_ENABLE", 1, ["compute.accelerator"], "nccl.nvls_on_nvswitch", inr_why))
    inr_t = traced(inr, ["target.fabric", "compute.accelerator"], "nccl.in_network_reduction", inr_why)
    degraded = (
        _var("NCCL_ALGO", "Ring", ["compute.gpus"], "nccl.degraded_ring", "fallback profile: Ring"),
        _var("NCCL_PROTO", "Simple", ["compute.gpus"], "nccl.degraded_ring", "fallback profile: Simple"),
    )
    return NcclPlan(env=tuple(env), degraded_env=degraded, gpudirect_rdma=gdr_t, in_network_reduction=inr_t)


def _in_network_reduction(ctx: PlanContext, compute: ComputePlan,
                          fabric: FabricPlan) -> tuple[Literal["none", "sharp", "nvls"], str]:
    """SHARP/CollNet where the catalog's InfiniBand switch offers it, else NVLS where the catalog's GPU sits on an
    NVSwitch baseboard that reduces in the switch; neither in the lab. Returns the choice and why."""
    if ctx.is_lab:
        return "none", "lab: no GPU, no SHARP switch"
    switch = ctx.catalog.switches.get(fabric.switch) if fabric.switch else None
    if fabric.kind.value == "infiniband" and switch is not None and switch.sharp:
        return "sharp", f"switch {fabric.switch} offers SHARP (catalog) -> CollNet"
    gpu = ctx.catalog.gpus.get(compute.accelerator)
    if gpu is not None and gpu.nvls and compute.gpus_per_node >= NVSWITCH_BASEBOARD_GPUS:
        return "nvls", f"{compute.accelerator} x{compute.gpus_per_node} on NVSwitch with NVLink SHARP (catalog)"
    return "none", "neither a SHARP switch nor an NVLS GPU baseboard in the catalog"
