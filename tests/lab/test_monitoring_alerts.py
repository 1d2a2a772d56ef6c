"""Monitoring end to end on the example lab (`clustersmith build examples/lab.yaml`, `lab up`, the generated
site.yml with the storage roles, then monitoring: the session's ``deployed`` lab). Prometheus reports every
target up and every rule of the build loaded, and cutting client-1's rail 0 makes NvmeofPathDown fire within
its ``for:`` window.

Every bound comes from the Blueprint: the alert's ``for:``, the path's keep-alive timeout, the exporter's
refresh interval and Prometheus' scrape and evaluation intervals.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import shlex
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.blueprint import Blueprint
from stacks.lab import Lab
from tests.lab.conftest import TCG_MARGIN_S, TIMINGS, ExampleLab

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
ALERT = "NvmeofPathDown"


def _authorization(lab: Lab, bp: Blueprint) -> str:
    """The Basic header of the monitoring account: the secrets file the build's group_vars/all/secrets.yml names."""
    all_vars = yaml.safe_load((lab.workdir / "ansible" / "group_vars" / "all" / "secrets.yml").read_text())
    secrets = yaml.safe_load(Path(all_vars["clustersmith_secrets_file"]).read_text())
    user = bp.monitoring.auth.username
    return "Basic " + base64.b64encode(f"{user}:{secrets['monitoring']['password']}".encode()).decode()


def prometheus(lab: Lab, bp: Blueprint, path: str) -> Any:
    """GET the Prometheus API on the monitoring host, from the host itself (its port is not forwarded), over
    HTTPS verified against the cluster CA, with the monitoring account."""
    server = next(g for g in bp.hosts if g.role == "monitoring")
    host = f"{server.name_prefix}1"
    network = ipaddress.IPv4Network(bp.monitoring.listen_cidr.value)
    nic = next(n for n in lab.saved_state().host(host).rails if ipaddress.IPv4Address(n.address) in network)
    port = next(j.port for j in bp.monitoring.scrape if j.exporter == "prometheus")
    url = f"{bp.monitoring.auth.scheme}://{nic.address}:{port}{path}"
    code = ("import ssl, sys, urllib.request as u; "
            f"r = u.Request({url!r}, headers={{'Authorization': {_authorization(lab, bp)!r}}}); "
            f"c = ssl.create_default_context(cafile={bp.monitoring.auth.ca_file!r}); "
            "sys.stdout.write(u.urlopen(r, context=c, timeout=10).read().decode())")
    done = lab.ssh(host, f"python3 -c {shlex.quote(code)}", timeout=60)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["status"] == "success", body
    return body["data"]


def wait(what: str, timeout: float, probe: Any) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(3)
    pytest.fail(f"{what} not within {timeout:.0f} s; last: {last}", pytrace=False)


def rule_count(folder: Path) -> int:
    return sum(len(g["rules"]) for f in (folder / "monitoring/rules").glob("*.yml")
               for g in yaml.safe_load(f.read_text())["groups"])


def test_prometheus_reports_every_target_up_and_every_rule_loaded(deployed: ExampleLab) -> None:
    bp, folder = deployed.blueprint, deployed.folder
    interval = bp.monitoring.scrape_interval.value

    def all_up() -> list[dict[str, Any]] | None:
        active = prometheus(deployed.lab, bp, "/api/v1/targets?state=active")["activeTargets"]
        return active if active and all(t["health"] == "up" for t in active) else None

    active = wait("every scrape target up", 10 * interval + 60, all_up)
    expected = {(j.name, f"{g.name_prefix}{i}") for j in bp.monitoring.scrape for g in bp.hosts if g.role == j.role
                for i in range(1, g.count + 1)}
    assert {(t["labels"]["job"], t["labels"]["instance"]) for t in active} == expected
    groups = prometheus(deployed.lab, bp, "/api/v1/rules")["groups"]
    loaded = [r for g in groups for r in g["rules"]]
    assert len(loaded) == rule_count(folder)
    assert all(r["health"] == "ok" for r in loaded), [r for r in loaded if r["health"] != "ok"]


def test_a_cut_rail_fires_path_down_within_its_window(deployed: ExampleLab) -> None:
    bp = deployed.blueprint
    mon = bp.monitoring
    alert = next(a for a in mon.alerts if a.name == ALERT)
    assert bp.storage.nvmeof is not None
    for_s = float(alert.for_[:-1]) * {"s": 1, "m": 60, "h": 3600}[alert.for_[-1]]
    # Detection: the host's keep-alive notices the dead path, the exporter's next run writes it, the next scrape
    # reads it, the next evaluation sees it; then the condition must hold for `for:`, plus one evaluation.
    detect = (bp.storage.nvmeof.keep_alive_tmo.value + mon.collect_interval.value + mon.scrape_interval.value
              + mon.evaluation_interval.value)
    bound = detect + for_s + mon.evaluation_interval.value

    def path_alerts() -> list[dict[str, Any]]:
        alerts = prometheus(deployed.lab, bp, "/api/v1/alerts")["alerts"]
        return [a for a in alerts if a["labels"]["alertname"] == ALERT]

    wait("both paths of client-1 live before the cut", 120,
         lambda: not path_alerts() and prometheus(
             deployed.lab, bp, '/api/v1/query?query=sum(clustersmith_nvme_path_live{instance="client-1"})')["result"])
    cut = time.monotonic()
    deployed.lab.set_link("client-1", 0, up=False)
    try:
        firing = wait(f"{ALERT} firing for client-1", bound + 60,
                      lambda: [a for a in path_alerts() if a["state"] == "firing"
                               and a["labels"].get("instance") == "client-1"])
        elapsed = time.monotonic() - cut
        TIMINGS[f"{ALERT}: rail cut to firing"] = elapsed
        assert elapsed >= for_s, f"fired after {elapsed:.0f} s, before its for: {alert.for_}"
        # seen at 83 s and 112 s against a bound of 110 s: the exporter's own run (seconds of CPU under TCG) and
        # this test's polling come on top of the intervals
        assert elapsed <= bound + TCG_MARGIN_S, (
            f"fired after {elapsed:.0f} s; the Blueprint's bound is {bound:.0f} s (detection {detect:.0f} s + for "
            f"{for_s:.0f} s + one evaluation), plus {TCG_MARGIN_S} s for the emulated lab")
        annotations = firing[0]["annotations"]
        assert annotations["spec"].startswith(", ".join(alert.derived_from.spec))
        assert annotations["threshold"].startswith(f"{alert.threshold:.12g} ")
    finally:
        deployed.lab.set_link("client-1", 0, up=True)
    wait(f"{ALERT} resolved after the rail returns", 180, lambda: not path_alerts())
