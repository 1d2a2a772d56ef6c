"""NCCL's plan: the node-wide environment of every rank, its degraded profile, what NCCL is expected to do."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.model import Frozen
from blueprints.traced import Provenance, Traced


class EnvVar(Frozen):
    name: str
    value: str
    derived_from: Provenance


class TrafficClassSlot(Frozen):
    """Where the QoS plan's traffic class enters every rank's environment (the planner's rule ``nccl.tc_from_qos``).
    Its value and provenance stay the QoS plan's ``traffic_class``, stored once there."""

    at: int = Field(ge=0, description="Position in nccl.env it is inserted at")
    rule: str = Field(description="Planner rule that put it there")


class NcclPlan(Frozen):
    env: tuple[EnvVar, ...] = Field(description="Node-wide environment of every rank (NCCL_IB_HCA is per host)")
    traffic_class: TrafficClassSlot | None = Field(
        description="Where every rank's environment carries the QoS plan's traffic class (NCCL_IB_TC); None: not "
                    "set (not RoCE, or the provider owns QoS)")
    degraded_env: tuple[EnvVar, ...] = Field(
        description="Job-level degraded profile (/etc/clustersmith/nccl/degraded.env): AllReduce on Ring")
    ib_hca_rails: Traced[tuple[int, ...]] = Field(
        description="Compute rails whose discovered RDMA devices NCCL_IB_HCA names, per host; empty: not set")
    gpudirect_rdma: Traced[bool]
    in_network_reduction: Traced[Literal["none", "sharp", "nvls"]]
    algorithm_expectation: Traced[str] = Field(
        description="What NCCL is expected to choose; acceptance reports it as information, never pass/fail")
    notes: tuple[str, ...] = Field(default=(), description="Provider settings no stored document covers")

    def environment(self, traffic_class: Traced[int]) -> tuple[EnvVar, ...]:
        """What every rank's environment holds: ``env`` and, where the planner put it (``traffic_class``),
        NCCL_IB_TC: the QoS plan's traffic class (given), with its provenance."""
        env = list(self.env)
        if (slot := self.traffic_class) is not None:
            env.insert(slot.at, EnvVar(name="NCCL_IB_TC", value=str(traffic_class.value), derived_from=Provenance(
                spec=traffic_class.derived_from.spec, rule=slot.rule, formula=traffic_class.derived_from.formula)))
        return tuple(env)
