"""Variables of the ``pfc_dcqcn`` role: the Blueprint's QoS plan as the NICs apply it.

DSCP trust, the DSCP -> priority map, PFC on the RoCE priority only, ETS where the plan has one, and
DCQCN (ECN enablement per priority, CNP DSCP and priority, reaction-point parameters). Every value is
``qos.*`` of the Blueprint; the role reads nothing else but the per-host rail netdevs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.blueprint import Blueprint
from blueprints.model import Frozen
from blueprints.rolevars import Group, RoleVars


class DscpMapping(Frozen):
    dscp: int = Field(ge=0, le=63, description="DSCP value")
    priority: int = Field(ge=0, le=7, description="Priority the NIC puts that DSCP on")


class EtsVars(Frozen):
    prio_tc: list[int] = Field(min_length=8, max_length=8, description="Traffic class of priorities 0..7")
    tc_tsa: list[Literal["strict", "ets", "vendor"]] = Field(min_length=8, max_length=8,
                                                             description="Selection algorithm of TCs 0..7")
    tc_bw: list[int] = Field(min_length=8, max_length=8, description="Bandwidth percent of TCs 0..7")


class ReactionPoint(Frozen):
    """DCQCN reaction-point parameters, written to ``/sys/class/net/<if>/ecn/roce_rp/<name>``."""

    rpg_time_reset: int = Field(ge=0, description="Time between rate increases (us)")
    rpg_byte_reset: int = Field(ge=0, description="Bytes between rate increases")
    rpg_threshold: int = Field(ge=0, description="Rate-increase events before hyper increase")
    rpg_ai_rate: int = Field(ge=0, description="Additive increase rate (Mb/s)")
    rpg_hai_rate: int = Field(ge=0, description="Hyper additive increase rate (Mb/s)")
    rpg_gd: int = Field(ge=0, description="Alpha update gain")
    rpg_min_dec_fac: int = Field(ge=0, description="Smallest rate-decrease factor (percent)")
    rpg_min_rate: int = Field(ge=0, description="Lowest rate (Mb/s)")
    rate_to_set_on_first_cnp: int = Field(ge=0, description="Rate after the first CNP (Mb/s, 0: no change)")
    initial_alpha_value: int = Field(ge=0, description="Initial alpha, 1/1024 fixed point")


class NotificationPoint(Frozen):
    """DCQCN notification-point parameters, written to ``/sys/class/net/<if>/ecn/roce_np/<name>``."""

    min_time_between_cnps: int = Field(ge=0, description="Smallest gap between CNPs of one port (us)")


class PfcDcqcnVars(RoleVars):
    ROLE = "pfc_dcqcn"

    pfc_dcqcn_enabled: bool = Field(description="Apply the QoS plan (qos.applies); false where the provider owns QoS")
    pfc_dcqcn_lab: bool = Field(description="Target is the lab: a NIC without PFC/DCQCN (virtio) is recorded as "
                                            "unsupported instead of failing the play")
    pfc_dcqcn_interfaces: list[str] | None = Field(
        default=None, description="Netdevs to configure; unset: the netdev of every rail in the inventory host vars")
    pfc_dcqcn_trust: Literal["dscp", "pcp"] = Field(description="What the NIC classifies traffic by (qos.trust)")
    pfc_dcqcn_roce_priority: int = Field(ge=0, le=7, description="Priority RoCE traffic runs on (qos.roce_priority)")
    pfc_dcqcn_roce_dscp: int = Field(ge=0, le=63, description="DSCP RoCE traffic carries (qos.dscp)")
    pfc_dcqcn_dscp_map: list[DscpMapping] = Field(description="DSCP -> priority entries (qos.switch_dscp_to_priority)")
    pfc_dcqcn_pfc_priorities: list[int] = Field(description="PFC is enabled on these priorities only")
    pfc_dcqcn_ets: EtsVars | None = Field(default=None, description="ETS to set; unset: the NIC's ETS is left alone")
    pfc_dcqcn_ecn_priorities: list[int] = Field(description="Priorities with ECN/DCQCN enabled (the RoCE priority)")
    pfc_dcqcn_cnp_dscp: int = Field(ge=0, le=63, description="DSCP of congestion notification packets")
    pfc_dcqcn_cnp_priority: int = Field(ge=0, le=7, description="802.1p priority of congestion notification packets")
    pfc_dcqcn_reaction_point: ReactionPoint = Field(description="DCQCN reaction-point parameters (qos.dcqcn)")
    pfc_dcqcn_notification_point: NotificationPoint = Field(description="DCQCN notification-point parameters")


def pfc_dcqcn_vars(bp: Blueprint) -> PfcDcqcnVars:
    q = bp.qos
    d = q.dcqcn
    return PfcDcqcnVars(
        pfc_dcqcn_enabled=q.applies,
        pfc_dcqcn_lab=bp.lab is not None,
        pfc_dcqcn_trust=q.trust,
        pfc_dcqcn_roce_priority=q.roce_priority.value,
        pfc_dcqcn_roce_dscp=q.dscp.value,
        pfc_dcqcn_dscp_map=[DscpMapping(dscp=k, priority=v) for k, v in sorted(q.switch_dscp_to_priority.items())],
        pfc_dcqcn_pfc_priorities=list(q.pfc_priorities),
        pfc_dcqcn_ets=EtsVars(prio_tc=list(q.ets.prio_tc), tc_tsa=list(q.ets.tc_tsa), tc_bw=list(q.ets.tc_bw))
        if q.ets else None,
        pfc_dcqcn_ecn_priorities=list(q.dcqcn_priorities),
        pfc_dcqcn_cnp_dscp=q.cnp_dscp.value,
        pfc_dcqcn_cnp_priority=q.cnp_priority,
        pfc_dcqcn_reaction_point=ReactionPoint(
            rpg_time_reset=d.rpg_time_reset, rpg_byte_reset=d.rpg_byte_reset, rpg_threshold=d.rpg_threshold,
            rpg_ai_rate=d.rpg_ai_rate, rpg_hai_rate=d.rpg_hai_rate, rpg_gd=d.rpg_gd,
            rpg_min_dec_fac=d.rpg_min_dec_fac, rpg_min_rate=d.rpg_min_rate,
            rate_to_set_on_first_cnp=d.rate_to_set_on_first_cnp, initial_alpha_value=d.initial_alpha_value),
        pfc_dcqcn_notification_point=NotificationPoint(min_time_between_cnps=d.min_time_between_cnps),
    )


def role_vars(bp: Blueprint) -> dict[Group, RoleVars]:
    """RoCE fabrics the cluster runs itself; nothing where the provider owns QoS (EFA, managed InfiniBand)."""
    if bp.fabric.kind.value != "roce" or not bp.qos.applies:
        return {}
    return {"all": pfc_dcqcn_vars(bp)}
