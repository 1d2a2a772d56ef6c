"""SONiC config_db fragments against SONiC's own YANG models (tests/sonic_yang.py, run by `make lint` on every
example's build): what the build writes holds, its PORT table is the platform's port_config.ini, and edited copies
that SONiC would refuse are refused, naming the data location (issue 37, item 9)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from blueprints.blueprint import SwitchTier
from blueprints.catalog import load_catalog
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import switch_sonic, switch_vendor
from tests import sonic_yang as lint
from tests.conftest import REPO, require_tool

SWITCH = REPO / "tests" / "fixtures" / "switch"
Config = dict[str, Any]


def _built(example: str, tmp: Path) -> list[Path]:
    bp = plan(load_requirements(REPO / "examples" / example))
    return [p for p in switch_vendor.render(bp, tmp) if p.suffix == ".json"]


def _tier(model: str) -> SwitchTier:
    switch = load_catalog().switches[model]
    return SwitchTier(fabric="compute", tier="leaf", count=1, name_prefix="leaf-", model=model,
                      port_speed=switch.port_speed, ports=switch.ports)


@pytest.mark.parametrize(("model", "fixture", "speed"), [
    ("SN5600-400G", "sonic-SN5600-O128.port_config.ini", "400000"),
    ("SN5600-200G", "sonic-SN5600-V256.port_config.ini", "200000"),
])
def test_the_port_table_is_the_platforms_port_config(model: str, fixture: str, speed: str) -> None:
    rows = [line.split() for line in (SWITCH / fixture).read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    recorded = {r[0]: {"alias": r[2], "index": r[3], "lanes": r[1], "speed": r[4]} for r in rows if r[4] == speed}
    assert switch_sonic.sonic_ports(_tier(model)) == recorded


@pytest.mark.parametrize("example", ["cv-training-500tb.yaml", "lab.yaml"])
def test_every_fragment_the_build_writes_holds_under_sonics_models(example: str, tmp_path: Path) -> None:
    require_tool("yanglint", "libyang2-tools")
    files = _built(example, tmp_path)
    assert files, f"{example} writes no SONiC fragment"
    for path in files:
        assert lint.check(path) == [], lint.check(path)
    data = lint.instance(lint.filled_in(json.loads(files[0].read_text())))
    # every table the fragment holds reached libyang, under the module that defines it
    assert {"sonic-port:sonic-port", "sonic-queue:sonic-queue", "sonic-pfcwd:sonic-pfcwd",
            "sonic-port-qos-map:sonic-port-qos-map", "sonic-wred-profile:sonic-wred-profile",
            "sonic-buffer-pg:sonic-buffer-pg", "sonic-device_metadata:sonic-device_metadata",
            "sonic-tc-priority-group-map:sonic-tc-priority-group-map"} <= set(data)
    if example != "lab.yaml":  # the placeholder fragment has no cabled port
        assert "sonic-cable-length:sonic-cable-length" in data


def _set(table: str, key: str, **fields: str) -> Callable[[Config], None]:
    return lambda c: c[table].setdefault(key, {}).update(fields)


@pytest.mark.parametrize(("edit", "said"), [
    (_set("WRED_PROFILE", "CLUSTERSMITH_LOSSLESS", ecn="ecn_bogus"),
     'Invalid enumeration value "ecn_bogus"'),
    (_set("QUEUE", "Ethernet9999|3", wred_profile="CLUSTERSMITH_LOSSLESS"),
     "QUEUE_LIST[ifname='Ethernet9999']"),
    (_set("PORT", "Ethernet0", speed="0"),
     "PORT_LIST[name='Ethernet0']/speed"),
    (_set("DSCP_TO_TC_MAP", "CLUSTERSMITH", **{"64": "3"}),
     "Invalid DSCP"),
    (_set("QUEUE", "Ethernet0|6", scheduler="nope"),
     'Invalid leafref value "nope"'),
    (_set("CABLE_LENGTH", "AZURE", Ethernet0="5 m"),
     "Invalid cable length"),
    (_set("BUFFER_PG", "Ethernet0|8", profile="NULL"),
     "Invalid Buffer PG number"),
    (_set("PORT_QOS_MAP", "Ethernet0", tc_to_pg_map="NOPE"),
     'Invalid leafref value "NOPE"'),
    (lambda c: c.pop("PORT"),  # every reference to a port needs its PORT row
     'value "Ethernet'),  # a leafref or a union of one, whichever libyang reaches first
])
def test_what_sonic_would_refuse_is_refused_naming_where(edit: Callable[[Config], None], said: str,
                                                         tmp_path: Path) -> None:
    require_tool("yanglint", "libyang2-tools")
    config = json.loads(_built("cv-training-500tb.yaml", tmp_path)[0].read_text())
    edited = copy.deepcopy(config)
    edit(edited)
    bad = tmp_path / "edited-config_db.json"
    bad.write_text(json.dumps(edited))
    found = lint.check(bad)
    assert any(said in line for line in found), found
    assert all(line.startswith(f"{bad}: ") for line in found)


def test_a_table_no_model_defines_is_an_error_not_skipped() -> None:
    with pytest.raises(SystemExit, match="table NOT_A_TABLE: no vendored SONiC model defines it"):
        lint.instance({"NOT_A_TABLE": {"x": {"a": "1"}}})
    with pytest.raises(SystemExit, match="field 'not_a_field' is not in SONiC's model sonic-wred-profile"):
        lint.instance({"WRED_PROFILE": {"P": {"not_a_field": "1"}}})


def test_the_placeholder_is_filled_in_as_a_user_would() -> None:
    filled = lint.filled_in({"QUEUE": {f"{switch_sonic.SONIC_PORT}|3": {"wred_profile": "W"}}})
    assert filled == {"PORT": {"Ethernet0": {"lanes": "0,1,2,3", "speed": "100000"}},
                      "QUEUE": {"Ethernet0|3": {"wred_profile": "W"}}}
