"""Rules: one function per acceptance check id, turning a results folder into a ``Measurement``.

Each module registers its rules with ``@rule("<check id>", measures=..., passes=..., setup_error=...)``;
``evaluate`` runs the rule of every check the Blueprint plans. The three texts say, next to the code they describe,
what the check measures, what passes beside the planner's comparison, and what is a setup error: the check
catalogue at the top of validators/README.md is generated from them (``python -m validators.catalogue``). A
planned check without a rule is a setup error, so a new check cannot pass unseen. Every rule gets what the
Blueprint plans (``validators.coverage.Planned``) and states the coverage of what it judged, so a result that leaves
out a planned host, rank or path cannot pass.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import NamedTuple

from blueprints.blueprint import Check
from validators.coverage import Planned
from validators.outcome import Measurement
from validators.results import Results

Rule = Callable[[Check, Results, Planned], Measurement]


class RuleDoc(NamedTuple):
    """A rule's own account of its check, for the catalogue: the planner says the tool, the comparison, the unit and
    the spec fields; the rule says these."""

    measures: str  # what the value is and how it is taken from the tool's output
    passes: str  # where the threshold comes from and what else must hold, beside the planner's comparison
    setup_error: str  # which missing output, coverage gap or tool error makes it a setup error


_RULES: dict[str, Rule] = {}
_DOCS: dict[str, RuleDoc] = {}


def rule(check_id: str, *, measures: str, passes: str, setup_error: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        _RULES[check_id] = fn
        _DOCS[check_id] = RuleDoc(measures=measures, passes=passes, setup_error=setup_error)
        return fn

    return register


def _load() -> None:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


def rules() -> dict[str, Rule]:
    _load()
    return dict(_RULES)


def rule_docs() -> dict[str, RuleDoc]:
    """Every registered rule's catalogue texts, by check id."""
    _load()
    return dict(_DOCS)


def missing(what: str, where: str) -> Measurement:
    """No output where the runner (or the person) should have put it."""
    return Measurement(setup_error=f"no {what} in the results ({where})")


def setup_failure(errors: dict[str, str]) -> Measurement | None:
    """The runner's record of hosts where the tool did not run, as one setup error."""
    if not errors:
        return None
    return Measurement(setup_error="; ".join(f"{host}: {why}" for host, why in sorted(errors.items())))


def one_file(check: Check, results: Results, what: str, *parts: str) -> tuple[str, str] | Measurement:
    """The text and path of the one output file a rule reads, or the setup error that stands in for it."""
    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed
    text = results.text(*parts)
    if text is None:
        return missing(what, "/".join(parts))
    return text, str(results.root.joinpath(*parts))
