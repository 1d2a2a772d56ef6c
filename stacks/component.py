"""What every target's ``ComponentResource`` shares: host records, the ``clustersmith`` output, subnets
(``carve`` and ``prefix_for`` live in blueprints/subnets.py, where the planner checks the same layout)."""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field
from typing import Any

import pulumi

from blueprints.fleet_plan import Fleet
from blueprints.hosts import INVENTORY_GROUPS
from stacks.model import Machine
from stacks.outputs import RailKind


@dataclass
class RailOut:
    index: int
    kind: RailKind
    netdev: str | None = None
    address: pulumi.Input[str] | None = None
    prefix: int | None = None
    network_card: int | None = None

    def value(self) -> dict[str, Any]:
        return {"index": self.index, "name": f"rail{self.index}", "kind": self.kind, "netdev": self.netdev,
                "address": self.address, "prefix": self.prefix, "network_card": self.network_card}


@dataclass
class HostOut:
    machine: Machine
    address: pulumi.Input[str]
    user: str
    rails: list[RailOut] = field(default_factory=list)

    def value(self) -> pulumi.Output[str]:
        """The host as JSON once its addresses resolve. Only the addresses that are Outputs are awaited, and
        the result is a string: an apply that returned nested dicts would lift every field of every rail into
        an Output again (a 2,048-host stack with 32 rails each spends minutes doing that)."""
        m = self.machine
        rails = [r.value() for r in self.rails]
        waits = [i for i, r in enumerate(rails) if isinstance(r["address"], pulumi.Output)]
        pending = [self.address] + [rails[i]["address"] for i in waits]

        def resolved(values: list[Any]) -> str:
            for i, address in zip(waits, values[1:], strict=True):
                rails[i]["address"] = address
            return json.dumps({"name": m.name, "role": m.role, "group": m.group, "node_type": m.node_type,
                               "address": values[0], "user": self.user, "rails": rails})

        return pulumi.Output.all(*pending).apply(resolved)


@dataclass
class FleetOut:
    """A fleet resource the stack created: where the provider API finds it (``ref``, ``stacks.outputs.FleetRef``),
    and what its instances' hosts look like."""

    fleet: Fleet
    ref: pulumi.Input[dict[str, Any]]
    user: str
    host_tag: str
    rails: list[RailOut] = field(default_factory=list)

    def value(self) -> pulumi.Output[str]:
        f = self.fleet
        rails = [r.value() for r in self.rails]
        return pulumi.Output.from_input(self.ref).apply(lambda ref: json.dumps({
            "name": f.name, "ref": ref, "role": f.role, "group": INVENTORY_GROUPS[f.role], "node_type": f.node_type,
            "name_prefix": f.name_prefix, "first": f.first, "size": f.size, "host_tag": self.host_tag,
            "user": self.user, "rails": rails}))


def stack_outputs(design: str, provider: str, hosts: list[HostOut],
                  file_system: pulumi.Input[dict[str, Any]] | None = None,
                  fleets: list[FleetOut] | None = None) -> pulumi.Output[str]:
    """The ``clustersmith`` output: ``stacks.outputs.StackOutputs`` as a JSON string, from the hosts' and the
    fleets' outputs."""
    fs = pulumi.Output.from_input(file_system).apply(json.dumps)
    fleet_values = [f.value() for f in fleets or []]
    n = len(fleet_values)
    return pulumi.Output.all(fs, *fleet_values, *[h.value() for h in hosts]).apply(lambda parts: json.dumps({
        "design": design, "provider": provider, "file_system": json.loads(parts[0]),
        "fleets": [json.loads(f) for f in parts[1:1 + n]], "hosts": [json.loads(h) for h in parts[1 + n:]]}))


def nth_address(cidr: str, n: int) -> str:
    """The n-th usable address of a subnet, counting from 10 (the first ten are left to the network)."""
    net = ipaddress.IPv4Network(cidr)
    address = net.network_address + 10 + n
    if address >= net.broadcast_address:
        raise ValueError(f"{cidr} has no address number {n + 10}")
    return str(address)
