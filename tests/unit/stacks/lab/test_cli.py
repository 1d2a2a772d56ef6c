"""The lab CLI's input handling, without booting anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from stacks.lab import molecule, state
from stacks.lab.cli import lab


@pytest.mark.parametrize(
    "args",
    [
        ["--host", "client-1"],
        ["--host", "client-1", "--pause", "--stop"],
        ["--host", "client-1", "--down"],
        ["--host", "client-1", "--rail", "0", "--pause"],
    ],
)
def test_fault_needs_exactly_one_action(tmp_path: Path, args: list[str]) -> None:
    result = CliRunner().invoke(lab, ["fault", str(tmp_path), *args])
    assert result.exit_code == 2, result.output


def test_status_of_a_lab_that_never_ran_is_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(lab, ["status", str(tmp_path)])
    assert result.exit_code == 2
    assert "no lab was brought up" in result.output


def test_down_without_a_lab_says_so_and_succeeds(tmp_path: Path) -> None:
    result = CliRunner().invoke(lab, ["down", str(tmp_path)])
    assert result.exit_code == 0
    assert "no lab running" in result.output


def test_up_without_a_blueprint_points_at_build(tmp_path: Path) -> None:
    result = CliRunner().invoke(lab, ["up", str(tmp_path / "out" / "x")])
    assert result.exit_code == 2
    assert "clustersmith build" in result.output


def test_up_with_a_bad_plan_file_is_bad_input(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("hosts: []\nrails: []\n")
    result = CliRunner().invoke(lab, ["up", str(tmp_path / "out"), "--plan-file", str(plan)])
    assert result.exit_code == 2
    assert "is not a lab plan" in result.output


def test_inventory_script_is_empty_before_create(tmp_path: Path) -> None:
    result = CliRunner().invoke(lab, ["inventory", str(tmp_path), "--list"])
    assert result.exit_code == 0
    assert json.loads(result.output) == {"_meta": {"hostvars": {}}}
    assert molecule.script_inventory(state.load(tmp_path)) == {"_meta": {"hostvars": {}}}
