"""Stack outputs -> the Ansible inventory (the format in blueprints/templates/ansible/README.md).

The outputs come from the stack itself (Automation API, ``clustersmith inventory --from-stack``) or from a
JSON file (``pulumi stack output clustersmith --json > outputs.json``; ``--outputs outputs.json``). On the clouds
they name the fleets, whose instances are read and named from the provider's API (``with_fleet_hosts``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from blueprints import atomic
from blueprints.errors import ClusterSmithError, Problem
from blueprints.render import editable
from stacks.fleet_inventory import FleetClient, resolve
from stacks.outputs import OUTPUT_NAME, StackOutputs

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: a 10,000-node inventory is MBs of YAML

GROUP_ORDER = ("storage_targets", "gpu_clients", "monitoring")


def _rail(rail: Any) -> dict[str, Any]:
    return {k: v for k, v in rail.model_dump().items() if v is not None}


def build(outputs: StackOutputs) -> dict[str, Any]:
    """The inventory as data: ``all.children.<group>.hosts.<name>: vars``; empty groups are kept."""
    children: dict[str, Any] = {g: {"hosts": {}} for g in GROUP_ORDER}
    for host in outputs.hosts:
        hv: dict[str, Any] = {"ansible_host": host.address, "ansible_user": host.user}
        if host.rails:
            hv["rails"] = [_rail(r) for r in host.rails]
        children.setdefault(host.group, {"hosts": {}})["hosts"][host.name] = hv
    top: dict[str, Any] = {"ansible_python_interpreter": "/usr/bin/python3", "clustersmith_design": outputs.design,
                           "clustersmith_provider": outputs.provider}
    if outputs.file_system is not None:
        top["clustersmith_file_system"] = outputs.file_system.model_dump()
    return {"all": {"vars": top, "children": children}}


def with_fleet_hosts(outputs: StackOutputs, source: str, client: FleetClient | None = None) -> StackOutputs:
    """The outputs with the fleets' instances named as the Blueprint's hosts, read from the provider's API
    (``stacks.fleet_inventory``); outputs without fleets (bare metal) as they are."""
    if not outputs.fleets:
        return outputs
    if client is None:
        from stacks.fleet_clients import client_for

        client = client_for(outputs.provider)
    return resolve(outputs, client, source)


def claim(folder: Path) -> Path:
    """The build folder's inventory, for the inventory step to write; refused while it is the user's own."""
    return editable.claim(folder, editable.INVENTORY, "the inventory step")


def write(outputs: StackOutputs, folder: Path) -> Path:
    """Write the build folder's inventory from the stack's outputs (over one clustersmith wrote, never the user's)."""
    path = claim(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (f"{editable.STEP_MARK}inventory --from-stack` from the {outputs.provider} stack of "
              f"{outputs.design!r}. Rewritten on every deploy; do not edit.\n")
    atomic.write(path, header + yaml.dump(build(outputs), Dumper=_DUMPER, sort_keys=False, default_flow_style=False))
    return path


def parse_outputs(data: Any, source: str) -> StackOutputs:
    """Accept the ``clustersmith`` output (a JSON string, or already parsed) or the whole
    ``pulumi stack output --json`` object holding it."""
    if isinstance(data, dict) and OUTPUT_NAME in data and "hosts" not in data:
        data = data[OUTPUT_NAME]
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ClusterSmithError([Problem(OUTPUT_NAME, f"not JSON: {exc}")], source,
                                    "not clustersmith stack outputs") from None
    try:
        return StackOutputs.parse(data)
    except ValidationError as exc:
        problems = [Problem(".".join(str(p) for p in e["loc"]), str(e["msg"])) for e in exc.errors()]
        raise ClusterSmithError(problems, source, "not clustersmith stack outputs") from None


def read_outputs_file(path: Path) -> StackOutputs:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ClusterSmithError([Problem("", f"cannot read stack outputs: {exc}")], str(path),
                                "not clustersmith stack outputs") from None
    return parse_outputs(data, str(path))
