"""One QoS plan, many layers: do the NIC, NCCL, NVMe-oF and RDMA-CM on a host carry RoCE as planned?

The Blueprint stores each QoS fact once (``blueprints.blueprint.QosPlan``), so its own layers cannot
disagree; on a host they can. Acceptance reads what each layer applies (``dcb app show``, ``/etc/nccl.conf``,
the NVMe-oF ``tos``, RDMA-CM's default ToS) into :class:`LayerQos` statements (:func:`layer_from_tos`,
:func:`nic_layer`, :func:`nccl_conf_layer`), and :func:`compare` names, for every disagreement with the
plan's :func:`reference_layer`, the two layers and their values.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from blueprints.errors import Problem

ECN_BITS = 0b11


class LayerQos(BaseModel):
    """What one layer says RoCE traffic is marked with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layer: str = Field(description="nic | nccl | nvmeof | switch")
    field: str = Field(description="Where the layer states it, e.g. nccl.env.NCCL_IB_TC")
    dscp: int = Field(ge=0, le=63, description="DSCP the layer marks or classifies RoCE traffic with")
    priority: int | None = Field(default=None, ge=0, le=7, description="Priority, where the layer has one")
    shown: str = Field(description="The value as the layer writes it, e.g. 'NCCL_IB_TC=106'")

    def describe(self) -> str:
        prio = f", priority {self.priority}" if self.priority is not None else ""
        return f"{self.layer} {self.field} = {self.shown} (DSCP {self.dscp}{prio})"


def layer_from_tos(layer: str, field: str, tos: int, shown: str | None = None) -> LayerQos:
    """A layer that states an IP ToS byte (NCCL_IB_TC, NVMe-oF tos): the DSCP is its upper six bits."""
    if not 0 <= tos <= 255:
        raise ValueError(f"{field}: ToS {tos} is not a byte (0..255)")
    return LayerQos(layer=layer, field=field, dscp=tos >> 2, shown=shown if shown is not None else str(tos))


def compare(reference: LayerQos, others: list[LayerQos]) -> list[Problem]:
    """Every way ``others`` disagree with ``reference``; each problem names both layers and both values."""
    problems: list[Problem] = []
    for other in others:
        if other.dscp != reference.dscp:
            problems.append(Problem(
                other.field,
                f"QoS layers disagree on DSCP: {other.describe()}, but {reference.describe()}; "
                f"every layer must carry RoCE on DSCP {reference.dscp}",
                value=other.shown,
            ))
        elif other.priority is not None and reference.priority is not None and other.priority != reference.priority:
            problems.append(Problem(
                other.field,
                f"QoS layers disagree on priority: {other.describe()}, but {reference.describe()}; "
                f"every layer must carry RoCE on priority {reference.priority}",
                value=other.shown,
            ))
    return problems


# what the hosts say (for the acceptance check in validators) ----------------------------------------


def reference_layer(dscp: int, priority: int, field: str = "qos.dscp") -> LayerQos:
    """The Blueprint's QoS plan as the reference every measured layer is compared with."""
    return LayerQos(layer="plan", field=field, dscp=dscp, priority=priority, shown=str(dscp))


def nic_layer(dscp_prio: dict[int, list[int]], dscp: int, field: str) -> LayerQos | None:
    """What a NIC's DSCP APP table (``dcb -j app show``, parsed) does with the planned DSCP; None: no entry."""
    prios = dscp_prio.get(dscp, [])
    if len(prios) != 1:
        return None
    return LayerQos(layer="nic", field=field, dscp=dscp, priority=prios[0], shown=f"{dscp}:{prios[0]}")


def nccl_conf_layer(text: str, field: str = "/etc/nccl.conf") -> LayerQos | None:
    """NCCL_IB_TC of an nccl.conf or nccl.env text (NAME=VALUE lines, quotes allowed); None when unset."""
    for line in text.splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name == "NCCL_IB_TC":
            tc = int(value.strip().strip('"'))
            return layer_from_tos("nccl", f"{field} NCCL_IB_TC", tc, f"NCCL_IB_TC={tc}")
    return None
