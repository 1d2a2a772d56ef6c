"""One alert rule as the monitoring planners write it: its PromQL, threshold, window and provenance."""

from __future__ import annotations

from blueprints.blueprint import AlertRule, Provenance, RuleGroup


def alert_rule(name: str, group: RuleGroup, summary: str, expr: str, threshold: float, unit: str, for_: str,
               severity: str, spec: list[str] | tuple[str, ...], rule: str, formula: str, source: str) -> AlertRule:
    return AlertRule.model_validate({
        "name": name, "group": group, "summary": summary, "expr": expr, "threshold": threshold, "unit": unit,
        "for": for_, "severity": severity, "metric_source": source,
        "derived_from": Provenance(spec=tuple(spec), rule=rule, formula=formula),
    })
