"""Plan-time rule ``qos.layers_agree``: every layer of a Blueprint carries RoCE on one priority and DSCP.

The layers and where the Blueprint states them:

- nic: ``qos.dscp`` and ``qos.roce_priority`` (the reference), ``qos.traffic_class``, PFC and DCQCN priorities;
- nccl: ``qos.nccl_ib_tc`` and the ``NCCL_IB_TC`` entry of ``nccl.env``;
- nvmeof: ``qos.nvmeof_tos`` and ``storage.nvmeof.tos``;
- switch: ``qos.switch_dscp_to_priority`` (the policy handed to the network team), for RoCE and CNPs.

The planner derives them all from one place, so a fresh plan always passes; the rule is there for
hand-edited ``blueprint.yaml`` files and for future planner changes. It runs in ``plan()`` and in
``load_blueprint()``, and a mismatch is a :class:`QosMismatchError` (exit code 2) naming both layers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from blueprints.errors import Problem
from blueprints.qos_consistency import LayerQos, compare, layer_from_tos, raise_if_any

if TYPE_CHECKING:
    from blueprints.blueprint import Blueprint

RULE = "qos.layers_agree"


def _reference(bp: Blueprint) -> LayerQos:
    q = bp.qos
    return LayerQos(layer="nic", field="qos.dscp", dscp=q.dscp.value, priority=q.roce_priority.value,
                    shown=str(q.dscp.value))


def _tos_layers(bp: Blueprint) -> list[LayerQos]:
    q = bp.qos
    layers = [
        layer_from_tos("nic", "qos.traffic_class.value", q.traffic_class.value),
        layer_from_tos("nccl", "qos.nccl_ib_tc", q.nccl_ib_tc),
        layer_from_tos("nvmeof", "qos.nvmeof_tos", q.nvmeof_tos),
    ]
    for i, var in enumerate(bp.nccl.env):
        if var.name == "NCCL_IB_TC":
            tc = int(var.value) if var.value.strip().lstrip("-").isdigit() else -1
            if tc < 0:
                continue  # unset (-1) or not a number: NCCL then uses its default, checked below
            layers.append(layer_from_tos("nccl", f"nccl.env.{i}.value", tc, f"NCCL_IB_TC={var.value}"))
    if bp.storage.nvmeof is not None:
        layers.append(layer_from_tos("nvmeof", "storage.nvmeof.tos", bp.storage.nvmeof.tos))
    return layers


def _switch_layers(bp: Blueprint, ref: LayerQos) -> tuple[list[LayerQos], list[Problem]]:
    q = bp.qos
    smap = q.switch_dscp_to_priority
    layers = [LayerQos(layer="switch", field=f"qos.switch_dscp_to_priority.{d}", dscp=d, priority=p,
                       shown=f"{d}: {p}")
              for d, p in sorted(smap.items()) if p == ref.priority or d == ref.dscp]
    problems: list[Problem] = []
    if ref.dscp not in smap:
        problems.append(Problem("qos.switch_dscp_to_priority",
                                f"QoS layers disagree: switch qos.switch_dscp_to_priority has no entry for DSCP "
                                f"{ref.dscp}, but {ref.describe()}",
                                value=str(dict(sorted(smap.items())))))
    cnp = LayerQos(layer="nic", field="qos.cnp_dscp", dscp=q.cnp_dscp.value, priority=q.cnp_priority,
                   shown=str(q.cnp_dscp.value))
    if cnp.dscp not in smap:
        problems.append(Problem("qos.switch_dscp_to_priority",
                                f"QoS layers disagree: switch qos.switch_dscp_to_priority has no entry for CNP "
                                f"DSCP {cnp.dscp}, but {cnp.describe()}",
                                value=str(dict(sorted(smap.items())))))
    else:
        cnp_switch = LayerQos(layer="switch", field=f"qos.switch_dscp_to_priority.{cnp.dscp}", dscp=cnp.dscp,
                              priority=smap[cnp.dscp], shown=f"{cnp.dscp}: {smap[cnp.dscp]}")
        problems += compare(cnp, [cnp_switch])
    return layers, problems


def _priority_sets(bp: Blueprint, ref: LayerQos) -> list[Problem]:
    q = bp.qos
    problems: list[Problem] = []
    if q.applies and tuple(q.pfc_priorities) != (ref.priority,):
        problems.append(Problem("qos.pfc_priorities",
                                f"QoS layers disagree on the lossless priority: nic qos.pfc_priorities = "
                                f"{list(q.pfc_priorities)}, but {ref.describe()}; PFC goes on priority "
                                f"{ref.priority} only", value=str(list(q.pfc_priorities))))
    if q.dcqcn.enabled and ref.priority not in q.dcqcn.priorities:
        problems.append(Problem("qos.dcqcn.priorities",
                                f"QoS layers disagree: nic qos.dcqcn.priorities = {list(q.dcqcn.priorities)} "
                                f"leaves out the RoCE priority, but {ref.describe()}",
                                value=str(list(q.dcqcn.priorities))))
    return problems


def check_qos_layers(bp: Blueprint) -> list[Problem]:
    """Every disagreement between the Blueprint's QoS layers (empty when they agree)."""
    ref = _reference(bp)
    switch, problems = _switch_layers(bp, ref)
    return compare(ref, _tos_layers(bp) + switch) + problems + _priority_sets(bp, ref)


def enforce_qos_layers(bp: Blueprint, filename: str = "", lines: dict[str, int] | None = None) -> None:
    """Raise QosMismatchError naming every disagreement (with its line in ``filename`` when known)."""
    problems = check_qos_layers(bp)
    if lines:
        problems = [Problem(p.path, p.message, lines.get(p.path), p.value, p.hint) for p in problems]
    raise_if_any(problems, filename)
