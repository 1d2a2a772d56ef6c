"""NCCL environment: HCAs per rail, GID index, traffic class from the QoS plan, algorithm choice."""

from __future__ import annotations

from typing import Literal

from blueprints.blueprint import ComputePlan, EnvVar, FabricPlan, NcclPlan, Provenance, QosPlan, traced
from blueprints.planner.context import PlanContext

TREE_ABOVE_GPUS = 64
NVSWITCH_ACCELERATORS = ("H100-SXM", "H200", "B200", "A100")


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
        env.append(_var("NCCL_IB_TC", qos.nccl_ib_tc, list(qos.traffic_class.derived_from.spec),
                        "nccl.tc_from_qos", qos.traffic_class.derived_from.formula))
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
    inr: Literal["none", "sharp", "nvls"] = "none"
    if not ctx.is_lab and kind == "infiniband":
        inr = "sharp"
        env.append(_var("NCCL_COLLNET_ENABLE", 1, ["target.fabric"], "nccl.sharp_on_infiniband"))
    elif not ctx.is_lab and compute.accelerator in NVSWITCH_ACCELERATORS and compute.gpus_per_node == 8:
        inr = "nvls"
        env.append(_var("NCCL_NVLS_ENABLE", 1, ["compute.accelerator"], "nccl.nvls_on_nvswitch"))
    inr_t = traced(inr, ["target.fabric", "compute.accelerator"], "nccl.in_network_reduction",
                   {"none": "none available", "sharp": "SHARP/CollNet on InfiniBand",
                    "nvls": "NVLink SHARP on NVSwitch systems"}[inr])
    degraded = (
        _var("NCCL_ALGO", "Ring", ["compute.gpus"], "nccl.degraded_ring", "fallback profile: Ring"),
        _var("NCCL_PROTO", "Simple", ["compute.gpus"], "nccl.degraded_ring", "fallback profile: Simple"),
    )
    return NcclPlan(env=tuple(env), degraded_env=degraded, gpudirect_rdma=gdr_t, in_network_reduction=inr_t)
