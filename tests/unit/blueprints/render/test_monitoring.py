"""The monitoring renderer and planner: targets per role from the Blueprint's hosts, thresholds and spec paths
carried into the rules, recording rules for every series an alert reads, SDK-built dashboards."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.blueprint import ScrapeJob
from blueprints.blueprint.check_args import PrometheusArgs, args_as
from blueprints.hosts import HostGroup, names_by_role
from blueprints.loader import load_requirements
from blueprints.planner.monitoring import scrape_sets
from blueprints.render.monitoring import prom_duration, prometheus_config, render, spec_refs
from blueprints.render.monitoring_dashboards import dashboards
from tests.promtool.support import EXAMPLES, blueprint


def _out(example: Path, tmp_path: Path) -> Path:
    render(blueprint(example), tmp_path)
    return tmp_path / "monitoring"


def _rules(out: Path) -> list[dict[str, Any]]:
    return [r for f in sorted((out / "rules").glob("*.yml")) for g in yaml.safe_load(f.read_text())["groups"]
            for r in g["rules"]]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_host_is_scraped_once_per_job_with_its_role(example: Path, tmp_path: Path) -> None:
    """Each job reads its targets from file_sd target files, one per role, that name every host the job scrapes once,
    with the role's and exporter's labels; the instance label is the host name (the address without its port)."""
    bp = blueprint(example)
    out = _out(example, tmp_path)
    config = yaml.safe_load((out / "prometheus.yml").read_text())
    roles = bp.hosts_by_role()
    named = []
    for job in {j.name for j in bp.monitoring.scrape}:
        block = next(c for c in config["scrape_configs"] if c["job_name"] == job)
        assert "static_configs" not in block
        assert block["relabel_configs"] == [{"source_labels": ["__address__"], "regex": "(.+):[0-9]+",
                                             "target_label": "instance", "replacement": "$1"}]
        (sd,) = block["file_sd_configs"]
        named += sd["files"]
        instances = []
        for name in sd["files"]:
            (group,) = json.loads((out / name).read_text())
            role = group["labels"]["role"]
            assert name == f"targets/{job}-{role}.json"
            (planned,) = [j for j in bp.monitoring.scrape if j.name == job and j.role == role]
            assert group["labels"] == {"role": role, "exporter": planned.exporter}
            hosts = [t.removesuffix(f":{planned.port}") for t in group["targets"]]
            assert group["targets"] == [f"{h}:{planned.port}" for h in hosts]
            instances += hosts
        wanted = {h for j in bp.monitoring.scrape if j.name == job for h in j.scraped(roles)}
        assert sorted(instances) == sorted(wanted), job
    assert sorted(named) == sorted(f"targets/{p.name}" for p in (out / "targets").iterdir())
    assert config["global"]["scrape_interval"] == prom_duration(bp.monitoring.scrape_interval.value)
    assert config["rule_files"] == ["rules/*.yml"]


def test_prometheus_yml_does_not_grow_with_the_cluster(tmp_path: Path) -> None:
    """16k GPUs (2,048 GPU nodes) and the lab's three VMs: the same prometheus.yml but for names; the hosts are in
    the target files, one a line."""
    sizes = {}
    for example in EXAMPLES:
        out = _out(example, tmp_path / example.stem)
        sizes[example.stem] = len((out / "prometheus.yml").read_bytes())
        nodes = json.loads((out / "targets" / "node-gpu_client.json").read_text())[0]["targets"]
        assert (out / "targets" / "node-gpu_client.json").read_text().count("\n") == len(nodes) + 4
    assert max(sizes.values()) < 4096, sizes
    assert blueprint(next(e for e in EXAMPLES if e.stem == "llm-training-16k")).compute.nodes.value == 2048


def test_a_host_of_two_roles_is_one_target_per_job_under_its_first_role() -> None:
    """The lab's storage-1 is a storage target and the monitoring host: node_exporter there is one target."""
    bp = blueprint(next(e for e in EXAMPLES if e.stem == "lab"))
    roles = bp.hosts_by_role()
    assert roles["monitoring"] == ["storage-1"] and "storage-1" in roles["storage_target"]
    node = {t.role: t.hosts for t in bp.scrape_targets() if t.job == "node"}
    assert node == {"gpu_client": ("client-1", "client-2"), "storage_target": ("storage-1",)}
    for example in EXAMPLES:
        pairs = [(t.job, t.role) for t in blueprint(example).scrape_targets()]
        assert len(pairs) == len(set(pairs)), example.stem  # one target file per job and role


def test_the_blueprint_stores_scrape_targets_by_role_not_host_by_host() -> None:
    """The planner decides the targets; the Blueprint names roles and only the hosts a job lists or skips, so a
    12,500-host plan does not store every host name again."""
    bp = blueprint(next(e for e in EXAMPLES if e.stem == "llm-training-16k"))
    stored = bp.monitoring.scrape_targets
    gpu = bp.hosts_by_role()["gpu_client"]
    assert len(gpu) > 1000 and not any(s.hosts or s.skip for s in stored if s.role == "gpu_client")
    assert [(s.job, s.role) for s in stored] == [(t.job, t.role) for t in bp.scrape_targets()]
    assert {h for t in bp.scrape_targets() if t.job == "node" and t.role == "gpu_client" for h in t.hosts} == set(gpu)
    lab = blueprint(next(e for e in EXAMPLES if e.stem == "lab"))
    assert [s.skip for s in lab.monitoring.scrape_targets if s.job == "node"] == [(), ()]  # monitoring: all skipped


def test_a_role_sharing_some_hosts_with_an_earlier_one_skips_only_those() -> None:
    groups = (HostGroup(role="storage_target", count=2, name_prefix="st-", node_type="x"),
              HostGroup(role="monitoring", count=3, name_prefix="st-", node_type="x"))
    jobs = [ScrapeJob(name="node", role=role, port=9100, exporter="node_exporter")
            for role in ("storage_target", "monitoring")]
    sets = scrape_sets(jobs, groups)
    assert [(s.role, s.skip) for s in sets] == [("storage_target", ()), ("monitoring", ("st-1", "st-2"))]
    roles = names_by_role(groups)
    assert [s.targets(roles).hosts for s in sets] == [("st-1", "st-2"), ("st-3",)]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_each_alert_carries_its_threshold_and_spec_path_with_line(example: Path, tmp_path: Path) -> None:
    bp = blueprint(example)
    written = {r["alert"]: r for r in _rules(_out(example, tmp_path)) if "alert" in r}
    assert set(written) == {a.name for a in bp.monitoring.alerts}
    for alert in bp.monitoring.alerts:
        rule = written[alert.name]
        threshold = f"{alert.threshold:.12g}"
        assert "{threshold}" not in rule["expr"]
        assert re.search(rf"(?:[<>]=?|==) {re.escape(threshold)}\b|{re.escape(threshold)} \*", rule["expr"]), \
            rule["expr"]
        assert rule["for"] == alert.for_
        assert rule["labels"]["severity"] == alert.severity
        ann = rule["annotations"]
        assert ann["threshold"] == f"{threshold} {alert.unit}"
        assert ann["spec"] == spec_refs(bp, alert.derived_from.spec)
        for path in alert.derived_from.spec:
            assert f"{path} ({bp.spec_file}:{bp.spec_lines[path]})" in ann["spec"]
        assert ann["metric_source"] and ann["formula"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_spec_targets_become_the_alert_thresholds(example: Path) -> None:
    bp = blueprint(example)
    asked = load_requirements(example).performance
    storage = asked.storage
    alerts = {a.name: a for a in bp.monitoring.alerts}
    assert alerts["StorageReadLatencyP99High"].threshold == storage.latency_p99.value
    assert alerts["StorageThroughputJitterHigh"].threshold == storage.jitter.value
    # each cache's alert exactly where that cache is planned: dm-cache where a node owns a block device (not on the
    # clouds), FS-Cache where the shared file system's client uses it
    if bp.storage.cache is not None:
        assert alerts["CacheHitRatioLow"].threshold == bp.storage.cache.min_hit_ratio.value.value
    else:
        assert "CacheHitRatioLow" not in alerts
    if bp.storage.shared.fscache is not None:
        assert alerts["FsCacheHitRatioLow"].threshold == bp.storage.shared.fscache.min_hit_ratio.value.value
    else:
        assert "FsCacheHitRatioLow" not in alerts
    assert f"{storage.latency_p99.value:.12g}" in {f"{b:.12g}" for b in bp.monitoring.latency_buckets}
    if bp.storage.nvmeof is not None:
        assert alerts["NvmeofPathDown"].threshold == bp.storage.nvmeof.paths_per_subsystem.value
    else:
        assert "NvmeofPathDown" not in alerts
    assert ("GpuSmUtilisationLow" in alerts) == (bp.lab is None)
    assert "ServingLatencyP99High" not in alerts  # nothing the design deploys measures serving latency


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_recorded_series_an_alert_reads_is_recorded(example: Path, tmp_path: Path) -> None:
    rules = _rules(_out(example, tmp_path))
    recorded = {r["record"] for r in rules if "record" in r}
    for rule in rules:
        for name in re.findall(r"\b[a-z_]+:[a-z_0-9:]+\b", rule["expr"]):
            assert name in recorded, f"{rule.get('alert') or rule.get('record')} reads {name}, which no rule records"


def test_baselines_run_in_their_own_group_at_the_planned_interval(tmp_path: Path) -> None:
    bp = blueprint(next(e for e in EXAMPLES if e.stem == "lab"))
    out = _out(next(e for e in EXAMPLES if e.stem == "lab"), tmp_path)
    group = yaml.safe_load((out / "rules" / "baseline.yml").read_text())["groups"][0]
    assert group["interval"] == prom_duration(bp.monitoring.baseline_interval.value)
    window = prom_duration(bp.monitoring.baseline_window.value)
    assert all(f"[{window}]" in r["expr"] for r in group["rules"])


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_dashboards_are_built_with_the_sdk_and_show_each_spec_target(example: Path, tmp_path: Path) -> None:
    bp = blueprint(example)
    out = _out(example, tmp_path)
    names = {p.stem for p in (out / "dashboards").glob("*.json")}
    assert names == {"storage", "fabric", "targets"} | ({"gpu"} if bp.lab is None else set()) | (
        {"ceph"} if bp.storage.ceph is not None else set())
    targets = json.loads((out / "dashboards" / "targets.json").read_text())
    rows = [p["title"] for p in targets["panels"] if p["type"] == "row"]
    storage = load_requirements(example).performance.storage
    assert any(str(storage.read_throughput) in r for r in rows)
    assert any(str(storage.latency_p99) in r for r in rows)
    assert any(str(storage.jitter) in r for r in rows)
    exprs = [t["expr"] for p in targets["panels"] for t in p.get("targets", [])]
    assert f"vector({storage.latency_p99.value:.12g})" in exprs
    assert f"vector({storage.read_throughput.value:.12g})" in exprs
    storage_dash = json.loads((out / "dashboards" / "storage.json").read_text())
    assert any(p["type"] == "heatmap" and "by (instance, device)" in p["targets"][0]["expr"]
               for p in storage_dash["panels"] if p["type"] != "row")
    fabric = json.loads((out / "dashboards" / "fabric.json").read_text())
    titles = {p["title"] for p in fabric["panels"]}
    assert {"RDMA ports ACTIVE", "NVMe-oF paths live", "Rail round-trip time p99"} <= titles
    for dash in (targets, storage_dash, fabric):
        assert dash["schemaVersion"] >= 39, "an SDK-built dashboard carries the current schema version"
        assert all(t["datasource"]["uid"] == "clustersmith-prometheus"
                   for p in dash["panels"] for t in p.get("targets", []))


def test_lab_listens_on_the_last_rail_and_the_others_on_the_management_network() -> None:
    for example in EXAMPLES:
        bp = blueprint(example)
        if bp.lab is not None:
            assert bp.monitoring.listen_cidr.value == bp.lab.rails[-1].subnet
            assert bp.monitoring.listen_cidr.derived_from.spec == ("target.rails",)
            assert bp.target.management_network is None
        else:
            assert bp.target.management_network is not None
            assert bp.monitoring.listen_cidr == bp.target.management_network


def test_every_scrape_and_alertmanager_is_tls_with_basic_auth() -> None:
    for example in EXAMPLES:
        bp = blueprint(example)
        config = prometheus_config(bp)
        auth = bp.monitoring.auth
        expected = {"scheme": "https",
                    "basic_auth": {"username": auth.username, "password_file": auth.password_file},
                    "tls_config": {"ca_file": auth.ca_file, "insecure_skip_verify": False}}
        plain = {j.name for j in bp.monitoring.scrape if not j.tls}
        assert plain == ({"ceph"} if bp.storage.ceph is not None else set())  # Pacific's mgr module: no TLS, no auth
        blocks = [*config["scrape_configs"], *config["alerting"]["alertmanagers"]]
        assert blocks
        for block in blocks:
            if block.get("job_name") in plain:
                assert block["scheme"] == "http" and "basic_auth" not in block and "tls_config" not in block, block
                continue  # the password is never sent where it would travel in clear
            assert {k: block[k] for k in expected} == expected, block.get("job_name", "alertmanager")


def test_build_writes_the_monitoring_folder(tmp_path: Path) -> None:
    from blueprints.render import build

    bp = blueprint(next(e for e in EXAMPLES if e.stem == "lab"))
    folder, written = build(bp, tmp_path)
    mon = folder / "monitoring"
    for rel in ("prometheus.yml", "targets/node-gpu_client.json", "targets/node-storage_target.json",
                "alertmanager.yml", "rules/storage.yml", "rules/fabric.yml", "rules/baseline.yml",
                "dashboards/targets.json"):
        assert mon / rel in written and (mon / rel).is_file()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_spec_target_panel_shows_its_target_and_the_plans_query(example: Path) -> None:
    bp = blueprint(example)
    mon = bp.monitoring
    storage = load_requirements(example).performance.storage
    shown = {t.spec[0]: t for t in mon.targets}
    assert shown["performance.storage.read_throughput"].threshold == storage.read_throughput.value
    assert shown["performance.storage.latency_p99"].threshold == storage.latency_p99.value
    assert ("performance.storage.write_throughput" in shown) == (storage.write_throughput is not None)
    panels = json.loads(dashboards(bp)["targets"])["panels"]
    exprs = {t["expr"] for p in panels for t in p.get("targets", [])}
    for t in mon.targets:
        assert f"{t.aggregate}({mon.query(t.query).series})" in exprs, t.title


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_one_hit_ratio_serves_the_alert_the_dashboard_and_acceptance(example: Path) -> None:
    bp = blueprint(example)
    q = bp.monitoring.query("cache.read_hit_ratio")
    assert q.over() == (
        "increase(clustersmith_lvmcache_read_hits_total[5m]) / (increase(clustersmith_lvmcache_read_hits_total[5m]) "
        "+ increase(clustersmith_lvmcache_read_misses_total[5m]))")
    assert "[120s]" in q.over("120s") and "[5m]" not in q.over("120s")
    recorded = {r.record: r.expr for r in bp.monitoring.recording}
    alerts = {a.name: a for a in bp.monitoring.alerts}
    checks = {c.id: c for c in bp.acceptance.checks}
    if bp.storage.cache is None:  # no dm-cache planned (the clouds): no lvmcache rule, alert or check
        assert str(q.recorded) not in recorded and "CacheHitRatioLow" not in alerts and "cache.hit_ratio" not in checks
        assert not any("lvmcache" in e for e in recorded.values())
    else:
        assert recorded[str(q.recorded)] == q.over()
        alert = alerts["CacheHitRatioLow"]
        assert alert.expr == f"{q.recorded} < {{threshold}}"
        check = checks["cache.hit_ratio"]
        assert args_as(check.args, PrometheusArgs).query == q.name and check.threshold == pytest.approx(alert.threshold)
    fscache = bp.storage.shared.fscache
    if fscache is None:
        assert "FsCacheHitRatioLow" not in alerts and "cache.fscache_hit_ratio" not in checks
        assert not any("fscache" in r for r in recorded)
    else:
        fq = bp.monitoring.query("fscache.read_hit_ratio")
        assert recorded[str(fq.recorded)] == fq.over()
        assert alerts["FsCacheHitRatioLow"].expr == f"{fq.recorded} < {{threshold}}"
        assert checks["cache.fscache_hit_ratio"].threshold == pytest.approx(alerts["FsCacheHitRatioLow"].threshold)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_dashboards_and_alerts_read_the_plans_queries_only(example: Path) -> None:
    """No panel or alert restates PromQL: each plots a query of the MonitoringPlan (its series), a target row's
    aggregate of one, or the target line itself; each alert compares one or more of them with its threshold."""
    bp = blueprint(example)
    mon = bp.monitoring
    series = {q.series for q in mon.queries}
    allowed = series | {f"{t.aggregate}({mon.query(t.query).series})" for t in mon.targets}
    for name, text in dashboards(bp).items():
        for panel in json.loads(text)["panels"]:
            for target in panel.get("targets", []):
                expr = target["expr"]
                assert expr in allowed or re.fullmatch(r"vector\([0-9.e+-]+\)", expr), f"{name}: {expr}"
    readings = series | {q.over() for q in mon.queries}
    for alert in mon.alerts:
        if alert.group == "serving":
            continue  # the serving application's own histogram (issue 14 drops the alert)
        assert any(r in alert.expr for r in readings), f"{alert.name} reads no query of the plan: {alert.expr}"
