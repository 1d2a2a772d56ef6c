"""Renderer: ``switch/qos-policy.md``, the Blueprint's switch QoS policy for the network team.

Switches are outside Ansible's reach here, so the policy the NICs, NCCL and NVMe-oF already apply is
handed over as a readable file: trust, the DSCP -> priority map, PFC per priority, ECN marking and the
CNP class in strict priority, ECN marking thresholds and the PFC watchdog, each with where it came from
(``qos.ecn_thresholds.source``, ``qos.pfc_watchdog.source``). The same plan as applyable NVUE and SONiC
configuration: ``switch_vendor`` and ``switch_sonic``.
"""

from __future__ import annotations

from pathlib import Path

import jinja2

from blueprints.blueprint import Blueprint
from blueprints.render.switch_sonic import pg_ranges, sonic_tiers
from blueprints.textsafe import md_code

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "switch_qos"


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)


def render(bp: Blueprint, folder: Path) -> list[Path]:
    q = bp.qos
    nvmeof_tos = q.traffic_class.value if bp.storage.nvmeof is not None else None
    nccl_tc = next((v.value for v in bp.nccl_environment() if v.name == "NCCL_IB_TC"), None)
    priorities = [
        {"priority": p,
         "dscp": sorted(d for d, pr in q.switch_dscp_to_priority.items() if pr == p),
         "pfc": p in q.pfc_priorities,
         "ecn": p in q.dcqcn_priorities,
         "scheduler": "strict" if p in q.strict_priorities else "switch default (ETS/DWRR)",
         "role": "RoCE (lossless)" if p == q.roce_priority.value
         else "CNP (congestion notifications)" if p == q.cnp_priority else ""}
        for p in range(8)
    ]
    text = _env().get_template("qos-policy.md.j2").render(
        bp=bp, q=q, priorities=priorities, nvmeof_tos=nvmeof_tos, nccl_tc=nccl_tc,
        spec_file=md_code(bp.spec_file), sonic_tiers=sonic_tiers(bp), pg_ranges=pg_ranges(q.pfc_priorities))
    path = folder / "switch" / "qos-policy.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return [path]
