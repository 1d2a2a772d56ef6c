#!/usr/bin/python3
"""Connect this host to every NVMe-oF subsystem over every rail, with native multipath and its I/O policy.

Ansible module (``nvme_paths``). Paths pair the host's rail NIC with the target's NIC of the same rail
index. Each missing path is checked with ``nvme discover`` on that rail (the target must offer the
subsystem there) and connected with ``nvme connect`` and the Blueprint's timers; live paths whose
timers differ are corrected through sysfs (keep-alive needs a reconnect of that path alone); the
subsystem's ``iopolicy`` is set. ``read_state`` reads sysfs, ``decide`` (pure) plans, ``apply`` acts.

Every discover and connect names the Blueprint's host NQN and host ID (the target lets in only those), and, with
DH-CHAP, the host's secret and the serving target's controller secret (bidirectional authentication). A path made
with another host NQN or secret (an earlier identity, a rotated secret) is reconnected. nvme-cli takes the
secrets only as arguments, so they are on ``nvme connect``'s command line while it runs; they never appear in the
module's result or messages.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from ansible.module_utils.nvme_sysfs import parse_address, parse_timer, read_attribute

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
  hostnqn: {type: str, required: true, description: This host's NQN (the Blueprint's)}
  hostid: {type: str, required: true, description: This host's ID (a UUID)}
  dhchap_secret: {type: str, description: "This host's DH-CHAP secret (DHHC-1); unset: no authentication"}
  dhchap_ctrl_secrets: {type: dict, default: {}, description: Target name -> its controller's DH-CHAP secret}
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
    target: str = ""  # inventory name of the serving target

    def key(self) -> tuple[str, str]:
        return (self.nqn, self.traddr)


@dataclasses.dataclass(frozen=True)
class Identity:
    """Who this host is to the targets: the Blueprint's host NQN and ID, and its DH-CHAP secrets."""

    hostnqn: str
    hostid: str
    dhchap_secret: str = ""  # "": no authentication
    dhchap_ctrl_secrets: tuple[tuple[str, str], ...] = ()  # (target name, its controller's secret)

    def ctrl_secret(self, target: str) -> str:
        return dict(self.dhchap_ctrl_secrets).get(target, "")


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
    hostnqn: str = ""  # "": unknown
    dhchap_secret: str | None = None  # None: the kernel shows none (no CONFIG_NVME_AUTH)
    dhchap_ctrl_secret: str | None = None

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
                host_iface=str(rail["netdev"]), target=target,
            ))
    return wanted


def _stale_identity(ctrl: Controller, path: WantedPath, identity: Identity | None) -> str:
    """Why a live path does not carry this host's identity ("" when it does)."""
    if identity is None:
        return ""
    if ctrl.hostnqn and ctrl.hostnqn != identity.hostnqn:
        return f"{ctrl.name} connected as {ctrl.hostnqn}, wanted {identity.hostnqn}"
    if identity.dhchap_secret and ctrl.dhchap_secret is not None and ctrl.dhchap_secret != identity.dhchap_secret:
        return f"{ctrl.name} authenticates with another DH-CHAP secret"
    wanted_ctrl = identity.ctrl_secret(path.target)
    if wanted_ctrl and ctrl.dhchap_ctrl_secret is not None and ctrl.dhchap_ctrl_secret != wanted_ctrl:
        return f"{ctrl.name} checks the target with another DH-CHAP controller secret"
    return ""


def decide(wanted: list[WantedPath], controllers: list[Controller], timers: Timers, transport: str,
           iopolicies: dict[str, str], iopolicy: str, identity: Identity | None = None) -> list[Action]:
    """Connect what is missing, reconnect paths of another host identity, fix timers that differ, set the I/O
    policy. Pure."""
    actions: list[Action] = []
    have = {c.key(): c for c in controllers if c.transport == transport}
    for path in wanted:
        ctrl = have.get(path.key())
        label = f"{path.nqn} via {path.traddr}"
        if ctrl is None:
            actions.append(Action("connect", label, f"rail {path.rail} from {path.host_iface}", path=path))
            continue
        stale = _stale_identity(ctrl, path, identity)
        if stale:
            actions.append(Action("reconnect", label, stale, path=path, controller=ctrl.name))
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


def _identity_argv(identity: Identity | None) -> list[str]:
    return [f"--hostnqn={identity.hostnqn}", f"--hostid={identity.hostid}"] if identity else []


def connect_argv(path: WantedPath, transport: str, trsvcid: int, timers: Timers,
                 identity: Identity | None = None) -> list[str]:
    """``nvme connect`` with the timers nvme-cli takes, this host's identity and secrets; fast_io_fail_tmo (not an
    option of nvme-cli 2.3) is written to sysfs right after, like a drifted timer."""
    argv = ["nvme", "connect", f"--transport={transport}", f"--traddr={path.traddr}", f"--trsvcid={trsvcid}",
            f"--nqn={path.nqn}", f"--ctrl-loss-tmo={timers.ctrl_loss_tmo}",
            f"--reconnect-delay={timers.reconnect_delay}", f"--keep-alive-tmo={timers.keep_alive_tmo}",
            f"--tos={timers.tos}", *_identity_argv(identity)]
    if path.host_traddr:
        argv.append(f"--host-traddr={path.host_traddr}")
    if transport == "tcp":
        argv.append(f"--host-iface={path.host_iface}")
    if identity is not None and identity.dhchap_secret:
        argv.append(f"--dhchap-secret={identity.dhchap_secret}")
        if identity.ctrl_secret(path.target):
            argv.append(f"--dhchap-ctrl-secret={identity.ctrl_secret(path.target)}")
    return argv


def discover_argv(path: WantedPath, transport: str, trsvcid: int, identity: Identity | None = None) -> list[str]:
    """``nvme discover`` as this host: the target's discovery log lists only the subsystems that allow it."""
    argv = ["nvme", "discover", f"--transport={transport}", f"--traddr={path.traddr}", f"--trsvcid={trsvcid}",
            "--output-format=json", *_identity_argv(identity)]
    if path.host_traddr:
        argv.append(f"--host-traddr={path.host_traddr}")
    return argv


def shown(argv: list[str]) -> str:
    """A command line as messages may show it: secrets masked."""
    return " ".join(a.split("=", 1)[0] + "=(secret)" if a.startswith("--dhchap-") else a for a in argv)


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
            raise PathsError(f"`{shown(argv)}` failed ({done.returncode}): "
                             f"{(done.stderr or done.stdout).strip()}")
        return done.stdout

    def controllers(self) -> list[Controller]:
        found = []
        base = self.sys / "class" / "nvme"
        for entry in sorted(base.iterdir() if base.is_dir() else []):
            transport = read_attribute(entry / "transport")
            if transport not in ("rdma", "tcp"):
                continue
            address = parse_address(read_attribute(entry / "address"))
            found.append(Controller(
                name=entry.name, transport=transport, nqn=read_attribute(entry / "subsysnqn"),
                traddr=address.get("traddr", ""), trsvcid=address.get("trsvcid", ""),
                state=read_attribute(entry / "state"),
                ctrl_loss_tmo=parse_timer(read_attribute(entry / "ctrl_loss_tmo")),
                reconnect_delay=parse_timer(read_attribute(entry / "reconnect_delay")),
                fast_io_fail_tmo=parse_timer(read_attribute(entry / "fast_io_fail_tmo")),
                kato=parse_timer(read_attribute(entry / "kato")),
                hostnqn=read_attribute(entry / "hostnqn"),
                dhchap_secret=read_attribute(entry / "dhchap_secret") if (entry / "dhchap_secret").exists() else None,
                dhchap_ctrl_secret=(read_attribute(entry / "dhchap_ctrl_secret")
                                    if (entry / "dhchap_ctrl_secret").exists() else None),
            ))
        return found

    def iopolicies(self) -> dict[str, str]:
        found = {}
        base = self.sys / "class" / "nvme-subsystem"
        for entry in sorted(base.iterdir() if base.is_dir() else []):
            found[read_attribute(entry / "subsysnqn")] = read_attribute(entry / "iopolicy")
        return found

    def multipath(self) -> str:
        return read_attribute(self.sys / "module" / "nvme_core" / "parameters" / "multipath")

    def subsystem_dir(self, nqn: str) -> Path | None:
        base = self.sys / "class" / "nvme-subsystem"
        for entry in sorted(base.iterdir() if base.is_dir() else []):
            if read_attribute(entry / "subsysnqn") == nqn:
                return entry
        return None


def apply(system: System, action: Action, transport: str, trsvcid: int, timers: Timers,
          identity: Identity | None = None) -> None:
    if action.kind in ("disconnect", "reconnect"):
        system.run(["nvme", "disconnect", f"--device={action.controller}"])
    if action.kind in ("connect", "reconnect"):
        assert action.path is not None
        found = offered(system.run(discover_argv(action.path, transport, trsvcid, identity)))
        if action.path.nqn not in found:
            raise PathsError(f"the target at {action.path.traddr}:{trsvcid} ({transport}, rail "
                             f"{action.path.rail}) does not offer {action.path.nqn} to this host"
                             f"{f' ({identity.hostnqn})' if identity else ''}; it offers: "
                             f"{', '.join(sorted(found)) or 'nothing'} (is the host in the subsystem's allowed_hosts?)")
        system.run(connect_argv(action.path, transport, trsvcid, timers, identity))
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
    identity = Identity(hostnqn=str(params["hostnqn"]), hostid=str(params["hostid"]),
                        dhchap_secret=str(params.get("dhchap_secret") or ""),
                        dhchap_ctrl_secrets=tuple(sorted((str(k), str(v)) for k, v in
                                                         (params.get("dhchap_ctrl_secrets") or {}).items())))
    if identity.dhchap_secret and any(not identity.ctrl_secret(p.target) for p in wanted):
        raise PathsError("DH-CHAP: no controller secret for " + ", ".join(sorted(
            {p.target for p in wanted if not identity.ctrl_secret(p.target)})) + "; expected one per serving target "
            "(nvme_dhchap.controllers of the cluster's secrets file)")
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
        actions = decide(wanted, controllers, timers, transport, system.iopolicies(), str(params["iopolicy"]),
                         identity)
    result: dict[str, Any] = {"changed": bool(actions), "actions": [a.describe() for a in actions],
                              "planned": [dataclasses.asdict(p) for p in wanted],
                              "diff": {"before": before, "after": "".join(a.describe() + "\n" for a in actions)}}
    if check_mode:
        return result
    connects = [a for a in actions if a.kind != "set_iopolicy"]
    for action in connects:
        apply(system, action, transport, trsvcid, timers, identity)
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
    "hostnqn": {"type": "str", "required": True},
    "hostid": {"type": "str", "required": True},
    "dhchap_secret": {"type": "str", "no_log": True},
    "dhchap_ctrl_secrets": {"type": "dict", "default": {}, "no_log": True},
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
