"""Step ``probe``: read-only looks at the hosts. NVMe-oF paths and I/O policy and the QoS layers on every GPU client
(a host job, ``files/job_probe.sh``: each host lists its paths once and reads each of its subsystems' I/O policy
once, so the reads add up to clients + subsystems), and beside it the scrape targets and the cache hit ratio from
Prometheus (``playbooks/probe.yml`` on the monitoring host). What each host said lands in ``nvme/``, ``qos/<host>/``
and ``prometheus/``; how long a reconnecting path may settle first is the ``nvmeof.paths`` check's arguments
(``settle_s``, ``reset_extra_s``: the planner's, from the reconnect delay)."""

from __future__ import annotations

import ipaddress
import json
import math
from urllib.parse import urlencode

from blueprints.blueprint.check_args import NvmeArgs, PrometheusArgs, args_as
from validators.run.jobs import Job, SpecValue
from validators.run.plumbing import HostOutcome, Session

CLIENT_PROBES = ("nvme", "qos")
LIMIT_S = 180  # the settle window (the admin timeout and two reconnect delays, or three) and the reads


def run(session: Session, probes: list[str], check_ids: dict[str, list[str]]) -> None:
    clients = session.inventory.group("gpu_clients")
    prometheus = monitoring_hosts(session)[:1]
    url = prometheus_url(session, prometheus[0]) if prometheus else ""
    cache_query = cache_query_url(session, url, check_ids.get("cache", [])) if "cache" in probes else None
    if "cache" in probes and cache_query is None:
        probes = [p for p in probes if p != "cache"]
        for cid in check_ids["cache"]:
            session.setup_error(cid, "cluster", "no fio workload ran in this acceptance run: the hit ratio is counted "
                                                "over the fio workloads' window")
    paths = session.check("nvmeof.paths")
    settle = args_as(paths.args, NvmeArgs) if paths is not None else NvmeArgs()
    on_clients = [p for p in probes if p in CLIENT_PROBES]
    asked = [p for p in probes if p not in CLIENT_PROBES]
    client_outcomes: dict[str, HostOutcome] = {}
    prometheus_outcomes: dict[str, HostOutcome] = {}

    def on_the_clients() -> None:
        common: dict[str, SpecValue] = {"probes": " ".join(on_clients), "settle_s": round(settle.settle.value),
                                        "reset_extra_s": round(settle.reset_extra.value)}
        specs = {h: {"host": h, **common} for h in clients}
        client_outcomes.update(session.job(Job("probe", "probe", specs, (
            "nvme/{host}.json", "nvme/{host}.iopolicy.json", "qos/{host}/rdma_cm_tos.json", "qos/{host}/nccl.conf",
            "qos/{host}/discovery.conf"), int(LIMIT_S * session.scale))))

    def of_prometheus() -> None:
        prometheus_outcomes.update(session.play("probe-prometheus", "probe.yml", prometheus, {
            "accept_probes": asked, "accept_prometheus_url": url, "accept_cache_query_url": cache_query or "",
            "accept_prometheus_ca": session.bp.monitoring.auth.ca_file,
            "accept_prometheus_user": session.bp.monitoring.auth.username}, 180))

    # the clients' look and Prometheus' answer are read side by side: each waits on hosts of its own (a path still
    # settling holds the clients' job up to its window, while Prometheus answers in seconds)
    session.side_by_side(*([on_the_clients] if on_clients else []), *([of_prometheus] if asked else []))
    if "cache" in probes:  # storage_tiering puts a cache on every GPU client: each should have a ratio
        session.write("cache-hosts.json", text=json.dumps(clients, indent=2))
    for probe, ids in check_ids.items():
        session.record(ids, prometheus_outcomes if probe in ("targets", "cache") else client_outcomes)
    if not prometheus:
        planned = ", ".join(session.bp.hosts_by_role().get("monitoring", [])) or "none"
        for cid in check_ids.get("targets", []) + check_ids.get("cache", []):
            session.setup_error(cid, "inventory", f"no monitoring host: the Blueprint's ({planned}) are not in the "
                                                  "inventory, and its group monitoring is empty")


def cache_query_url(session: Session, prometheus_url: str, check_ids: list[str]) -> str | None:
    """The instant query of the plan's hit ratio over the fio workloads' own window, at its end: hits and misses
    counted from the first workload's start to the last one's end; None when no workload ran."""
    if session.fio_window is None:
        return None
    check = next(c for c in session.bp.acceptance.checks if c.id in check_ids)
    start, end = session.fio_window
    name = args_as(check.args, PrometheusArgs).query or ""  # the planner names HIT_RATIO
    query = session.bp.monitoring.query(name).over(f"{max(1, math.ceil(end - start))}s")
    return f"{prometheus_url}/api/v1/query?{urlencode({'query': query, 'time': f'{end:.3f}'})}"


def monitoring_hosts(session: Session) -> list[str]:
    """Where Prometheus runs: the Blueprint's monitoring hosts (the monitoring role's ``monitoring_servers``) that the
    inventory has, else the inventory's ``monitoring`` group. On the lab Prometheus shares the storage target, which
    the lab's inventory lists under storage_targets only."""
    planned = [h for h in session.bp.hosts_by_role().get("monitoring", []) if h in session.inventory.hosts]
    return planned or session.inventory.group("monitoring")


def prometheus_url(session: Session, host: str) -> str:
    """Prometheus as its host reaches it, over TLS: on the address in the plan's listen network, else by the host's
    name (the monitoring role resolves it to that address; both are in the host's certificate)."""
    mon = session.bp.monitoring
    port = next((j.port for j in mon.scrape if j.exporter == "prometheus"), 9090)
    network = ipaddress.IPv4Network(mon.listen_cidr.value)
    address = next((r.address for r in session.inventory.hosts[host].rails
                    if ipaddress.IPv4Address(r.address) in network), host)
    return f"{mon.auth.scheme}://{address}:{port}"
