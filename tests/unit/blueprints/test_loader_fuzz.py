"""Property: whatever a user feeds the loader, it answers with a Requirements or a SpecError, never a
traceback; and every problem names a path and a line inside the document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blueprints.errors import InfeasibleError, SpecError
from blueprints.loader import parse_requirements
from blueprints.planner import plan
from blueprints.spec import Requirements

REPO = Path(__file__).resolve().parents[3]
BASE: dict[str, Any] = yaml.safe_load((REPO / "examples" / "cv-training-500tb.yaml").read_text())

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(["500TB", ">=1GB/s", "<100us", "5%", "H100-SXM", "lab", "-1", "1e999"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=6)


def _paths(node: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    return out


PATHS = _paths(BASE)


def _check(text: str) -> None:
    try:
        result = parse_requirements(text, "fuzz.yaml")
    except SpecError as exc:
        assert exc.problems
        n_lines = max(text.count("\n") + 1, 1)
        for p in exc.problems:
            assert p.message
            assert p.line is None or 1 <= p.line <= n_lines
    else:
        assert isinstance(result, Requirements)
        try:  # a valid spec either plans or is reported infeasible, never a traceback
            bp = plan(result)
        except InfeasibleError as exc:
            assert exc.problems[0].message
        else:
            assert bp.acceptance.checks


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), values), min_size=1, max_size=4))
def test_mutated_specs_never_traceback(mutations: list[tuple[tuple[str, ...], Any]]) -> None:
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    for path, value in mutations:
        node = doc
        for part in path[:-1]:
            if not isinstance(node, dict):
                break
            node = node.setdefault(part, {})
        if isinstance(node, dict):
            node[path[-1]] = value
    try:
        text = yaml.safe_dump(doc, allow_unicode=True)
    except yaml.YAMLError:
        return
    _check(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_random_text_never_tracebacks(text: str) -> None:
    _check(text)


def test_yaml_line_breaks_an_editor_does_not_see_do_not_move_the_line() -> None:
    """Hypothesis's find: YAML breaks lines at NEL (U+0085), which an editor does not; the problem stays on line 1."""
    with pytest.raises(SpecError) as raised:
        parse_requirements('"\x85', "fuzz.yaml")
    assert [p.line for p in raised.value.problems] == [1]
