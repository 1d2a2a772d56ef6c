"""Ansible inventory script for molecule scenarios on a shared lab: the running lab's hosts and rails
(``stacks.lab.molecule.script_inventory``) plus the group variables its build rendered
(``<workdir>/ansible/group_vars/<group>/*.yml``), so a scenario sees exactly what site.yml sees.

``python -m tests.roles.shared_lab.inventory <workdir> --list``; an empty inventory while no lab runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from stacks.lab import molecule, state


def group_vars(workdir: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    folder = workdir / "ansible" / "group_vars"
    for path in sorted(folder.glob("*/*.yml")):
        found.setdefault(path.parent.name, {}).update(yaml.safe_load(path.read_text()) or {})
    return found


def build(workdir: Path) -> dict[str, Any]:
    saved = state.load(workdir.resolve())
    inventory = molecule.script_inventory(saved)
    if saved is None:
        return inventory
    for group, values in group_vars(workdir).items():
        inventory.setdefault(group, {"hosts": []}).setdefault("vars", {}).update(values)
    return inventory


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: inventory.py <lab workdir> --list | --host NAME", file=sys.stderr)
        return 2
    print("{}" if "--host" in argv else json.dumps(build(Path(argv[1])), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
