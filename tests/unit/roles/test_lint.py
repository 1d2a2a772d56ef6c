"""Every role, its molecule scenario included, passes ansible-lint's production profile, offline; no role
swallows errors; read-only probes run under --check."""

from __future__ import annotations

import os
import subprocess

import yaml

from tests.conftest import BIN
from tests.roles.library import ROLES

OURS = tuple(sorted(p.name for p in ROLES.iterdir() if (p / "tasks" / "main.yml").is_file()))


def test_roles_pass_the_production_profile() -> None:
    assert len(OURS) >= 6, OURS
    done = subprocess.run([str(BIN / "ansible-lint"), "--offline", "--profile", "production", "--nocolor",
                           *(str(ROLES / r) for r in OURS)],
                          capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "ANSIBLE_ROLES_PATH": str(ROLES)}, cwd=ROLES.parent)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "Profile 'production' was required, and it passed" in done.stderr + done.stdout


def test_no_role_ignores_errors() -> None:
    for role in OURS:
        for path in (ROLES / role).rglob("*.yml"):
            text = path.read_text()
            assert "ignore_errors" not in text, f"{path} uses ignore_errors"
            assert "failed_when: false" not in text, f"{path} uses failed_when: false"


def _tasks(items: list[dict[str, object]]) -> list[dict[str, object]]:
    found = []
    for task in items or []:
        found.append(task)
        for key in ("block", "rescue", "always"):
            found += _tasks(task.get(key, []))  # type: ignore[arg-type]
    return found


def test_read_only_probes_run_in_check_mode() -> None:
    """A probe that never changes anything (``changed_when: false``) must also run under ``--check``: skipped
    there, its registered result is empty and the tasks that read it decide wrongly (monitoring's package probe
    made every package look missing, and apt then ran in a dry run)."""
    probes = []
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        for task in _tasks(yaml.safe_load(path.read_text())):
            if task.get("changed_when") is False:
                probes.append(f"{path.relative_to(ROLES)}: {task.get('name')}")
                assert task.get("check_mode") is False, f"{probes[-1]} lacks check_mode: false"
    assert probes, "no read-only probe found: the walk over the roles' tasks is broken"


def test_ansible_managed_is_only_used_in_templates() -> None:
    """``ansible_managed`` is defined only while the template module renders: in a task's ``content`` it is an
    undefined variable, and the task fails on the host (shared_fs's cachefilesd default file, first lab run)."""
    checked = 0
    for path in sorted(ROLES.glob("*/*/*.yml")):
        if path.parent.name in ("tasks", "handlers"):
            checked += 1
            assert "ansible_managed" not in path.read_text(), f"{path.relative_to(ROLES)} uses ansible_managed"
    assert checked > 20, checked
