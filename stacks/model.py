"""Typed inputs every stack shares, built from the Blueprint only: the machines, their roles and names, tags.

Each target's component takes its own ``<Target>ClusterArgs`` (a subclass of ``ClusterArgs``) made by
``from_blueprint``; nothing here touches Pulumi, so the models are cheap to build and test.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from pydantic import Field

from blueprints.blueprint import Blueprint, ManagedFsPlan
from blueprints.fleet_plan import FleetsPlan
from blueprints.hosts import INVENTORY_GROUPS, HostRole, InventoryGroup, expand
from blueprints.model import Frozen


class StackError(Exception):
    """A stack cannot be built from this Blueprint and configuration; the message says what to change."""


class Machine(Frozen):
    """One machine the stack provisions (or, in static mode, records)."""

    name: str = Field(description="Host name, also the inventory name, e.g. gpu-1")
    role: HostRole
    node_type: str = Field(description="Instance type or server model from the Blueprint")
    index: int = Field(description="0-based index within its host group")

    @property
    def group(self) -> InventoryGroup:
        return INVENTORY_GROUPS[self.role]


class Labels(Frozen):
    """What every resource is tagged with: the design and the spec it was planned from."""

    design: str
    spec: str

    def tags(self) -> dict[str, str]:
        """AWS and Azure tags."""
        return {"clustersmith:design": self.design, "clustersmith:spec": self.spec}

    def labels(self) -> dict[str, str]:
        """GCP labels: lower-case letters, digits, '-' and '_', at most 63 characters."""
        return {"clustersmith-design": gcp_label(self.design), "clustersmith-spec": gcp_label(self.spec)}

    def tag_names(self) -> list[str]:
        """MAAS tag names (letters, digits, '-' and '_')."""
        return [f"clustersmith-design-{gcp_label(self.design)}", f"clustersmith-spec-{gcp_label(self.spec)}"]


def gcp_label(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "-", text.lower())[:63]


class ClusterArgs(Frozen):
    """What every target needs: names, machines by role, rails per GPU node and the labels."""

    design: str
    labels: Labels
    machines: tuple[Machine, ...]
    rails: int = Field(description="Compute-fabric NICs (rails) per GPU node")
    storage_nics: int = Field(description="Storage-fabric NICs per node")
    mtu: int = Field(description="MTU of the cluster's networks (fabric.mtu)")
    network: str | None = Field(default=None, description="The hosts' management network (target.management_network)")
    monitoring_ports: tuple[int, ...] = Field(
        default=(), description="Ports of the monitoring listeners, opened to the management network only")

    @staticmethod
    def common(bp: Blueprint) -> dict[str, object]:
        """The shared fields of every target's args, from the Blueprint."""
        return {
            "design": bp.name,
            "labels": Labels(design=bp.name, spec=PurePath(bp.spec_file).name),
            "machines": machines(bp),
            "rails": bp.compute.rails.value,
            "storage_nics": bp.compute.storage_nics,
            "mtu": bp.fabric.mtu.value,
            "network": bp.target.management_network.value if bp.target.management_network else None,
            "monitoring_ports": tuple(sorted({j.port for j in bp.monitoring.scrape})),
        }

    def of_role(self, role: HostRole) -> list[Machine]:
        return [m for m in self.machines if m.role == role]


def fleets_of(bp: Blueprint) -> FleetsPlan:
    """The Blueprint's fleets; a cloud Blueprint written before fleets were planned is refused by name."""
    if bp.fleets is None:
        raise StackError(f"the {bp.target.provider} stack provisions the GPU nodes as fleets and this Blueprint "
                         "plans none (blueprint.yaml predates them): run `clustersmith build` again")
    return bp.fleets


def machines(bp: Blueprint) -> tuple[Machine, ...]:
    """Every planned machine, named by the Blueprint's one naming rule (``blueprints.hosts.expand``)."""
    return tuple(Machine(name=h.name, role=h.role, node_type=h.node_type, index=h.index) for h in expand(bp.hosts))


class CloudClusterArgs(ClusterArgs):
    """What the three clouds add: the planned managed file system and how to reach the machines."""

    file_system: ManagedFsPlan | None
    fleets: FleetsPlan = Field(description="The fleet resources the GPU nodes are provisioned as (Blueprint.fleets)")
    network: str = Field(description="The network the stack creates for the hosts (target.management_network)")
    ssh_public_key: str | None = None
    ssh_user: str
    admin_cidr: str | None = None
