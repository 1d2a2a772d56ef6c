"""The inventory as acceptance needs it: hosts per group and each host's rails, read through ansible-inventory
(``ansible_runner.get_inventory``), so any inventory Ansible accepts works, not only the generated one."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import ansible_runner
from pydantic import Field

from blueprints.errors import ClusterSmithError, Problem
from blueprints.model import Frozen
from validators.source import json_loads


class Rail(Frozen):
    index: int
    address: str
    netdev: str = ""


class Host(Frozen):
    name: str
    rails: tuple[Rail, ...] = ()


class Inventory(Frozen):
    path: str
    groups: dict[str, tuple[str, ...]] = Field(description="group -> host names")
    hosts: dict[str, Host]

    def group(self, name: str) -> list[str]:
        return list(self.groups.get(name, ()))


def ensure_ansible() -> None:
    """ansible-runner runs ``ansible-playbook`` from PATH: add this interpreter's bin folder (a venv run by its
    path) when that is where ansible-core is, and say so plainly when it is nowhere."""
    here = Path(sys.executable).parent
    if shutil.which("ansible-playbook") is None and (here / "ansible-playbook").exists():
        os.environ["PATH"] = f"{here}{os.pathsep}{os.environ.get('PATH', '')}"
    if shutil.which("ansible-playbook") is None or shutil.which("ansible-inventory") is None:
        raise ClusterSmithError([Problem("ansible-playbook", "not found: the runner needs ansible-core "
                                         "(pip install ansible-core ansible-runner)")], title="setup error")


def load_inventory(path: Path) -> Inventory:
    ensure_ansible()
    if not path.is_file():
        raise ClusterSmithError([Problem("--inventory", "no inventory file there; `clustersmith lab up` or your own "
                                         "provisioning writes out/<name>/ansible/inventory.yml", value=str(path))],
                                title="no inventory")
    out, err = ansible_runner.get_inventory(action="list", inventories=[str(path)], response_format="json",
                                            quiet=True)
    if not isinstance(out, dict) or "_meta" not in out:
        raise ClusterSmithError([Problem("--inventory", f"ansible-inventory could not read it: {str(err).strip()}",
                                         value=str(path))], title="bad inventory")
    hostvars: dict[str, dict[str, object]] = out["_meta"].get("hostvars", {})
    groups = {g: tuple(v.get("hosts", ())) for g, v in out.items() if g != "_meta" and isinstance(v, dict)}
    hosts = {}
    for name, hv in hostvars.items():
        rails = hv.get("rails", [])
        parsed = tuple(Rail(index=int(r["index"]), address=str(r["address"]), netdev=str(r.get("netdev", "")))
                       for r in rails if isinstance(r, dict) and "address" in r) if isinstance(rails, list) else ()
        hosts[name] = Host(name=name, rails=parsed)
    return Inventory(path=str(path), groups=groups, hosts=hosts)


def rdma_record(text: str) -> dict[int, dict[str, object]]:
    """Rail index -> the RDMA device, port and RoCE v2 GID index the rdma role found on a host (its
    /etc/ansible/facts.d/rdma.fact); empty where the host has none."""
    if not text.strip():
        return {}
    rails = json_loads(text).get("rails", [])
    return {int(r["index"]): r for r in rails if isinstance(r, dict) and "device" in r}


def dump(inv: Inventory) -> str:
    return json.dumps(inv.model_dump(), indent=2)
