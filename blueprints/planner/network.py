"""The hosts' management network: where monitoring listens and what the stacks open its ports to.

The spec's ``target.management_network`` when given. On the clouds without one, the network the stack creates
for the hosts, which the stacks then read from the Blueprint (``TargetPlan.management_network``): the AWS VPC
and the Azure VNet (10.0.0.0/16), GCP's range for the two gVNIC subnets (10.0.0.0/9, beside the rails'
10.128.0.0/9). Bare metal must name it (the spec refuses it missing); the lab plans its own (monitoring's
``lab_listen_on_last_rail``) and has none.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from blueprints.blueprint import Traced, traced
from blueprints.hosts import HostGroup
from blueprints.planner.context import PlanContext
from blueprints.spec import AwsTarget, AzureTarget, BaremetalTarget, GcpTarget, Requirements
from blueprints.subnets import carve, management_subnets

CLOUD_NETWORKS = {"aws": "10.0.0.0/16", "azure": "10.0.0.0/16", "gcp": "10.0.0.0/9"}
_WHY = {"aws": "the VPC the aws stack creates", "azure": "the VNet the azure stack creates",
        "gcp": "the range the gcp stack carves its two gVNIC subnets from (the rails use 10.128.0.0/9)"}


def plan_management_network(req: Requirements) -> Traced[str] | None:
    t = req.target
    if isinstance(t, AwsTarget | GcpTarget | AzureTarget | BaremetalTarget) and t.management_network is not None:
        return traced(t.management_network, ["target.management_network"], "network.management_from_spec",
                      "the spec names the management network")
    if isinstance(t, AwsTarget | GcpTarget | AzureTarget):
        cidr = CLOUD_NETWORKS[t.provider]
        return traced(cidr, ["target.provider"], "network.cloud_default",
                      f"{cidr}: {_WHY[t.provider]} (target.management_network chooses another)")
    return None


# Bare metal: the hosts are on the network already; besides them it holds its own address, its broadcast address and
# the gateway.
RESERVED_ON_BAREMETAL = 3


def check_management_fits(ctx: PlanContext, network: Traced[str] | None, hosts: Sequence[HostGroup]) -> None:
    """Refuse (InfeasibleError on ``target.management_network``) a management network too small for every host the
    plan makes: on the clouds, the subnets the stack carves from it for them (blueprints/subnets.py); on bare metal,
    an address for each. It was built and failed at ``pulumi up``, or on the hosts (issue 43)."""
    if network is None:
        return
    count = sum(g.count for g in hosts)
    provider = ctx.req.target.provider
    net = ipaddress.IPv4Network(network.value)
    prefixes = management_subnets(provider, count)
    if prefixes:
        try:
            carve(network.value, prefixes)
        except ValueError:
            shortest = _shortest(sum(2 ** (32 - p) for p in prefixes))
            subnets = ", ".join(f"/{p}" for p in prefixes)
            raise ctx.infeasible("target.management_network",
                                 f"{network.value} cannot hold the subnets the {provider} stack carves for {count} "
                                 f"hosts ({subnets}); expected a network of /{shortest} or larger") from None
    elif provider == "baremetal" and net.num_addresses < count + RESERVED_ON_BAREMETAL:
        need = count + RESERVED_ON_BAREMETAL
        raise ctx.infeasible("target.management_network",
                             f"{network.value} has {net.num_addresses} addresses and the plan makes {count} hosts "
                             f"(with the network's own, broadcast and gateway addresses: {need}); expected a network "
                             f"of /{_shortest(need)} or larger")


def _shortest(addresses: int) -> int:
    """The prefix length of the smallest network of at least ``addresses`` addresses."""
    return 32 - (addresses - 1).bit_length()
