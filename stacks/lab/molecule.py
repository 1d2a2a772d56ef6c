"""What molecule's default (delegated) driver needs from a running lab.

``instances`` is molecule's instance config (how to reach each host); ``script_inventory`` is the
same inventory ``lab up`` writes as YAML, in the JSON form of an Ansible inventory script, so a
scenario can link it in (``provisioner.inventory.links.hosts``) and its roles see the role groups
and the ``rails``/``disks`` host vars.
"""

from __future__ import annotations

from typing import Any

from stacks.lab import inventory
from stacks.lab.state import LabState


def instances(state: LabState) -> list[dict[str, Any]]:
    return [
        {
            "instance": host.name,
            "address": "127.0.0.1",
            "user": "root",
            "port": host.ssh_port,
            "identity_file": str(state.private_key),
            "become_method": False,
        }
        for host in state.hosts
    ]


def script_inventory(state: LabState | None) -> dict[str, Any]:
    """``--list`` output of an inventory script; an empty inventory while no lab runs."""
    if state is None:
        return {"_meta": {"hostvars": {}}}
    data = inventory.build(state)["all"]
    result: dict[str, Any] = {"all": {"vars": data["vars"], "children": list(data["children"])}}
    hostvars: dict[str, Any] = {}
    for group, body in data["children"].items():
        result[group] = {"hosts": list(body["hosts"])}
        hostvars.update(body["hosts"])
    result["_meta"] = {"hostvars": hostvars}
    return result
