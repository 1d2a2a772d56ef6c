"""Ceph monitoring from the Blueprint: the mgr prometheus module scraped on every planned manager, standbys counted up,
alerts that can hold on the design (no quorum alert on the lab's one monitor), the Ceph dashboard.

How a standby answers is Ceph 16.2.15's own code (src/pybind/mgr/prometheus/module.py, ``StandbyModule.serve``,
https://github.com/ceph/ceph/blob/v16.2.15/src/pybind/mgr/prometheus/module.py; Debian's ceph-mgr ships the same file):

    @cherrypy.expose
    def metrics(self) -> str:
        cherrypy.response.headers['Content-Type'] = 'text/plain'
        return ''

``standby_behaviour`` (``default``/``error``) is read only by ``index()``, the page at ``/``. The test below serves
exactly that answer for the standbys and the recorded active manager's answer for one, scrapes them with the real
Prometheus, and runs the acceptance rule monitoring.targets_up on what Prometheus reports.
"""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.blueprint import Blueprint, Check
from blueprints.planner.monitoring_ceph import CEPH_MGR_PROMETHEUS
from blueprints.render.monitoring import prometheus_config, target_files
from blueprints.render.monitoring_dashboards import dashboards
from tests.conftest import require_tool
from tests.promtool.support import REPO, blueprint
from validators.checks.monitoring import targets_up
from validators.coverage import Planned
from validators.monitoring import parse_vector
from validators.results import Results

LAB = REPO / "examples" / "lab.yaml"
BAREMETAL = REPO / "examples" / "cv-training-500tb.yaml"
ACTIVE_ANSWER = (REPO / "tests" / "fixtures" / "ceph" / "healthy" / "mgr-prometheus.txt").read_bytes()


def _ceph_job(bp: Blueprint) -> dict[str, Any]:
    return next(c for c in prometheus_config(bp)["scrape_configs"] if c["job_name"] == "ceph")


@pytest.mark.parametrize("example", [LAB, BAREMETAL], ids=lambda p: p.stem)
def test_every_planned_manager_is_a_target_at_9283_over_plain_http(example: Path) -> None:
    bp = blueprint(example)
    assert bp.storage.ceph is not None
    managers = bp.storage.ceph.daemons.manager_hosts
    assert len(managers) == bp.storage.ceph.daemons.managers.value
    job = _ceph_job(bp)
    assert job["scheme"] == "http" and "basic_auth" not in job  # Pacific's module has neither TLS nor auth
    (files,) = job["file_sd_configs"]
    assert files == {"files": ["targets/ceph-storage_target.json"]}
    (group,) = json.loads(target_files(bp.scrape_targets())["targets/ceph-storage_target.json"])
    assert group == {"labels": {"role": "storage_target", "exporter": "ceph-mgr"},
                     "targets": [f"{h}:{CEPH_MGR_PROMETHEUS}" for h in managers]}
    assert CEPH_MGR_PROMETHEUS == 9283  # the module's server_port default (module.py DEFAULT_PORT)
    (planned,) = [j for j in bp.monitoring.scrape if j.exporter == "ceph-mgr"]
    assert "HTTP 200 and an empty body" in planned.note


def test_clouds_plan_no_ceph_scrape_alert_or_dashboard() -> None:
    bp = blueprint(REPO / "examples" / "llm-training-16k.yaml")
    assert bp.storage.ceph is None
    assert not [j for j in bp.monitoring.scrape if j.exporter == "ceph-mgr"]
    assert not [a for a in bp.monitoring.alerts if a.group == "ceph"]
    assert "ceph" not in dashboards(bp)


def test_the_lab_with_one_monitor_has_no_quorum_alert_and_baremetal_alerts_below_its_planned_monitors() -> None:
    lab = blueprint(LAB)
    assert lab.storage.ceph is not None and lab.storage.ceph.daemons.monitors.value == 1
    assert not [a.name for a in lab.monitoring.alerts if "quorum" in (a.name + a.expr).lower()]
    metal = blueprint(BAREMETAL)
    assert metal.storage.ceph is not None
    (quorum,) = [a for a in metal.monitoring.alerts if "ceph_mon_quorum_status" in a.expr]
    assert quorum.threshold == metal.storage.ceph.daemons.monitors.value == 5
    assert quorum.derived_from.formula.startswith("monitors in quorum < 5 planned")


@pytest.mark.parametrize("example", [LAB, BAREMETAL], ids=lambda p: p.stem)
def test_each_ceph_alert_names_its_source_and_outlives_a_failover(example: Path) -> None:
    bp = blueprint(example)
    ceph = [a for a in bp.monitoring.alerts if a.group == "ceph"]
    assert {"CephHealthError", "CephHealthWarning", "CephPgsInactive", "CephPgsNotClean", "CephPgsDegraded",
            "CephOsdDown", "CephOsdOut", "CephFilesystemWithoutMds", "CephMetricsAbsent"} <= {a.name for a in ceph}
    for a in ceph:
        assert "https://" in a.derived_from.formula + a.metric_source, a.name
        assert a.derived_from.spec, a.name
        # the serving manager's instance changes on a failover: no alert may keep it (or it would restart its for:)
        assert "instance" not in a.expr.replace("without (job, instance, role, exporter)", ""), a.name
    health = {a.name: a for a in ceph}
    error, warning = health["CephHealthError"], health["CephHealthWarning"]
    assert error.expr.endswith(">= {threshold}") and error.threshold == 2  # HEALTH_ERR (health_status_to_number)
    assert warning.expr.endswith("== {threshold}") and warning.threshold == 1  # HEALTH_WARN
    assert health["CephOsdDown"].for_ == "5m" and health["CephHealthWarning"].for_ == "15m"


def test_the_ceph_dashboard_shows_health_pgs_osds_and_pools_from_the_plans_queries() -> None:
    bp = blueprint(LAB)
    assert bp.storage.ceph is not None
    panels = json.loads(dashboards(bp)["ceph"])["panels"]
    titles = [p["title"] for p in panels]
    for row in ("Health", "Placement groups per pool", "OSDs", "Pools"):
        assert row in titles
    exprs = {t["expr"] for p in panels for t in p.get("targets", [])}
    assert {bp.monitoring.query(n).series for n in ("ceph.health_status", "ceph.pgs_not_clean", "ceph.osd_up",
                                                    "ceph.osd_in", "ceph.pool_used_ratio")} <= exprs
    assert f"vector({bp.storage.ceph.osds.value})" in exprs  # the planned OSDs beside those up and in


# A real Prometheus scraping three managers: one active (the recorded answer), two standbys (Pacific's answer).

class _Manager(http.server.BaseHTTPRequestHandler):
    body = b""
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def managers(request: pytest.FixtureRequest) -> Iterator[list[int]]:
    """Three module endpoints on loopback, one address each (127.0.0.1-3, so each target has its own instance): the
    first answers as the active manager did, the others as standbys (the last with the HTTP status the test names:
    200 as Pacific's standby, 500 as a manager whose /metrics fails). Yields their host:port addresses."""
    servers = []
    for n, (body, status) in enumerate(((ACTIVE_ANSWER, 200), (b"", 200), (b"", request.param)), start=1):
        handler = type("Manager", (_Manager,), {"body": body, "status": status})
        server = http.server.ThreadingHTTPServer((f"127.0.0.{n}", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    yield [f"{s.server_address[0]}:{s.server_address[1]}" for s in servers]
    for s in servers:
        s.shutdown()
        s.server_close()


def _get(port: int, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
        return str(answer.read().decode())


@pytest.mark.parametrize(("managers", "up"), [(200, 1.0), (500, 2 / 3)], indirect=["managers"],
                         ids=["standbys-answer-empty-200", "a-failing-manager-is-down"])
def test_standby_managers_count_up_so_targets_up_holds_on_three_managers(managers: list[str], up: float,
                                                                        tmp_path: Path) -> None:
    """The rendered ceph job (its file_sd target file with these three endpoints in place of the planned managers)."""
    prometheus = require_tool("prometheus", "prometheus")
    bp = blueprint(BAREMETAL)
    assert bp.storage.ceph is not None
    job = _ceph_job(bp)
    (name,) = job["file_sd_configs"][0]["files"]
    (group,) = json.loads(target_files(bp.scrape_targets())[name])
    assert len(group["targets"]) >= 3  # a design with 3 managers: three endpoints stand in for the planned ones
    (tmp_path / name).parent.mkdir()
    (tmp_path / name).write_text(json.dumps([{**group, "targets": managers}]))
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "scrape_configs": [job]}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    web = _free_port()
    server = subprocess.Popen(
        [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{web}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        answer = ""
        while time.monotonic() < deadline:
            time.sleep(1)
            try:
                answer = _get(web, "/api/v1/targets?state=active")
            except OSError:
                continue
            active = json.loads(answer)["data"]["activeTargets"]
            if len(active) == 3 and all(t["health"] != "unknown" for t in active):
                break
        (tmp_path / "prometheus" / "targets.json").parent.mkdir()
        (tmp_path / "prometheus" / "targets.json").write_text(answer)
        serving = next(q for q in bp.monitoring.queries if q.name == "ceph.managers_serving")
        # a target's health shows before its scrape's samples can be queried (a unit run under load read 0): asked
        # again until the deadline; a query that never counts the active manager still fails below
        while True:
            count = parse_vector(_get(web, "/api/v1/query?" + urllib.parse.urlencode({"query": serving.over()})))
            if [s.value for s in count] == [1.0] or time.monotonic() >= deadline:
                break
            time.sleep(1)
    finally:
        server.terminate()
        server.wait(timeout=30)
    check = next(c for c in bp.acceptance.checks if c.id == "monitoring.targets_up")
    measured = targets_up(check, Results(tmp_path), Planned.of(bp))
    assert measured.value == pytest.approx(up), measured
    # instance is each target's host (the address without its port), as prometheus.yml's relabelling makes it
    assert {d.where for d in measured.details} == {"ceph 127.0.0.1", "ceph 127.0.0.2", "ceph 127.0.0.3"}
    assert [s.value for s in count] == [1.0]  # one manager (the active) serves the Ceph series


def test_the_acceptance_check_is_the_one_monitoring_targets_up_rule() -> None:
    check = next(c for c in blueprint(BAREMETAL).acceptance.checks if c.id == "monitoring.targets_up")
    assert isinstance(check, Check) and check.threshold == 1.0
