"""Golden Blueprints: the planner's output for every example is pinned; `make golden` regenerates."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from blueprints.blueprint import dump_blueprint
from blueprints.loader import load_requirements, requirement_lines
from blueprints.planner import plan

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_blueprint_matches_golden(example: Path, update_golden: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    rel = example.relative_to(REPO)
    bp = plan(load_requirements(rel), spec_file=str(rel), spec_lines=requirement_lines(rel))
    text = dump_blueprint(bp)
    golden = GOLDEN / f"{example.stem}.blueprint.yaml"
    if update_golden:
        golden.write_text(text)
    assert golden.exists(), f"{golden} missing: run `make golden`"
    expected = golden.read_text()
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(golden), "now", n=2))
        pytest.fail(f"planner output changed for {rel}; if intended, run `make golden`\n{diff[:6000]}")
