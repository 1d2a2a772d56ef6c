"""Ceph monitoring: the manager's prometheus module scraped on every manager host, the queries the Ceph dashboard
reads and alerts on health, placement groups, OSDs, the file system's MDS and (with more than one monitor) quorum.

Every metric and label here is one the Pacific (16.2.15) module serves: tests/fixtures/ceph/{healthy,osd-down}/
mgr-prometheus.txt are its answers, recorded. What the values mean is the module's source
(https://github.com/ceph/ceph/blob/v16.2.15/src/pybind/mgr/prometheus/module.py, Debian's ceph-mgr 16.2.15 ships the
same file as /usr/share/ceph/mgr/prometheus/module.py).

Only the active manager serves metrics. A standby's module answers ``GET /metrics`` with HTTP 200, Content-Type
text/plain and an empty body (``StandbyModule.serve``: ``def metrics(self): ... return ''``); its
``standby_behaviour`` option (``default`` or ``error``) changes only what the index page ``/`` answers. So every
manager is a scrape target, Prometheus counts a standby ``up`` (a scrape that succeeds with zero samples), the
acceptance check monitoring.targets_up holds on 3 or 5 managers, and after a failover the new active manager's
series continue under its own ``instance``. Every expression aggregates the scrape's labels (``job``, ``instance``,
``role``, ``exporter``) away, so an alert keeps its labels, and its ``for:`` clock, across a failover. A cluster whose
managers are all standbys or down serves no Ceph series at all, while every target still looks up: CephMetricsAbsent
covers that.
"""

from __future__ import annotations

from blueprints.blueprint import AlertRule, CephPlan, Query, ScrapeJob
from blueprints.planner.alerts import alert_rule

CEPH_MGR_PROMETHEUS = 9283  # the module's server_port default (module.py: DEFAULT_PORT = 9283)
MODULE = "https://github.com/ceph/ceph/blob/v16.2.15/src/pybind/mgr/prometheus/module.py"
# Ceph's own alert rules (the ceph-mixin that cephadm deploys), read at this commit on 2026-12-02: CephHealthError
# for 5m, CephHealthWarning 15m, CephOSDDown 5m, CephPGsInactive 5m (critical), CephPGsUnclean 15m (warning).
MIXIN = ("https://github.com/ceph/ceph/blob/051b9b85f8878ffca7ddabdb7227c8fd3d607bcb/"
         "monitoring/ceph-mixin/prometheus_alerts.yml")
HEALTH_CHECKS = "https://docs.ceph.com/en/pacific/rados/operations/health-checks/"
PG_STATES = "https://docs.ceph.com/en/pacific/rados/operations/pg-states/"
SPEC = ["target.provider"]  # Ceph is the storage engine of bare metal and the lab (planner.storage)
SCRAPE = ("ceph", "ceph-mgr")
_AWAY = "job, instance, role, exporter"  # the scrape's labels: the serving manager changes on a failover

HEALTH = "ceph.health_status"
PGS_INACTIVE = "ceph.pgs_not_active"
PGS_UNCLEAN = "ceph.pgs_not_clean"
PGS_DEGRADED = "ceph.pgs_degraded"
OSD_UP = "ceph.osd_up"
OSD_IN = "ceph.osd_in"
POOL_USED = "ceph.pool_used_ratio"
POOL_STORED = "ceph.pool_stored_bytes"
MANAGERS_SERVING = "ceph.managers_serving"
OSDS_UP = "ceph.osds_up"
OSDS_IN = "ceph.osds_in"
FS_WITHOUT_MDS = "ceph.fs_without_mds"
MONS_IN_QUORUM = "ceph.mons_in_quorum"


def _cluster(metric: str) -> str:
    return f"max without ({_AWAY}) ({metric})"


def _pool(expr: str) -> str:
    """A per-pool expression with the pool's name (ceph_pool_metadata's ``name``) beside its ``pool_id``."""
    return f"{expr} * on (pool_id) group_left (name) {_cluster('ceph_pool_metadata')}"


def _osd(expr: str) -> str:
    """A per-OSD expression with the OSD's host (ceph_osd_metadata's ``hostname``) beside its ``ceph_daemon``."""
    return f"{expr} * on (ceph_daemon) group_left (hostname) max by (ceph_daemon, hostname) (ceph_osd_metadata)"


def ceph_scrape(ceph: CephPlan) -> ScrapeJob:
    """Every planned manager at the module's port, over plain HTTP: Pacific's module serves neither TLS nor auth."""
    return ScrapeJob(
        name=SCRAPE[0], role="storage_target", port=CEPH_MGR_PROMETHEUS, exporter=SCRAPE[1],
        hosts=ceph.daemons.manager_hosts, tls=False,
        note=(f"only the active manager serves metrics; every planned manager ({len(ceph.daemons.manager_hosts)}) "
              "is scraped so a failover loses none, and a standby answers /metrics with HTTP 200 and an "
              f"empty body (up, zero samples) whatever its standby_behaviour ({MODULE}, StandbyModule)"))


def ceph_queries() -> list[Query]:
    src = f"ceph-mgr prometheus module ({MODULE})"
    return [
        Query(name=HEALTH, measures="cluster health: 0 HEALTH_OK, 1 HEALTH_WARN, 2 HEALTH_ERR",
              expr=_cluster("ceph_health_status"), unit="state",
              source=f"{src}: ceph_health_status, health_status_to_number()"),
        Query(name=PGS_INACTIVE, measures="PGs of each pool not active (no I/O to them)",
              expr=_pool(_cluster("ceph_pg_total - ceph_pg_active")), unit="PGs",
              source=f"{src}: ceph_pg_total, ceph_pg_active per pool_id (pg_summary by pool, each state counted)"),
        Query(name=PGS_UNCLEAN, measures="PGs of each pool not clean (fewer copies or shards than the pool's size)",
              expr=_pool(_cluster("ceph_pg_total - ceph_pg_clean")), unit="PGs",
              source=f"{src}: ceph_pg_total, ceph_pg_clean per pool_id"),
        Query(name=PGS_DEGRADED, measures="PGs of each pool with degraded objects",
              expr=_pool(_cluster("ceph_pg_degraded")), unit="PGs", source=f"{src}: ceph_pg_degraded per pool_id"),
        Query(name=OSD_UP, measures="1 while an OSD is up", expr=_osd(_cluster("ceph_osd_up")), unit="state",
              source=f"{src}: ceph_osd_up, hostname from ceph_osd_metadata"),
        Query(name=OSD_IN, measures="1 while an OSD is in (holds data)", expr=_osd(_cluster("ceph_osd_in")),
              unit="state", source=f"{src}: ceph_osd_in, hostname from ceph_osd_metadata"),
        Query(name=POOL_USED, measures="share of each pool's capacity used (the module's percent_used is a fraction)",
              expr=_pool(_cluster("ceph_pool_percent_used")), unit="ratio",
              source=f"{src}: ceph_pool_percent_used (ceph df's percent_used)"),
        Query(name=POOL_STORED, measures="bytes stored in each pool (before replication or erasure coding)",
              expr=_pool(_cluster("ceph_pool_stored")), unit="B", source=f"{src}: ceph_pool_stored (ceph df)"),
        Query(name=OSDS_UP, measures="OSDs up in the cluster", expr=f"sum({_cluster('ceph_osd_up')})", unit="OSDs",
              source=f"{src}: ceph_osd_up"),
        Query(name=OSDS_IN, measures="OSDs in in the cluster", expr=f"sum({_cluster('ceph_osd_in')})", unit="OSDs",
              source=f"{src}: ceph_osd_in"),
        Query(name=FS_WITHOUT_MDS, measures="each file system no MDS daemon serves (1 per file system)",
              expr=f"({_cluster('ceph_fs_metadata')} unless on (fs_id) {_cluster('ceph_mds_metadata')})",
              unit="file systems",
              source=f"{src}: ceph_fs_metadata, ceph_mds_metadata (one per daemon in the mdsmap's info, standbys "
                     "under fs_id -1: get_fs)"),
        Query(name=MONS_IN_QUORUM, measures="monitors in quorum",
              expr=f"count({_cluster('ceph_mon_quorum_status')} == 1)", unit="monitors",
              source=f"{src}: ceph_mon_quorum_status"),
        Query(name=MANAGERS_SERVING, measures="managers whose module serves Ceph's series (the active one: 1)",
              expr="(count(ceph_health_status) or vector(0))", unit="managers",
              source=f"{src}: ceph_health_status is served by the active manager only"),
    ]


# name, query, summary, for, severity, rule, what the state means (Ceph's PG states page), why that for:
_PG_ALERTS = (
    ("CephPgsInactive", PGS_INACTIVE, "Placement groups of a pool are not active: their I/O blocks", "5m",
     "critical", "alert.ceph_pgs_inactive",
     f"ceph_pg_total - ceph_pg_active > 0 per pool ({PG_STATES}: not active = no reads or writes)",
     f"held 5m as Ceph's own rule ({MIXIN}); a just-enabled module can serve every PG as unknown (recorded 10 s "
     "after HEALTH_OK: tests/fixtures/ceph/healthy), which 5m absorbs"),
    ("CephPgsNotClean", PGS_UNCLEAN, "Placement groups of a pool are not active+clean", "15m", "warning",
     "alert.ceph_pgs_not_clean",
     f"ceph_pg_total - ceph_pg_clean > 0 per pool ({PG_STATES}: clean = every copy or shard in place)",
     f"held 15m as Ceph's own rule ({MIXIN}), time for recovery after a short OSD restart"),
    ("CephPgsDegraded", PGS_DEGRADED, "Placement groups of a pool hold degraded objects", "15m", "warning",
     "alert.ceph_pgs_degraded",
     f"ceph_pg_degraded > 0 per pool ({PG_STATES}: degraded = objects short of their copies or shards)",
     "held 15m as unclean PGs"),
)


def ceph_alerts(ceph: CephPlan, queries: dict[str, Query]) -> list[AlertRule]:
    def q(name: str) -> str:
        return queries[name].over()

    health = queries[HEALTH].source
    alerts = [
        alert_rule("CephHealthError", "ceph", "Ceph reports HEALTH_ERR", f"{q(HEALTH)} >= {{threshold}}", 2, "state",
                   "5m", "critical", SPEC, "alert.ceph_health_error",
                   f"ceph_health_status >= 2: HEALTH_ERR ({MODULE}: health_status_to_number; what it means: "
                   f"{HEALTH_CHECKS}), held 5m as Ceph's own rule ({MIXIN})", health),
        alert_rule("CephHealthWarning", "ceph", "Ceph has reported HEALTH_WARN for 15 minutes",
                   f"{q(HEALTH)} == {{threshold}}", 1, "state", "15m", "warning", SPEC, "alert.ceph_health_warning",
                   f"ceph_health_status == 1: HEALTH_WARN ({HEALTH_CHECKS}), held 15m as Ceph's own rule ({MIXIN}): "
                   "a warning that clears by itself (an OSD restart, a scrub) stays quiet", health),
        *(alert_rule(name, "ceph", summary, f"{q(query)} > {{threshold}}", 0, "PGs", for_, severity, SPEC, rule,
                     f"{meaning}, {why}", queries[query].source)
          for name, query, summary, for_, severity, rule, meaning, why in _PG_ALERTS),
        alert_rule("CephOsdDown", "ceph", "A Ceph OSD is down", f"{q(OSD_UP)} < {{threshold}}", 1, "state", "5m",
                   "warning", SPEC, "alert.ceph_osd_down",
                   f"ceph_osd_up < 1 for an OSD of the {ceph.osds.value} planned, held 5m as Ceph's own rule "
                   f"({MIXIN}); the alert names the OSD (ceph_daemon) and its host (hostname)",
                   queries[OSD_UP].source),
        alert_rule("CephOsdOut", "ceph", "A Ceph OSD is out: its data is being moved to the others",
                   f"{q(OSD_IN)} < {{threshold}}", 1, "state", "5m", "warning", SPEC, "alert.ceph_osd_out",
                   f"ceph_osd_in < 1 for an OSD of the {ceph.osds.value} planned; the monitors mark a down OSD out "
                   "after mon_osd_down_out_interval (600 s by default)", queries[OSD_IN].source),
        alert_rule("CephFilesystemWithoutMds", "ceph", f"No MDS holds a rank of file system {ceph.fs_name}",
                   f"{q(FS_WITHOUT_MDS)} >= {{threshold}}", 1, "file systems", "1m", "critical", SPEC,
                   "alert.ceph_fs_without_mds",
                   f"no ceph_mds_metadata with the file system's fs_id ({MODULE}: get_fs): the planned "
                   f"{ceph.daemons.mds_active.value} active MDS is gone, CephFS I/O stops",
                   queries[FS_WITHOUT_MDS].source),
        alert_rule("CephMetricsAbsent", "ceph", "No Ceph manager serves metrics",
                   f"{q(MANAGERS_SERVING)} < {{threshold}}", 1, "managers", "5m", "critical", SPEC,
                   "alert.ceph_metrics_absent",
                   f"no ceph_health_status from any of the {ceph.daemons.managers.value} planned managers: every "
                   "manager down or standby, or the prometheus module off; standbys still answer, so every target "
                   "looks up", queries[MANAGERS_SERVING].source),
    ]
    monitors = ceph.daemons.monitors
    if monitors.value > 1:  # one monitor (the lab): quorum is that monitor, and without it nothing reports at all
        alerts.append(alert_rule(
            "CephMonitorOutOfQuorum", "ceph", f"Fewer than the planned {monitors.value} monitors are in quorum",
            f"{queries[MONS_IN_QUORUM].over()} < {{threshold}}", monitors.value, "monitors",
            "1m", "warning", list(monitors.derived_from.spec), "alert.ceph_monitor_out_of_quorum",
            f"monitors in quorum < {monitors.value} planned ({monitors.derived_from.formula})",
            queries[MONS_IN_QUORUM].source))
    return alerts
