"""Every metric a generated alert rule, recording rule or dashboard panel names is produced by an exporter the
design deploys, judged against the exporters' real metric lists:

- node_exporter: a recorded scrape of node_exporter 1.5.0 (tests/fixtures/monitoring/, see tests/fixtures/README.md);
- clustersmith-exporter: the families the role's own exporter returns when run here on the lab recordings
  (roles/monitoring/tests/fixtures/, recorded by record_fixtures.py), its tools replaying their recorded output,
  and its FS-Cache collector on /proc/fs/fscache/stats in the shape of the lab's 6.1 kernel, written from the
  kernel's format strings until the lab's real file replaces it (tests/fixtures/fscache/README.md);
- dcgm-exporter: the active rows of the collector file the role starts it with (one metric per row);
- ceph-mgr: what Ceph 16.2.15's mgr prometheus module served, healthy and with an OSD down
  (tests/fixtures/ceph/{healthy,osd-down}/mgr-prometheus.txt, see tests/fixtures/ceph/README.md);
- Prometheus itself: ``up`` (synthesised per scrape target, Prometheus docs "Jobs and instances") and the series its
  own recording rules write.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.blueprint import Blueprint
from blueprints.render import build
from tests.promtool.support import EXAMPLES, REPO, blueprint
from tests.unit.roles.monitoring.test_exporter import FIXTURES, exporter, sysfs_from_dump

NODE_SCRAPE = REPO / "tests" / "fixtures" / "monitoring" / "node-exporter-1.5.0-dev-machine.prom"
CEPH_SCRAPES = [REPO / "tests" / "fixtures" / "ceph" / s / "mgr-prometheus.txt" for s in ("healthy", "osd-down")]
FSCACHE_STATS = REPO / "tests" / "fixtures" / "fscache" / "stats-6.1-nfs-lab.txt"
DCGM_COUNTERS = REPO / "roles" / "monitoring" / "files" / "dcgm-exporter-counters.csv"
PROMETHEUS_OWN = {"up"}
# node_exporter also serves what clustersmith-exporter writes into its textfile folder (the role's timer runs it there).
SERVES = {"node_exporter": ("node_exporter", "clustersmith-exporter")}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "by", "without", "on", "ignoring", "group_left",
            "group_right"}
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NAME = re.compile(r"(?<![\w.:])([A-Za-z_:][A-Za-z0-9_:]*)(?![\w:]|\s*\()")


def metric_names(expr: str) -> set[str]:
    """The series names a PromQL expression selects (function, aggregation and keyword names left out)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = _GROUPING.sub("", text)
    return {n for n in _NAME.findall(text) if n.lower() not in KEYWORDS}


def _family_names(kind: str, name: str) -> set[str]:
    return {name, f"{name}_bucket", f"{name}_sum", f"{name}_count"} if kind in ("histogram", "summary") else {name}


def exposition_metrics(path: Path) -> set[str]:
    """Every series name a recorded scrape (Prometheus text format) holds or declares."""
    names: set[str] = set()
    for line in path.read_text().splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names |= _family_names(kind, name)
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def node_exporter_metrics() -> set[str]:
    return exposition_metrics(NODE_SCRAPE)


def ceph_mgr_metrics() -> set[str]:
    return set().union(*(exposition_metrics(p) for p in CEPH_SCRAPES))


def clustersmith_exporter_metrics(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Run the exporter's collectors on the lab recordings; dmsetup and ping replay what they printed in the lab,
    ethtool fails as on the lab's virtio rails (no PFC counters were recorded), so every collector runs."""
    sysfs = sysfs_from_dump((FIXTURES / "sysfs-client-live.tsv").read_text(), tmp / "root")
    (sysfs / "module" / "dm_mod").mkdir(parents=True)
    tools = tmp / "bin"
    tools.mkdir()
    for tool, script in (("dmsetup", f"cat {FIXTURES / 'dmsetup-status-cache.txt'}"),
                         ("ping", f"cat {FIXTURES / 'ping-rail0.txt'}"), ("ethtool", "exit 1")):
        (tools / tool).write_text(f"#!/bin/sh\n{script}\n")
        (tools / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    # /proc/fs/fscache/stats in the shape of the lab's 6.1 kernel (tests/fixtures/fscache/README.md)
    stats = tmp / "proc" / "fs" / "fscache" / "stats"
    stats.parent.mkdir(parents=True)
    stats.write_text(FSCACHE_STATS.read_text())
    args = exporter.parse_args(["--output", str(tmp / "out.prom"), "--state", str(tmp / "state.json"),
                                "--sysfs", str(sysfs), "--proc", str(tmp / "proc"), "--latency-buckets",
                                "0.001,0.01", "--ping", "rail0=10.77.0.1"])
    families = exporter.collect(args, {})
    return set().union(*(_family_names(f.kind, f.name) for f in families))


def dcgm_exporter_metrics() -> set[str]:
    rows = [line.split(",") for line in DCGM_COUNTERS.read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    return {field.strip() for field, kind, *_ in rows if kind.strip() != "label"}


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    with pytest.MonkeyPatch.context() as mp:
        return {"node_exporter": node_exporter_metrics(), "dcgm-exporter": dcgm_exporter_metrics(),
                "ceph-mgr": ceph_mgr_metrics(),
                "clustersmith-exporter": clustersmith_exporter_metrics(tmp_path_factory.mktemp("exp"), mp),
                "prometheus": set(PROMETHEUS_OWN), "alertmanager": set(PROMETHEUS_OWN)}


def _exprs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "expr" and isinstance(v, str)] + \
            [e for v in node.values() for e in _exprs(v)]
    if isinstance(node, list):
        return [e for v in node for e in _exprs(v)]
    return []


def used(folder: Path) -> dict[str, set[str]]:
    """Where each metric is named: 'rules/<file>: <alert or record>' and 'dashboards/<file>'."""
    found: dict[str, set[str]] = {}
    recorded: set[str] = set()
    for path in sorted((folder / "monitoring" / "rules").glob("*.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                recorded.add(rule.get("record", ""))
                for name in metric_names(rule["expr"]):
                    found.setdefault(name, set()).add(f"rules/{path.name}: {rule.get('alert') or rule['record']}")
    for path in sorted((folder / "monitoring" / "dashboards").glob("*.json")):
        for expr in _exprs(json.loads(path.read_text())):
            for name in metric_names(expr):
                found.setdefault(name, set()).add(f"dashboards/{path.name}")
    return {n: where for n, where in found.items() if n not in recorded}


def unproduced(bp: Blueprint, folder: Path, produced: dict[str, set[str]]) -> dict[str, set[str]]:
    deployed = {job.exporter for job in bp.monitoring.scrape}
    available = set().union(*(produced[source] for e in deployed for source in SERVES.get(e, (e,))))
    return {n: where for n, where in used(folder).items() if n not in available}


def test_the_expression_reader_finds_series_and_leaves_functions_labels_and_keywords() -> None:
    expr = ('histogram_quantile(0.99, sum by (le, instance) (rate(a_bucket{role="x", le!~"1e-3"}[5m]))) > 1e-3 '
            "and on (instance) max by (instance) (b:c:rate5m) > 0 unless vector(1)")
    assert metric_names(expr) == {"a_bucket", "b:c:rate5m"}


def test_the_exporter_lists_are_real_and_hold_what_each_is_known_for(produced: dict[str, set[str]]) -> None:
    assert {"node_disk_read_bytes_total", "node_disk_io_time_seconds_total"} <= produced["node_exporter"]
    assert {"clustersmith_rdma_port_active", "clustersmith_nvme_path_live", "clustersmith_lvmcache_read_hits_total",
            "clustersmith_pfc_pause_rx_frames_total", "clustersmith_storage_read_latency_seconds_bucket",
            "clustersmith_rail_rtt_seconds_bucket", "clustersmith_fscache_events_total"} \
        <= produced["clustersmith-exporter"]
    assert {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_DEV_XID_ERRORS",
            "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"} <= produced["dcgm-exporter"]
    assert {"ceph_health_status", "ceph_osd_up", "ceph_osd_in", "ceph_osd_metadata", "ceph_pg_active",
            "ceph_pg_total", "ceph_pool_metadata", "ceph_mds_metadata"} <= produced["ceph-mgr"]
    assert "ceph_mon_quorum_status" in produced["ceph-mgr"] and "node_disk_read_bytes_total" not in produced["ceph-mgr"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_metric_a_rule_or_panel_names_is_produced(example: Path, tmp_path: Path,
                                                        produced: dict[str, set[str]]) -> None:
    bp = blueprint(example)
    folder, _ = build(bp, tmp_path)
    names = used(folder)
    assert names, "the build names no metric at all"
    missing = unproduced(bp, folder, produced)
    assert not missing, "named but produced by no exporter the design deploys: " + "; ".join(
        f"{n} ({', '.join(sorted(w))})" for n, w in sorted(missing.items()))


def test_a_rule_on_a_metric_nothing_produces_is_caught(tmp_path: Path, produced: dict[str, set[str]]) -> None:
    bp = blueprint(REPO / "examples" / "recsys-inference.yaml")
    folder, _ = build(bp, tmp_path)
    rule = {"alert": "ServingLatencyP99High", "expr": "histogram_quantile(0.99, sum by (le) "
                                                      "(rate(serving_request_duration_seconds_bucket[5m]))) > 0.05"}
    (folder / "monitoring" / "rules" / "serving.yml").write_text(
        yaml.safe_dump({"groups": [{"name": "serving", "rules": [rule]}]}))
    assert unproduced(bp, folder, produced) == {
        "serving_request_duration_seconds_bucket": {"rules/serving.yml: ServingLatencyP99High"}}


def test_lab_builds_read_no_dcgm_field(tmp_path: Path, produced: dict[str, set[str]]) -> None:
    bp = blueprint(REPO / "examples" / "lab.yaml")
    folder, _ = build(bp, tmp_path)
    assert "dcgm-exporter" not in {job.exporter for job in bp.monitoring.scrape}
    assert not {n for n in used(folder) if n.startswith("DCGM_")}


def test_the_role_starts_dcgm_exporter_with_this_counters_file() -> None:
    role = REPO / "roles" / "monitoring"
    tasks = yaml.safe_load((role / "tasks" / "dcgm.yml").read_text())
    steps = [t for block in tasks for t in block.get("block", [block])]
    (copy,) = [t["ansible.builtin.copy"] for t in steps if "ansible.builtin.copy" in t]
    assert (role / "files" / copy["src"]) == DCGM_COUNTERS
    assert copy["dest"] == "{{ monitoring_dcgm_collectors_file }}"
    drop_in = (role / "templates" / "dcgm-exporter-listen.conf.j2").read_text()
    assert "Environment=DCGM_EXPORTER_COLLECTORS={{ monitoring_dcgm_collectors_file }}" in drop_in.splitlines()
