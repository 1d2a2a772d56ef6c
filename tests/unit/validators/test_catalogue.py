"""The check catalogue at the top of validators/README.md: a row per check, every cell filled, and the README's
generated section exactly what the rules and the planner make of it now (``python -m validators.catalogue``)."""

from __future__ import annotations

import pytest

from blueprints.blueprint import Check, Provenance
from validators.catalogue import BEGIN, COMMAND, END, README, Row, current, replaced, rows, section
from validators.catalogue.__main__ import catalogue, planned_examples
from validators.checks import RuleDoc, rule_docs, rules

REGENERATE = f"run `{COMMAND}` (or `make catalogue`) and commit validators/README.md"
PLANNED = planned_examples()


def _gaps(row: Row) -> list[str]:
    return [column for column, cell in zip(Row._fields, row, strict=True) if not cell.strip()]


def _table() -> dict[str, Row]:
    return {row.id.strip("`"): row for row in rows(rule_docs(), PLANNED)}


def test_every_registered_rule_has_its_texts() -> None:
    assert set(rule_docs()) == set(rules())
    empty = {check_id: [f for f, text in doc._asdict().items() if not text.strip()]
             for check_id, doc in rule_docs().items()}
    assert {k: v for k, v in empty.items() if v} == {}, "give each rule's @rule(...) its measures=, passes= and " \
        "setup_error= texts"


def test_every_registered_rule_has_a_whole_row() -> None:
    table = _table()
    gaps = {check_id: _gaps(table[check_id]) for check_id in rules()}
    assert {k: v for k, v in gaps.items() if v} == {}, (
        "catalogue rows with empty columns (tool, comparison and spec fields come from the planner: a rule that no "
        "example spec plans has none; measures, passes and setup_error from the rule's @rule(...))")


@pytest.mark.parametrize("example", sorted(PLANNED))
def test_every_planned_check_has_a_rule_and_a_whole_row(example: str) -> None:
    table = _table()
    planned = [c.id for c in PLANNED[example]]
    assert planned, f"{example} plans no check"
    assert [c for c in planned if c not in rules()] == [], f"{example} plans checks no rule judges"
    assert {c: _gaps(table[c]) for c in planned if _gaps(table[c])} == {}


def test_the_readme_holds_the_catalogue_as_generated_now() -> None:
    text = README.read_text(encoding="utf-8")
    held = current(text)
    assert held is not None, f"validators/README.md lost its catalogue markers ({BEGIN} ... {END}); {REGENERATE}"
    assert held == catalogue(), f"the check catalogue in validators/README.md is out of date: {REGENERATE}"
    head = text[:text.index(BEGIN)]
    title, *intro = head.strip().split("\n\n")
    assert title == "# validators: acceptance checks" and len(intro) == 1, \
        "the catalogue follows the README's title and its one-paragraph introduction"


def _check(check_id: str, severity: str = "error", spec: tuple[str, ...] = ("performance.x",)) -> Check:
    return Check.model_validate({"id": check_id, "tool": "fio", "metric": "m", "op": ">=", "threshold": 1.0,
                                 "unit": "GB/s", "severity": severity, "scope": "cluster",
                                 "args": {"kind": "fio", "workload": "w", "rw": "read", "iodepth": 1, "numjobs": 1,
                                          "direct": True},
                                 "derived_from": Provenance(spec=spec, rule="acceptance.x")})


DOC = RuleDoc(measures="what | it takes", passes="the spec's x", setup_error="no output")


def test_a_gap_either_way_leaves_cells_empty() -> None:
    """The two ways a check goes without its row: planned with no rule texts, or a rule no example plans."""
    table = {row.id: row for row in rows({"b.ruled": DOC}, {"one": (_check("a.planned"),)})}
    assert _gaps(table["`a.planned`"]) == ["measures", "passes", "setup_error"]
    assert _gaps(table["`b.ruled`"]) == ["tool", "passes", "derived_from", "planned_for"]


def test_a_row_gathers_every_example() -> None:
    planned = {"big": (_check("a", spec=("performance.x", "target.provider")),),
               "lab": (_check("a", severity="info"),), "small": ()}
    (row,) = rows({"a": DOC}, planned)
    assert row == Row(id="`a`", tool="`fio`", measures="what | it takes",
                      passes="measured `>=` threshold (GB/s); threshold: the spec's x. Severity: error (big); "
                             "info (lab)",
                      setup_error="no output", derived_from="`performance.x`, `target.provider` (planner rule "
                                                            "`acceptance.x`)",
                      planned_for="big, lab")
    assert "what \\| it takes" in section([row])  # a cell's | never splits the markdown table


def test_only_the_generated_section_is_replaced() -> None:
    text = f"# title\n\nintro\n\n{BEGIN}\nold\n{END}\n\n## rest\n"
    assert replaced(text, f"{BEGIN}\nnew\n{END}") == f"# title\n\nintro\n\n{BEGIN}\nnew\n{END}\n\n## rest\n"
    with pytest.raises(ValueError, match="no generated section"):
        replaced("# title\n\nintro\n", "x")
    assert current(f"{END}\n{BEGIN}") is None
