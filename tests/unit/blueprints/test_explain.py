"""``clustersmith explain`` over every derived value of every example: each names the derivation it carries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blueprints.blueprint import Blueprint
from blueprints.explain import explain, render_explanation
from blueprints.loader import load_requirements, requirement_lines
from blueprints.planner import plan

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


@pytest.fixture(scope="module", params=EXAMPLES, ids=[e.stem for e in EXAMPLES])
def blueprint(request: pytest.FixtureRequest) -> Blueprint:
    spec: Path = request.param
    return plan(load_requirements(spec), spec_file=str(spec), spec_lines=requirement_lines(spec))


def _step(item: Any, index: int) -> str:
    """How a user names a list item: its id or name, else its index."""
    if isinstance(item, dict):
        for key in ("id", "name"):
            if isinstance(item.get(key), str):
                return str(item[key])
    return str(index)


def derived(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(dotted path, the node, its derived_from) for every node of the dumped Blueprint that carries one."""
    if isinstance(node, dict):
        if "derived_from" in node:
            yield ".".join(path), node, node["derived_from"]
        for key, value in node.items():
            if key != "derived_from":
                yield from derived(value, (*path, key))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from derived(item, (*path, _step(item, i)))


def assert_names(bp: Blueprint, path: str, prov: dict[str, Any]) -> None:
    e = explain(bp, path)
    assert (e.rule, e.formula) == (prov["rule"], prov.get("formula", "")), path
    assert [s.path for s in e.sources] == list(prov["spec"]), path
    assert [s.line for s in e.sources] == [bp.spec_lines.get(p) for p in prov["spec"]], path
    text = render_explanation(bp, e)
    assert "not derived" not in text and f"rule:    {prov['rule']}" in text, text
    for spec_path in prov["spec"]:
        assert f"  {spec_path}: " in text, (path, spec_path)


def test_every_derived_value_explains_its_own_derivation(blueprint: Blueprint) -> None:
    """Issue 43 item 6: `explain OUT acceptance.checks.storage.read_throughput.threshold` said "not derived from the
    spec" for a threshold the spec set. Every node that carries derived_from, and every value inside it, names it."""
    found = list(derived(blueprint.model_dump(mode="json", by_alias=True)))
    assert len(found) > 50
    for path, node, prov in found:
        assert_names(blueprint, path, prov)
        for key, value in node.items():
            if key != "derived_from" and not (isinstance(value, dict) and "derived_from" in value):
                assert_names(blueprint, f"{path}.{key}", prov)


@pytest.fixture(scope="module")
def canonical() -> Blueprint:
    spec = REPO / "examples" / "cv-training-500tb.yaml"
    return plan(load_requirements(spec), spec_file=str(spec), spec_lines=requirement_lines(spec))


def test_a_value_inside_a_derived_node_names_the_node(canonical: Blueprint) -> None:
    text = render_explanation(canonical, explain(canonical, "acceptance.storage.read_throughput.threshold"))
    assert text.splitlines()[:3] == [
        "acceptance.checks.storage.read_throughput.threshold = 500.0",
        "  part of: acceptance.checks.storage.read_throughput, derived as a whole",
        "  rule:    acceptance.read_throughput"]
    assert "line  22  performance.storage.read_throughput: >=500GB/s" in text


@pytest.mark.parametrize(("path", "full"), [
    ("acceptance.storage.read_throughput", "acceptance.checks.storage.read_throughput"),
    ("acceptance.footprint.footprint", "acceptance.footprint.footprint"),
    ("acceptance.workloads.seq_read.iodepth", "acceptance.workloads.seq_read.iodepth"),
    (" storage.read_throughput ", "storage.read_throughput"),
])
def test_acceptance_shorthand_only_for_check_ids(canonical: Blueprint, path: str, full: str) -> None:
    """`acceptance.<check id>` is short for acceptance.checks.<check id>; the CLI used to rewrite every
    acceptance.* path that way, so acceptance.footprint and acceptance.workloads could not be explained."""
    assert explain(canonical, path).path == full


def test_a_section_is_listed_one_value_a_line(canonical: Blueprint) -> None:
    """A path naming a section printed the whole of it on one line; now one line a value, each cut short."""
    text = render_explanation(canonical, explain(canonical, "storage"))
    lines = text.splitlines()
    assert lines[0] == "storage: a section of 9 value(s), not derived as a whole; explain one of:"
    assert "  storage.tiers = [4: local_cache, hot, warm, cold]" in lines
    assert "  storage.read_throughput = 503.13GB/s  (derived)" in lines
    assert max(map(len, lines)) <= 120 and len(lines) == 10
    assert render_explanation(canonical, explain(canonical, "acceptance.footprint")).splitlines()[1:3] == [
        "  acceptance.footprint.files = 512", "  acceptance.footprint.per_file = 4GiB"]


def test_a_group_inside_a_derived_node_is_one_value_a_line(canonical: Blueprint) -> None:
    lines = render_explanation(canonical, explain(canonical, "acceptance.storage.read_throughput.args")).splitlines()
    assert lines[:3] == ["acceptance.checks.storage.read_throughput.args =", "    kind: fio", "    workload: seq_read"]
    assert "  part of: acceptance.checks.storage.read_throughput, derived as a whole" in lines
