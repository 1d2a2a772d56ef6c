#!/usr/bin/python3
"""Export NVMe-oF subsystems through the kernel target (nvmet configfs): namespaces, one port per rail.

Ansible module (``nvmet_target``) and, the same file, the boot-time applier run by
``clustersmith-nvmet.service``: ``python3 nvmet_target.py --apply /etc/clustersmith/nvmet.json``.
``read_state`` reads the configfs tree, ``decide`` (pure) lists the steps from it to the wanted state,
``apply`` takes them. Only the subsystems and ports named here are touched, and the host entries they link.

Every subsystem allows exactly its ``owner`` (or its ``allowed_hosts``) (``attr_allow_any_host=0``, one link per host
NQN under
``subsystems/<nqn>/allowed_hosts`` to ``hosts/<hostnqn>``); links to hosts no longer allowed are removed, and their
host entries once no subsystem links them. With ``auth: dhchap`` each host entry gets its DH-CHAP secret
(``dhchap_key``), this target's controller secret (``dhchap_ctrl_key``, bidirectional authentication) and
``dhchap_hash`` hmac(sha256). Secrets never appear in the steps or the diff; the boot-time state file holding them
is 0600 root (the role writes it).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import sys
from pathlib import Path
from typing import Any

DOCUMENTATION = r"""
module: nvmet_target
short_description: NVMe-oF target subsystems, namespaces and ports through nvmet configfs
description:
  - Creates each subsystem with its namespaces, one port per rail (id rail index + 1) on the rail's
    address, and links every subsystem to every port.
  - Changes only what differs; returns changed and a diff; supports check mode.
  - With state absent, unlinks and removes the named subsystems and ports.
options:
  subsystems:
    description: >-
      Subsystems, each with nqn, owner (the one host name it lets in) or allowed_hosts (host names), and either
      volume and uuid (namespace 1 on the LVM volume of volume_group, with that namespace UUID) or namespaces
      (nsid, device, optionally uuid).
    type: list
    elements: dict
    required: true
  rails:
    description: This target's rails (index, name, netdev, address); one port per rail, id index + 1.
    type: list
    elements: dict
    required: true
  transport:
    description: rdma or tcp.
    type: str
    required: true
    choices: [rdma, tcp]
  trsvcid:
    description: Service id (port number) of every port.
    type: int
    required: true
  namespace_device:
    description: Block device of namespace 1 of subsystems that list neither namespaces nor a volume.
    type: str
  volume_group:
    description: LVM volume group of the subsystems' volumes (nvmet_volumes carves them).
    type: str
  hosts:
    description: >-
      Hosts (name, nqn) a subsystem may allow: its owner, or the names its allowed_hosts lists.
    type: list
    elements: dict
    default: []
  auth:
    description: dhchap (set each allowed host's DH-CHAP secrets) or none (allowed_hosts only).
    type: str
    default: none
    choices: [dhchap, none]
  dhchap_secrets:
    description: Host name -> its DH-CHAP secret (DHHC-1), for auth dhchap.
    type: dict
    default: {}
  dhchap_ctrl_secret:
    description: This target's controller DH-CHAP secret (bidirectional authentication), for auth dhchap.
    type: str
  state:
    description: present or absent.
    type: str
    default: present
    choices: [present, absent]
author: clustersmith
"""

CONFIGFS = "/sys/kernel/config/nvmet"
DHCHAP_HASH = "hmac(sha256)"
SECRET_ATTRS = ("dhchap_key", "dhchap_ctrl_key")


class TargetError(Exception):
    """Input or host state the target cannot be built from; the message names what and what was expected."""


@dataclasses.dataclass(frozen=True)
class Namespace:
    nsid: int
    device: str
    enabled: bool = True
    uuid: str = ""  # wanted: "" leaves the kernel's own UUID


@dataclasses.dataclass(frozen=True)
class Subsystem:
    nqn: str
    namespaces: tuple[Namespace, ...]
    allow_any_host: bool = False
    allowed_hosts: tuple[str, ...] = ()  # host NQNs


@dataclasses.dataclass(frozen=True)
class Host:
    nqn: str
    dhchap_key: str = ""  # wanted: "" leaves the auth attributes alone (auth none)
    dhchap_ctrl_key: str = ""
    dhchap_hash: str = ""


@dataclasses.dataclass(frozen=True)
class Port:
    id: int
    trtype: str
    traddr: str
    trsvcid: str
    adrfam: str = "ipv4"
    subsystems: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Target:
    subsystems: dict[str, Subsystem]
    ports: dict[int, Port]
    hosts: dict[str, Host] = dataclasses.field(default_factory=dict)
    linked_elsewhere: frozenset[str] = frozenset()  # host NQNs that subsystems not named here link


@dataclasses.dataclass(frozen=True)
class Step:
    op: str  # mkdir | rmdir | write | link | unlink
    path: str  # relative to the nvmet configfs root
    value: str = ""
    secret: bool = False  # the value is a secret: never described

    def describe(self) -> str:
        if self.op == "write":
            return f"{self.path} = {'(secret)' if self.secret else self.value}"
        if self.op in ("link", "unlink"):
            return f"{self.op} {self.path} -> {self.value}"
        return f"{self.op} {self.path}"


def allowed_names(subsystem: dict[str, Any]) -> list[str]:
    """Host names a subsystem lets in: its ``owner``, or its ``allowed_hosts``."""
    if subsystem.get("owner"):
        return [str(subsystem["owner"])]
    return [str(n) for n in subsystem.get("allowed_hosts") or []]


def parse_hosts(subsystems: list[dict[str, Any]], hosts: list[dict[str, Any]], auth: str,
                dhchap_secrets: dict[str, str], dhchap_ctrl_secret: str | None) -> dict[str, Host]:
    """The host entries the subsystems' allowed hosts need, by NQN, with their secrets."""
    if auth not in ("dhchap", "none"):
        raise TargetError(f"auth {auth!r}; expected dhchap or none")
    by_name = {str(h["name"]): str(h["nqn"]) for h in hosts}
    wanted: dict[str, Host] = {}
    for item in subsystems:
        for name in allowed_names(item):
            nqn = by_name.get(str(name))
            if nqn is None or not nqn.startswith("nqn."):
                raise TargetError(f"subsystem {item['nqn']}: allowed host {name} has no host NQN in hosts "
                                  f"(got {nqn!r}); expected the Blueprint's nvmeof_hosts entry of every allowed host")
            if auth == "none":
                wanted[nqn] = Host(nqn=nqn)
                continue
            key = dhchap_secrets.get(str(name)) or ""
            if not key.startswith("DHHC-1:") or not str(dhchap_ctrl_secret or "").startswith("DHHC-1:"):
                missing = f"host {name}" if not key.startswith("DHHC-1:") else "this target's controller"
                raise TargetError(f"auth dhchap: no DH-CHAP secret for {missing} (a DHHC-1 secret expected, from "
                                  f"the cluster's secrets file, nvme_dhchap)")
            wanted[nqn] = Host(nqn=nqn, dhchap_key=key, dhchap_ctrl_key=str(dhchap_ctrl_secret),
                               dhchap_hash=DHCHAP_HASH)
    return wanted


def parse_wanted(subsystems: list[dict[str, Any]], rails: list[dict[str, Any]], transport: str,
                 trsvcid: int, namespace_device: str | None = None, hosts: list[dict[str, Any]] | None = None,
                 auth: str = "none", dhchap_secrets: dict[str, str] | None = None,
                 dhchap_ctrl_secret: str | None = None, volume_group: str | None = None) -> Target:
    """Subsystems with their namespaces (namespace 1 on the subsystem's ``volume`` of ``volume_group`` with its
    ``uuid``, or on ``namespace_device``) and allowed hosts; one port per rail (port id: rail index + 1), every
    subsystem on each."""
    wanted_hosts = parse_hosts(subsystems, hosts or [], auth, dhchap_secrets or {}, dhchap_ctrl_secret)
    by_name = {str(h["name"]): str(h["nqn"]) for h in hosts or []}
    subs: dict[str, Subsystem] = {}
    for item in subsystems:
        nqn = str(item["nqn"])
        if not nqn.startswith("nqn."):
            raise TargetError(f"subsystem NQN {nqn!r} must start with 'nqn.'")
        namespaces = []
        if item.get("volume") and not volume_group:
            raise TargetError(f"subsystem {nqn}: volume {item['volume']} but no volume_group; expected the LVM "
                              "volume group the volumes are carved in (nvmeof_volume_group)")
        default = ({"nsid": 1, "device": f"/dev/{volume_group}/{item['volume']}", "uuid": item.get("uuid")}
                   if item.get("volume") else {"nsid": 1, "device": namespace_device})
        for ns in item.get("namespaces") or [default]:
            device = str(ns.get("device") or "")
            if not device.startswith("/dev/"):
                raise TargetError(f"subsystem {nqn}: namespace {ns.get('nsid')} device {device!r} "
                                  f"is not a /dev path; expected the block device that backs it")
            namespaces.append(Namespace(nsid=int(ns["nsid"]), device=device, uuid=str(ns.get("uuid") or "").lower()))
        allowed = tuple(sorted(by_name[n] for n in allowed_names(item)))
        subs[nqn] = Subsystem(nqn=nqn, namespaces=tuple(namespaces), allowed_hosts=allowed)
    if transport not in ("rdma", "tcp"):
        raise TargetError(f"transport {transport!r}; expected rdma or tcp")
    ports: dict[int, Port] = {}
    for rail in rails:
        name = rail.get("name", rail.get("index"))
        try:
            traddr = str(ipaddress.IPv4Address(str(rail.get("address"))))
        except ValueError:
            raise TargetError(f"rail {name} ({rail.get('netdev')}): address {rail.get('address')!r} is not an "
                              f"IPv4 address; a target needs its address on every rail for that rail's port") from None
        port = Port(id=int(rail["index"]) + 1, trtype=transport, traddr=traddr, trsvcid=str(trsvcid),
                    subsystems=tuple(sorted(subs)))
        ports[port.id] = port
    return Target(subsystems=subs, ports=ports, hosts=wanted_hosts)


def _read(path: Path) -> str:
    # nvme_sysfs.read_attribute's twin: this module also runs alone at boot (--apply), where no module_utils exist
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _links(folder: Path) -> tuple[str, ...]:
    return tuple(sorted(p.name for p in folder.iterdir())) if folder.is_dir() else ()


def read_state(root: Path, nqns: list[str], port_ids: list[int], host_nqns: list[str] | None = None) -> Target:
    """The named subsystems and ports as configfs holds them now (missing ones are left out), the host entries
    named or linked by them, and which hosts other subsystems link."""
    subs: dict[str, Subsystem] = {}
    for nqn in nqns:
        base = root / "subsystems" / nqn
        if not base.is_dir():
            continue
        namespaces = []
        ns_root = base / "namespaces"
        for ns in sorted(ns_root.iterdir() if ns_root.is_dir() else [], key=lambda p: int(p.name)):
            namespaces.append(Namespace(nsid=int(ns.name), device=_read(ns / "device_path"),
                                        enabled=_read(ns / "enable") == "1", uuid=_read(ns / "device_uuid").lower()))
        subs[nqn] = Subsystem(nqn=nqn, namespaces=tuple(namespaces),
                              allow_any_host=_read(base / "attr_allow_any_host") == "1",
                              allowed_hosts=_links(base / "allowed_hosts"))
    ports: dict[int, Port] = {}
    for pid in port_ids:
        base = root / "ports" / str(pid)
        if not base.is_dir():
            continue
        linked = base / "subsystems"
        ports[pid] = Port(id=pid, trtype=_read(base / "addr_trtype"), traddr=_read(base / "addr_traddr"),
                          trsvcid=_read(base / "addr_trsvcid"), adrfam=_read(base / "addr_adrfam"),
                          subsystems=tuple(sorted(p.name for p in linked.iterdir())) if linked.is_dir() else ())
    hosts: dict[str, Host] = {}
    for hnqn in dict.fromkeys([*(host_nqns or []), *(h for s in subs.values() for h in s.allowed_hosts)]):
        base = root / "hosts" / hnqn
        if base.is_dir():
            hosts[hnqn] = Host(nqn=hnqn, dhchap_key=_read(base / "dhchap_key"),
                               dhchap_ctrl_key=_read(base / "dhchap_ctrl_key"), dhchap_hash=_read(base / "dhchap_hash"))
    others = root / "subsystems"
    elsewhere = frozenset(h for s in (others.iterdir() if others.is_dir() else []) if s.name not in nqns
                          for h in _links(s / "allowed_hosts"))
    return Target(subsystems=subs, ports=ports, hosts=hosts, linked_elsewhere=elsewhere)


def same_device(a: str, b: str) -> bool:
    return a == b or (bool(a) and bool(b) and os.path.realpath(a) == os.path.realpath(b))


def decide(wanted: Target, have: Target) -> list[Step]:
    """Steps from ``have`` to ``wanted``. Pure. Host entries come before the links to them; a subsystem stops
    allowing any host before its first link (the kernel refuses links while it does); a port's address changes only
    with no subsystem linked; host entries nothing links any more go last."""
    steps: list[Step] = []
    for hnqn, host in wanted.hosts.items():
        old_host = have.hosts.get(hnqn)
        if old_host is None:
            steps.append(Step("mkdir", f"hosts/{hnqn}"))
        if host.dhchap_key:  # auth dhchap
            for attr, value in (("dhchap_hash", host.dhchap_hash), ("dhchap_key", host.dhchap_key),
                                ("dhchap_ctrl_key", host.dhchap_ctrl_key)):
                if old_host is None or getattr(old_host, attr) != value:
                    steps.append(Step("write", f"hosts/{hnqn}/{attr}", value, secret=attr in SECRET_ATTRS))
    unlinked: set[str] = set()
    for nqn, sub in wanted.subsystems.items():
        base = f"subsystems/{nqn}"
        current = have.subsystems.get(nqn)
        if current is None:
            steps.append(Step("mkdir", base))
        if current is None or current.allow_any_host:
            steps.append(Step("write", f"{base}/attr_allow_any_host", "0"))
        linked_hosts = current.allowed_hosts if current else ()
        for hnqn in linked_hosts:
            if hnqn not in sub.allowed_hosts:
                steps.append(Step("unlink", f"{base}/allowed_hosts/{hnqn}", f"hosts/{hnqn}"))
                unlinked.add(hnqn)
        for hnqn in sub.allowed_hosts:
            if hnqn not in linked_hosts:
                steps.append(Step("link", f"{base}/allowed_hosts/{hnqn}", f"hosts/{hnqn}"))
        have_ns = {ns.nsid: ns for ns in (current.namespaces if current else ())}
        for ns in sub.namespaces:
            path = f"{base}/namespaces/{ns.nsid}"
            old = have_ns.get(ns.nsid)
            if old is None:
                steps.append(Step("mkdir", path))
            uuid_differs = bool(ns.uuid) and (old is None or old.uuid != ns.uuid)
            if old is None or not same_device(old.device, ns.device) or uuid_differs:
                if old is not None and old.enabled:  # device_path and device_uuid are read-only while enabled
                    steps.append(Step("write", f"{path}/enable", "0"))
                if old is None or not same_device(old.device, ns.device):
                    steps.append(Step("write", f"{path}/device_path", ns.device))
                if uuid_differs:
                    steps.append(Step("write", f"{path}/device_uuid", ns.uuid))
                steps.append(Step("write", f"{path}/enable", "1"))
            elif not old.enabled:
                steps.append(Step("write", f"{path}/enable", "1"))
    for pid, port in wanted.ports.items():
        base = f"ports/{pid}"
        current_port = have.ports.get(pid)
        linked: tuple[str, ...] = current_port.subsystems if current_port else ()
        address = {"addr_trtype": port.trtype, "addr_adrfam": port.adrfam, "addr_traddr": port.traddr,
                   "addr_trsvcid": port.trsvcid}
        differs = {k: v for k, v in address.items()
                   if current_port is None or getattr(current_port, k.removeprefix("addr_")) != v}
        if current_port is None:
            steps.append(Step("mkdir", base))
        if differs:
            for nqn in linked:  # a port is enabled while it has subsystems; its address is then read-only
                steps.append(Step("unlink", f"{base}/subsystems/{nqn}", f"subsystems/{nqn}"))
            linked = ()
            steps += [Step("write", f"{base}/{k}", v) for k, v in differs.items()]
        for nqn in port.subsystems:
            if nqn not in linked:
                steps.append(Step("link", f"{base}/subsystems/{nqn}", f"subsystems/{nqn}"))
    steps += [Step("rmdir", f"hosts/{h}") for h in sorted(unlinked - set(wanted.hosts) - have.linked_elsewhere)
              if h in have.hosts]
    return steps


def decide_absent(wanted: Target, have: Target) -> list[Step]:
    steps: list[Step] = []
    for pid in wanted.ports:
        port = have.ports.get(pid)
        if port is None:
            continue
        ours = [nqn for nqn in port.subsystems if nqn in wanted.subsystems]
        steps += [Step("unlink", f"ports/{pid}/subsystems/{nqn}", f"subsystems/{nqn}") for nqn in ours]
        if len(ours) == len(port.subsystems):  # a port other subsystems still use stays
            steps.append(Step("rmdir", f"ports/{pid}"))
    unlinked: set[str] = set()
    for nqn in wanted.subsystems:
        sub = have.subsystems.get(nqn)
        if sub is None:
            continue
        for hnqn in sub.allowed_hosts:
            steps.append(Step("unlink", f"subsystems/{nqn}/allowed_hosts/{hnqn}", f"hosts/{hnqn}"))
            unlinked.add(hnqn)
        for ns in sub.namespaces:
            if ns.enabled:
                steps.append(Step("write", f"subsystems/{nqn}/namespaces/{ns.nsid}/enable", "0"))
            steps.append(Step("rmdir", f"subsystems/{nqn}/namespaces/{ns.nsid}"))
        steps.append(Step("rmdir", f"subsystems/{nqn}"))
    steps += [Step("rmdir", f"hosts/{h}") for h in sorted(unlinked - have.linked_elsewhere) if h in have.hosts]
    return steps


def apply(root: Path, steps: list[Step]) -> None:
    for step in steps:
        path = root / step.path
        if step.op == "write" and path.name.startswith("dhchap_") and not path.exists():  # configfs makes no files
            raise TargetError(f"nvmet configfs has no {step.path}: this kernel's NVMe target cannot do DH-CHAP "
                              f"(built without CONFIG_NVME_TARGET_AUTH); expected a kernel with it, or a "
                              f"Blueprint whose storage.nvmeof.auth is none")
        try:
            if step.op == "mkdir":
                path.mkdir()
            elif step.op == "rmdir":
                path.rmdir()
            elif step.op == "write":
                path.write_text(step.value)
            elif step.op == "link":
                path.symlink_to(root / step.value)
            elif step.op == "unlink":
                path.unlink()
        except OSError as err:
            raise TargetError(f"nvmet configfs: {step.describe()} failed: {err.strerror or err}") from None


def render(target: Target) -> str:
    lines = []
    for nqn, sub in sorted(target.subsystems.items()):
        lines.append(f"subsystem {nqn} allow_any_host={int(sub.allow_any_host)} "
                     f"allowed_hosts={','.join(sub.allowed_hosts) or '-'}")
        lines += [f"  namespace {ns.nsid} {ns.device} enabled={int(ns.enabled)}"
                  + (f" uuid={ns.uuid}" if ns.uuid else "") for ns in sub.namespaces]
    for pid, port in sorted(target.ports.items()):
        lines.append(f"port {pid} {port.trtype} {port.traddr}:{port.trsvcid} -> {', '.join(port.subsystems) or '-'}")
    for hnqn, host in sorted(target.hosts.items()):  # whether a secret is set, never the secret
        lines.append(f"host {hnqn} dhchap_key={'set' if host.dhchap_key else 'unset'} "
                     f"dhchap_ctrl_key={'set' if host.dhchap_ctrl_key else 'unset'} {host.dhchap_hash}".rstrip())
    return "\n".join(lines) + ("\n" if lines else "")


def converge(params: dict[str, Any], check_mode: bool, root: Path = Path(CONFIGFS)) -> dict[str, Any]:
    wanted = parse_wanted(params["subsystems"], params["rails"], str(params["transport"]), int(params["trsvcid"]),
                          params.get("namespace_device"), params.get("hosts") or [], str(params.get("auth") or "none"),
                          params.get("dhchap_secrets") or {}, params.get("dhchap_ctrl_secret"),
                          params.get("volume_group"))
    if not root.is_dir():
        raise TargetError(f"{root} does not exist: load the nvmet module and mount configfs first")
    if params.get("state", "present") == "present":
        for sub in wanted.subsystems.values():
            for ns in sub.namespaces:
                if not Path(ns.device).exists():
                    raise TargetError(f"subsystem {sub.nqn}: namespace device {ns.device} does not exist on this "
                                      f"host; expected the block device that backs it (its LVM volume, carved "
                                      f"from nvmeof_namespace_pool)")
    have = read_state(root, list(wanted.subsystems), list(wanted.ports), list(wanted.hosts))
    absent = params.get("state") == "absent"
    steps = decide_absent(wanted, have) if absent else decide(wanted, have)
    if steps and not check_mode:
        apply(root, steps)
    after = Target({}, {}) if absent else wanted
    return {"changed": bool(steps), "steps": [s.describe() for s in steps],
            "diff": {"before": render(have), "after": render(after)}}


ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "subsystems": {"type": "list", "elements": "dict", "required": True},
    "rails": {"type": "list", "elements": "dict", "required": True},
    "transport": {"type": "str", "required": True, "choices": ["rdma", "tcp"]},
    "trsvcid": {"type": "int", "required": True},
    "namespace_device": {"type": "str"},
    "volume_group": {"type": "str"},
    "hosts": {"type": "list", "elements": "dict", "default": []},
    "auth": {"type": "str", "default": "none", "choices": ["dhchap", "none"]},
    "dhchap_secrets": {"type": "dict", "default": {}, "no_log": True},
    "dhchap_ctrl_secret": {"type": "str", "no_log": True},
    "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
}


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        module.exit_json(**converge(module.params, module.check_mode))
    except TargetError as err:
        module.fail_json(msg=str(err))


def boot(config: str) -> int:
    try:
        result = converge(json.loads(Path(config).read_text()), False)
    except (OSError, ValueError, TargetError) as err:
        print(f"clustersmith-nvmet: {err}", file=sys.stderr)
        return 1
    print(f"clustersmith-nvmet: {len(result['steps'])} step(s)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--apply" and os.path.isfile(sys.argv[2]):
        sys.exit(boot(sys.argv[2]))
    main()
