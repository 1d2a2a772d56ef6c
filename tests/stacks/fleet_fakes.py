"""An in-memory ``FleetClient`` for the mapping's tests: fleets whose instances the test launches, replaces and
counts. It stands in for the provider only where no provider can run here; the provider clients themselves are
tested on moto (AWS) and on the APIs' documented response shapes (GCP, Azure) in test_fleet_clients.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from stacks.fleet_inventory import FleetInstance
from stacks.outputs import StackFleet, StackOutputs


@dataclass
class FakeFleets:
    by_fleet: dict[str, list[FleetInstance]] = field(default_factory=dict)
    written: list[tuple[str, str]] = field(default_factory=list)
    launches: int = 0

    @classmethod
    def launched(cls, outputs: StackOutputs, extra: int = 0) -> FakeFleets:
        """Every fleet at its size (plus ``extra`` instances each), none named yet; rails with a provider address
        (GCP's MRDMA NICs) get one per instance."""
        fake = cls()
        for f in outputs.fleets:
            for _ in range(f.size + extra):
                fake.launch(f.name, rails=sum(1 for r in f.rails if r.kind == "mrdma"))  # GCP: per-NIC address
        return fake

    def launch(self, fleet: str, rails: int = 0) -> FleetInstance:
        self.launches += 1
        n = self.launches
        inst = FleetInstance(id=f"i-{n:08x}", launched=f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}+00:00",
                             host=None, address=f"10.0.{n >> 8 & 255}.{n & 255}",
                             rail_addresses=tuple(f"10.{128 + r}.{n >> 8 & 255}.{n & 255}" for r in range(rails)))
        self.by_fleet.setdefault(fleet, []).append(inst)
        return inst

    def terminate(self, fleet: str, host: str) -> None:
        self.by_fleet[fleet] = [i for i in self.by_fleet[fleet] if i.host != host]

    def instances(self, fleet: StackFleet, design: str) -> list[FleetInstance]:
        return list(self.by_fleet.get(fleet.name, []))

    def name(self, fleet: StackFleet, instance: FleetInstance, host: str) -> None:
        self.written.append((instance.id, host))
        self.by_fleet[fleet.name] = [i.model_copy(update={"host": host}) if i.id == instance.id else i
                                     for i in self.by_fleet[fleet.name]]
