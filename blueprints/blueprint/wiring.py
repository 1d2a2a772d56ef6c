"""The wiring plan: which port of which switch every cable lands on, for the compute and the storage fabric.

Like the hosts (blueprints.hosts), the Blueprint keeps the rule, not the rows: switch tiers with a count and a naming
rule, and cable runs with their count, length and the rule that places each cable. ``blueprints.wiring`` expands
them into the cabling table (``wiring/cabling.csv``) and names each port the way the switch's operating system does.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.catalog import SwitchPorts
from blueprints.model import Frozen
from blueprints.traced import Traced
from blueprints.units import Rate

WiredFabric = Literal["compute", "storage"]
SwitchTierName = Literal["leaf", "spine", "core"]
RunKind = Literal["node-leaf", "leaf-spine", "spine-core"]


class SwitchTier(Frozen):
    """One tier of one fabric's switches: switch n (from 1) is ``<name_prefix><n>``."""

    fabric: WiredFabric
    tier: SwitchTierName
    count: int = Field(ge=1)
    name_prefix: str
    model: str = Field(description="Catalog switch model")
    port_speed: Rate = Field(description="The speed each port runs at (catalog), the radix counted at it")
    ports: SwitchPorts = Field(description="How the switch's OS names its ports (catalog)")

    def names(self) -> list[str]:
        return [f"{self.name_prefix}{n}" for n in range(1, self.count + 1)]


class CableRun(Frozen):
    """Every cable between two tiers of one fabric (hosts and leaves, leaves and spines, spines and cores)."""

    fabric: WiredFabric
    kind: RunKind
    cables: Traced[int] = Field(description="Cables in the run")
    length: Traced[str] | None = Field(default=None, description="Planned cable length class (SONiC's cable "
                                                                 "length per neighbour roles); None where unplanned")
    rule: str = Field(description="Which port each cable leaves from and lands on")


class WiringPlan(Frozen):
    switches: tuple[SwitchTier, ...] = ()
    runs: tuple[CableRun, ...] = ()
    none_because: str | None = Field(default=None, description="Why nothing is cabled (a provider's fabric, the "
                                                               "lab's virtual switches)")

    def tier(self, fabric: WiredFabric, tier: SwitchTierName) -> SwitchTier | None:
        return next((t for t in self.switches if t.fabric == fabric and t.tier == tier), None)
