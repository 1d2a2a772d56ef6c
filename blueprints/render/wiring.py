"""Renderer: ``switch/cabling.csv``, the cabling table a technician follows (blueprints.wiring expands the plan).

Nothing where the wiring plan says nothing is cabled (a provider's fabric, the lab's virtual switches).
"""

from __future__ import annotations

import csv
from pathlib import Path

from blueprints.blueprint import Blueprint
from blueprints.wiring import cables

HEADER = ("fabric", "link", "from_device", "from_port", "to_device", "to_port", "to_port_label", "length")


def render(bp: Blueprint, folder: Path) -> list[Path]:
    if bp.wiring is None or bp.wiring.none_because is not None:
        return []
    path = folder / "switch" / "cabling.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(HEADER)
        for c in cables(bp):
            writer.writerow((c.fabric, c.kind, c.from_device, c.from_port, c.to_device, c.to_port.name,
                             c.to_port.label, c.length))
    return [path]
