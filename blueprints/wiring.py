"""The cabling table, expanded from the Blueprint's wiring plan (blueprints.blueprint.wiring), and port names.

One row per cable, from the lower end (a host's NIC, a leaf's uplink) to the upper (a leaf's down-port, a spine's
port), in the order a technician works: compute before storage, hosts before uplinks. Hosts' NICs are named by the
inventory's rail index (``rail<r>``: the host's ``rails[r]``). The placement rules are the planner's
(blueprints/planner/wiring.py); this module only applies them, as ``blueprints.hosts`` expands host groups.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from blueprints.blueprint import Blueprint, CableRun, SwitchTier, WiredFabric
from blueprints.catalog import SwitchPorts

SUBPORT = "abcd"


class Port(NamedTuple):
    name: str  # what the switch's OS calls it (SONiC EthernetN, MLNX-OS 1/<cage>/<port>)
    label: str  # what the front panel says (SONiC's alias etpNa; the cage and port elsewhere)


class Cable(NamedTuple):
    fabric: WiredFabric
    kind: str
    from_device: str
    from_port: str
    to_device: str
    to_port: Port
    length: str


def sonic_lanes(ports: SwitchPorts, index: int) -> range:
    """The SerDes lanes of a SONiC switch's ``index``-th port (from 0): its cage's lanes split evenly among the cage's
    ports (port_config.ini: Ethernet4 of a 2 x 400G cage is lanes 4,5,6,7); EthernetN is named by its first lane."""
    if not 0 <= index < ports.cages * ports.per_cage:
        raise ValueError(f"port {index} of a {ports.cages} x {ports.per_cage}-port switch")
    cage, sub = divmod(index, ports.per_cage)
    width = ports.lanes_per_cage // ports.per_cage
    first = cage * ports.lanes_per_cage + sub * width
    return range(first, first + width)


def port_name(ports: SwitchPorts, index: int) -> Port:
    """The ``index``-th port (from 0) of a switch at the catalog's port speed."""
    if not 0 <= index < ports.cages * ports.per_cage:
        raise ValueError(f"port {index} of a {ports.cages} x {ports.per_cage}-port switch")
    cage, sub = divmod(index, ports.per_cage)
    if ports.os == "sonic":
        alias = f"etp{cage + 1}" + (SUBPORT[sub] if ports.per_cage > 1 else "")
        return Port(f"Ethernet{sonic_lanes(ports, index).start}", alias)
    if ports.os == "mlnx-os":
        return Port(f"1/{cage + 1}/{sub + 1}", f"cage {cage + 1} port {sub + 1}")
    return Port(str(index + 1), f"port {index + 1}")


def cumulus_interfaces(ports: SwitchPorts) -> tuple[str, str | None]:
    """How Cumulus Linux names every port of a Spectrum switch (the same hardware SONiC runs on) at the catalog's port
    speed, as one NVUE interface list, and the breakout that makes them: front-panel port (cage) c is ``swp<c>``, each
    of its n split ports ``swp<c>s0`` .. ``swp<c>s<n-1>`` after ``nv set interface swp<c> link breakout <n>x``
    (Cumulus Linux 5.14 user guide, Switch Port Attributes, "Breakout Ports": the SN5600's 128x 400G are its 64 OSFP
    cages broken out into 2x; NVUE takes ranges and comma lists, ``swp1s0-3``, ``swp1-4,swp6``)."""
    cages = f"swp1-{ports.cages}" if ports.cages > 1 else "swp1"
    if ports.per_cage == 1:
        return cages, None
    split = ",".join(f"swp{c}s0-{ports.per_cage - 1}" for c in range(1, ports.cages + 1))
    return split, f"nv set interface {cages} link breakout {ports.per_cage}x"


def all_ports(ports: SwitchPorts) -> list[Port]:
    """Every port of a switch, by index (named once per run, not once per cable)."""
    return [port_name(ports, i) for i in range(ports.cages * ports.per_cage)]


def _endpoints(bp: Blueprint, fabric: WiredFabric) -> Iterator[tuple[str, str]]:
    """(host, NIC) on a fabric, in placement order: every GPU node's rails (compute) or storage NICs, then (storage)
    every storage node's NICs."""
    if fabric == "compute":
        rails = bp.compute.rails.value
        for group in bp.groups_of("gpu_client"):
            for host in group.names():
                yield from ((host, f"rail{r}") for r in range(rails))
        return
    for group in bp.groups_of("gpu_client"):
        for host in group.names():
            yield from ((host, f"rail{r}") for r in bp.storage_fabric.client_rails.value)
    for group in bp.groups_of("storage_target"):
        for host in group.names():
            yield from ((host, f"rail{r}") for r in range(group.rail_nics))


def _node_leaf(bp: Blueprint, run: CableRun, leaves: SwitchTier, one_tier: bool) -> Iterator[Cable]:
    d = leaves.ports.cages * leaves.ports.per_cage // 2
    names = leaves.names()
    # NICs of a host that go to leaf groups of their own: the compute rails (rail-optimised), the storage NICs where
    # every host has as many (storage_fabric.nics_per_host)
    if run.fabric == "compute":
        groups = bp.compute.rails.value if bp.fabric.rail_optimized.value else 1
    else:
        groups = bp.storage_fabric.nics_per_host
    length = run.length.value if run.length is not None else ""
    named = all_ports(leaves.ports)
    for e, (host, nic) in enumerate(_endpoints(bp, run.fabric)):
        if one_tier:
            leaf, port = 0, e
        elif groups > 1:
            node, j = divmod(e, groups)
            leaf, port = (node // d) * groups + j, node % d
        else:
            leaf, port = divmod(e, d)
        yield Cable(run.fabric, run.kind, host, nic, names[leaf], named[port], length)


def _uplinks(run: CableRun, lower: SwitchTier, upper: SwitchTier, cables: int, pods: bool) -> Iterator[Cable]:
    """Each of ``lower``'s uplinks (its ports d .. k-1) to ``upper``."""
    d = lower.ports.cages * lower.ports.per_cage // 2
    up_names = upper.names()
    length = run.length.value if run.length is not None else ""
    lower_ports, upper_ports = all_ports(lower.ports), all_ports(upper.ports)
    for i, name in enumerate(lower.names()):
        pod, j = divmod(i, d)
        size = min(d, lower.count - pod * d)  # a pod's leaves and spines (the last pod may be partial)
        for u in range(d):
            g = i * d + u
            if run.kind == "spine-core":  # every spine's uplinks spread over the cores, each core's ports in turn
                target, port = g % upper.count, g // upper.count
            elif pods:  # within the pod: uplink h = j x d + u to spine h mod size, its port h // size
                h = j * d + u
                target, port = pod * d + h % size, h // size
            else:
                target, port = u // cables, i * cables + u % cables
            yield Cable(run.fabric, run.kind, name, lower_ports[d + u].name, up_names[target], upper_ports[port],
                        length)


def cables(bp: Blueprint) -> Iterator[Cable]:
    """Every planned cable, row by row (none where the wiring plan says why nothing is cabled)."""
    plan = bp.wiring
    if plan is None or plan.none_because is not None:
        return
    for run in plan.runs:
        leaves, spines, cores = (plan.tier(run.fabric, t) for t in ("leaf", "spine", "core"))
        assert leaves is not None
        per_spine = (bp.fabric.leaf_spine_cables if run.fabric == "compute" else bp.storage_fabric.leaf_spine_cables)
        if run.kind == "node-leaf":
            yield from _node_leaf(bp, run, leaves, spines is None)
        elif run.kind == "leaf-spine" and spines is not None:
            yield from _uplinks(run, leaves, spines, per_spine, cores is not None)
        elif run.kind == "spine-core" and spines is not None and cores is not None:
            yield from _uplinks(run, spines, cores, 1, True)
