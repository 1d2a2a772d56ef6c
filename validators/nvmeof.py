"""nvme-cli ``nvme list-subsys -o json`` into typed subsystems and paths (NVMe-oF native multipath).

nvme-cli 2.x prints ``[{HostNQN, HostID, Subsystems: [{Name, NQN, [IOPolicy], Paths: [{Name, Transport,
Address, State}]}]}]``; 1.x prints one object whose ``Subsystems`` list alternates ``{Name, NQN}`` and
``{Paths: [...]}``. Both are read. ``Address`` is ``traddr=...,trsvcid=...[,host_traddr=...]``.
"""

from __future__ import annotations

import json

from pydantic import Field

from blueprints.model import Frozen
from validators.errors import parse_error
from validators.source import json_loads


class NvmePath(Frozen):
    name: str = Field(description="Controller, e.g. nvme0")
    transport: str
    address: dict[str, str] = Field(description="traddr, trsvcid, host_traddr, ...")
    state: str = Field(description="live, connecting, resetting, deleting, ...")

    @property
    def live(self) -> bool:
        return self.state == "live"


class NvmeSubsystem(Frozen):
    name: str
    nqn: str
    iopolicy: str | None = None
    paths: tuple[NvmePath, ...] = ()

    @property
    def fabrics(self) -> bool:
        return any(p.transport in ("rdma", "tcp", "fc") for p in self.paths)


class ListSubsys(Frozen):
    source: str
    host_nqn: str | None = None
    subsystems: tuple[NvmeSubsystem, ...]


def _address(text: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, _, v in (part.partition("=") for part in text.split(",")) if k.strip()}


def _paths(raw: object, source: str, where: str) -> tuple[NvmePath, ...]:
    if not isinstance(raw, list):
        raise parse_error(source, "nvme list-subsys", where, "expected a list of paths", raw)
    out = []
    for i, p in enumerate(raw):
        if not isinstance(p, dict) or not {"Name", "Transport", "State"} <= set(p):
            raise parse_error(source, "nvme list-subsys", f"{where}.{i}", "expected a path with Name, Transport, "
                              "Address and State", p)
        out.append(NvmePath(name=str(p["Name"]), transport=str(p["Transport"]), address=_address(str(p.get(
            "Address", ""))), state=str(p["State"])))
    return tuple(out)


def parse_list_subsys(text: str, source: str = "<nvme list-subsys>") -> ListSubsys:
    try:
        doc = json_loads(text) if text.strip() else {"Subsystems": []}
    except json.JSONDecodeError as exc:
        raise parse_error(source, "nvme list-subsys", f"(line {exc.lineno})", f"invalid JSON: {exc.msg} "
                          "(run nvme list-subsys -o json)") from None
    hosts = doc if isinstance(doc, list) else [doc]
    subsystems: list[NvmeSubsystem] = []
    host_nqn = None
    for h, host in enumerate(hosts):
        if not isinstance(host, dict) or not isinstance(host.get("Subsystems", []), list):
            raise parse_error(source, "nvme list-subsys", f"{h}.Subsystems", "expected a list of subsystems", host)
        host_nqn = host_nqn or host.get("HostNQN")
        pending: dict[str, object] | None = None
        for i, entry in enumerate(host.get("Subsystems", [])):
            where = f"{h}.Subsystems.{i}"
            if isinstance(entry, dict) and "NQN" in entry:
                if pending is not None:
                    subsystems.append(_subsystem(pending, (), source, where))
                pending = entry
                if "Paths" in entry:
                    subsystems.append(_subsystem(entry, _paths(entry["Paths"], source, f"{where}.Paths"), source,
                                                 where))
                    pending = None
            elif isinstance(entry, dict) and "Paths" in entry and pending is not None:  # nvme-cli 1.x
                subsystems.append(_subsystem(pending, _paths(entry["Paths"], source, f"{where}.Paths"), source, where))
                pending = None
            else:
                raise parse_error(source, "nvme list-subsys", where, "expected a subsystem with Name and NQN", entry)
        if pending is not None:
            subsystems.append(_subsystem(pending, (), source, f"{h}.Subsystems"))
    return ListSubsys(source=source, host_nqn=host_nqn, subsystems=tuple(subsystems))


def _subsystem(entry: dict[str, object], paths: tuple[NvmePath, ...], source: str, where: str) -> NvmeSubsystem:
    if "Name" not in entry:
        raise parse_error(source, "nvme list-subsys", f"{where}.Name", "expected the subsystem's name", entry)
    policy = entry.get("IOPolicy")
    return NvmeSubsystem(name=str(entry["Name"]), nqn=str(entry["NQN"]), iopolicy=str(policy) if policy else None,
                         paths=paths)
