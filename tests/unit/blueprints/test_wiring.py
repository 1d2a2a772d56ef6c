"""The wiring plan (issue 37 item 8): switch and port names as the platforms name them, and a cabling table in which
every cable is placed once, on ports that exist, in the counts the fabric planners sized.

Port names are checked against SONiC's own files for the SN5600 (tests/fixtures/switch/SOURCES.md): the
port_config.ini of its 2x400G and 4x200G SKUs and platform.json's 1x800G aliases; the InfiniBand names against the
MLNX-OS manual's example (interface ib 1/3/1 and 1/3/2 are cage 3's two ports).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from blueprints.blueprint import Blueprint
from blueprints.catalog import load_catalog
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import build
from blueprints.summary import print_summary
from blueprints.wiring import cables, port_name
from tests.conftest import REPO

SWITCH = REPO / "tests" / "fixtures" / "switch"
EXAMPLE = REPO / "examples" / "cv-training-500tb.yaml"


def _port_config(name: str, speed: int) -> list[tuple[str, str]]:
    rows = [line.split() for line in (SWITCH / name).read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    return [(r[0], r[2]) for r in rows if int(r[4]) == speed]


@pytest.mark.parametrize(("switch", "fixture", "speed"), [("SN5600-400G", "sonic-SN5600-O128.port_config.ini", 400000),
                                                          ("SN5600-200G", "sonic-SN5600-V256.port_config.ini", 200000)])
def test_sonic_port_names_are_the_platforms_own(switch: str, fixture: str, speed: int) -> None:
    ports = load_catalog().switches[switch].ports
    recorded = _port_config(fixture, speed)
    assert len(recorded) == ports.cages * ports.per_cage
    assert [tuple(port_name(ports, i)) for i in range(len(recorded))] == recorded


def test_sonic_800g_names_follow_platform_json() -> None:
    text = (SWITCH / "sonic-SN5600.platform-interfaces.json").read_text()
    interfaces = json.loads(text[text.index("{"):])["interfaces"]
    recorded = [(name, aliases[0]) for name, spec in interfaces.items()
                for mode, aliases in spec["breakout_modes"].items() if mode.startswith("1x800G")]
    ports = load_catalog().switches["SN5600-800G"].ports
    assert [tuple(port_name(ports, i)) for i in range(64)] == recorded


def test_infiniband_port_names_are_mlnx_os_cage_and_port() -> None:
    ports = load_catalog().switches["QM9700"].ports
    assert [port_name(ports, i).name for i in (0, 1, 4, 5, 63)] == ["1/1/1", "1/1/2", "1/3/1", "1/3/2", "1/32/2"]
    with pytest.raises(ValueError, match="port 64 of a 32 x 2-port switch"):
        port_name(ports, 64)


def _spec(tmp: Path, gpus: int, fabric: str) -> Blueprint:
    doc: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    scale = gpus / 512
    doc["compute"]["gpus"] = gpus
    doc["performance"]["storage"]["read_throughput"] = f">={500 * scale:.0f}GB/s"
    doc["performance"]["storage"]["write_throughput"] = f">={100 * scale:.0f}GB/s"
    doc["data"]["training_set"] = f"{500 * scale:.0f}TB"
    doc["data"]["validation_set"] = f"{50 * scale:.0f}TB"
    doc["target"]["fabric"] = fabric
    path = tmp / f"{fabric}-{gpus}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return plan(load_requirements(path))


# one switch (compute), two tiers, three tiers with a partial pod; InfiniBand with the UFM in an SU and on three tiers
SHAPES = [(64, "roce"), (512, "roce"), (16_384, "roce"), (1_016, "infiniband"), (4_096, "infiniband")]


@pytest.mark.parametrize(("gpus", "fabric"), SHAPES, ids=[f"{f}-{g}" for g, f in SHAPES])
def test_every_cable_is_placed_once_on_a_port_that_exists(tmp_path: Path, gpus: int, fabric: str) -> None:
    bp = _spec(tmp_path, gpus, fabric)
    assert bp.wiring is not None and bp.wiring.none_because is None
    rows = list(cables(bp))
    # each run's rows are as many as the plan counts, and the node-leaf runs are the fabrics' endpoints
    per_run = Counter((c.fabric, c.kind) for c in rows)
    assert per_run == {(r.fabric, r.kind): r.cables.value for r in bp.wiring.runs}
    assert per_run[("compute", "node-leaf")] == bp.fabric.endpoints.value
    assert per_run.get(("storage", "node-leaf"), 0) == (bp.storage_fabric.endpoints.value
                                                        if bp.storage_fabric.switch else 0)
    # no port of any device takes two cables, and every switch port is one the switch has
    ends = Counter((c.from_device, c.from_port) for c in rows) + Counter((c.to_device, c.to_port.name) for c in rows)
    assert max(ends.values()) == 1, [e for e, n in ends.items() if n > 1][:5]
    names = {n: t for t in bp.wiring.switches for n in t.names()}
    radix = {t.model: load_catalog().switches[t.model].radix for t in bp.wiring.switches}
    used = Counter(c.to_device for c in rows) + Counter(c.from_device for c in rows if c.from_device in names)
    assert all(used[n] <= radix[t.model] for n, t in names.items())
    assert set(used) >= set(names), "a planned switch takes no cable"
    # a leaf lost takes one of a host's paths, never all: a host's NICs on one fabric land on distinct leaves
    for fabric in ("compute", "storage"):
        leaves_of: dict[str, list[str]] = {}
        for c in rows:
            if c.kind == "node-leaf" and c.fabric == fabric:
                leaves_of.setdefault(c.from_device, []).append(c.to_device)
        if len({leaf for found in leaves_of.values() for leaf in found}) > 1:
            assert all(len(set(found)) == len(found) for found in leaves_of.values()), fabric
    # rail-optimised: each compute leaf carries one rail only
    if bp.fabric.rail_optimized.value and bp.fabric.leaf_switches.value > 1:
        rails: dict[str, str] = {}
        for c in rows:
            if c.kind == "node-leaf" and c.fabric == "compute":
                assert rails.setdefault(c.to_device, c.from_port) == c.from_port, c


def test_sonic_fabrics_plan_sonics_cable_lengths_and_infiniband_leaves_them_open(tmp_path: Path) -> None:
    roce, ib = _spec(tmp_path, 16_384, "roce"), _spec(tmp_path, 4_096, "infiniband")
    assert roce.wiring is not None and ib.wiring is not None
    lengths = {(r.fabric, r.kind): r.length.value for r in roce.wiring.runs if r.length is not None}
    assert lengths == {("compute", "node-leaf"): "5m", ("compute", "leaf-spine"): "40m",
                       ("compute", "spine-core"): "300m", ("storage", "node-leaf"): "5m",
                       ("storage", "leaf-spine"): "40m"}
    assert all(r.length is None for r in ib.wiring.runs if r.fabric == "compute")


def test_build_writes_the_cabling_table_and_plan_shows_the_wiring(tmp_path: Path) -> None:
    bp = plan(load_requirements(EXAMPLE))
    folder, _ = build(bp, tmp_path)
    with (folder / "switch" / "cabling.csv").open(newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == ["fabric", "link", "from_device", "from_port", "to_device", "to_port", "to_port_label",
                        "length"]
    assert bp.wiring is not None
    assert len(table) - 1 == sum(r.cables.value for r in bp.wiring.runs)
    assert table[1] == ["compute", "node-leaf", "gpu-1", "rail0", "cleaf-1", "Ethernet0", "etp1a", "5m"]
    console = Console(record=True, width=400)
    print_summary(bp, console)
    shown = console.export_text()
    assert "wiring (switch/cabling.csv" in shown and "cleaf-1 .. cleaf-" in shown


@pytest.mark.parametrize("example", ["lab", "llm-training-16k"])
def test_nothing_is_cabled_where_no_switch_is_ours(example: str, tmp_path: Path) -> None:
    bp = plan(load_requirements(REPO / "examples" / f"{example}.yaml"))
    assert bp.wiring is not None and bp.wiring.none_because
    assert list(cables(bp)) == []
    folder, _ = build(bp, tmp_path)
    assert not (folder / "switch" / "cabling.csv").exists()
