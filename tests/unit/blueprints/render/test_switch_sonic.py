"""SONiC's lossless buffers (issue 37 item 9): one fragment per tier of SONiC switches, the dynamic buffer model
(sonic-net/SONiC doc/qos/dynamically-headroom-calculation.md) with the PFC priorities' PG on every port and each
cabled port's length from the wiring plan, the same lengths the cabling table gives the technician."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import build
from blueprints.render.switch_sonic import SONIC_PORT, cable_lengths, pg_ranges, sonic_config, sonic_tiers
from tests.conftest import REPO
from tests.unit.blueprints.test_wiring import _spec

EXAMPLE = REPO / "examples" / "cv-training-500tb.yaml"


def test_each_tier_gets_its_fragment_with_the_cabling_tables_lengths(tmp_path: Path) -> None:
    bp = plan(load_requirements(EXAMPLE))
    folder, _ = build(bp, tmp_path)
    switch = folder / "switch"
    assert sorted(p.name for p in switch.glob("sonic-*.json")) == [
        "sonic-cleaf-config_db.json", "sonic-cspine-config_db.json", "sonic-sleaf-config_db.json",
        "sonic-sspine-config_db.json"]
    with (switch / "cabling.csv").open() as f:
        rows = list(csv.DictReader(f))
    for name, tier in sonic_tiers(bp).items():
        fragment = json.loads((switch / f"sonic-{name}-config_db.json").read_text())
        # what the technician's table says for every switch of the tier, port by port
        expected: dict[str, str] = {}
        for row in rows:
            for device, port in ((row["to_device"], row["to_port"]), (row["from_device"], row["from_port"])):
                if device.startswith(tier.name_prefix):
                    assert expected.setdefault(port, row["length"]) == row["length"], (name, port)
        assert fragment["CABLE_LENGTH"] == {"AZURE": expected}, name
        assert fragment["DEVICE_METADATA"] == {"localhost": {"buffer_model": "dynamic"}}
        assert fragment["BUFFER_PG"] == {f"{p}|3": {"profile": "NULL"} for p in fragment["PORT"]}
        assert all(fragment["PORT_QOS_MAP"][p]["tc_to_pg_map"] == "CLUSTERSMITH" for p in fragment["PORT"])
        assert fragment["TC_TO_PRIORITY_GROUP_MAP"] == {"CLUSTERSMITH": {str(t): str(t) for t in range(8)}}
    leaf = json.loads((switch / "sonic-cleaf-config_db.json").read_text())["CABLE_LENGTH"]["AZURE"]
    # the leaf's down-ports (the first half) go to hosts, its uplinks (the second half) to spines
    assert {leaf[f"Ethernet{4 * i}"] for i in range(64) if f"Ethernet{4 * i}" in leaf} == {"5m"}
    assert {leaf[f"Ethernet{4 * i}"] for i in range(64, 128)} == {"40m"}
    text = (switch / "qos-policy.md").read_text()
    assert "buffer_model: dynamic" in text and "config interface buffer priority-group lossless remove" in text


def test_three_tiers_spines_split_between_leaves_and_cores(tmp_path: Path) -> None:
    bp = _spec(tmp_path, 16_384, "roce")
    tiers = sonic_tiers(bp)
    spine = cable_lengths(bp, tiers["cspine"])
    assert {spine[f"Ethernet{4 * i}"] for i in range(64)} == {"40m"}
    assert {spine[f"Ethernet{4 * i}"] for i in range(64, 128)} == {"300m"}
    assert set(cable_lengths(bp, tiers["ccore"]).values()) == {"300m"}


def test_where_no_switch_is_ours_the_placeholder_carries_the_lossless_pg_and_no_lengths() -> None:
    q = plan(load_requirements(REPO / "examples" / "lab.yaml")).qos
    fragment = sonic_config(q)
    assert fragment["BUFFER_PG"] == {f"{SONIC_PORT}|3": {"profile": "NULL"}}
    assert "CABLE_LENGTH" not in fragment and "PORT" not in fragment


def test_pg_ranges_are_sonics_keys() -> None:
    assert pg_ranges([3]) == ["3"]
    assert pg_ranges([4, 3]) == ["3-4"]
    assert pg_ranges([1, 3, 4, 5, 7]) == ["1", "3-5", "7"]
    assert pg_ranges([]) == []
