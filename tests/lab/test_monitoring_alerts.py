"""Monitoring end to end on the example lab (`clustersmith build examples/lab.yaml`, `lab up`, the generated
site.yml with the storage roles, then monitoring: the session's ``deployed`` lab). Prometheus reports every
target up and every rule of the build loaded.

NvmeofPathDown firing within its Blueprint bound (the alert's ``for:``, the path's keep-alive timeout, the exporter's
refresh interval, Prometheus' scrape and evaluation intervals) is proven on the acceptance module's rail cut
(tests/lab/test_accept_lab.py): one cut, watched by the gate and by monitoring, where this module once made a cut of
its own (100 s of the lab tier).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.lab.conftest import ExampleLab
from tests.lab.prometheus import prometheus, wait

pytestmark = pytest.mark.lab


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
