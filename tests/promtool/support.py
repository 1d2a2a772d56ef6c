"""Helpers of the monitoring tests: the examples' Blueprints (the tools they run: tests.conftest.require_tool)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from blueprints.blueprint import Blueprint
from blueprints.cli import plan_file

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


@cache
def blueprint(example: Path) -> Blueprint:
    return plan_file(example.relative_to(REPO) if example.is_relative_to(REPO) else example)

