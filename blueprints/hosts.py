"""The machines of a design, as the Blueprint holds them: host groups with a count and a naming rule.

A 100,000-GPU design has 12,500 GPU nodes; the Blueprint keeps one ``HostGroup`` per kind of machine
(role, count, name prefix, node type, rail NICs, disks) and every consumer expands it through the one
naming rule here (:meth:`HostGroup.names`, :func:`expand`), so the inventory, the stacks, prometheus.yml,
the role variables and the acceptance runner name every host alike. Which inventory group a role's hosts
go to is decided here too (:data:`INVENTORY_GROUPS`), once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Literal

from pydantic import Field

from blueprints.model import Frozen

HostRole = Literal["storage_target", "gpu_client", "monitoring"]
InventoryGroup = Literal["storage_targets", "gpu_clients", "monitoring"]

INVENTORY_GROUPS: dict[HostRole, InventoryGroup] = {
    "storage_target": "storage_targets",
    "gpu_client": "gpu_clients",
    "monitoring": "monitoring",
}


def host_names(name_prefix: str, first: int, count: int) -> list[str]:
    """Hosts ``first`` .. ``first + count - 1`` of a group: the one naming rule of the design, ``<prefix><n>``."""
    return [f"{name_prefix}{n}" for n in range(first, first + count)]


class DiskPlan(Frozen):
    """A block device every host of a group owns; the inventory names the real device (``disks.<name>``)."""

    name: str = Field(pattern=r"^(fast|slow|nvmeof|osd[0-9]+)$",
                      description="fast: local NVMe (the cache); slow: the device behind it; nvmeof: the device a "
                                  "target carves into namespaces; osdN: a Ceph OSD's device")
    purpose: str = Field(description="What the device is, for the person filling in the inventory")
    planned: bool = Field(default=False, description="The Blueprint names the device (a host's own NVMe-oF "
                                                     "namespace, by its UUID): the inventory writes it, per host")


class HostGroup(Frozen):
    role: HostRole
    count: int = Field(ge=0, description="Hosts in the group")
    name_prefix: str = Field(description="Host n (from 1) is named <name_prefix><n>")
    node_type: str = Field(description="Catalog server model or cloud instance type")
    rail_nics: int = Field(default=0, ge=0, description="Rail NICs of each host: compute rails on GPU nodes, "
                                                        "storage NICs on storage nodes, none on monitoring")
    tier: str | None = Field(default=None, description="Storage tier the group's hosts serve")
    disks: tuple[DiskPlan, ...] = Field(default=(), description="Block devices each host owns")

    @property
    def group(self) -> InventoryGroup:
        """The inventory group the hosts are listed in."""
        return INVENTORY_GROUPS[self.role]

    def name(self, number: int) -> str:
        """Host ``number`` of the group, counted from 1."""
        return host_names(self.name_prefix, number, 1)[0]

    def names(self) -> list[str]:
        return host_names(self.name_prefix, 1, self.count)


class Host(Frozen):
    """One planned machine, expanded from its group."""

    name: str = Field(description="Host name, also its inventory and Prometheus instance name, e.g. gpu-1")
    role: HostRole
    node_type: str
    index: int = Field(description="0-based index within its host group")
    rail_nics: int
    tier: str | None = None

    @property
    def group(self) -> InventoryGroup:
        return INVENTORY_GROUPS[self.role]


def expand(groups: Iterable[HostGroup]) -> Iterator[Host]:
    """Every host of ``groups``, group by group, in order."""
    for g in groups:
        for i in range(g.count):
            yield Host(name=g.name(i + 1), role=g.role, node_type=g.node_type, index=i, rail_nics=g.rail_nics,
                       tier=g.tier)


def names_by_role(groups: Iterable[HostGroup]) -> dict[HostRole, list[str]]:
    """Host names per role, in the groups' order; a host in two groups of one role is listed once."""
    found: dict[HostRole, dict[str, None]] = {}  # dicts keep order and dedupe in O(1)
    for g in groups:
        found.setdefault(g.role, {}).update(dict.fromkeys(g.names()))
    return {role: list(names) for role, names in found.items()}
