"""``python -m validators.catalogue``: plan every example spec and rewrite the check catalogue in validators/README.md.

A developer's command that plans specs as the golden tests do, so it is the one module of validators that reaches the
loader and the planner: tests/unit/test_import_graph.py lists it with the entry points, and nothing imports it but the
catalogue's unit test.
"""

from __future__ import annotations

from pathlib import Path

from blueprints.blueprint import Check
from blueprints.loader import load_requirements, requirement_lines
from blueprints.planner import plan
from validators.catalogue import README, replaced, rows, section
from validators.checks import rule_docs

REPO = Path(__file__).resolve().parents[2]


def planned_examples(repo: Path = REPO) -> dict[str, tuple[Check, ...]]:
    """Every example spec's planned checks, by the spec's file stem."""
    out = {}
    for spec in sorted((repo / "examples").glob("*.yaml")):
        rel = spec.relative_to(repo)
        bp = plan(load_requirements(spec), spec_file=str(rel), spec_lines=requirement_lines(spec))
        out[spec.stem] = bp.acceptance.checks
    return out


def catalogue(repo: Path = REPO) -> str:
    """The README's generated section as the rules and the planner make it now."""
    return section(rows(rule_docs(), planned_examples(repo)))


def main() -> None:
    text = README.read_text(encoding="utf-8")
    new = replaced(text, catalogue())
    if new != text:
        README.write_text(new, encoding="utf-8")
    print(f"{README}: check catalogue {'rewritten' if new != text else 'already current'}")


if __name__ == "__main__":
    main()
