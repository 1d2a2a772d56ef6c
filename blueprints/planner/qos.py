"""QoS: the one plan NIC, NCCL, NVMe-oF and the switches all apply.

Lossless RoCE convention (field-numbers 3.3): RoCE on priority 3 with DSCP 26 and DSCP trust, PFC on
priority 3 only, CNPs on DSCP 48 / priority 6 (ConnectX firmware defaults, 3.2). The IP ToS byte every
layer uses is DSCP << 2 with ECT(0) set: 26 << 2 | 2 = 106, the common NCCL_IB_TC value.

Switch side (field-numbers 10.3): CNPs (priority 6) get strict priority, not an ETS share (Cumulus Linux's
RoCE defaults: "Traffic class 6 (CNP) - Strict"); ECN marks the RoCE queue between NVIDIA's published
absolute thresholds, 150 KB and 1500 KB (Onyx "roce" defaults; Cumulus "150000 bytes" / "1500000 bytes").
The PFC watchdog uses SONiC's own defaults (sonic-net/sonic-utilities pfcwd/main.py: detection 200 ms,
restoration 200 ms, polling 200 ms, action drop). SONiC switches size the lossless class's buffers with the dynamic
buffer model (SONiC's default since 202012), from each port's speed and cable length (the wiring plan's).
"""

from __future__ import annotations

from blueprints.blueprint import (
    ECT0,
    DcqcnPlan,
    EcnThresholds,
    FabricPlan,
    LosslessBuffersPlan,
    PfcWatchdogPlan,
    QosPlan,
    traced,
)
from blueprints.planner.context import PlanContext

ROCE_PRIORITY = 3
ROCE_DSCP = 26
CNP_DSCP = 48
CNP_PRIORITY = 6
ECN = EcnThresholds(
    min_bytes=150_000, max_bytes=1_500_000,
    source="NVIDIA RoCE defaults: Onyx 'roce' ECN absolute min 150 KB, max 1500 KB "
           "(docs.nvidia.com/networking/display/onyxv3103004/roce+commands); Cumulus Linux 5.14 QoS page: "
           "150000 / 1500000 bytes (field-numbers 10.3)")
PFC_WATCHDOG = PfcWatchdogPlan(
    detection_ms=200, restoration_ms=200, poll_ms=200, action="drop",
    source="SONiC pfcwd defaults DEFAULT_DETECTION_TIME/RESTORATION_TIME/POLL_INTERVAL 200, DEFAULT_ACTION "
           "'drop' (sonic-net/sonic-utilities pfcwd/main.py)")

LOSSLESS_BUFFERS = LosslessBuffersPlan(
    model="dynamic",
    source="SONiC HLD 'Dynamically Headroom Calculation' (sonic-net/SONiC "
           "doc/qos/dynamically-headroom-calculation.md): DEVICE_METADATA|localhost buffer_model dynamic; a "
           "lossless PG with profile NULL gets its headroom computed from the port's speed, cable length "
           "(CABLE_LENGTH) and MTU; a PG other than 3-4 needs the port's tc_to_pg_map; the default model since "
           "SONiC 202012 (NVIDIA SONiC 202012 'QoS and Buffers')")


def traffic_class(dscp: int) -> int:
    """ToS byte for a DSCP with ECN-capable transport ECT(0)."""
    return dscp << 2 | ECT0


def plan_qos(ctx: PlanContext, fabric: FabricPlan) -> QosPlan:
    applies = fabric.kind.value == "roce" and not (ctx.is_cloud)
    spec = ["target.fabric"] if ctx.provider == "baremetal" else ["target.provider"]
    tc = traffic_class(ROCE_DSCP)
    dcqcn = DcqcnPlan(
        enabled=applies,
        rpg_time_reset=300,
        rpg_byte_reset=32767,
        rpg_threshold=1,
        rpg_ai_rate=5,
        rpg_hai_rate=50,
        rpg_gd=11,
        rpg_min_dec_fac=50,
        rpg_min_rate=1,
        rate_to_set_on_first_cnp=0,
        initial_alpha_value=1023,
        min_time_between_cnps=4,
        source="ConnectX firmware defaults (mlxconfig query dumps; field-numbers 3.2)",
    )
    return QosPlan(
        applies=applies,
        roce_priority=traced(ROCE_PRIORITY, spec, "qos.lossless_priority", "RoCE on priority 3 (field-numbers 3.3)"),
        dscp=traced(ROCE_DSCP, spec, "qos.roce_dscp", "DSCP 26 -> priority 3 (field-numbers 3.3)"),
        cnp_dscp=traced(CNP_DSCP, spec, "qos.cnp_dscp", "CNP_DSCP 48 (firmware default, field-numbers 3.2)"),
        cnp_priority=CNP_PRIORITY,
        trust="dscp",
        ecn=applies,
        traffic_class=traced(tc, spec, "qos.tos_from_dscp", f"{ROCE_DSCP} << 2 | ECT(0) = {tc}"),
        dcqcn=dcqcn,
        ecn_thresholds=ECN,
        pfc_watchdog=PFC_WATCHDOG,
        lossless_buffers=LOSSLESS_BUFFERS,
    )
