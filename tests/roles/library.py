"""Import a module a role ships in its library/ or files/ folder, by path, for unit tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROLES = Path(__file__).resolve().parent.parent.parent / "roles"


def _import(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def load(role: str, filename: str, folder: str = "library") -> ModuleType:
    """The module, with the role's module_utils importable as ``ansible.module_utils.<name>``, as Ansible
    makes them for the role's modules."""
    for util in sorted((ROLES / role / "module_utils").glob("*.py")):
        _import(f"ansible.module_utils.{util.stem}", util)
    path = ROLES / role / folder / filename
    return _import(f"clustersmith_role_{role}_{path.stem}", path)
