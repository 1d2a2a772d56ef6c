"""The Ansible inventory of a running lab: groups by role, host vars with the real rail addresses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from blueprints import atomic
from blueprints.render import editable
from stacks.lab.ssh import COMMON_ARGS
from stacks.lab.state import HostState, LabState

GROUPS = {"storage_target": "storage_targets", "gpu_client": "gpu_clients", "monitoring": "monitoring"}


def host_vars(host: HostState, private_key: Path) -> dict[str, Any]:
    return {
        "ansible_host": "127.0.0.1",
        "ansible_port": host.ssh_port,
        "ansible_user": "root",
        "ansible_ssh_private_key_file": str(private_key),
        "ansible_ssh_common_args": COMMON_ARGS,
        # every boot makes new host keys; COMMON_ARGS tells ssh, this tells Ansible (and Mitogen's connection)
        "ansible_host_key_checking": False,
        # TCG guests on a busy 2-core machine answer late, and Mitogen's connect includes starting its
        # interpreter in the guest (10 s and more when three VMs start at once); Ansible's default is 10 s
        "ansible_ssh_timeout": 60,
        "ansible_python_interpreter": "/usr/bin/python3",
        "lab_role": host.role,
        "rails": [
            {
                "index": nic.rail_index,
                "name": nic.rail_name,
                "netdev": nic.netdev,
                "address": nic.address,
                "prefix": nic.prefix,
                "cidr": nic.cidr,
                "mtu": nic.mtu,
                "mac": nic.mac,
            }
            for nic in host.rails
        ],
        "disks": {**{disk.name: disk.guest_path for disk in host.disks}, **host.named_disks},
    }


def build(state: LabState) -> dict[str, Any]:
    """The inventory as data: ``all.children.<group>.hosts.<name>: vars``; empty groups are kept."""
    children: dict[str, Any] = {group: {"hosts": {}} for group in GROUPS.values()}
    for host in state.hosts:
        children[GROUPS[host.role]]["hosts"][host.name] = host_vars(host, state.private_key)
    return {"all": {"vars": {"lab_name": state.name}, "children": children}}


HEADER = f"{editable.STEP_MARK}lab up` for the running lab"


def claim(workdir: Path) -> Path:
    """The build folder's inventory, for ``lab up`` to write; refused while it is the user's own (checked before
    the lab boots, and again before the write)."""
    return editable.claim(workdir, editable.INVENTORY, "lab up")


def write(state: LabState, workdir: Path) -> Path:
    path = claim(workdir)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = f"{HEADER} {state.name!r}; ports change per boot.\n"
    atomic.write(path, header + yaml.safe_dump(build(state), sort_keys=False, default_flow_style=False))
    return path


def inventory_path(workdir: Path) -> Path:
    return workdir / editable.INVENTORY


def remove(path: Path) -> bool:
    """Remove the inventory ``lab up`` wrote (its ports die with the lab); a file it did not write stays."""
    try:
        with path.open(encoding="utf-8") as handle:
            ours = path.is_file() and not path.is_symlink() and handle.readline().startswith(HEADER)
    except (OSError, UnicodeDecodeError):
        return False
    if ours:
        path.unlink()
    return ours
