"""Where the design is built: the provider and what the stacks and renderers need of the spec's target."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.model import Frozen
from blueprints.traced import Traced

Provider = Literal["aws", "gcp", "azure", "baremetal", "lab"]


class TargetPlan(Frozen):
    """Where the design is built, resolved from the spec's ``target`` for the stacks and renderers.

    The MTU is ``fabric.mtu`` and every machine type is its host group's ``node_type`` (monitoring's too).
    """

    provider: Provider
    region: str | None = Field(default=None, description="Cloud region (aws, gcp, azure)")
    zone: str | None = Field(default=None, description="Zone of the placement group; None: the stack's config")
    project: str | None = Field(default=None, description="GCP project; None: the stack's config")
    machines: Literal["static", "maas", "equinix"] | None = Field(
        default=None, description="Bare metal: static racks (inventory only), or provisioned by maas or equinix")
    description: str = Field(default="", description="The design's description, for the Pulumi project")
    management_network: Traced[str] | None = Field(
        default=None, description="The hosts' management network: the spec's, or on the clouds the network the "
                                  "stack creates for them; None on the lab (its VMs share no management segment)")
