"""Every role's molecule scenario on the example lab, in site.yml's order.

Each scenario attaches to the session's running lab (tests/roles/shared_lab) instead of booting its own, and
runs converge and verify (kernel state, boot-time replay, negative tests per input rule). Roles are not undone
between scenarios, as on a real host site.yml leaves them in place. Converge and verify times are printed in the
"lab timings" summary.

Idempotence is proven once for every role, not once per scenario and again by site.yml: the generated site.yml
runs over the lab these scenarios converged (tests/lab/conftest.py ``deployed``), which is each role's second run
with the Blueprint's group_vars, and test_storage_path_e2e asserts it changed nothing on any host (naming each
changed task). Molecule's own idempotence step ran a second converge of each role before site.yml's third: 4 min of
the lab tier under TCG (2026-12-03). `molecule test` in a role's folder still runs it (the scenario's test_sequence).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from blueprints.render.ansible import PLAYS
from tests.lab.conftest import BIN, REPO, TIMINGS, ExampleLab, run, tail

pytestmark = pytest.mark.lab

ROLES = tuple(p.role for p in PLAYS)  # site.yml's order
# One scenario runs with Ansible's stock strategy, as users run the roles; the others with Mitogen's, for time
# (conftest.ansible_strategy_env). pfc_dcqcn is the cheapest scenario that drives modules shipped in a role.
LINEAR_ROLES = ("pfc_dcqcn",)
# `molecule converge` runs molecule's converge sequence in one process: create (attach to the lab), prepare (the
# scenario's dependencies, e.g. prepare-rdma.yml) and converge. Separate create and prepare calls cost one molecule
# start each: 3.5 s and 1 s of a scenario with no prepare playbook (2026-12-06).
STEPS = (("converge",), ("verify",))
# Each scenario keeps molecule's state (created, prepared) in a folder of this session's own
# (MOLECULE_EPHEMERAL_DIRECTORY), so a session always creates and prepares afresh, even after one killed mid-scenario,
# without a destroy to reset it: destroy.yml only detaches from a lab the tier booted (3.3 s a scenario). It still
# runs once, after the scenario that runs with the stock strategy, as `molecule test` runs it.
DESTROY_ROLES = LINEAR_ROLES


@pytest.mark.parametrize("role", ROLES)
def test_role_scenario(role: str, example_lab: ExampleLab, tmp_path: Path) -> None:
    env = {"CLUSTERSMITH_LAB_WORKDIR": str(example_lab.folder), "MOLECULE_EPHEMERAL_DIRECTORY": str(tmp_path)}
    if role in LINEAR_ROLES:
        env["ANSIBLE_STRATEGY"] = "linear"
    for step, *args in STEPS + ((("destroy",),) if role in DESTROY_ROLES else ()):
        started = time.monotonic()
        done = run([BIN / "molecule", step, *args], timeout=3600, env=env, cwd=REPO / "roles" / role)
        assert done.returncode == 0, f"molecule {step} of {role} failed:\n{tail(done, 12000)}"
        TIMINGS[f"{role}: molecule {step}" + (" (create, prepare, converge)" if step == "converge" else "")] = \
            time.monotonic() - started

