"""SONiC config_db tables of the Blueprint's QoS plan, one fragment per tier of SONiC switches the wiring plan cables.

Keys and fields follow SONiC's own files (tests/fixtures/switch/SOURCES.md) and pass SONiC's YANG models
(tests/sonic_yang.py, `make lint`):

- PORT: every port of the switch as the platform's port_config.ini has it (name, lanes, alias, index, speed);
- the QoS maps (DSCP_TO_TC_MAP, TC_TO_QUEUE_MAP, TC_TO_PRIORITY_GROUP_MAP, named ``CLUSTERSMITH``) bound to every
  port in PORT_QOS_MAP with PFC on the plan's PFC priorities, WRED/ECN on the RoCE queue, strict priority for CNPs,
  and the PFC watchdog (PFC_WD);
- the lossless class's buffers in SONiC's dynamic buffer model (``qos.lossless_buffers``): DEVICE_METADATA's
  ``buffer_model``, the PFC priorities' priority group on every port with profile ``NULL`` (SONiC computes its
  headroom from the port's speed, cable length and MTU), and CABLE_LENGTH with each cabled port's planned length from
  the wiring plan (blueprints.wiring.cables). A PG other than SONiC's default lossless 3-4 needs the port's own
  tc_to_pg_map, which the fragment binds; a port's lossless PG ranges must be disjoint, so a switch that still holds
  the SKU default's ``3-4`` must drop it first (qos-policy.md says how).

Where no SONiC switch is cabled (the fabric is not ours, or the wiring plan chose another OS), one fragment keyed by
the ``<ROCE_PORT>`` placeholder, with no PORT or CABLE_LENGTH rows: the user's switch has them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from blueprints.blueprint import Blueprint, QosPlan, SwitchTier
from blueprints.wiring import all_ports, cables, sonic_lanes

MAP = "CLUSTERSMITH"
SONIC_PORT = "<ROCE_PORT>"
CABLE_LENGTH_KEY = "AZURE"  # the one row SONiC's buffer templates write (files/build_templates/buffers_config.j2)


def sonic_tiers(bp: Blueprint) -> dict[str, SwitchTier]:
    """Each tier of SONiC switches the wiring plan cables, by the name its switches share (``cleaf`` for cleaf-1,
    cleaf-2, ...): every port of a RoCE fabric's switch carries the lossless class, down-ports and uplinks alike."""
    if bp.wiring is None:
        return {}
    return {t.name_prefix.rstrip("-"): t for t in bp.wiring.switches if t.ports.os == "sonic"}


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


def cable_lengths(bp: Blueprint, tier: SwitchTier) -> dict[str, str]:
    """Each cabled port of the tier's switches and its planned length (the run's: 5m to a host, 40m leaf to spine,
    300m spine to core); a port is at the same place in every switch of a tier, so it has one length."""
    names = set(tier.names())
    lengths: dict[str, str] = {}
    for cable in cables(bp):
        for device, port in ((cable.to_device, cable.to_port.name), (cable.from_device, cable.from_port)):
            if device in names and cable.length and lengths.setdefault(port, cable.length) != cable.length:
                raise ValueError(f"{tier.name_prefix}*: port {port} is planned both {lengths[port]} and "
                                 f"{cable.length} long")
    return dict(sorted(lengths.items(), key=lambda kv: int(kv[0].removeprefix("Ethernet"))))


def pg_ranges(priorities: Sequence[int]) -> list[str]:
    """Priorities as SONiC's PG keys: each run of consecutive ones as ``a-b`` (3, 4 -> ``3-4``), a lone one as ``a``."""
    runs: list[list[int]] = []
    for p in sorted(priorities):
        if runs and p == runs[-1][-1] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    return [f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs]


def sonic_config(q: QosPlan, tier: SwitchTier | None = None, bp: Blueprint | None = None) -> dict[str, Any]:
    """The tables with one entry per port of the switch ``tier`` (its PORT table first, its cable lengths from
    ``bp``'s wiring plan), or per the ``<ROCE_PORT>`` placeholder where the wiring plan names no SONiC switch."""
    ports: Sequence[str] = [p.name for p in all_ports(tier.ports)] if tier is not None else (SONIC_PORT,)
    roce, wd, ecn = q.roce_priority.value, q.pfc_watchdog, q.ecn_thresholds
    pfc = ",".join(map(str, q.pfc_priorities))
    port: dict[str, str] = {"dscp_to_tc_map": MAP, "tc_to_queue_map": MAP}
    if pfc:
        port |= {"pfc_enable": pfc, "pfcwd_sw_enable": pfc, "tc_to_pg_map": MAP}
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
        tables |= lossless_buffers(q, ports, tier, bp)
    return tables


def lossless_buffers(q: QosPlan, ports: Sequence[str], tier: SwitchTier | None,
                     bp: Blueprint | None) -> dict[str, Any]:
    """The dynamic buffer model's tables for the PFC priorities: the model, the priority-to-PG map the ports bind,
    each port's lossless PGs with no profile (SONiC sizes their headroom), and the cabled ports' lengths."""
    tables: dict[str, Any] = {
        "DEVICE_METADATA": {"localhost": {"buffer_model": q.lossless_buffers.model}},
        "TC_TO_PRIORITY_GROUP_MAP": {MAP: {str(tc): str(tc) for tc in range(8)}},
        "BUFFER_PG": {f"{name}|{pg}": {"profile": "NULL"} for name in ports for pg in pg_ranges(q.pfc_priorities)},
    }
    lengths = cable_lengths(bp, tier) if tier is not None and bp is not None else {}
    if lengths:
        tables["CABLE_LENGTH"] = {CABLE_LENGTH_KEY: lengths}
    return tables
