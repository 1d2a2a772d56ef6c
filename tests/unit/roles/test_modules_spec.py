"""Each module a role ships documents exactly the parameters it accepts, and every task that calls it
passes only those (a parameter the module lacks fails only on a real host, so it is caught here)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.roles.library import ROLES, load

MODULES = [("rdma", "rdma_links"), ("nvmeof", "nvmet_target"), ("nvmeof", "nvme_paths"),
           ("nvmeof", "nvme_subsys_info"), ("nvmeof", "nvmet_volumes"), ("storage_tiering", "lvm_cache"),
           ("ceph", "ceph_cluster")]


@pytest.mark.parametrize(("role", "name"), MODULES)
def test_documentation_lists_exactly_the_argument_spec(role: str, name: str) -> None:
    module = load(role, f"{name}.py")
    documented = yaml.safe_load(module.DOCUMENTATION)
    assert documented["module"] == name
    assert set(documented["options"]) == set(module.ARGUMENT_SPEC)
    for option, spec in module.ARGUMENT_SPEC.items():
        doc = documented["options"][option]
        assert doc["type"] == spec["type"], option
        assert bool(doc.get("required")) == bool(spec.get("required")), option
        assert doc.get("choices") == spec.get("choices"), option


def _tasks(node: object) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    if isinstance(node, list):
        for item in node:
            found += _tasks(item)
    elif isinstance(node, dict):
        found.append(node)
        for key in ("block", "rescue", "always", "tasks"):
            found += _tasks(node.get(key))
    return found


@pytest.mark.parametrize(("role", "name"), MODULES)
def test_every_call_passes_only_known_parameters_and_all_required_ones(role: str, name: str) -> None:
    spec = load(role, f"{name}.py").ARGUMENT_SPEC
    required = {k for k, v in spec.items() if v.get("required")}
    calls = []
    for path in sorted(Path(ROLES / role).rglob("*.yml")):
        for task in _tasks(yaml.safe_load(path.read_text())):
            if name in task:
                calls.append((path, task[name]))
    assert calls, f"no task calls {name}"
    for path, args in calls:
        assert isinstance(args, dict), path
        assert set(args) <= set(spec), f"{path}: {name} has no {sorted(set(args) - set(spec))}"
        assert required <= set(args), f"{path}: {name} lacks {sorted(required - set(args))}"
