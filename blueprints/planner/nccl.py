"""NCCL environment: only what the fabric needs and NCCL cannot find itself (field-numbers 10.1).

NCCL's tuner picks the algorithm and protocol per collective and message size, auto-selects the RoCE v2 GID and
turns NVLS on where it works, so the node-wide environment forces none of NCCL_ALGO, NCCL_PROTO,
NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE, NCCL_NET_GDR_LEVEL, NCCL_IB_GID_INDEX or the socket-transport threads.
What stays: the provider's network plugin settings, each citing the provider's document; NCCL_IB_TC from the
QoS plan (``traffic_class_slot``); NCCL_IB_HCA, which the nccl role writes per host from the RDMA devices the
rdma role found behind the compute rails (``ib_hca_rails`` says which rails). The seed's "Ring when degraded" is
a job-level profile with the per-collective syntax (``degraded_env``).
"""

from __future__ import annotations

from typing import Literal

from blueprints.blueprint import (
    ComputePlan,
    EnvVar,
    FabricPlan,
    NcclPlan,
    Provenance,
    QosPlan,
    TrafficClassSlot,
    traced,
)
from blueprints.planner.context import PlanContext

NVSWITCH_BASEBOARD_GPUS = 8  # NVLS needs the NVSwitch of an 8-GPU baseboard

NCCL_ENV_DOC = "NCCL env docs https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
# Every algorithm NCCL 2.24+ knows (src/init.cc ncclAlgoStr); the per-collective syntax needs 2.24
# (field-numbers 10.1), and an unknown name is an invalid-usage error there.
NCCL_ALGORITHMS = ("tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat")

# Provider documents, cited in derived_from.
AWS_EFA_DOC = ("AWS EC2 User Guide, EFA with NCCL (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/"
               "efa-start-nccl-base.html, via aws/aws-ofi-nccl#49); aws-ofi-nccl wiki Environment-Variables")
AWS_DEVICE_RDMA_DOC = ("aws/sagemaker-training-toolkit @9a5ed9f src/sagemaker_training/torch_distributed.py: "
                       "FI_EFA_USE_DEVICE_RDMA=1 on EFA RDMA instances")
GCP_GIB_DOC = {
    "a3-ultragpu-8g": "GoogleCloudPlatform/cluster-toolkit @c9ec026 examples/machine-learning/a3-ultragpu-8g/"
                      "nccl-tests/run-nccl-tests.sh",
    "a4-highgpu-8g": "GoogleCloudPlatform/cluster-toolkit @147e356 examples/machine-learning/a4-highgpu-8g/"
                     "system_benchmarks/run-nccl-tests-via-ramble.sh",
}
GCP_GIB_IFNAMES = "enp0s19,enp192s20"  # both documents above set this NCCL_SOCKET_IFNAME with NCCL_NET=gIB
AZURE_NCCL_CONF = {  # what Microsoft's HPC image writes to /etc/nccl.conf for the SKU (the role replaces that file)
    "Standard_ND96isr_H100_v5": ("/opt/microsoft/ndv5/topo.xml",
                                 "Azure/azhpc-images @bf3b320 customizations/ndv5.sh"),
    "Standard_ND96amsr_A100_v4": ("/opt/microsoft/ndv4/topo.xml",
                                  "Azure/azhpc-images @4657de6 customizations/ndv4.sh"),
}


def _var(name: str, value: object, spec: list[str], rule: str, formula: str) -> EnvVar:
    return EnvVar(name=name, value=str(value),
                  derived_from=Provenance(spec=tuple(spec), rule=rule, formula=formula))


def provider_env(ctx: PlanContext, compute: ComputePlan, kind: str) -> tuple[list[EnvVar], list[str]]:
    """The provider's network-plugin settings, and a note wherever no stored document covers the instance type."""
    node = compute.node_type.value
    spec = ["target.provider", "compute.accelerator"]
    if kind == "efa":
        return [
            _var("FI_PROVIDER", "efa", spec, "nccl.efa_libfabric", f"libfabric's EFA provider: {AWS_EFA_DOC}"),
            _var("FI_EFA_USE_DEVICE_RDMA", 1, spec, "nccl.efa_device_rdma", AWS_DEVICE_RDMA_DOC),
        ], [f"nccl: {node} needs the aws-ofi-nccl plugin (libnccl-net.so) where NCCL can load it; the nccl role "
            f"does not install it ({AWS_EFA_DOC})"]
    if ctx.provider == "gcp":
        doc = GCP_GIB_DOC.get(node)
        if doc is None:
            return [], [f"nccl: no stored Google document gives the NCCL plugin settings of {node}; "
                        f"the environment carries none"]
        return [
            _var("NCCL_NET", "gIB", spec, "nccl.gcp_gib_plugin", doc),
            _var("NCCL_SOCKET_IFNAME", GCP_GIB_IFNAMES, spec, "nccl.gcp_gib_plugin", doc),
        ], [f"nccl: {node}: jobs source /usr/local/gib/scripts/set_nccl_env.sh and put /usr/local/gib/lib64 on "
            f"LD_LIBRARY_PATH before NCCL starts ({doc})"]
    if ctx.provider == "azure":
        known = AZURE_NCCL_CONF.get(node)
        if known is None:
            return [], [f"nccl: no stored Microsoft document gives the NCCL topology file of {node}; "
                        f"NCCL_TOPO_FILE is not set"]
        topo, doc = known
        return [
            _var("NCCL_IB_PCI_RELAXED_ORDERING", 1, spec, "nccl.azure_image_nccl_conf", doc),
            _var("NCCL_TOPO_FILE", topo, spec, "nccl.azure_topology_file", doc),
            _var("NCCL_IGNORE_CPU_AFFINITY", 1, spec, "nccl.azure_image_nccl_conf", doc),
        ], []
    return [], []


def degraded_env() -> tuple[EnvVar, ...]:
    """The job-level profile for a fabric in trouble: AllReduce on Ring, every other collective keeps NCCL's
    full algorithm list (per-collective syntax, NCCL src/graph/tuning.cc parseList: only the first list may lack
    a prefix), and no NCCL_PROTO at all (a prefix-less one is an invalid-usage trap, field-numbers 10.1)."""
    value = f"{','.join(NCCL_ALGORITHMS)};allreduce:ring"
    return (_var("NCCL_ALGO", value, ["compute.gpus"], "nccl.degraded_allreduce_ring",
                 f"per-collective NCCL_ALGO (NCCL 2.24+, {NCCL_ENV_DOC}#nccl-algo; tuning.cc parseList): "
                 "allreduce pinned to Ring, the others keep every algorithm"),)


def traffic_class_slot(env: list[EnvVar], fabric: FabricPlan, qos: QosPlan) -> TrafficClassSlot | None:
    """NCCL_IB_TC from the QoS plan, on a RoCE fabric whose QoS the cluster runs, after the last NCCL_IB_* variable
    (else at the end). Where the provider owns QoS (GCP's RoCE VPC, whose gIB setup carries its own traffic class)
    the plan's ToS means nothing to the fabric, so it is not set."""
    if fabric.kind.value != "roce" or not qos.applies:
        return None
    at = max((i + 1 for i, v in enumerate(env) if v.name.startswith("NCCL_IB_")), default=len(env))
    return TrafficClassSlot(at=at, rule="nccl.tc_from_qos")


def plan_nccl(ctx: PlanContext, compute: ComputePlan, fabric: FabricPlan, qos: QosPlan) -> NcclPlan:
    kind = fabric.kind.value
    env, notes = provider_env(ctx, compute, kind)
    plugin = any(v.name == "NCCL_NET" for v in env)
    rails = tuple(range(compute.rails.value)) if kind in ("roce", "infiniband") and not plugin else ()
    hca = traced(rails, ["compute.accelerator"], "nccl.ib_hca_from_discovered_rails",
                 f"{len(rails)} compute rails -> NCCL_IB_HCA=<dev>:<port>,... per host, exact match, from the "
                 f"devices the rdma role finds behind each rail's netdev" if rails
                 else f"{kind}: NCCL's IB transport is not used" if not plugin else "the gIB plugin picks its NICs")
    gdr = not ctx.is_lab
    gdr_t = traced(gdr, ["target.provider"], "nccl.gpudirect_rdma_on_gpu_hosts",
                   "GPU hosts with RDMA NICs: nvidia_peermem; NCCL enables GPUDirect RDMA itself" if gdr
                   else "lab: no GPU")
    inr, inr_why = _in_network_reduction(ctx, compute, fabric)
    inr_t = traced(inr, ["target.fabric", "compute.accelerator"], "nccl.in_network_reduction", inr_why + {
        "nvls": "; NCCL_NVLS_ENABLE stays at its default (2, auto; field-numbers 10.1)",
        "sharp": "; CollNet needs the SHARP plugin and NCCL_COLLNET_ENABLE=1 in the job, not node-wide "
                 "(field-numbers 10.1)"}.get(inr, ""))
    expect = traced(_expectation(compute.gpus, inr), ["compute.gpus"], "nccl.algorithm_expectation",
                    "information for the acceptance report, never pass/fail: NCCL's tuner chooses per size")
    return NcclPlan(env=tuple(env), traffic_class=traffic_class_slot(env, fabric, qos), degraded_env=degraded_env(),
                    ib_hca_rails=hca, gpudirect_rdma=gdr_t,
                    in_network_reduction=inr_t, algorithm_expectation=expect, notes=tuple(notes))


def _expectation(gpus: int, inr: str) -> str:
    extra = {"nvls": ", NVLS/NVLSTree inside the NVSwitch domain", "sharp": ", CollNet with SHARP"}.get(inr, "")
    return f"AllReduce on {gpus} GPUs: Tree for small and Ring for large messages{extra}"


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
