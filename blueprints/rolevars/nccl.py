"""Variables of the ``nccl`` role: the Blueprint's NCCL environment, its degraded profile, GPUDirect and INR.

``nccl_env`` is the Blueprint's node-wide NCCL environment (``nccl.env`` as planned, and NCCL_IB_TC from the QoS
plan); NCCL_IB_HCA is not in it: the role writes it per host from the RDMA devices the rdma role found behind the
compute rails ``nccl_ib_hca_rails`` names. ``nccl_degraded_env`` is the job-level degraded profile the role
writes to /etc/clustersmith/nccl/degraded.env. GPUDirect RDMA and in-network reduction follow the Blueprint's
``nccl.gpudirect_rdma`` and ``nccl.in_network_reduction``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from blueprints.blueprint import Blueprint
from blueprints.rolevars import Group, RoleVars


class EnvEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$", description="Environment variable, e.g. NCCL_IB_TC")
    value: str = Field(description="Its value, as NCCL reads it")


class NcclVars(RoleVars):
    ROLE = "nccl"

    nccl_env: list[EnvEntry] = Field(description="Node-wide NCCL environment of every rank (nccl.env)")
    nccl_degraded_env: list[EnvEntry] = Field(
        description="Job-level degraded profile, /etc/clustersmith/nccl/degraded.env (nccl.degraded_env)")
    nccl_ib_hca_rails: list[int] = Field(
        description="Compute rails whose RDMA devices, as the rdma role recorded them, NCCL_IB_HCA names "
                    "(nccl.ib_hca_rails); empty: NCCL_IB_HCA is not set")
    nccl_gpudirect_rdma: bool = Field(description="Load nvidia_peermem for GPUDirect RDMA (nccl.gpudirect_rdma)")
    nccl_in_network_reduction: Literal["none", "sharp", "nvls"] = Field(
        description="SHARP/CollNet on InfiniBand, NVLS on NVSwitch systems, or none (nccl.in_network_reduction)")
    nccl_tests_build: bool = Field(
        default=True, description="Build and install nccl-tests where CUDA, MPI and NCCL are present")
    nccl_tests_source: str | None = Field(
        default=None, description="nccl-tests source: a tarball URL or a path on the host; unset: not built")
    nccl_tests_prefix: str = Field(default="/opt/nccl-tests", description="Where the nccl-tests binaries go")
    nccl_cuda_home: str = Field(default="/usr/local/cuda", description="CUDA toolkit (needs bin/nvcc)")
    nccl_mpi_home: str = Field(default="/usr", description="MPI installation (needs bin/mpicc)")
    nccl_home: str = Field(default="/usr", description="NCCL installation (needs include/nccl.h)")


def nccl_vars(bp: Blueprint) -> NcclVars:
    return NcclVars(
        nccl_env=[EnvEntry(name=v.name, value=v.value) for v in bp.nccl_environment()],
        nccl_degraded_env=[EnvEntry(name=v.name, value=v.value) for v in bp.nccl.degraded_env],
        nccl_ib_hca_rails=list(bp.nccl.ib_hca_rails.value),
        nccl_gpudirect_rdma=bp.nccl.gpudirect_rdma.value,
        nccl_in_network_reduction=bp.nccl.in_network_reduction.value,
    )


def role_vars(bp: Blueprint) -> dict[Group, RoleVars]:
    return {"gpu_clients": nccl_vars(bp)}
