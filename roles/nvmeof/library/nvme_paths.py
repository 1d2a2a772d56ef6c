#!/usr/bin/python3
"""Connect this host to every NVMe-oF subsystem over every rail, with native multipath and its I/O policy.

Ansible module (``nvme_paths``). Paths pair the host's rail NIC with the target's NIC of the same rail
index. Each missing path is checked with ``nvme discover`` on that rail (the target must offer the
subsystem there) and connected with ``nvme connect`` and the Blueprint's timers; live paths whose
timers differ are corrected through sysfs (keep-alive needs a reconnect of that path alone); the
subsystem's ``iopolicy`` is set. ``read_state`` reads sysfs, ``decide`` (pure) plans, ``apply`` acts.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from ansible.module_utils.nvme_sysfs import parse_address, parse_timer

DOCUMENTATION = r"""
module: nvme_paths
short_description: NVMe-oF connections over every rail, timers and multipath I/O policy
options:
  transport: {type: str, required: true, choices: [rdma, tcp], description: Fabric transport}
  trsvcid: {type: int, required: true, description: Port (service id) of the target's ports}
  host_rails: {type: list, elements: dict, required: true, description: This host's rails (index, netdev, address)}
  targets: {type: dict, required: true, description: Target inventory name -> its rails}
  subsystems: {type: list, elements: dict, required: true, description: "Entries {nqn, target_host}"}
  paths_per_subsystem: {type: int, required: true, description: Paths each subsystem must have}
  ctrl_loss_tmo: {type: int, required: true, description: Seconds a lost controller is retried; -1 forever}
  reconnect_delay: {type: int, required: true, description: Seconds between reconnect attempts}
  fast_io_fail_tmo: {type: int, required: true, description: Seconds before I/O fails over; -1 off}
  keep_alive_tmo: {type: int, required: true, description: Keep-alive timeout in seconds}
  tos: {type: int, required: true, description: IP type of service of the connections}
  iopolicy: {type: str, required: true, choices: [numa, round-robin, queue-depth], description: Multipath I/O policy}
  state: {type: str, default: present, choices: [present, absent], description: absent disconnects the paths}
author: clustersmith
"""

SYSFS = Path("/sys")
LIVE_WAIT_S = 20.0


class PathsError(Exception):
    """Input or host state the paths cannot be made from; the message names what and what was expected."""


@dataclasses.dataclass(frozen=True)
class WantedPath:
    nqn: str
    rail: int
    traddr: str
    host_traddr: str | None
    host_iface: str

    def key(self) -> tuple[str, str]:
        return (self.nqn, self.traddr)


@dataclasses.dataclass(frozen=True)
class Controller:
    name: str  # nvme0
    transport: str
    nqn: str
    traddr: str
    trsvcid: str
    state: str
    ctrl_loss_tmo: int | None
    reconnect_delay: int | None
    fast_io_fail_tmo: int | None
    kato: int | None

    def key(self) -> tuple[str, str]:
        return (self.nqn, self.traddr)


@dataclasses.dataclass(frozen=True)
class Timers:
    ctrl_loss_tmo: int
    reconnect_delay: int
    fast_io_fail_tmo: int
    keep_alive_tmo: int
    tos: int


@dataclasses.dataclass(frozen=True)
class Action:
    kind: str  # connect | reconnect | set_timer | set_iopolicy | disconnect
    target: str  # path "nqn via traddr", controller name, or subsystem NQN
    detail: str = ""
    path: WantedPath | None = None
    controller: str | None = None

    def describe(self) -> str:
        return f"{self.kind} {self.target}" + (f" ({self.detail})" if self.detail else "")


def _ipv4(value: Any, what: str) -> str:
    try:
        return str(ipaddress.IPv4Address(str(value)))
    except ValueError:
        raise PathsError(f"{what}: address {value!r} is not an IPv4 address") from None


def plan_paths(host_rails: list[dict[str, Any]], targets: dict[str, list[dict[str, Any]]],
               subsystems: list[dict[str, Any]], paths_per_subsystem: int, host_name: str) -> list[WantedPath]:
    """One path per shared rail index, the first ``paths_per_subsystem`` of them; an error when too few."""
    wanted = []
    mine = {int(r["index"]): r for r in host_rails}
    for sub in subsystems:
        nqn, target = str(sub["nqn"]), str(sub["target_host"])
        if target not in targets:
            raise PathsError(f"subsystem {nqn} is served by {target}, which is not in the inventory's "
                             f"storage_targets (hosts there: {', '.join(sorted(targets)) or 'none'})")
        theirs = {int(r["index"]): r for r in targets[target] if r.get("address")}
        shared = sorted(set(mine) & set(theirs))
        if len(shared) < paths_per_subsystem:
            raise PathsError(f"subsystem {nqn}: {paths_per_subsystem} paths wanted (one per rail), but "
                             f"{host_name} and {target} share only rails {shared or 'none'} with addresses")
        for index in shared[:paths_per_subsystem]:
            rail = mine[index]
            wanted.append(WantedPath(
                nqn=nqn, rail=index,
                traddr=_ipv4(theirs[index]["address"], f"{target} rail {index}"),
                host_traddr=_ipv4(rail["address"], f"{host_name} rail {index}") if rail.get("address") else None,
                host_iface=str(rail["netdev"]),
            ))
    return wanted


def decide(wanted: list[WantedPath], controllers: list[Controller], timers: Timers, transport: str,
           iopolicies: dict[str, str], iopolicy: str) -> list[Action]:
    """Connect what is missing, fix timers that differ, set the I/O policy. Pure."""
    actions: list[Action] = []
    have = {c.key(): c for c in controllers if c.transport == transport}
    for path in wanted:
        ctrl = have.get(path.key())
        label = f"{path.nqn} via {path.traddr}"
        if ctrl is None:
            actions.append(Action("connect", label, f"rail {path.rail} from {path.host_iface}", path=path))
            continue
        if ctrl.kato is not None and ctrl.kato != timers.keep_alive_tmo:
            actions.append(Action("reconnect", label, f"{ctrl.name} keep-alive {ctrl.kato} s, wanted "
                                  f"{timers.keep_alive_tmo} s", path=path, controller=ctrl.name))
            continue
        for attr in ("ctrl_loss_tmo", "reconnect_delay", "fast_io_fail_tmo"):
            current, want = getattr(ctrl, attr), getattr(timers, attr)
            if current is not None and current != want:
                actions.append(Action("set_timer", ctrl.name, f"{attr} {current} -> {want}",
                                      controller=ctrl.name))
    for nqn in dict.fromkeys(p.nqn for p in wanted):
        current = iopolicies.get(nqn)
        if current != iopolicy:
            actions.append(Action("set_iopolicy", nqn, f"{current or 'not connected yet'} -> {iopolicy}"))
    return actions


def decide_absent(wanted: list[WantedPath], controllers: list[Controller], transport: str) -> list[Action]:
    keys = {p.key() for p in wanted}
    return [Action("disconnect", f"{c.nqn} via {c.traddr}", c.name, controller=c.name)
            for c in controllers if c.transport == transport and c.key() in keys]


def connect_argv(path: WantedPath, transport: str, trsvcid: int, timers: Timers) -> list[str]:
    """``nvme connect`` with the timers nvme-cli takes; fast_io_fail_tmo (not an option of nvme-cli 2.3) is
    written to sysfs right after, like a drifted timer."""
    argv = ["nvme", "connect", f"--transport={transport}", f"--traddr={path.traddr}", f"--trsvcid={trsvcid}",
            f"--nqn={path.nqn}", f"--ctrl-loss-tmo={timers.ctrl_loss_tmo}",
            f"--reconnect-delay={timers.reconnect_delay}", f"--keep-alive-tmo={timers.keep_alive_tmo}",
            f"--tos={timers.tos}"]
    if path.host_traddr:
        argv.append(f"--host-traddr={path.host_traddr}")
    if transport == "tcp":
        argv.append(f"--host-iface={path.host_iface}")
    return argv


def discover_argv(path: WantedPath, transport: str, trsvcid: int) -> list[str]:
    argv = ["nvme", "discover", f"--transport={transport}", f"--traddr={path.traddr}", f"--trsvcid={trsvcid}",
            "--output-format=json"]
    if path.host_traddr:
        argv.append(f"--host-traddr={path.host_traddr}")
    return argv


def offered(discovery_json: str) -> set[str]:
    """Subsystem NQNs a discovery log page offers (``nvme discover -o json``), discovery entries left out."""
    data = json.loads(discovery_json or "{}")
    return {str(r.get("subnqn")) for r in data.get("records", [])
            if "discovery" not in str(r.get("subtype", "")).lower()}


class System:
    def __init__(self, sysfs: Path = SYSFS) -> None:
        self.sys = sysfs

    def run(self, argv: list[str]) -> str:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise PathsError(f"`{' '.join(argv)}` failed ({done.returncode}): "
                             f"{(done.stderr or done.stdout).strip()}")
        return done.stdout

    @staticmethod
    def _read(path: Path) -> str:
        try:
            return path.read_text().strip()
        except OSError:
            return ""

    def controllers(self) -> list[Controller]:
        found = []
        base = self.sys / "class" / "nvme"
        for entry in sorted(base.iterdir() if base.is_dir() else []):
            transport = self._read(entry / "transport")
            if transport not in ("rdma", "tcp"):
                continue
            address = parse_address(self._read(entry / "address"))
            found.append(Controller(
                name=entry.name, transport=transport, nqn=self._read(entry / "subsysnqn"),
                traddr=address.get("traddr", ""), trsvcid=address.get("trsvcid", ""),
                state=self._read(entry / "state"),
                ctrl_loss_tmo=parse_timer(self._read(entry / "ctrl_loss_tmo")),
                reconnect_delay=parse_timer(self._read(entry / "reconnect_delay")),
                fast_io_fail_tmo=parse_timer(self._read(entry / "fast_io_fail_tmo")),
                kato=parse_timer(self._read(entry / "kato")),
            ))
        return found

    def iopolicies(self) -> dict[str, str]:
        found = {}
        base = self.sys / "class" / "nvme-subsystem"
        for entry in sorted(base.iterdir() if base.is_dir() else []):
            found[self._read(entry / "subsysnqn")] = self._read(entry / "iopolicy")
        return found

    def multipath(self) -> str:
        return self._read(self.sys / "module" / "nvme_core" / "parameters" / "multipath")

    def subsystem_dir(self, nqn: str) -> Path | None:
        base = self.sys / "class" / "nvme-subsystem"
        for entry in sorted(base.iterdir() if base.is_dir() else []):
            if self._read(entry / "subsysnqn") == nqn:
                return entry
        return None


def apply(system: System, action: Action, transport: str, trsvcid: int, timers: Timers) -> None:
    if action.kind in ("disconnect", "reconnect"):
        system.run(["nvme", "disconnect", f"--device={action.controller}"])
    if action.kind in ("connect", "reconnect"):
        assert action.path is not None
        found = offered(system.run(discover_argv(action.path, transport, trsvcid)))
        if action.path.nqn not in found:
            raise PathsError(f"the target at {action.path.traddr}:{trsvcid} ({transport}, rail "
                             f"{action.path.rail}) does not offer {action.path.nqn}; it offers: "
                             f"{', '.join(sorted(found)) or 'nothing'}")
        system.run(connect_argv(action.path, transport, trsvcid, timers))
    elif action.kind == "set_timer":
        attr, _, change = action.detail.partition(" ")
        value = change.split("-> ")[-1]
        (system.sys / "class" / "nvme" / str(action.controller) / attr).write_text(value)
    elif action.kind == "set_iopolicy":
        folder = system.subsystem_dir(action.target)
        if folder is None:
            raise PathsError(f"subsystem {action.target} has no nvme-subsystem entry after connecting")
        (folder / "iopolicy").write_text(action.detail.split("-> ")[-1])


def wait_live(system: System, wanted: list[WantedPath]) -> dict[str, str]:
    """Path -> controller state, once every path is live or after LIVE_WAIT_S."""
    deadline = time.monotonic() + LIVE_WAIT_S
    while True:
        have = {c.key(): c.state for c in system.controllers()}
        states = {f"{p.nqn} via {p.traddr}": have.get(p.key(), "missing") for p in wanted}
        if all(s == "live" for s in states.values()) or time.monotonic() > deadline:
            return states
        time.sleep(0.5)


def converge(params: dict[str, Any], check_mode: bool, system: System, host_name: str) -> dict[str, Any]:
    transport, trsvcid = str(params["transport"]), int(params["trsvcid"])
    timers = Timers(ctrl_loss_tmo=int(params["ctrl_loss_tmo"]), reconnect_delay=int(params["reconnect_delay"]),
                    fast_io_fail_tmo=int(params["fast_io_fail_tmo"]), keep_alive_tmo=int(params["keep_alive_tmo"]),
                    tos=int(params["tos"]))
    wanted = plan_paths(params["host_rails"], params["targets"], params["subsystems"],
                        int(params["paths_per_subsystem"]), host_name)
    absent = params.get("state") == "absent"
    if not absent and system.multipath() != "Y":
        raise PathsError(f"nvme_core native multipath is {system.multipath() or 'unknown'}, expected Y: "
                         f"the role set nvme_core.multipath=Y for the next boot; reboot, or reload nvme_core "
                         f"while no NVMe device is in use")
    controllers = system.controllers()
    before = "".join(f"{c.nqn} via {c.traddr}: {c.name} {c.state} ctrl_loss_tmo={c.ctrl_loss_tmo} "
                     f"reconnect_delay={c.reconnect_delay} fast_io_fail_tmo={c.fast_io_fail_tmo} kato={c.kato}\n"
                     for c in controllers if c.transport == transport)
    before += "".join(f"{nqn}: iopolicy {p}\n" for nqn, p in sorted(system.iopolicies().items()))
    if absent:
        actions = decide_absent(wanted, controllers, transport)
    else:
        actions = decide(wanted, controllers, timers, transport, system.iopolicies(), str(params["iopolicy"]))
    result: dict[str, Any] = {"changed": bool(actions), "actions": [a.describe() for a in actions],
                              "planned": [dataclasses.asdict(p) for p in wanted],
                              "diff": {"before": before, "after": "".join(a.describe() + "\n" for a in actions)}}
    if check_mode:
        return result
    connects = [a for a in actions if a.kind != "set_iopolicy"]
    for action in connects:
        apply(system, action, transport, trsvcid, timers)
    if absent:
        return result
    if any(a.kind in ("connect", "reconnect") for a in actions):  # timers nvme connect could not set
        fresh = decide(wanted, system.controllers(), timers, transport, {}, "")
        for action in (a for a in fresh if a.kind == "set_timer"):
            apply(system, action, transport, trsvcid, timers)
            result["actions"].append(action.describe())
    for action in actions:
        if action.kind == "set_iopolicy":
            apply(system, action, transport, trsvcid, timers)
    states = wait_live(system, wanted)
    result["paths"] = states
    down = {k: v for k, v in states.items() if v != "live"}
    if down and any(a.kind in ("connect", "reconnect") for a in actions):
        raise PathsError("paths not live after connecting: " + ", ".join(f"{k} is {v}" for k, v in down.items()))
    return result


ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "transport": {"type": "str", "required": True, "choices": ["rdma", "tcp"]},
    "trsvcid": {"type": "int", "required": True},
    "host_rails": {"type": "list", "elements": "dict", "required": True},
    "targets": {"type": "dict", "required": True},
    "subsystems": {"type": "list", "elements": "dict", "required": True},
    "paths_per_subsystem": {"type": "int", "required": True},
    "ctrl_loss_tmo": {"type": "int", "required": True},
    "reconnect_delay": {"type": "int", "required": True},
    "fast_io_fail_tmo": {"type": "int", "required": True},
    "keep_alive_tmo": {"type": "int", "required": True},
    "tos": {"type": "int", "required": True},
    "iopolicy": {"type": "str", "required": True, "choices": ["numa", "round-robin", "queue-depth"]},
    "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
}


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        module.exit_json(**converge(module.params, module.check_mode, System(), host_name=_hostname()))
    except PathsError as err:
        module.fail_json(msg=str(err))


def _hostname() -> str:
    return Path("/proc/sys/kernel/hostname").read_text().strip()


if __name__ == "__main__":
    main()
