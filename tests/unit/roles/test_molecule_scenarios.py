"""Every role's molecule scenario runs on the one shared lab of examples/lab.yaml (tests/roles/shared_lab)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from blueprints.render.ansible import PLAYS
from tests.roles.blueprints import example

REPO = Path(__file__).resolve().parents[3]
SHARED = "../../../../tests/roles/shared_lab/"


def scenario(role: str) -> dict[str, object]:
    loaded: dict[str, object] = yaml.safe_load((REPO / "roles" / role / "molecule/default/molecule.yml").read_text())
    return loaded


def test_every_role_in_site_yml_has_a_scenario() -> None:
    assert {p.parts[-4] for p in REPO.glob("roles/*/molecule/default/molecule.yml")} == {p.role for p in PLAYS}


@pytest.mark.parametrize("role", [p.role for p in PLAYS])
def test_scenario_attaches_to_the_shared_lab_with_its_hosts(role: str) -> None:
    doc = scenario(role)
    provisioner = doc["provisioner"]
    assert isinstance(provisioner, dict)
    playbooks = provisioner["playbooks"]
    assert playbooks["create"] == SHARED + "create.yml" and playbooks["destroy"] == SHARED + "destroy.yml"
    assert provisioner["inventory"]["links"]["hosts"] == SHARED + "lab-inventory"
    assert "CLUSTERSMITH_LAB_WORKDIR" in provisioner["env"]
    lab = example("lab").lab
    assert lab is not None
    assert [p["name"] for p in doc["platforms"]] == [h.name for h in lab.hosts]  # type: ignore[index,union-attr]
    sequence = doc["scenario"]["test_sequence"]  # type: ignore[index]
    assert [s for s in sequence if s in ("converge", "idempotence", "verify")] == ["converge", "idempotence", "verify"]
