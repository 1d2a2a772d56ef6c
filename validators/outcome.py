"""What a check measured and how it was judged: the typed result every report is written from.

Statuses: ``pass`` / ``fail`` for severity error; a miss of a severity-warning check is ``warn``;
severity info (the lab's emulated performance) is always ``info``, with measured and expected shown but
never judged; ``not_applicable`` when the check cannot apply (NCCL without a GPU); ``setup_error`` when the
tool could not run (missing binary, unreachable host, no output), which is not a measured miss.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from blueprints.blueprint import Check

Status = Literal["pass", "fail", "warn", "info", "not_applicable", "setup_error"]
OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": lambda a, b: abs(a - b) < 1e-9,
}


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Detail(_Frozen):
    """One part of a measure: a host, a rail, a namespace."""

    where: str
    value: float | None
    unit: str
    note: str = ""


class Series(_Frozen):
    """Plot data: ``throughput`` (s, B/s per client), ``latency`` (percentile, us), ``busbw`` (bytes, GB/s)."""

    kind: Literal["throughput", "latency", "busbw"]
    name: str
    points: tuple[tuple[float, float], ...]


class Measurement(_Frozen):
    """What a rule found in the results: a value in the check's unit, or why there is none."""

    value: float | None = None
    details: tuple[Detail, ...] = ()
    series: tuple[Series, ...] = ()
    notes: tuple[str, ...] = Field(default=(), description="Findings worth reading, e.g. a degraded path")
    not_applicable: str | None = None
    setup_error: str | None = None
    violations: tuple[str, ...] = Field(default=(), description="Misses the value alone does not show (a wrong "
                                        "iopolicy, a disagreeing QoS layer); any makes the check miss")


class CheckResult(_Frozen):
    id: str
    tool: str
    metric: str
    op: str
    threshold: float
    unit: str
    severity: str
    scope: str
    spec: tuple[str, ...] = Field(description="Spec paths the threshold came from")
    rule: str
    formula: str
    status: Status
    measured: float | None
    message: str
    details: tuple[Detail, ...] = ()
    series: tuple[Series, ...] = ()
    notes: tuple[str, ...] = ()
    duration_s: float = 0.0


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def judge(check: Check, m: Measurement, duration_s: float = 0.0) -> CheckResult:
    expected = f"{check.op} {_fmt(check.threshold)} {check.unit}"
    if m.setup_error is not None:
        status: Status = "setup_error"
        message = f"could not measure: {m.setup_error}"
    elif m.not_applicable is not None:
        status, message = "not_applicable", f"not applicable: {m.not_applicable}"
    elif m.value is None:
        status, message = "setup_error", "could not measure: the results hold no value for this check"
    else:
        met = OPS[check.op](m.value, check.threshold) and not m.violations
        shown = f"measured {_fmt(m.value)} {check.unit}, expected {expected}"
        if m.violations:
            shown += "; " + "; ".join(m.violations)
        if check.severity == "info":
            status, message = "info", f"{shown} (informational: {'meets' if met else 'below'} the planned figure)"
        elif met:
            status, message = "pass", shown
        else:
            status = "fail" if check.severity == "error" else "warn"
            message = f"{shown}: missed"
    return CheckResult(
        id=check.id, tool=check.tool, metric=check.metric, op=check.op, threshold=check.threshold, unit=check.unit,
        severity=check.severity, scope=check.scope, spec=check.derived_from.spec, rule=check.derived_from.rule,
        formula=check.derived_from.formula, status=status, measured=m.value, message=message, details=m.details,
        series=m.series, notes=m.notes, duration_s=round(duration_s, 3),
    )


def exit_code(results: Iterable[CheckResult]) -> int:
    """0 all pass (info, warn and not-applicable included), 1 a check failed, 2 a setup error."""
    statuses = {r.status for r in results}
    if "setup_error" in statuses:
        return 2
    return 1 if "fail" in statuses else 0
