"""The monitoring plan: scrape jobs and targets, alert and recording rules, the queries every layer
names, the targets dashboard, and how every listener is reached."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import ConfigDict, Field

from blueprints.hosts import HostRole
from blueprints.model import Frozen
from blueprints.traced import Provenance, Traced
from blueprints.units import Duration


class ScrapeJob(Frozen):
    name: str
    role: HostRole
    port: int
    exporter: str
    hosts: tuple[str, ...] = Field(default=(), description="Only these hosts of the role (the Ceph managers); "
                                                           "empty: every host of the role")
    tls: bool = Field(default=True, description="HTTPS with the cluster CA and basic auth (MonitoringAuth); False: "
                                                "plain HTTP without auth, for an exporter that offers neither")
    note: str = Field(default="", description="How the exporter answers, where that is not plain (standbys)")

    def scraped(self, roles: Mapping[HostRole, list[str]]) -> list[str]:
        """The hosts this job scrapes, from ``Blueprint.hosts_by_role()``."""
        return list(self.hosts) if self.hosts else roles.get(self.role, [])


class ScrapeTargets(Frozen):
    """The hosts one scrape job reaches under one role: what one file_sd target file lists
    (``Blueprint.scrape_targets``). Every target carries the labels ``role`` and ``exporter``, and its host name as
    ``instance``."""

    job: str
    role: HostRole
    exporter: str
    port: int
    hosts: tuple[str, ...] = Field(description="Host names, each scraped at <host>:<port>")

    @property
    def addresses(self) -> list[str]:
        return [f"{host}:{self.port}" for host in self.hosts]


class ScrapeSet(Frozen):
    """One file_sd target file as the planner decided it, by host role rather than host by host (a 100,000-GPU
    plan has 12,500 hosts): the hosts of ``role`` (or the listed ``hosts``), less those an earlier set of the same
    job already scrapes. :meth:`targets` names its hosts."""

    job: str
    role: HostRole
    exporter: str
    port: int
    hosts: tuple[str, ...] = Field(default=(), description="Only these hosts; empty: every host of the role")
    skip: tuple[str, ...] = Field(default=(), description="Hosts an earlier set of the job scrapes already (a host "
                                                          "is scraped once per job, under the first role listed)")

    def targets(self, roles: Mapping[HostRole, list[str]]) -> ScrapeTargets:
        """Its hosts by name, from ``Blueprint.hosts_by_role()``."""
        skip = set(self.skip)
        chosen = self.hosts or roles.get(self.role, [])
        return ScrapeTargets(job=self.job, role=self.role, exporter=self.exporter, port=self.port,
                             hosts=tuple(h for h in chosen if h not in skip))


RuleGroup = Literal["storage", "fabric", "gpu", "serving", "ceph", "baseline"]


class AlertRule(Frozen):
    name: str
    summary: str
    expr: str = Field(description="PromQL; the threshold is substituted in")
    threshold: float
    unit: str
    for_: str = Field(alias="for", description="How long the condition must hold")
    severity: Literal["critical", "warning", "info"]
    derived_from: Provenance
    group: RuleGroup = Field(default="storage", description="Rule file it is written to: rules/<group>.yml")
    metric_source: str = Field(default="", description="Where the metric comes from and how it is measured")

    model_config = ConfigDict(populate_by_name=True)  # Frozen's, and the field aliases accepted by name too


class RecordingRule(Frozen):
    """A series precomputed by Prometheus: a windowed rate, ratio or a historical baseline."""

    record: str = Field(description="Name of the recorded series (level:metric:operations)")
    expr: str = Field(description="PromQL it is computed from")
    group: RuleGroup = Field(description="Rule group: alerts of the same group read it in the same evaluation")


class Query(Frozen):
    """A PromQL expression the monitoring plan defines once: recording rules, alerts, dashboard panels and acceptance
    name it instead of restating it."""

    name: str = Field(description="Stable id the other layers name it by, e.g. cache.read_hit_ratio")
    measures: str = Field(description="What its value is, in words")
    expr: str = Field(description="PromQL; {window} stands for the range it is taken over")
    window: str | None = Field(default=None, description="Range alerts and dashboards take it over (5m); acceptance "
                                                         "puts in its measurement's own")
    unit: str
    source: str = Field(description="Where its series come from and how they are measured")
    recorded: str | None = Field(default=None, description="Series a recording rule keeps it in, at its window")

    def over(self, window: str | None = None) -> str:
        """The PromQL over ``window`` (a Prometheus duration), by default the query's own."""
        if "{window}" not in self.expr:
            return self.expr
        chosen = window or self.window
        if chosen is None:
            raise ValueError(f"query {self.name} needs a window")
        return self.expr.replace("{window}", chosen)

    @property
    def series(self) -> str:
        """What a reader at the query's own window uses: the recorded series where there is one."""
        return self.recorded or self.over()


class TargetPanel(Frozen):
    """One spec target on the targets dashboard: what was asked, the query that measures it, which side is good."""

    spec: tuple[str, ...] = Field(description="Spec paths of the target")
    title: str
    threshold: float = Field(description="The target, in the panel's unit")
    query: str = Field(description="Name of the MonitoringPlan query measured")
    aggregate: Literal["min", "max", "sum"] = Field(description="How the query's series become one value: the "
                                                                "worst host (min, max) or the cluster total (sum)")
    unit: str = Field(description="Grafana unit of the panel")
    good_below: bool = Field(description="True when values below the threshold are good")


class MonitoringAuth(Frozen):
    """How every monitoring listener is reached: HTTPS with the cluster CA, basic auth with the secrets store's
    ``monitoring`` account. Paths are on the hosts; the password and its hash never enter the Blueprint."""

    scheme: Literal["https"] = "https"
    username: str = Field(description="Basic-auth user; the secrets store's monitoring.username must be the same")
    web_config_file: str = Field(description="Exporter-toolkit web config every listener reads (--web.config.file)")
    tls_dir: str = Field(description="Folder of the cluster CA (ca.crt) and the host's certificate and key")
    ca_file: str = Field(description="The cluster CA certificate scrapers verify every listener against")
    password_file: str = Field(description="Monitoring hosts: the password Prometheus scrapes with (0600, prometheus)")


class MonitoringPlan(Frozen):
    scrape_interval: Duration
    scrape: tuple[ScrapeJob, ...]
    scrape_targets: tuple[ScrapeSet, ...] = Field(
        description="What Prometheus scrapes, per job and role, in the plan's order (its file_sd target files)")
    alerts: tuple[AlertRule, ...]
    baseline_window: Duration = Field(description="History the dynamic thresholds are computed over")
    recording: tuple[RecordingRule, ...] = Field(default=(), description="Recording rules the alerts read")
    evaluation_interval: Duration = Field(default=Duration.parse("15s"), description="How often rules run")
    baseline_interval: Duration = Field(
        default=Duration.parse("2m"),
        description="How often the baseline group (long windows) runs; under the 5m lookback, so it never goes stale",
    )
    collect_interval: Duration = Field(
        default=Duration.parse("10s"), description="How often the textfile exporter refreshes its metrics"
    )
    latency_buckets: tuple[float, ...] = Field(
        default=(), description="Upper bounds (s) of the storage read latency histogram; the p99 target is one"
    )
    listen_cidr: Traced[str] = Field(
        description="Network the exporters, Prometheus and Alertmanager listen on (each host's address in it)",
    )
    auth: MonitoringAuth = Field(description="TLS and basic auth of every listener and of every scrape")
    queries: tuple[Query, ...] = Field(default=(), description="Every query the rules, dashboards and acceptance read")
    targets: tuple[TargetPanel, ...] = Field(default=(), description="Rows of the spec targets dashboard")

    def query(self, name: str) -> Query:
        """The plan's query of that name; a name the plan lacks is a planner defect."""
        for q in self.queries:
            if q.name == name:
                return q
        raise KeyError(f"the monitoring plan has no query {name!r}: {', '.join(q.name for q in self.queries)}")
