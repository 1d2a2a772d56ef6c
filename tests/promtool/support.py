"""Helpers of the monitoring tests: the examples' Blueprints and the Debian tools they run."""

from __future__ import annotations

import os
import shutil
from functools import cache
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint
from blueprints.cli import plan_file

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


@cache
def blueprint(example: Path) -> Blueprint:
    return plan_file(example.relative_to(REPO) if example.is_relative_to(REPO) else example)


def require_tool(tool: str, package: str) -> str:
    """The tool's path; missing, a failure under CI (which must install it) and a skip elsewhere."""
    path = shutil.which(tool)
    if path:
        return path
    message = f"{tool} is missing (apt-get install {package})"
    if os.environ.get("CI"):
        pytest.fail("CI must run this test, but " + message, pytrace=False)
    pytest.skip(message)
