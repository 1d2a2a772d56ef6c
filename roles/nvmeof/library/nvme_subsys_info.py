#!/usr/bin/python3
"""Report NVMe-oF subsystems as the host sees them: ``nvme list-subsys`` plus what sysfs adds (the I/O
policy, each path's timers and whether it authenticates with DH-CHAP, the multipath namespace devices). Read-only
(``changed`` is always false); a secret is never read into the result, only whether one is set.

Ansible module (``nvme_subsys_info``): used by the role's verify and by tests; the parsing is unit-tested
on output recorded from the lab (tests/fixtures/nvmeof/).
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from ansible.module_utils.nvme_sysfs import parse_address, parse_timer, read_attribute

DOCUMENTATION = r"""
module: nvme_subsys_info
short_description: NVMe-oF subsystems, their paths, timers and I/O policy
options:
  nqn: {type: str, required: false, description: Report only this subsystem}
author: clustersmith
"""

SYSFS = Path("/sys")
HEAD = re.compile(r"^nvme\d+n\d+$")  # the multipath head; its paths are nvme<subsys>c<ctrl>n<ns>


class InfoError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class PathInfo:
    name: str
    transport: str
    traddr: str
    trsvcid: str
    state: str
    ctrl_loss_tmo: int | None = None
    reconnect_delay: int | None = None
    fast_io_fail_tmo: int | None = None
    kato: int | None = None
    # DH-CHAP: the host authenticates with a secret (dhchap_secret), and checks the target's (dhchap_ctrl_secret,
    # bidirectional); None where the kernel has no such attribute (no CONFIG_NVME_AUTH, as Debian's 6.1)
    host_authenticated: bool | None = None
    target_authenticated: bool | None = None


@dataclasses.dataclass(frozen=True)
class SubsystemInfo:
    name: str
    nqn: str
    iopolicy: str
    paths: tuple[PathInfo, ...]
    namespaces: tuple[str, ...] = ()

    @property
    def live_paths(self) -> int:
        return sum(1 for p in self.paths if p.state == "live")


def parse_list_subsys(text: str) -> list[SubsystemInfo]:
    """``nvme list-subsys -o json``: a list of hosts each with ``Subsystems`` (nvme-cli 2.x), or one object."""
    data = json.loads(text or "[]")
    hosts = data if isinstance(data, list) else [data]
    found = []
    for host in hosts:
        for sub in host.get("Subsystems", []):
            paths = []
            for path in sub.get("Paths", []):
                address = parse_address(str(path.get("Address", "")))
                paths.append(PathInfo(name=str(path.get("Name", "")), transport=str(path.get("Transport", "")),
                                      traddr=address.get("traddr", ""), trsvcid=address.get("trsvcid", ""),
                                      state=str(path.get("State", ""))))
            found.append(SubsystemInfo(name=str(sub.get("Name", "")), nqn=str(sub.get("NQN", "")),
                                       iopolicy=str(sub.get("IOPolicy", "")), paths=tuple(paths)))
    return found


def secret_set(attribute: Path) -> bool | None:
    """Whether a controller's DH-CHAP secret attribute holds a secret: the kernel prints "none" for no secret
    (drivers/nvme/host/sysfs.c, nvme_ctrl_dhchap_secret_show); None: the attribute does not exist."""
    if not attribute.exists():
        return None
    return read_attribute(attribute) not in ("", "none")


def with_sysfs(sub: SubsystemInfo, sysfs: Path) -> SubsystemInfo:
    """Fill in what list-subsys leaves out, from /sys/class/nvme-subsystem and /sys/class/nvme."""

    folder = sysfs / "class" / "nvme-subsystem" / sub.name
    paths = []
    for path in sub.paths:
        ctrl = sysfs / "class" / "nvme" / path.name
        paths.append(dataclasses.replace(
            path, ctrl_loss_tmo=parse_timer(read_attribute(ctrl / "ctrl_loss_tmo")),
            reconnect_delay=parse_timer(read_attribute(ctrl / "reconnect_delay")),
            fast_io_fail_tmo=parse_timer(read_attribute(ctrl / "fast_io_fail_tmo")),
            kato=parse_timer(read_attribute(ctrl / "kato")),
            host_authenticated=secret_set(ctrl / "dhchap_secret"),
            target_authenticated=secret_set(ctrl / "dhchap_ctrl_secret")))
    namespaces = tuple(sorted(f"/dev/{p.name}" for p in folder.glob("nvme*n*") if HEAD.match(p.name)))
    return dataclasses.replace(sub, iopolicy=read_attribute(folder / "iopolicy") or sub.iopolicy, paths=tuple(paths),
                               namespaces=namespaces)


def gather(nqn: str | None, sysfs: Path = SYSFS) -> list[SubsystemInfo]:
    done = subprocess.run(["nvme", "list-subsys", "--output-format=json"], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise InfoError(f"nvme list-subsys failed ({done.returncode}): {(done.stderr or done.stdout).strip()}")
    subs = [with_sysfs(s, sysfs) for s in parse_list_subsys(done.stdout)]
    return [s for s in subs if nqn is None or s.nqn == nqn]


def as_dict(sub: SubsystemInfo) -> dict[str, Any]:
    return {**dataclasses.asdict(sub), "live_paths": sub.live_paths}


ARGUMENT_SPEC: dict[str, dict[str, Any]] = {"nqn": {"type": "str"}}


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        subs = gather(module.params["nqn"])
    except InfoError as err:
        module.fail_json(msg=str(err))
    module.exit_json(changed=False, subsystems=[as_dict(s) for s in subs])


if __name__ == "__main__":
    main()
