"""Renderers: applyable switch QoS for NVIDIA Cumulus Linux (NVUE) and SONiC (config_db.json fragment).

Both carry the Blueprint's QoS plan and nothing else: DSCP -> switch priority -> traffic class, PFC on
the RoCE priority only, the CNP class in strict priority, ECN on the RoCE queue between
``qos.ecn_thresholds`` and the PFC watchdog. Commands and keys follow the vendors' documents, kept as
excerpts with their sources under tests/fixtures/switch/ (NVUE: CumulusNetworks/docs cumulus-linux-514
Quality-of-Service pages; SONiC: sonic-buildimage qos sample output, sonic-swss swss-schema.md,
sonic-utilities pfcwd/main.py). Where the wiring plan cables SONiC switches, their fragment
(``sonic-<model>-config_db.json``) names every port of the model as SONiC does (blueprints.wiring.all_ports)
and holds the PORT table those names refer to, as the platform's port_config.ini gives it (name, lanes, alias,
index, speed; tests/fixtures/switch), so SONiC's YANG models can check every reference (tests/sonic_yang.py);
elsewhere the RoCE-facing ports are a parameter: ``PORTS`` in the NVUE script, the ``<ROCE_PORT>`` key in the SONiC
fragment (one copy per port).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from blueprints.blueprint import Blueprint, QosPlan, SwitchTier
from blueprints.wiring import all_ports, sonic_lanes

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


def sonic_ports(tier: SwitchTier) -> dict[str, dict[str, str]]:
    """The PORT table of a SONiC switch at the plan's port speed, row by row as its port_config.ini has them: Ethernet0
    of an SN5600 in 2 x 400G is lanes 0,1,2,3, alias etp1a, index 1 (the cage), speed 400000 (Mb/s)."""
    mbps = str(round(tier.port_speed.gbit * 1000))
    table = {}
    for i, port in enumerate(all_ports(tier.ports)):
        lanes = sonic_lanes(tier.ports, i)
        table[port.name] = {"alias": port.label, "index": str(lanes.start // tier.ports.lanes_per_cage + 1),
                            "lanes": ",".join(map(str, lanes)), "speed": mbps}
    return table


def sonic_config(q: QosPlan, tier: SwitchTier | None = None) -> dict[str, Any]:
    """The QoS tables with one entry per port of the switch ``tier`` (its PORT table first), or per the
    ``<ROCE_PORT>`` placeholder where the wiring plan names no SONiC switch."""
    ports: Sequence[str] = [p.name for p in all_ports(tier.ports)] if tier is not None else (SONIC_PORT,)
    roce, wd, ecn = q.roce_priority.value, q.pfc_watchdog, q.ecn_thresholds
    pfc = ",".join(map(str, q.pfc_priorities))
    port: dict[str, str] = {"dscp_to_tc_map": MAP, "tc_to_queue_map": MAP}
    if pfc:
        port |= {"pfc_enable": pfc, "pfcwd_sw_enable": pfc}
    queue: dict[str, dict[str, str]] = {}
    for name in ports:
        queue[f"{name}|{roce}"] = {"wred_profile": "CLUSTERSMITH_LOSSLESS"}
        queue |= {f"{name}|{p}": {"scheduler": f"scheduler.strict{p}"} for p in q.strict_priorities if p != roce}
    tables: dict[str, Any] = {"PORT": sonic_ports(tier)} if tier is not None else {}
    tables |= {
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


def sonic_models(bp: Blueprint) -> dict[str, SwitchTier]:
    """A tier of each SONiC switch model the wiring plan cables (every port of a RoCE fabric's switch carries the
    lossless class: down-ports and uplinks alike)."""
    if bp.wiring is None:
        return {}
    return {t.model: t for t in bp.wiring.switches if t.ports.os == "sonic"}


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
    for model, tier in models.items():
        sonic = out / f"sonic-{model}-config_db.json"
        sonic.write_text(json.dumps(sonic_config(q, tier), indent=4) + "\n", encoding="utf-8")
        written.append(sonic)
    if not models:
        sonic = out / "sonic-config_db.json"
        sonic.write_text(json.dumps(sonic_config(q), indent=4) + "\n", encoding="utf-8")
        written.append(sonic)
    return written
