"""Issue 37 item 7: numbers at the float limits in every spec field take the normal path: a plan (whose summary
renders) or a clear error naming the field, never a traceback. Every numeric value of every example, and every quantity
string, is set in turn to the largest and smallest (normal and subnormal) doubles, their negatives, inf and nan, and
to quantity strings of those magnitudes (one past the largest, 1.8e308, reads as inf)."""

from __future__ import annotations

import copy
import io
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from blueprints.cli import plan_file
from blueprints.errors import ClusterSmithError
from blueprints.summary import print_summary

REPO = Path(__file__).resolve().parents[3]
BIG, TINY = sys.float_info.max, sys.float_info.min
NUMBERS = [BIG, -BIG, TINY, -TINY, 5e-324, float("inf"), float("nan")]
QUANTITY = re.compile(r"^(?P<op><=|>=|<|>)?\s*(?P<number>[0-9][0-9.]*)\s*(?P<unit>.*)$")


def _limit_strings(value: str) -> list[str]:
    """A quantity string (``>=500GB/s``, ``<100us``, ``5%``) at each limit, its operator and unit kept."""
    m = QUANTITY.match(value)
    if m is None:
        return []
    op, unit = m["op"] or "", m["unit"]
    return [f"{op}{x!r}{unit}" for x in (BIG, TINY, 5e-324)] + [f"{op}1.8e308{unit}", f"{op}1e-320{unit}"]


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))
    else:
        yield path, node


def _cases(example: Path) -> Iterator[tuple[tuple[Any, ...], Any]]:
    for path, value in _leaves(yaml.safe_load(example.read_text())):
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            yield from ((path, n) for n in NUMBERS)
        elif isinstance(value, str):
            limits = _limit_strings(value)
            yield from ((path, s) for s in limits)
            if limits:  # a quantity written as a bare number (comm_share: 1e308 gave an OverflowError once)
                yield from ((path, n) for n in NUMBERS)


@pytest.mark.parametrize("example", sorted((REPO / "examples").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_field_at_the_float_limits_plans_or_names_the_field(example: Path, tmp_path: Path) -> None:
    doc = yaml.safe_load(example.read_text())
    spec = tmp_path / "spec.yaml"
    cases = refused = 0
    for path, value in _cases(example):
        changed = copy.deepcopy(doc)
        node = changed
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        spec.write_text(yaml.safe_dump(changed, allow_unicode=True))
        cases += 1
        try:
            print_summary(plan_file(spec), Console(file=io.StringIO(), width=200))
        except ClusterSmithError as err:
            refused += 1
            assert err.problems, (path, value)
            for problem in err.problems:
                assert problem.path and problem.message, (path, value, problem)
                assert "Traceback" not in problem.message
    assert cases > 30 and refused > 0, (cases, refused)
