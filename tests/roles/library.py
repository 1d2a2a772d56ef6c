"""Import a module a role ships in its library/ or files/ folder, by path, for unit tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROLES = Path(__file__).resolve().parent.parent.parent / "roles"


def load(role: str, filename: str, folder: str = "library") -> ModuleType:
    path = ROLES / role / folder / filename
    name = f"clustersmith_role_{role}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module
