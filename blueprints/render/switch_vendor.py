"""Renderers: applyable switch QoS for NVIDIA Cumulus Linux (NVUE) and SONiC (config_db.json fragment).

Both carry the Blueprint's QoS plan and nothing else: DSCP -> switch priority -> traffic class, PFC on
the RoCE priority only, the CNP class in strict priority, ECN on the RoCE queue between
``qos.ecn_thresholds`` and the PFC watchdog. Commands and keys follow the vendors' documents, kept as
excerpts with their sources under tests/fixtures/switch/ (NVUE: CumulusNetworks/docs cumulus-linux-514
Quality-of-Service pages; SONiC: sonic-buildimage qos sample output, sonic-swss swss-schema.md,
sonic-utilities pfcwd/main.py). Where the wiring plan cables SONiC switches, their fragment
(``sonic-<model>-config_db.json``) names every port of the model as SONiC does (blueprints.wiring.all_ports);
elsewhere the RoCE-facing ports are a parameter: ``PORTS`` in the NVUE script, the ``<ROCE_PORT>`` key in the SONiC
fragment (one copy per port).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from blueprints.blueprint import Blueprint, QosPlan
from blueprints.wiring import all_ports

MAP = "CLUSTERSMITH"
SONIC_PORT = "<ROCE_PORT>"


def nvue_commands(q: QosPlan) -> list[str]:
    roce, cnp = q.roce_priority.value, q.cnp_priority
    ecn = q.ecn_thresholds
    lines = ["nv set qos roce mode lossless", "nv set qos mapping default-global trust both"]
    lines += [f"nv set qos mapping default-global dscp {d} switch-priority {p}"
              for d, p in sorted(q.switch_dscp_to_priority.items())]
    lines += [f"nv set qos pfc default-global switch-priority {p}" for p in q.pfc_priorities]
    lines += [f"nv set qos egress-queue-mapping default-global switch-priority {p} traffic-class {p}"
              for p in sorted({roce, cnp})]
    lines += [f"nv set qos egress-scheduler default-global traffic-class {p} mode strict" for p in q.strict_priorities]
    for p in q.dcqcn_priorities:
        lines += [f"nv set qos congestion-control default-global traffic-class {p} min-threshold {ecn.min_bytes}",
                  f"nv set qos congestion-control default-global traffic-class {p} max-threshold {ecn.max_bytes}",
                  f"nv set qos congestion-control default-global traffic-class {p} ecn enable"]
    if q.pfc_priorities:
        lines += [f"nv set qos pfc-watchdog polling-interval {q.pfc_watchdog.poll_ms}",
                  'nv set interface "$PORTS" qos pfc-watchdog']
    return [*lines, "nv config apply"]


def sonic_config(q: QosPlan, ports: Sequence[str] = (SONIC_PORT,)) -> dict[str, Any]:
    """The QoS tables with one entry per port of ``ports`` (the ``<ROCE_PORT>`` placeholder unless the wiring plan
    names the switch's ports)."""
    roce, wd, ecn = q.roce_priority.value, q.pfc_watchdog, q.ecn_thresholds
    pfc = ",".join(map(str, q.pfc_priorities))
    port: dict[str, str] = {"dscp_to_tc_map": MAP, "tc_to_queue_map": MAP}
    if pfc:
        port |= {"pfc_enable": pfc, "pfcwd_sw_enable": pfc}
    queue: dict[str, dict[str, str]] = {}
    for name in ports:
        queue[f"{name}|{roce}"] = {"wred_profile": "CLUSTERSMITH_LOSSLESS"}
        queue |= {f"{name}|{p}": {"scheduler": f"scheduler.strict{p}"} for p in q.strict_priorities if p != roce}
    tables: dict[str, Any] = {
        "DSCP_TO_TC_MAP": {MAP: {str(d): str(p) for d, p in sorted(q.switch_dscp_to_priority.items())}},
        "TC_TO_QUEUE_MAP": {MAP: {str(tc): str(tc) for tc in range(8)}},
        "SCHEDULER": {f"scheduler.strict{p}": {"type": "STRICT"} for p in q.strict_priorities},
        "WRED_PROFILE": {"CLUSTERSMITH_LOSSLESS": {
            "wred_green_enable": "true", "ecn": "ecn_all",
            "green_min_threshold": str(ecn.min_bytes), "green_max_threshold": str(ecn.max_bytes)}},
        "PORT_QOS_MAP": {"global": {"dscp_to_tc_map": MAP}} | {name: dict(port) for name in ports},
        "QUEUE": queue,
    }
    if pfc:
        watchdog = {"action": wd.action, "detection_time": str(wd.detection_ms),
                    "restoration_time": str(wd.restoration_ms)}
        tables["PFC_WD"] = {"GLOBAL": {"POLL_INTERVAL": str(wd.poll_ms)}} | {name: dict(watchdog) for name in ports}
    return tables


def sonic_models(bp: Blueprint) -> dict[str, list[str]]:
    """Every port name of each SONiC switch model the wiring plan cables (every port of a RoCE fabric's switch
    carries the lossless class: down-ports and uplinks alike)."""
    if bp.wiring is None:
        return {}
    return {t.model: [p.name for p in all_ports(t.ports)] for t in bp.wiring.switches if t.ports.os == "sonic"}


def render(bp: Blueprint, folder: Path) -> list[Path]:
    """Nothing where the provider owns the fabric's QoS (qos.applies false): there is no switch to configure."""
    if not bp.qos.applies:
        return []
    out = folder / "switch"
    out.mkdir(parents=True, exist_ok=True)
    q = bp.qos
    head = ["#!/bin/sh",
            f"# NVIDIA Cumulus Linux (NVUE): QoS of {bp.name}, generated by clustersmith; see qos-policy.md",
            '# PORTS: the RoCE-facing ports, e.g. PORTS=swp1-32 sh cumulus-nvue.sh', "set -eu",
            ': "${PORTS:?set PORTS to the RoCE-facing ports, e.g. swp1-32}"']
    nvue = out / "cumulus-nvue.sh"
    nvue.write_text("\n".join(head + nvue_commands(q)) + "\n", encoding="utf-8")
    written = [nvue]
    models = sonic_models(bp)
    for model, ports in models.items():
        sonic = out / f"sonic-{model}-config_db.json"
        sonic.write_text(json.dumps(sonic_config(q, ports), indent=4) + "\n", encoding="utf-8")
        written.append(sonic)
    if not models:
        sonic = out / "sonic-config_db.json"
        sonic.write_text(json.dumps(sonic_config(q), indent=4) + "\n", encoding="utf-8")
        written.append(sonic)
    return written
