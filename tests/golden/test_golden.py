"""Golden builds: the whole rendered tree of every example is pinned; `make golden` regenerates it.

``tests/golden/<example>/`` holds what ``clustersmith build examples/<example>.yaml`` writes: blueprint.yaml,
ansible/, monitoring/, acceptance/, pulumi/ and switch/. A change of any file, a file that appears or one that
goes away fails here with a diff, so a refactor that should change nothing is proven to change nothing. The tree is
read as a user sees it, through the build folder's links into its generated tree (blueprints.render), leaving out
the folder's own bookkeeping (the marker and .generated/).
"""

from __future__ import annotations

import difflib
import os
import shutil
from pathlib import Path

import pytest

from blueprints.loader import load_requirements, requirement_lines
from blueprints.planner import plan
from blueprints.render import GENERATED, MARKER, build

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def _tree(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for here, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = [d for d in dirs if Path(here, d) != root / GENERATED]
        for name in files:
            path = Path(here, name)
            if path != root / MARKER:
                found[path.relative_to(root).as_posix()] = path
    return found


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_build_matches_golden(example: Path, update_golden: bool, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    rel = example.relative_to(REPO)
    bp = plan(load_requirements(rel), spec_file=str(rel), spec_lines=requirement_lines(rel))
    folder, _ = build(bp, tmp_path)
    golden = GOLDEN / example.stem
    if update_golden:
        shutil.rmtree(golden, ignore_errors=True)
        shutil.copytree(folder, golden, ignore=lambda here, names: [n for n in names if Path(here) == folder
                                                                    and n in (GENERATED, MARKER)])
    assert golden.is_dir(), f"{golden} missing: run `make golden`"
    now, pinned = _tree(folder), _tree(golden)
    problems = [f"new file {name} (not in {golden.name}/)" for name in sorted(now.keys() - pinned.keys())]
    problems += [f"file {name} is no longer written" for name in sorted(pinned.keys() - now.keys())]
    for name in sorted(now.keys() & pinned.keys()):
        text, expected = now[name].read_text(encoding="utf-8"), pinned[name].read_text(encoding="utf-8")
        if text != expected:
            diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                                f"golden/{example.stem}/{name}", "now", n=2))
            problems.append(diff[:3000])
    if problems:
        pytest.fail(f"build output changed for {rel}; if intended, run `make golden`\n" + "\n".join(problems)[:12000])
