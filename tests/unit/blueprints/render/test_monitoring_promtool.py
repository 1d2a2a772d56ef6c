"""The rendered rules pass ``promtool check``, and every alert fires just past its threshold and not before.

The promtool test documents are generated from each example's Blueprint (tests/promtool/cases.py), so
the thresholds under test are the Blueprint's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from blueprints.render.monitoring import render
from tests.conftest import require_tool
from tests.promtool import cases, split
from tests.promtool.support import EXAMPLES, blueprint


def _rendered(example: Path, folder: Path) -> Path:
    render(blueprint(example), folder)
    return folder / "monitoring"


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_rules_and_config_pass_promtool_check(example: Path, tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    out = _rendered(example, tmp_path)
    rules = sorted(str(p) for p in (out / "rules").glob("*.yml"))
    assert rules
    checked = _run([promtool, "check", "rules", *rules], out)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    config = _run([promtool, "check", "config", "prometheus.yml"], out)
    assert config.returncode == 0, config.stdout + config.stderr
    assert "WARNING" not in config.stdout + config.stderr  # every target file prometheus.yml names is there


def test_promtool_reads_the_target_files_so_a_missing_or_broken_one_shows(tmp_path: Path) -> None:
    """promtool check config reads each file_sd target file (relative to prometheus.yml): one missing is a warning,
    one that is not a target group list an error. The monitoring role fails on either."""
    promtool = require_tool("promtool", "prometheus")
    out = _rendered(next(e for e in EXAMPLES if e.stem == "lab"), tmp_path)
    (out / "targets" / "node-gpu_client.json").unlink()
    missing = _run([promtool, "check", "config", "prometheus.yml"], out)
    assert 'WARNING: file "targets/node-gpu_client.json" for file_sd in scrape job "node" does not exist' in \
        missing.stdout, missing.stdout + missing.stderr
    (out / "targets" / "node-gpu_client.json").write_text('[{"labels": {"role": 1}, "targets": ["client-1:9100"]}]')
    broken = _run([promtool, "check", "config", "prometheus.yml"], out)
    assert broken.returncode != 0 and "targets/node-gpu_client.json" in broken.stdout + broken.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_alert_fires_past_its_threshold_and_not_below(example: Path, tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    bp = blueprint(example)
    out = _rendered(example, tmp_path)
    rule_files = sorted(str(p.relative_to(out)) for p in (out / "rules").glob("*.yml"))
    written = {r["alert"]: r for f in rule_files for g in yaml.safe_load((out / f).read_text())["groups"]
               for r in g["rules"] if "alert" in r}
    doc = cases.test_file(bp, rule_files, written)
    ceph_whole = 3 if bp.storage.ceph is not None else 0  # the recordings against every Ceph alert
    # dm-cache's ratio; FS-Cache's idle node and its older kernels' counter sets (a firing and a quiet test each)
    extra = len(cases.hit_ratio_tests(bp)) + len(cases.fscache_idle_tests(bp)) + len(
        cases.fscache_kernel_tests(bp, written))
    fscache = bp.storage.shared.fscache
    assert len(cases.fscache_kernel_tests(bp, written)) == (0 if fscache is None else 2 * (len(fscache.counters) - 1))
    assert len(doc["tests"]) == 2 * len(bp.monitoring.alerts) + extra + ceph_whole
    names = {a.name for a in bp.monitoring.alerts}
    assert ("CacheHitRatioLow" in names) == (bp.storage.cache is not None) == bool(cases.hit_ratio_tests(bp))
    assert ("FsCacheHitRatioLow" in names) == (bp.storage.shared.fscache is not None) == bool(
        cases.fscache_idle_tests(bp))
    parts = split.by_length(doc, out)
    assert sorted(t["name"] for part in parts for t in part["tests"]) == sorted(t["name"] for t in doc["tests"])
    for i, part in enumerate(parts):
        (out / f"tests-{i}.yml").write_text(yaml.safe_dump(part, sort_keys=False, width=100000))
        result = _run([promtool, "test", "rules", f"tests-{i}.yml"], out)
        assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]


def test_a_case_that_should_fire_but_is_quiet_fails_promtool(tmp_path: Path) -> None:
    """The harness can fail: swap firing and quiet inputs of one alert and promtool must object."""
    promtool = require_tool("promtool", "prometheus")
    example = next(e for e in EXAMPLES if e.stem == "lab")
    bp = blueprint(example)
    out = _rendered(example, tmp_path)
    rule_files = sorted(str(p.relative_to(out)) for p in (out / "rules").glob("*.yml"))
    written = {r["alert"]: r for f in rule_files for g in yaml.safe_load((out / f).read_text())["groups"]
               for r in g["rules"] if "alert" in r}
    doc = cases.test_file(bp, rule_files, written)
    first = doc["tests"][0]
    first["input_series"] = doc["tests"][1]["input_series"]
    doc["tests"] = [first]
    (out / "tests.yml").write_text(yaml.safe_dump(doc, sort_keys=False, width=100000))
    result = _run([promtool, "test", "rules", "tests.yml"], out)
    assert result.returncode != 0
    assert first["alert_rule_test"][0]["alertname"] in result.stdout + result.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_alertmanager_config_passes_amtool(example: Path, tmp_path: Path) -> None:
    amtool = require_tool("amtool", "prometheus-alertmanager")
    out = _rendered(example, tmp_path)
    checked = _run([amtool, "check-config", "alertmanager.yml"], out)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "1 receivers" in checked.stdout
