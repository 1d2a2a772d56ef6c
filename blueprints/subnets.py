"""The subnets each cloud stack carves from the management network, so the planner can refuse a network too small
for the hosts it plans before anything is built (a /20 VPC for thousands of hosts failed at ``pulumi up``).

The stacks (stacks/aws.py, gcp.py, azure.py) carve exactly ``management_subnets(provider, hosts)`` out of the
Blueprint's ``target.management_network``; the planner (blueprints/planner/network.py) carves the same list to check
that it fits. One layout, read by both.
"""

from __future__ import annotations

import ipaddress
import math

AMLFS_SUBNET_PREFIX = 24  # Azure Managed Lustre: "at least a /24 subnet mask" (storagecache AmlFilesystem)
FSX_SUBNET_PREFIX = 22  # AWS: the FSx for Lustre file system's subnet
PUBLIC_SUBNET_PREFIX = 24  # AWS: the NAT gateway's public subnet
GCP_HOST_NICS = 2  # GCP: gVNICs on regular VPCs, each in its own subnet, before the RDMA NICs


def prefix_for(hosts: int, at_most: int = 24) -> int:
    """The longest prefix whose subnet holds ``hosts`` addresses plus five the clouds reserve, at most /at_most."""
    return min(at_most, 32 - math.ceil(math.log2(hosts + 5)))


def carve(parent: str, prefixes: list[int]) -> list[str]:
    """Consecutive, aligned subnets of ``parent`` with the given prefix lengths, largest first in address order."""
    net = ipaddress.IPv4Network(parent)
    order = sorted(range(len(prefixes)), key=lambda i: prefixes[i])
    out: dict[int, str] = {}
    cursor = int(net.network_address)
    for i in order:
        size = 2 ** (32 - prefixes[i])
        cursor = (cursor + size - 1) // size * size
        sub = ipaddress.IPv4Network((cursor, prefixes[i]))
        if not sub.subnet_of(net):
            raise ValueError(f"{parent} cannot hold subnets of /{sorted(prefixes)}")
        out[i] = str(sub)
        cursor += size
    return [out[i] for i in range(len(prefixes))]


def management_subnets(provider: str, hosts: int) -> list[int]:
    """The prefix lengths a cloud stack carves from the management network for ``hosts`` machines, in the order
    the stack names them; empty where the stack carves none (bare metal: the hosts are on it already)."""
    hosts_prefix = prefix_for(hosts)
    return {"aws": [hosts_prefix, FSX_SUBNET_PREFIX, PUBLIC_SUBNET_PREFIX],
            "azure": [hosts_prefix, AMLFS_SUBNET_PREFIX],
            "gcp": [hosts_prefix] * GCP_HOST_NICS}.get(provider, [])
