"""Variables of the ``monitoring`` role: exporters on every host, Prometheus and Alertmanager on the monitoring hosts.

Ports, the exporter's refresh interval and the latency histogram's bounds come from the Blueprint's
monitoring plan; the role installs the rule files, ``prometheus.yml`` and its target files, ``alertmanager.yml`` and the
dashboards that ``clustersmith build`` wrote to ``out/<name>/monitoring/``.
"""

from __future__ import annotations

from pydantic import Field

from blueprints.blueprint import Blueprint
from blueprints.rolevars import Group, RoleVars


class MonitoringVars(RoleVars):
    ROLE = "monitoring"

    monitoring_listen_cidr: str = Field(
        description="Management network (CIDR) every listener binds to (the host's address in it)")
    monitoring_username: str = Field(
        description="Basic-auth user of every listener; the secrets file's monitoring.username must match")
    monitoring_web_config_file: str = Field(description="Web config (exporter toolkit) every listener reads")
    monitoring_tls_dir: str = Field(
        description="Host folder of ca.crt, host.crt and host.key (key 0640 root:prometheus)")
    monitoring_ca_file: str = Field(description="Cluster CA certificate scrapes are verified against")
    monitoring_password_file: str = Field(
        description="Monitoring hosts: the scrape password file prometheus.yml names (0600, owned by prometheus)")
    monitoring_secrets_file: str = Field(
        default="{{ clustersmith_secrets_file }}",
        description="Controller path of the cluster's secrets file (its monitoring: account); read with no_log")
    monitoring_ca_dir: str = Field(
        default="{{ monitoring_secrets_file | regex_replace('\\.ya?ml$', '') }}.monitoring-tls",
        description="Controller folder of the cluster CA and the host certificates, beside the secrets file "
                    "(0700, keys 0600); created once, kept across runs")
    monitoring_node_exporter_port: int = Field(ge=1, le=65535, description="node_exporter port (every host)")
    monitoring_prometheus_port: int = Field(ge=1, le=65535, description="Prometheus port (monitoring hosts)")
    monitoring_alertmanager_port: int = Field(ge=1, le=65535, description="Alertmanager port (monitoring hosts)")
    monitoring_dcgm_exporter_port: int | None = Field(
        default=None, ge=1, le=65535, description="dcgm-exporter port (GPU hosts; set where dcgm-exporter is enabled)")
    monitoring_dcgm_enabled: bool = Field(description="Install dcgm-exporter on the gpu_clients (hosts with GPUs)")
    monitoring_collect_interval_s: int = Field(ge=1, description="Seconds between two runs of clustersmith-exporter")
    monitoring_latency_buckets: list[float] = Field(
        description="Upper bounds (s) of the small-read latency histogram; the spec's p99 target is one of them")
    monitoring_servers: list[str] = Field(
        description="Hosts that run Prometheus and Alertmanager (the Blueprint's monitoring host group)")
    monitoring_scrape_hosts: list[str] = Field(
        description="Every host the scrape target files list; each must be in the play, to resolve its address")
    monitoring_plain_http_jobs: list[str] = Field(
        default=[],
        description="Scrape jobs over plain HTTP without auth, for exporters that offer neither (Ceph Pacific's mgr "
                    "prometheus module); every other job is HTTPS with basic auth")
    monitoring_config_dir: str = Field(
        default="{{ playbook_dir }}/../monitoring",
        description="Controller folder `clustersmith build` wrote (out/<name>/monitoring)")
    monitoring_retention: str = Field(default="15d", description="Prometheus TSDB retention time")
    monitoring_grafana_enabled: bool = Field(
        default=True, description="Install Grafana on the monitoring hosts where its apt source is configured")
    monitoring_textfile_dir: str = Field(
        default="/var/lib/prometheus/node-exporter", description="node_exporter's textfile collector folder")
    monitoring_dcgm_packages: list[str] = Field(
        default=["datacenter-gpu-manager-exporter", "dcgm-exporter"],
        description="Names dcgm-exporter is packaged under (NVIDIA's CUDA repository, Microsoft's); first found wins")
    monitoring_dcgm_service: str = Field(default="nvidia-dcgm-exporter", description="systemd unit of dcgm-exporter")
    monitoring_dcgm_collectors_file: str = Field(
        default="/etc/dcgm-exporter/clustersmith-counters.csv",
        description="Where the role installs files/dcgm-exporter-counters.csv, named by DCGM_EXPORTER_COLLECTORS")
    monitoring_probe_reads: int = Field(
        default=32, ge=0, description="Timed 4 KiB O_DIRECT reads per NVMe-oF namespace and exporter run (0: off)")


def role_vars(bp: Blueprint) -> dict[Group, RoleVars]:
    mon = bp.monitoring
    ports = {j.exporter: j.port for j in mon.scrape}
    roles = bp.hosts_by_role()
    dcgm = {"monitoring_dcgm_exporter_port": ports["dcgm-exporter"]} if "dcgm-exporter" in ports else {}
    return {
        "all": MonitoringVars(**dcgm,
            monitoring_listen_cidr=mon.listen_cidr.value,
            monitoring_username=mon.auth.username,
            monitoring_web_config_file=mon.auth.web_config_file,
            monitoring_tls_dir=mon.auth.tls_dir,
            monitoring_ca_file=mon.auth.ca_file,
            monitoring_password_file=mon.auth.password_file,
            monitoring_node_exporter_port=ports["node_exporter"],
            monitoring_prometheus_port=ports["prometheus"],
            monitoring_alertmanager_port=ports["alertmanager"],
            monitoring_dcgm_enabled="dcgm-exporter" in ports,
            monitoring_collect_interval_s=max(1, round(mon.collect_interval.value)),
            monitoring_latency_buckets=list(mon.latency_buckets),
            monitoring_servers=roles.get("monitoring", []),
            monitoring_scrape_hosts=sorted({h for j in mon.scrape for h in j.scraped(roles)}),
            monitoring_plain_http_jobs=sorted({j.name for j in mon.scrape if not j.tls}),
        )
    }
