"""What a check measured and how it was judged: the typed result every report is written from.

Statuses: ``pass`` / ``fail`` for severity error; a miss of a severity-warning check is ``warn``;
severity info (the lab's emulated performance) is always ``info``, with measured and expected shown but
never judged; ``not_applicable`` when the check cannot apply (NCCL without a GPU); ``setup_error`` when the
tool could not run (missing binary, unreachable host, no output), which is not a measured miss.

A verdict covers what the Blueprint plans or it is not a pass (DESIGN.md, "What acceptance may claim"): each
measurement carries its ``Coverage`` (N of M hosts, ranks, paths), and a result that misses a planned host, names
a foreign one or reports one twice is a setup error naming them. A run the tool itself reported as failed (fio
``error``, nccl-tests ``#wrong`` or out-of-bounds values, a perftest error line) is ``fail`` whatever its severity
and its numbers, quoting the tool.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import Field

from blueprints.blueprint import Check
from blueprints.figures import plain
from blueprints.model import Frozen

Status = Literal["pass", "fail", "warn", "info", "not_applicable", "setup_error"]
OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": lambda a, b: abs(a - b) < 1e-9,
}


class Detail(Frozen):
    """One part of a measure: a host, a rail, a namespace."""

    where: str
    value: float | None
    unit: str
    note: str = ""


class Series(Frozen):
    """Plot data: ``throughput`` (s, B/s per client), ``latency`` (percentile, us), ``busbw`` (bytes, GB/s)."""

    kind: Literal["throughput", "latency", "busbw"]
    name: str
    points: tuple[tuple[float, float], ...]


class Reference(Frozen):
    """A threshold drawn on a plot: a horizontal line at ``y``, in the unit of that plot's series' points."""

    kind: Literal["throughput", "latency", "busbw"]
    y: float
    label: str


class Coverage(Frozen):
    """How much of the plan a result covers: ``seen`` of ``planned`` units (hosts, ranks, nodes, paths)."""

    what: str = Field(description="The unit counted: hosts, ranks, nodes, paths, subsystems")
    seen: int
    planned: int
    missing: tuple[str, ...] = Field(default=(), description="Planned and absent from the result")
    foreign: tuple[str, ...] = Field(default=(), description="In the result and not in the Blueprint")
    duplicate: tuple[str, ...] = Field(default=(), description="Reported more than once")
    gate: bool = Field(default=True, description="False: shown, not a setup error; the check's own measure judges "
                       "the gap (a planned NVMe-oF path that is down is a miss)")

    @property
    def complete(self) -> bool:
        return not self.gate or (self.seen == self.planned and not (self.missing or self.foreign or self.duplicate))

    def shown(self) -> str:
        return f"{self.seen} of {self.planned} {self.what}"

    def problem(self) -> str | None:
        """What keeps the result from covering the plan, naming each missing, foreign or duplicate unit."""
        if self.complete:
            return None
        parts = [f"{self.shown()} in the result"]
        for label, names in (("missing", self.missing), ("not in the Blueprint", self.foreign),
                             ("reported more than once", self.duplicate)):
            if names:
                parts.append(f"{label}: {_names(names)}")
        return "; ".join(parts)


def _names(names: tuple[str, ...], limit: int = 20) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


class Measurement(Frozen):
    """What a rule found in the results: a value in the check's unit, or why there is none."""

    value: float | None = None
    details: tuple[Detail, ...] = ()
    series: tuple[Series, ...] = ()
    references: tuple[Reference, ...] = Field(default=(), description="The threshold as lines on the plots")
    notes: tuple[str, ...] = Field(default=(), description="Findings worth reading, e.g. a degraded path")
    not_applicable: str | None = None
    setup_error: str | None = None
    failures: tuple[str, ...] = Field(default=(), description="What the results show failed on the cluster (a "
                                      "path down, NCCL on sockets, a GPU missing, a disagreeing QoS layer): any "
                                      "fails the check, even where the rest could not be read or falls short of "
                                      "the plan (named beside it)")
    violations: tuple[str, ...] = Field(default=(), description="Other misses the value alone does not show (a run "
                                        "short of the plan's size, evidence not reported): any makes a check that "
                                        "covers the plan miss")
    failed_runs: tuple[str, ...] = Field(default=(), description="Runs the tool itself reported as failed, in its "
                                         "own words (fio error, nccl-tests #wrong); any makes the check fail")
    coverage: tuple[Coverage, ...] = Field(default=(), description="What of the plan the result covers")


class CheckResult(Frozen):
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
    references: tuple[Reference, ...] = ()
    notes: tuple[str, ...] = ()
    coverage: tuple[Coverage, ...] = ()
    duration_s: float = 0.0
    predicted: float | None = Field(default=None, description="What the plan says the built cluster should measure "
                                    "(Check.predicted), in the check's unit")
    of_predicted: float | None = Field(default=None, description="measured / predicted, where both are known")

    @property
    def coverage_shown(self) -> str:
        """``"2 of 2 hosts, 16 of 16 ranks"``, or "-" when the check counts nothing."""
        return ", ".join(c.shown() for c in self.coverage) or "-"


def judge(check: Check, m: Measurement, duration_s: float = 0.0) -> CheckResult:
    expected = f"{check.op} {plain(check.threshold)} {check.unit}"
    gaps = [p for c in m.coverage if (p := c.problem()) is not None]
    value = m.value
    shows = (*m.failures, *m.violations)  # every miss the results show, failures first
    if m.failed_runs:  # the tool said the run failed: never a pass, and not a setup error either
        status: Status = "fail"
        message = "the run failed: " + "; ".join(m.failed_runs)
        if gaps:
            message += "; and the result is incomplete: " + "; ".join(gaps)
    elif m.failures and check.severity != "info" and (m.setup_error is not None or gaps):
        # the cluster failed where it could be read: never hidden behind what could not be read or was not run,
        # which stands beside it
        status = "fail" if check.severity == "error" else "warn"
        message = "; ".join(shows)
        if m.setup_error is not None:
            message += f"; and could not measure the rest: {m.setup_error}"
        if gaps:
            message += "; and the result does not cover the plan: " + "; ".join(gaps)
    elif m.setup_error is not None and m.violations and not gaps and check.severity != "info":
        # what could be read covers the plan and shows a miss: never hidden behind what could not be read (a
        # result short of the plan stays a setup error, the misses it shows named in its message)
        status = "fail" if check.severity == "error" else "warn"
        message = "; ".join(shows) + f"; and could not measure the rest: {m.setup_error}"
    elif m.setup_error is not None:
        status = "setup_error"
        message = f"could not measure: {m.setup_error}" + (
            "; what could be read shows: " + "; ".join(shows) if shows else "")
        if gaps and any(c.seen for c in m.coverage):  # what there was did not cover the plan either
            message += "; and the result does not cover the plan: " + "; ".join(gaps)
    elif m.not_applicable is not None:
        status, message = "not_applicable", f"not applicable: {m.not_applicable}"
    elif gaps:
        status = "setup_error"
        shown = "" if value is None or not math.isfinite(value) else f" (measured {plain(value, 4)} {check.unit} " \
                                                                      "over what is there)"
        message = "the result does not cover the plan: " + "; ".join(gaps) + shown + (
            "; what could be read shows: " + "; ".join(shows) if shows else "")
    elif value is None:
        status, message = "setup_error", "could not measure: the results hold no value for this check"
    elif not math.isfinite(value):
        status, message = "setup_error", f"could not measure: the measure came out {value} (not a finite number)"
        value = None
    else:
        met = OPS[check.op](value, check.threshold) and not shows
        shown = f"measured {plain(value, 4)} {check.unit}, expected {expected}"
        if shows:
            shown += "; " + "; ".join(shows)
        if check.severity == "info":
            status, message = "info", f"{shown} (informational: {'meets' if met else 'below'} the planned figure)"
        elif met:
            status, message = "pass", shown
        else:
            status = "fail" if check.severity == "error" else "warn"
            message = f"{shown}: missed"
    if value is not None and not math.isfinite(value):
        value = None
    prediction = check.predicted
    predicted = prediction.figure.value if prediction is not None else None
    ratio = value / predicted if value is not None and predicted and status != "setup_error" else None
    notes = m.notes
    if ratio is not None and prediction is not None and value is not None:
        figure = prediction.figure
        said = (f"measured {plain(value, 4)} {check.unit} is {ratio:.0%} of the predicted {plain(figure.value, 4)} "
                f"{check.unit} ({figure.derived_from.formula})")
        below = _below(check, ratio)
        if below is not None:
            said = f"finding: {said}, {below}"
            if prediction.gate.value and status == "pass":  # the spec gates on its predictions: a miss
                status = "fail" if check.severity == "error" else "warn"
                message = f"{message}; {below}: missed (performance.predicted.gate)"
        notes += (said,)
    return CheckResult(
        id=check.id, tool=check.tool, metric=check.metric, op=check.op, threshold=check.threshold, unit=check.unit,
        severity=check.severity, scope=check.scope, spec=check.derived_from.spec, rule=check.derived_from.rule,
        formula=check.derived_from.formula, status=status, measured=value, message=message,
        details=tuple(d if d.value is None or math.isfinite(d.value) else d.model_copy(update={
            "value": None, "note": f"{d.note} (not finite: {d.value})".strip()}) for d in m.details),
        series=tuple(s.model_copy(update={"points": tuple(p for p in s.points if all(map(math.isfinite, p)))})
                     for s in m.series),
        references=tuple(r for r in m.references if math.isfinite(r.y)), notes=notes, coverage=m.coverage,
        duration_s=round(duration_s, 3), predicted=predicted, of_predicted=None if ratio is None else round(ratio, 4),
    )


def _below(check: Check, ratio: float) -> str | None:
    """How a measure at ``ratio`` of its prediction falls short of the spec's floor, or None: at or above it (a
    check whose threshold is a ceiling, latency say, is never predicted)."""
    if check.predicted is None or ratio >= check.predicted.floor.value:
        return None
    return f"below the floor of {check.predicted.floor.value:.0%} of the prediction (performance.predicted.floor)"


def exit_code(results: Iterable[CheckResult]) -> int:
    """0 all pass (info, warn and not-applicable included); 1 any check failed, whatever else happened (setup
    errors too: a failure is never hidden behind them); 2 a setup error when nothing failed."""
    statuses = {r.status for r in results}
    if "fail" in statuses:
        return 1
    return 2 if "setup_error" in statuses else 0
