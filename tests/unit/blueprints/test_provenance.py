"""Every threshold and derived value points at a spec path that exists in the Requirements model."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from blueprints.loader import _unwrap, load_requirements
from blueprints.planner import plan
from blueprints.spec import Requirements

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def spec_path_exists(dotted: str) -> bool:
    models: list[Any] = [Requirements]
    for part in dotted.split("."):
        nxt: list[Any] = []
        for m in models:
            if isinstance(m, type) and issubclass(m, BaseModel) and part in m.model_fields:
                t = _unwrap(m.model_fields[part].annotation)
                nxt += list(t) if isinstance(t, tuple) else [t]
        if not nxt:
            return False
        models = nxt
    return True


def provenances(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        if "derived_from" in node:
            found.append(node["derived_from"])
        for v in node.values():
            found += provenances(v)
    elif isinstance(node, list):
        for v in node:
            found += provenances(v)
    return found


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_every_acceptance_threshold_is_traced(example: Path) -> None:
    bp = plan(load_requirements(example))
    assert bp.acceptance.checks
    for check in bp.acceptance.checks:
        assert check.derived_from.spec, check.id
        assert check.derived_from.rule
        for path in check.derived_from.spec:
            assert spec_path_exists(path), f"{check.id}: {path} is not a spec path"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_every_provenance_points_at_the_spec(example: Path) -> None:
    data = plan(load_requirements(example)).model_dump(mode="json", by_alias=True)
    provs = provenances({k: v for k, v in data.items() if k != "requirements"})
    assert len(provs) > 30
    for prov in provs:
        for path in prov["spec"]:
            assert spec_path_exists(path), f"{prov['rule']}: {path}"


def test_spec_path_checker_rejects_unknown_paths() -> None:
    assert spec_path_exists("target.rails")
    assert not spec_path_exists("performance.storage.bogus")
    assert typing.get_origin(None) is None
