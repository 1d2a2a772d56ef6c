"""Pure decisions about the lab's wiring: rail addresses, MAC addresses, netdev names, disk serials."""

from __future__ import annotations

import hashlib
import ipaddress
import re

from blueprints.lab_plan import LabPlan
from stacks.lab.errors import LabInputError

HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def check_plan(plan: LabPlan) -> None:
    """Everything ``up`` relies on, reported at once."""
    problems: list[str] = []
    names = [h.name for h in plan.hosts]
    if not names:
        problems.append("the lab plan has no hosts")
    problems += [f"host name {n!r} appears twice" for n in sorted({n for n in names if names.count(n) > 1})]
    problems += [f"host name {n!r} is not a valid hostname" for n in names if not HOSTNAME.match(n)]
    indexes = [r.index for r in plan.rails]
    if sorted(indexes) != list(range(len(indexes))):
        problems.append(f"rail indexes must be 0..{len(indexes) - 1}, got {indexes}")
    for rail in plan.rails:
        try:
            net = ipaddress.IPv4Network(rail.subnet)
        except ValueError as err:
            problems.append(f"rail {rail.name}: subnet {rail.subnet!r} is not an IPv4 network ({err})")
            continue
        if net.num_addresses - 2 < len(names):
            problems.append(f"rail {rail.name}: subnet {rail.subnet} has room for fewer than {len(names)} hosts")
        if net.overlaps(ipaddress.IPv4Network("10.0.2.0/24")):
            problems.append(f"rail {rail.name}: subnet {rail.subnet} overlaps the management net 10.0.2.0/24")
        if not 576 <= rail.mtu <= 65520:
            problems.append(f"rail {rail.name}: mtu {rail.mtu} is outside 576..65520")
    for host in plan.hosts:
        disk_names = [d.name for d in host.disks]
        if len(set(disk_names)) != len(disk_names):
            problems.append(f"host {host.name}: disk names repeat: {disk_names}")
    if problems:
        raise LabInputError("the lab plan cannot be booted:\n  " + "\n  ".join(problems))


def rail_address(subnet: str, host_index: int) -> tuple[str, int]:
    """Host ``i`` (plan order, storage targets first) gets the subnet's ``i + 1``-th address."""
    net = ipaddress.IPv4Network(subnet)
    return str(net.network_address + host_index + 1), net.prefixlen


def mac(lab_name: str, host_index: int, nic_index: int) -> str:
    """A locally administered MAC, unique per lab, host and NIC (0 is the management NIC)."""
    tag = hashlib.sha256(lab_name.encode()).digest()[0]
    return f"52:54:{tag:02x}:00:{host_index:02x}:{nic_index:02x}"


def netdev(rail_index: int) -> str:
    return f"rail{rail_index}"


def disk_serial(disk_name: str) -> str:
    return disk_name
