"""Fleets' instances -> the Blueprint's host names, through the provider API, stable across runs and replacements.

A fleet (``stacks.outputs.StackFleet``) plans hosts ``<prefix><first>`` .. ``<prefix><first + size - 1>``; the
provider decides which instances exist. ``inventory --from-stack`` lists the fleet's live instances (by the tags or
labels the stack set, through a ``FleetClient``) and names them:

1. an instance that already carries the host tag (``clustersmith:host``; on GCP the label ``clustersmith-host``)
   of a host of this fleet keeps it; if two claim one host, the older (launch time, then id) keeps it;
2. the hosts nobody holds (new fleets, or an instance the provider replaced) go to the untagged instances, both in
   order (hosts by number, instances by launch time, then id), and the tag is written on each, once;
3. a fleet whose live instances are fewer or more than planned is refused (exit 2) naming the fleet and both counts:
   never a partial inventory, and no tag is written for any fleet until every fleet's count is right.

So a host keeps its instance for as long as the instance lives, and a replacement takes the name of the instance
it replaced. Provider code stays behind ``FleetClient``: the mapping here is tested without a network.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from blueprints.errors import ClusterSmithError, Problem
from stacks.outputs import AwsFleetRef, GcpFleetRef, StackFleet, StackHost, StackOutputs, StackRail


class FleetInstance(BaseModel):
    """One live instance of a fleet, as its provider reports it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Provider id (EC2 instance id, GCE instance name, ARM VM id)")
    launched: str = Field(description="Launch or creation time, ISO 8601 (sorts in time order)")
    host: str | None = Field(description="The host tag's value, if the instance carries one")
    address: str = Field(description="Management (primary private) address")
    rail_addresses: tuple[str, ...] = Field(default=(), description="Per-rail addresses, where the provider has them")


class FleetClient(Protocol):
    """The provider calls the mapping needs: list a fleet's live instances, write one instance's host tag."""

    def instances(self, fleet: StackFleet, design: str) -> list[FleetInstance]: ...

    def name(self, fleet: StackFleet, instance: FleetInstance, host: str) -> None: ...


class FleetSizeError(ClusterSmithError):
    """A fleet's live instances are not the number the Blueprint plans."""


def assign(fleet: StackFleet, instances: Sequence[FleetInstance]) -> tuple[dict[str, FleetInstance],
                                                                           list[tuple[FleetInstance, str]]]:
    """Host name -> instance for every planned host, and the (instance, host) tags still to write. The caller has
    checked that the counts agree."""
    planned = fleet.host_names()
    wanted = set(planned)
    ordered = sorted(instances, key=lambda i: (i.launched, i.id))
    held: dict[str, FleetInstance] = {}
    for inst in ordered:
        if inst.host in wanted and inst.host not in held:
            held[inst.host] = inst
    kept = {i.id for i in held.values()}
    untagged = [i for i in ordered if i.id not in kept]
    free = [h for h in planned if h not in held]
    writes = list(zip(untagged, free, strict=True))
    held.update({host: inst for inst, host in writes})
    return {h: held[h] for h in planned}, writes


def _size_problem(fleet: StackFleet, live: int) -> Problem:
    ref = fleet.ref
    if isinstance(ref, AwsFleetRef):
        where = f"Auto Scaling group {ref.group} in {ref.region}"
    elif isinstance(ref, GcpFleetRef):
        where = f"managed instance group {ref.group} in {ref.zone}"
    else:
        where = f"scale set {ref.scale_set_id}"
    first, last = fleet.host_names()[0], fleet.host_names()[-1]
    return Problem(f"fleets.{fleet.name}", f"fleet {fleet.name} ({where}) has {live} live instances; the Blueprint "
                   f"plans {fleet.size} ({first} .. {last}). Expected exactly {fleet.size}: wait until the provider "
                   "has launched them (or replaced the failed ones) and run `clustersmith inventory --from-stack` "
                   "again; nothing was written", value=str(live))


def _host(fleet: StackFleet, name: str, inst: FleetInstance) -> StackHost:
    rails = []
    for r in fleet.rails:
        address = inst.rail_addresses[r.index] if r.index < len(inst.rail_addresses) else r.address
        rails.append(StackRail(**{**r.model_dump(), "address": address}))
    return StackHost(name=name, role=fleet.role, group=fleet.group, node_type=fleet.node_type, address=inst.address,
                     user=fleet.user, rails=tuple(rails))


def resolve(outputs: StackOutputs, client: FleetClient, source: str) -> StackOutputs:
    """The outputs with every fleet's instances as named hosts (after the hosts the stack lists itself). Raises
    FleetSizeError, before writing any tag, if any fleet's live count differs from its size."""
    if not outputs.fleets:
        return outputs
    listed = [(f, client.instances(f, outputs.design)) for f in outputs.fleets]
    problems = [_size_problem(f, len(found)) for f, found in listed if len(found) != f.size]
    if problems:
        raise FleetSizeError(problems, source, "fleets do not have their planned size")
    hosts = list(outputs.hosts)
    for fleet, found in listed:
        named, writes = assign(fleet, found)
        for inst, host in writes:
            client.name(fleet, inst, host)
        hosts += [_host(fleet, name, inst) for name, inst in named.items()]
    return outputs.model_copy(update={"hosts": tuple(hosts)})
