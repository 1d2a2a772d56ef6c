"""Judge a results folder against the Blueprint: run the rule of every planned check, in plan order."""

from __future__ import annotations

import time
from collections.abc import Iterable

from blueprints.blueprint import Blueprint, Check
from blueprints.errors import ClusterSmithError, Problem
from validators.checks import rules
from validators.coverage import Planned
from validators.errors import ParseError
from validators.outcome import CheckResult, Measurement, judge
from validators.results import Results


def select(bp: Blueprint, only: Iterable[str] = ()) -> list[Check]:
    """The checks to run: all, or those named (each name must be a planned check id)."""
    wanted = list(only)
    known = [c.id for c in bp.acceptance.checks]
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ClusterSmithError([Problem("--only", "no such check in the Blueprint's acceptance plan; expected one "
                                         f"of {', '.join(known)}", value=u) for u in unknown],
                                title="bad --only")
    return [c for c in bp.acceptance.checks if not wanted or c.id in wanted]


def evaluate(bp: Blueprint, results: Results, only: Iterable[str] = (), strict: bool = True) -> list[CheckResult]:
    """``strict``: a malformed file is bad input (raised, exit 2); otherwise it is that check's setup error."""
    if not results.exists():
        raise ClusterSmithError([Problem("--results", "expected a folder of tool output", value=str(results.root))],
                                title="bad --results")
    table = rules()
    planned = Planned.of(bp)
    judged = []
    for check in select(bp, only):
        started = time.monotonic()
        fn = table.get(check.id)
        if fn is None:
            m = Measurement(setup_error=f"this clustersmith has no rule for check {check.id!r}")
        else:
            try:
                m = fn(check, results, planned)
            except ParseError as exc:
                if strict:
                    raise
                m = Measurement(setup_error=str(exc))
        if notes := results.runner_notes(check.id):
            m = m.model_copy(update={"notes": m.notes + notes})
        judged.append(judge(check, m, time.monotonic() - started))
    return judged

