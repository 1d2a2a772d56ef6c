"""The hosts' management network: where monitoring listens and what the stacks open its ports to.

The spec's ``target.management_network`` when given. On the clouds without one, the network the stack creates
for the hosts, which the stacks then read from the Blueprint (``TargetPlan.management_network``): the AWS VPC
and the Azure VNet (10.0.0.0/16), GCP's range for the two gVNIC subnets (10.0.0.0/9, beside the rails'
10.128.0.0/9). Bare metal must name it (the spec refuses it missing); the lab plans its own (monitoring's
``lab_listen_on_last_rail``) and has none.
"""

from __future__ import annotations

from blueprints.blueprint import Traced, traced
from blueprints.spec import AwsTarget, AzureTarget, BaremetalTarget, GcpTarget, Requirements

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
