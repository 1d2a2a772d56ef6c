"""The one QoS plan every layer applies: the NIC, NCCL, NVMe-oF, RDMA-CM and the switches."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from blueprints.model import Frozen
from blueprints.traced import Traced


class DcqcnPlan(Frozen):
    enabled: bool
    rpg_time_reset: int
    rpg_byte_reset: int
    rpg_threshold: int
    rpg_ai_rate: int
    rpg_hai_rate: int
    rpg_gd: int
    rpg_min_dec_fac: int
    rpg_min_rate: int
    rate_to_set_on_first_cnp: int
    initial_alpha_value: int
    min_time_between_cnps: int
    source: str


class EtsPlan(Frozen):
    """Enhanced transmission selection, only where a design asks for a bandwidth split."""

    prio_tc: tuple[int, ...] = Field(min_length=8, max_length=8, description="Traffic class of priorities 0..7")
    tc_tsa: tuple[Literal["strict", "ets", "vendor"], ...] = Field(min_length=8, max_length=8,
                                                                   description="Selection algorithm of TCs 0..7")
    tc_bw: tuple[int, ...] = Field(min_length=8, max_length=8, description="Bandwidth percent of TCs 0..7")


ECT0 = 0b10  # ECN-capable transport (0), the low two bits of the ToS byte


class EcnThresholds(Frozen):
    """ECN marking on the RoCE queue of the switches: absolute buffer thresholds in bytes."""

    min_bytes: int = Field(gt=0, description="Marking starts above this queue depth")
    max_bytes: int = Field(gt=0, description="Every ECN-capable packet is marked above this queue depth")
    source: str


class PfcWatchdogPlan(Frozen):
    """PFC watchdog on the switch ports with PFC: a queue paused longer than detection is drained."""

    detection_ms: int = Field(gt=0, description="Paused this long counts as a PFC storm")
    restoration_ms: int = Field(gt=0, description="Storm-free this long restores PFC")
    poll_ms: int = Field(gt=0, description="Polling interval")
    action: Literal["drop", "forward"] = Field(description="What a stormed queue does")
    source: str


class LosslessBuffersPlan(Frozen):
    """How a SONiC switch sizes the lossless class's buffers: the dynamic model computes each port's headroom from
    its speed, its cable length and the MTU, where the lossless priority groups are configured with no profile."""

    model: Literal["dynamic"] = Field(description="SONiC's DEVICE_METADATA buffer_model")
    source: str


class QosPlan(Frozen):
    """One QoS plan every layer applies: NIC trust/PFC/ECN, NCCL's TC, NVMe-oF's ToS, RDMA-CM, the switch.

    Each fact is stored once: the RoCE priority and DSCP, the CNP's DSCP and priority, and the ToS byte
    (``traffic_class``) that NCCL_IB_TC, NVMe-oF's ``tos`` and RDMA-CM's default ToS all use. What follows
    from them (the DSCP -> priority map, the PFC and DCQCN priorities) is computed, never stored, so no two
    layers of a Blueprint can disagree; a hand-edited ``blueprint.yaml`` whose ToS byte does not carry its
    DSCP, or whose CNPs share RoCE's DSCP or priority, is refused when it is loaded.
    """

    applies: bool = Field(description="False where the provider owns QoS (EFA, managed InfiniBand)")
    roce_priority: Traced[int]
    dscp: Traced[int]
    cnp_dscp: Traced[int]
    cnp_priority: int
    trust: Literal["dscp", "pcp"]
    ecn: bool
    traffic_class: Traced[int] = Field(description="IP ToS byte of RoCE traffic: DSCP << 2 | ECT(0); NCCL_IB_TC, "
                                                   "NVMe-oF tos and RDMA-CM's default ToS")
    dcqcn: DcqcnPlan
    ets: EtsPlan | None = Field(default=None, description="ETS on the NICs; None leaves the NIC's own ETS alone")
    ecn_thresholds: EcnThresholds = Field(description="Switch ECN marking thresholds on the RoCE queue")
    pfc_watchdog: PfcWatchdogPlan = Field(description="Switch PFC watchdog on the PFC priority")
    lossless_buffers: LosslessBuffersPlan = Field(description="SONiC: how the PFC priorities' buffers are sized")

    @model_validator(mode="after")
    def _one_marking(self) -> QosPlan:
        problems = []
        if not (0 <= self.dscp.value <= 63 and 0 <= self.cnp_dscp.value <= 63):
            problems.append(f"qos.dscp {self.dscp.value} and qos.cnp_dscp {self.cnp_dscp.value} must be DSCPs (0..63)")
        if not (0 <= self.roce_priority.value <= 7 and 0 <= self.cnp_priority <= 7):
            problems.append(f"qos.roce_priority {self.roce_priority.value} and qos.cnp_priority {self.cnp_priority} "
                            "must be priorities (0..7)")
        tos = self.dscp.value << 2 | ECT0
        if self.traffic_class.value != tos:
            problems.append(f"qos.traffic_class {self.traffic_class.value} does not carry qos.dscp "
                            f"{self.dscp.value}: expected {self.dscp.value} << 2 | ECT(0) = {tos}")
        if self.cnp_dscp.value == self.dscp.value or self.cnp_priority == self.roce_priority.value:
            problems.append(f"CNPs (DSCP {self.cnp_dscp.value}, priority {self.cnp_priority}) must not share RoCE's "
                            f"DSCP {self.dscp.value} or priority {self.roce_priority.value}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def switch_dscp_to_priority(self) -> dict[int, int]:
        """DSCP -> priority on the NICs and the switches: RoCE and CNPs."""
        return {self.dscp.value: self.roce_priority.value, self.cnp_dscp.value: self.cnp_priority}

    @property
    def pfc_priorities(self) -> tuple[int, ...]:
        """PFC is on for the RoCE priority only, where the plan applies."""
        return (self.roce_priority.value,) if self.applies else ()

    @property
    def strict_priorities(self) -> tuple[int, ...]:
        """Switch egress: CNPs in strict priority (not ETS/DWRR), so they never queue behind data."""
        return (self.cnp_priority,) if self.applies else ()

    @property
    def dcqcn_priorities(self) -> tuple[int, ...]:
        """Priorities with ECN marking and DCQCN."""
        return (self.roce_priority.value,) if self.dcqcn.enabled and self.ecn else ()
