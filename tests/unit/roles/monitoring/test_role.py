"""The monitoring role's inputs: argument specs generated from MonitoringVars, defaults that agree, vars per example."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.rolevars import argument_spec
from blueprints.rolevars.monitoring import MonitoringVars, role_vars
from tests.promtool.support import EXAMPLES, REPO, blueprint

ROLE = REPO / "roles" / "monitoring"
SHORT = "Exporters on every host, Prometheus and Alertmanager on the monitoring hosts, bound to the management network"
HEADER = ("# Generated from blueprints.rolevars.monitoring (MonitoringVars); do not edit.\n"
          "# Regenerate: .venv/bin/pytest tests/unit/roles/monitoring/test_role.py --update-golden\n")


class _IndentedLists(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def argument_specs_text() -> str:
    body: dict[str, Any] = argument_spec(MonitoringVars, SHORT)
    return HEADER + "---\n" + yaml.dump(body, Dumper=_IndentedLists, sort_keys=False, width=110)


def test_argument_specs_are_generated_from_the_model(update_golden: bool) -> None:
    path = ROLE / "meta" / "argument_specs.yml"
    if update_golden:
        path.write_text(argument_specs_text(), encoding="utf-8")
    assert path.read_text(encoding="utf-8") == argument_specs_text(), "regenerate with --update-golden"


def test_defaults_agree_with_the_model() -> None:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert set(defaults) <= set(MonitoringVars.model_fields)
    for name, field in MonitoringVars.model_fields.items():
        assert name.startswith("monitoring_")
        if field.is_required():
            assert name not in defaults, f"{name} comes from the Blueprint and must not have a role default"
        else:
            assert defaults[name] == field.default, f"default of {name} differs from MonitoringVars"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_role_vars_follow_the_blueprint(example: Path) -> None:
    bp = blueprint(example)
    got = role_vars(bp)["all"]
    assert isinstance(got, MonitoringVars)
    mon = bp.monitoring
    assert got.monitoring_collect_interval_s == round(mon.collect_interval.value)
    assert got.monitoring_latency_buckets == list(mon.latency_buckets)
    p99 = next(a.threshold for a in mon.alerts if a.name == "StorageReadLatencyP99High")
    assert float(f"{p99:.12g}") in got.monitoring_latency_buckets
    ports = {j.exporter: j.port for j in mon.scrape}
    assert got.monitoring_node_exporter_port == ports["node_exporter"]
    assert got.monitoring_prometheus_port == ports["prometheus"]
    assert got.monitoring_dcgm_enabled == ("dcgm-exporter" in ports)
    monitoring_groups = [g for g in bp.hosts if g.role == "monitoring"]
    assert got.monitoring_servers == [f"{g.name_prefix}{i}" for g in monitoring_groups for i in range(1, g.count + 1)]
    assert set(got.monitoring_servers) <= set(got.monitoring_scrape_hosts)
    assert got.monitoring_listen_cidr == mon.listen_cidr.value
    assert (got.monitoring_username, got.monitoring_ca_file, got.monitoring_password_file) == (
        mon.auth.username, mon.auth.ca_file, mon.auth.password_file)
    assert got.monitoring_web_config_file == mon.auth.web_config_file
