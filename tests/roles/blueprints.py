"""Blueprints of the examples, planned once per test session (planning is pure, so caching is safe)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from blueprints.blueprint import Blueprint
from blueprints.loader import load_requirements, requirement_lines
from blueprints.planner import plan

REPO = Path(__file__).resolve().parent.parent.parent


@functools.cache
def example(name: str) -> Blueprint:
    rel = Path("examples") / f"{name}.yaml"
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        return plan(load_requirements(rel), spec_file=str(rel), spec_lines=requirement_lines(rel))
    finally:
        os.chdir(cwd)
