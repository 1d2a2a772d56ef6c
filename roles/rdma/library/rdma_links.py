#!/usr/bin/python3
"""Bring every rail NIC to its RDMA state: MTU, Soft-RoCE device, RDMA-CM RoCE mode and ToS, GID check; record
which RDMA device, port and RoCE v2 GID index serve each rail (the nccl role's NCCL_IB_HCA and acceptance read it).

Ansible module (``rdma_links``) and, the same file, the boot-time applier run by
``clustersmith-rdma.service``: ``python3 rdma_links.py --apply /etc/clustersmith/rdma.json``.
Reading the host (``read_state``), deciding (``decide``, pure) and changing it (``apply``) are apart, so the
decision is unit-tested on recorded host state.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DOCUMENTATION = r"""
module: rdma_links
short_description: MTU, Soft-RoCE device, RoCE mode and GID of every rail NIC
description:
  - Fails with a clear message when a rail NIC named in the inventory does not exist.
  - Sets the MTU of each rail NIC, creates a Soft-RoCE (rxe) device named rxe<index> on it when asked,
    sets RDMA-CM's default RoCE mode and type of service of the device (what C(cma_roce_tos) sets), and checks
    the RoCE GID at the given index.
  - Finds the RDMA device behind each rail's netdev (sysfs C(/sys/class/net/<netdev>/device/infiniband/) for real
    NICs, C(rdma -j link show) for Soft-RoCE), its port and, on RoCE, the index of the rail address's RoCE v2 GID,
    and writes them to C(facts_path) as JSON (Ansible local facts, C(ansible_local.rdma.rails)).
  - Returns changed and a diff; supports check mode.
options:
  rails:
    description: Rail NICs, each with index, name, netdev and optionally address and mtu.
    type: list
    elements: dict
    required: true
  mtu:
    description: MTU of rails that do not name their own.
    type: int
    required: true
  soft_roce:
    description: Create an rxe device on each rail NIC.
    type: bool
    required: true
  roce_mode:
    description: RDMA-CM default RoCE mode; omit on InfiniBand.
    type: str
    choices: ["RoCE v2", "IB/RoCE v1"]
  roce_tos:
    description: RDMA-CM default IP type of service of RoCE connections that set none; omit to leave it.
    type: int
  gid_index:
    description: GID index that must hold the rail address's RoCE GID; -1 or omitted, find it in the GID table.
    type: int
  facts_path:
    description: Where to record the rails' RDMA devices (JSON); omit to record nothing.
    type: path
author: clustersmith
"""

RETURN = r"""
rails:
  description: Per rail, the netdev, its RDMA device, the device state, the MTU and the GID at gid_index.
  type: list
  returned: always
"""

SETTLE_SECONDS = 10.0  # a new rxe device or address takes a moment to reach the GID table


class RailsError(Exception):
    """Something the inventory or the host gets wrong; the message says what and what was expected."""


@dataclasses.dataclass(frozen=True)
class Rail:
    index: int
    name: str
    netdev: str
    mtu: int
    address: str | None = None

    @property
    def device(self) -> str:
        return f"rxe{self.index}"


@dataclasses.dataclass(frozen=True)
class Link:
    """One RDMA device port as ``rdma -j link show`` reports it."""

    device: str
    port: int
    state: str
    netdev: str | None


@dataclasses.dataclass(frozen=True)
class NicState:
    netdev: str
    mtu: int
    device: str | None  # the RDMA device on this NIC, if any
    roce_mode: str | None  # RDMA-CM default mode of that device, None where not readable yet
    roce_tos: int | None = None  # RDMA-CM default ToS of that device, None where not readable yet


@dataclasses.dataclass(frozen=True)
class HostState:
    netdevs: tuple[str, ...]
    nics: dict[str, NicState]
    links: tuple[Link, ...]


@dataclasses.dataclass(frozen=True)
class Action:
    kind: str  # set_mtu | add_rxe | set_roce_mode | set_roce_tos
    netdev: str
    device: str | None
    value: str

    def describe(self) -> str:
        if self.kind == "set_mtu":
            return f"{self.netdev}: mtu {self.value}"
        if self.kind == "add_rxe":
            return f"{self.netdev}: rdma link add {self.device} type rxe"
        if self.kind == "set_roce_tos":
            return f"{self.device}: default_roce_tos {self.value}"
        return f"{self.device}: default_roce_mode {self.value}"


def parse_links(text: str) -> tuple[Link, ...]:
    """``rdma -j link show``: ``[{"ifname": "rxe0/1" or "rxe0", "port": 1, "state": ..., "netdev": ...}]``."""
    links = []
    for item in json.loads(text or "[]"):
        name = str(item["ifname"])
        device, _, port = name.partition("/")
        links.append(Link(device=device, port=int(item.get("port") or port or 1), state=str(item.get("state", "")),
                          netdev=item.get("netdev")))
    return tuple(links)


@dataclasses.dataclass(frozen=True)
class RailDevice:
    """What the rdma role found serving one rail: the record NCCL_IB_HCA and acceptance are built from."""

    index: int
    name: str
    netdev: str
    device: str
    port: int
    gid_index: int | None = None

    def as_fact(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def device_of(netdev: str, sysfs_devices: list[str], links: tuple[Link, ...]) -> tuple[str, int] | None:
    """The RDMA device and port behind ``netdev``: the device sysfs lists under the NIC's PCI function (a real
    RoCE or InfiniBand NIC), else the link ``rdma link show`` reports on that netdev (Soft-RoCE, which has no
    device folder of its own). Never a name made from a rail index."""
    on_netdev = [link for link in links if link.netdev == netdev]
    for name in sorted(sysfs_devices):
        port = next((link.port for link in on_netdev if link.device == name), None)
        if port is not None or len(sysfs_devices) == 1:
            return name, port or next((link.port for link in links if link.device == name), 1)
    if on_netdev:
        return on_netdev[0].device, on_netdev[0].port
    return None


def find_gid(address: str | None, gids: dict[int, tuple[str, str]], roce_mode: str) -> int | None:
    """Index of the RoCE GID of ``address`` in the wanted mode, as NCCL's auto-selection (-1) would pick it."""
    if address is None:
        return None
    want = expected_gid(address)
    return next((i for i, (gid, kind) in sorted(gids.items()) if gid == want and kind == roce_mode), None)


def facts_text(found: list[RailDevice]) -> str:
    return json.dumps({"rails": [r.as_fact() for r in found]}, indent=2, sort_keys=True) + "\n"


def parse_rails(raw: list[dict[str, Any]], default_mtu: int) -> list[Rail]:
    rails = []
    for item in raw:
        try:
            rails.append(Rail(index=int(item["index"]), name=str(item["name"]), netdev=str(item["netdev"]),
                              mtu=int(item.get("mtu") or default_mtu), address=item.get("address") or None))
        except KeyError as missing:
            raise RailsError(f"rail {item!r} has no {missing.args[0]}; "
                             f"each rail needs index, name and netdev") from None
    if not rails:
        raise RailsError("no rails: the inventory gives this host an empty `rails` list")
    netdevs = [r.netdev for r in rails]
    dup = sorted({n for n in netdevs if netdevs.count(n) > 1})
    if dup:
        raise RailsError(f"rail NIC {dup[0]} is named by more than one rail; each rail needs its own NIC")
    indexes = [r.index for r in rails]
    if len(set(indexes)) != len(indexes):
        raise RailsError(f"rail indexes repeat: {indexes}; each rail needs its own index")
    for rail in rails:
        if not 576 <= rail.mtu <= 9216:
            raise RailsError(f"rail {rail.name}: mtu {rail.mtu} is outside 576..9216")
    return rails


def decide(rails: list[Rail], state: HostState, soft_roce: bool, roce_mode: str | None,
           roce_tos: int | None = None) -> list[Action]:
    """What must change so every rail has its MTU, its RDMA device, the RoCE mode and ToS. Pure."""
    missing = [r for r in rails if r.netdev not in state.netdevs]
    if missing:
        names = ", ".join(f"{r.netdev} (rail {r.name})" for r in missing)
        raise RailsError(f"rail NIC {names} named in the inventory does not exist on this host; "
                         f"its network interfaces are: {', '.join(sorted(state.netdevs))}")
    actions: list[Action] = []
    for rail in rails:
        nic = state.nics[rail.netdev]
        if nic.mtu != rail.mtu:
            actions.append(Action("set_mtu", rail.netdev, None, str(rail.mtu)))
        device = nic.device
        if device is None:
            if not soft_roce:
                raise RailsError(f"rail NIC {rail.netdev} (rail {rail.name}) has no RDMA device; "
                                 f"expected a RoCE-capable NIC (or rdma_soft_roce: true for Soft-RoCE)")
            taken = next((link for link in state.links if link.device == rail.device), None)
            if taken is not None:
                raise RailsError(f"RDMA device {rail.device} already exists on {taken.netdev}, "
                                 f"not on rail NIC {rail.netdev}; remove it with `rdma link delete {rail.device}`")
            device = rail.device
            actions.append(Action("add_rxe", rail.netdev, device, "rxe"))
        if roce_mode is not None and nic.roce_mode != roce_mode:
            actions.append(Action("set_roce_mode", rail.netdev, device, roce_mode))
        if roce_tos is not None and nic.roce_tos != roce_tos:
            actions.append(Action("set_roce_tos", rail.netdev, device, str(roce_tos)))
    return actions


def expected_gid(address: str) -> str:
    """The RoCE v2 GID of an IPv4 address: the IPv4-mapped IPv6 address, as sysfs prints it."""
    mapped = ipaddress.IPv6Address(f"::ffff:{ipaddress.IPv4Address(address)}")
    return mapped.exploded


def check_gid(rail: Rail, device: str, gid_index: int, gids: dict[int, tuple[str, str]], roce_mode: str) -> str | None:
    """A message when the GID at ``gid_index`` is not the rail address's GID of the wanted RoCE mode."""
    if rail.address is None:
        return None
    want = expected_gid(rail.address)
    have = gids.get(gid_index)
    if have is not None and have[0] == want and have[1] == roce_mode:
        return None
    table = ", ".join(f"{i}: {g} ({t})" for i, (g, t) in sorted(gids.items())) or "empty"
    shown = f"{have[0]} ({have[1]})" if have else "unset"
    return (f"{device} on {rail.netdev}: GID index {gid_index} is {shown}, "
            f"expected {want} ({roce_mode}) for {rail.address}; rdma_gid_index must name it. GID table: {table}")


class System:
    """The host: sysfs, configfs and the ip/rdma tools. Roots are parameters only for reading recorded trees."""

    def __init__(self, sys_root: str = "/sys") -> None:
        self.sys = Path(sys_root)

    def run(self, *argv: str) -> str:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RailsError(f"`{' '.join(argv)}` failed ({done.returncode}): "
                             f"{done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def cm_dir(self, device: str) -> Path:
        return self.sys / "kernel" / "config" / "rdma_cm" / device

    def cm_value(self, device: str, name: str) -> str | None:
        """RDMA-CM's ``default_roce_mode`` or ``default_roce_tos`` of port 1 (reading needs the configfs group;
        making it changes nothing)."""
        group = self.cm_dir(device)
        if not group.parent.is_dir():
            return None
        try:
            group.mkdir(exist_ok=True)
            return (group / "ports" / "1" / name).read_text().strip()
        except OSError:
            return None

    def sysfs_devices(self, netdev: str) -> list[str]:
        folder = self.sys / "class" / "net" / netdev / "device" / "infiniband"
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []

    def read_state(self, rails: list[Rail]) -> HostState:
        netdevs = tuple(sorted(p.name for p in (self.sys / "class" / "net").iterdir()))
        links = parse_links(self.run("rdma", "-j", "link", "show"))
        nics = {}
        for rail in rails:
            if rail.netdev not in netdevs:
                continue
            found = device_of(rail.netdev, self.sysfs_devices(rail.netdev), links)
            device = found[0] if found else None
            mtu = int((self.sys / "class" / "net" / rail.netdev / "mtu").read_text())
            tos = self.cm_value(device, "default_roce_tos") if device else None
            nics[rail.netdev] = NicState(rail.netdev, mtu, device,
                                         self.cm_value(device, "default_roce_mode") if device else None,
                                         int(tos) if tos is not None and tos.isdigit() else None)
        return HostState(netdevs=netdevs, nics=nics, links=links)

    def gids(self, device: str) -> dict[int, tuple[str, str]]:
        port = self.sys / "class" / "infiniband" / device / "ports" / "1"
        table = {}
        for entry in sorted((port / "gids").iterdir(), key=lambda p: int(p.name)):
            gid = entry.read_text().strip()
            if gid.strip("0:") == "":
                continue
            try:
                kind = (port / "gid_attrs" / "types" / entry.name).read_text().strip()
            except OSError:  # the kernel refuses to read the type of an empty slot
                continue
            table[int(entry.name)] = (gid, kind)
        return table

    def apply(self, action: Action) -> None:
        if action.kind == "set_mtu":
            self.run("ip", "link", "set", "dev", action.netdev, "mtu", action.value)
        elif action.kind == "add_rxe":
            self.run("rdma", "link", "add", str(action.device), "type", "rxe", "netdev", action.netdev)
        elif action.kind in ("set_roce_mode", "set_roce_tos"):
            group = self.cm_dir(str(action.device))
            if not group.parent.is_dir():
                self.run("modprobe", "rdma_cm")
            group.mkdir(exist_ok=True)
            (group / "ports" / "1" / action.kind.replace("set_", "default_")).write_text(action.value)


def link_of(system: System, device: str) -> Link | None:
    return next((link for link in parse_links(system.run("rdma", "-j", "link", "show")) if link.device == device),
                None)


def converge(params: dict[str, Any], check_mode: bool, system: System, verify_gid: bool = True) -> dict[str, Any]:
    rails = parse_rails(params["rails"], int(params["mtu"]))
    roce_mode = params.get("roce_mode")
    state = system.read_state(rails)
    tos = params.get("roce_tos")
    actions = decide(rails, state, bool(params["soft_roce"]), roce_mode, None if tos is None else int(tos))
    if not check_mode:
        for action in actions:
            system.apply(action)
    result: dict[str, Any] = {
        "changed": bool(actions),
        "diff": {"before": "".join(f"{nic.netdev}: mtu {nic.mtu}, device {nic.device}, mode {nic.roce_mode}, "
                                   f"tos {nic.roce_tos}\n"
                                   for nic in state.nics.values()),
                 "after": "".join(a.describe() + "\n" for a in actions)},
        "rails": [],
    }
    if check_mode:
        return result
    problems = []
    found: list[RailDevice] = []
    deadline = time.monotonic() + SETTLE_SECONDS
    for rail in rails:
        device = state.nics[rail.netdev].device or rail.device
        while True:
            link = link_of(system, device)
            problem, gid = None, None
            if link is None or link.state != "ACTIVE":
                problem = f"{device} on {rail.netdev} is {link.state if link else 'missing'}, expected ACTIVE"
            elif verify_gid and roce_mode is not None:
                problem, gid = gid_problem(rail, device, params.get("gid_index"), system.gids(device), roce_mode)
            if problem is None or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if problem:
            problems.append(problem)
        found.append(RailDevice(rail.index, rail.name, rail.netdev, device, link.port if link else 1, gid))
        result["rails"].append({"index": rail.index, "netdev": rail.netdev, "device": device,
                                "state": link.state if link else "missing", "mtu": rail.mtu})
    if problems:
        raise RailsError("; ".join(problems))
    if params.get("facts_path"):
        written = write_facts(Path(params["facts_path"]), facts_text(found))
        result["changed"] = result["changed"] or written
    result["found"] = [r.as_fact() for r in found]
    return result


def gid_problem(rail: Rail, device: str, gid_index: Any, gids: dict[int, tuple[str, str]],
                roce_mode: str) -> tuple[str | None, int | None]:
    """(a message, the GID index serving the rail): the asked index checked, or the index found in the table."""
    if gid_index is not None and int(gid_index) >= 0:
        return check_gid(rail, device, int(gid_index), gids, roce_mode), int(gid_index)
    index = find_gid(rail.address, gids, roce_mode)
    if index is None and rail.address is not None:
        table = ", ".join(f"{i}: {g} ({t})" for i, (g, t) in sorted(gids.items())) or "empty"
        return (f"{device} on {rail.netdev}: no {roce_mode} GID for {rail.address} "
                f"(expected {expected_gid(rail.address)}); GID table: {table}"), None
    return None, index


def write_facts(path: Path, text: str) -> bool:
    """Write the rails record when its text changes; True when it did."""
    if path.is_file() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return True


ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "rails": {"type": "list", "elements": "dict", "required": True},
    "mtu": {"type": "int", "required": True},
    "soft_roce": {"type": "bool", "required": True},
    "roce_mode": {"type": "str", "choices": ["RoCE v2", "IB/RoCE v1"]},
    "roce_tos": {"type": "int"},
    "gid_index": {"type": "int"},
    "facts_path": {"type": "path"},
}


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        module.exit_json(**converge(module.params, module.check_mode, System()))
    except RailsError as err:
        module.fail_json(msg=str(err))


def boot(config: str) -> int:
    """Boot-time apply from the JSON the role wrote; the GID check is Ansible's (addresses may come later)."""
    try:
        params = json.loads(Path(config).read_text())
        result = converge(params, False, System(), verify_gid=False)
    except (OSError, ValueError, RailsError) as err:
        print(f"clustersmith-rdma: {err}", file=sys.stderr)
        return 1
    for rail in result["rails"]:
        print(f"clustersmith-rdma: {rail['netdev']} -> {rail['device']} {rail['state']} mtu {rail['mtu']}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--apply" and os.path.isfile(sys.argv[2]):
        sys.exit(boot(sys.argv[2]))
    main()
