"""Cumulus NVUE and SONiC config_db output, judged against the vendors' own examples (tests/fixtures/switch)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from blueprints.render import build
from blueprints.render.switch_sonic import SONIC_PORT, sonic_config
from blueprints.render.switch_vendor import nvue_commands
from tests.unit.blueprints.planner.test_rules import planned, spec

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "switch"
ARG = re.compile(r"^(?:\d[\d,-]*|swp\S*|\"\$PORTS\"|list\d|[a-z]+)$")


def _shape(command: str) -> str:
    """A command with its values replaced: what must match a documented command."""
    words = command.split()
    return " ".join("<v>" if i >= 3 and (w[0].isdigit() or w.startswith(("swp", '"$'))) else w
                    for i, w in enumerate(words)).replace("nv set interface <v>", "nv set interface <if>")


def _documented() -> set[str]:
    lines = (FIX / "cumulus-514-nvue.txt").read_text().splitlines()
    cmds = [ln.split("$ ", 1)[1].strip() for ln in lines if "$ nv " in ln]
    shapes = {_shape(c) for c in cmds}
    return shapes | {s.replace(" list2 ", " default-global ") for s in shapes}


def test_qos_plan_facts() -> None:
    q = planned(spec()).qos
    assert q.strict_priorities == (6,) and q.pfc_priorities == (3,) and 6 not in q.pfc_priorities
    assert (q.ecn_thresholds.min_bytes, q.ecn_thresholds.max_bytes) == (150_000, 1_500_000)
    assert "onyx" in q.ecn_thresholds.source.lower() and "pfcwd" in q.pfc_watchdog.source
    assert q.pfc_watchdog.action == "drop"


def test_every_nvue_command_has_a_documented_form() -> None:
    documented = _documented()
    cmds = nvue_commands(planned(spec()).qos)
    assert cmds[-1] == "nv config apply"
    for c in cmds:
        assert _shape(c) in documented, c


def test_nvue_carries_the_plan() -> None:
    cmds = nvue_commands(planned(spec()).qos)
    assert "nv set qos egress-scheduler default-global traffic-class 6 mode strict" in cmds
    assert "nv set qos pfc default-global switch-priority 3" in cmds
    assert not any("pfc default-global switch-priority 6" in c for c in cmds)
    assert "nv set qos congestion-control default-global traffic-class 3 min-threshold 150000" in cmds
    assert "nv set qos congestion-control default-global traffic-class 3 max-threshold 1500000" in cmds
    assert "nv set qos mapping default-global dscp 26 switch-priority 3" in cmds
    assert "nv set qos mapping default-global dscp 48 switch-priority 6" in cmds


def test_sonic_tables_use_the_vendor_keys() -> None:
    ours = sonic_config(planned(spec()).qos)
    ref = json.loads((FIX / "sonic-qos-arista7800r3-48cq2-lc.json").read_text())
    ref_port = ref["PORT_QOS_MAP"]["Ethernet0"]
    our_port = ours["PORT_QOS_MAP"][SONIC_PORT]
    assert set(our_port) <= set(ref_port)
    assert ours["PORT_QOS_MAP"]["global"].keys() == ref["PORT_QOS_MAP"]["global"].keys()
    assert our_port["pfc_enable"] == "3"  # the RoCE priority only
    assert set(next(iter(ours["WRED_PROFILE"].values()))) <= set(ref["WRED_PROFILE"]["AZURE_LOSSLESS"])
    assert next(iter(ours["WRED_PROFILE"].values()))["ecn"] == ref["WRED_PROFILE"]["AZURE_LOSSLESS"]["ecn"]
    for table in ("DSCP_TO_TC_MAP", "TC_TO_QUEUE_MAP"):
        (mapping,) = ours[table].values()
        assert all(k.isdigit() and v.isdigit() for k, v in mapping.items())
        assert set(mapping.items()) & set(next(iter(ref[table].values())).items())  # 48 -> 6 as SONiC has it
    ref_queue = next(iter(ref["QUEUE"].values()))
    assert all(set(v) <= set(ref_queue) for v in ours["QUEUE"].values())


def test_sonic_strict_scheduler_and_watchdog_follow_the_schema() -> None:
    ours = sonic_config(planned(spec()).qos)
    text = (FIX / "sonic-schema-and-pfcwd.txt").read_text()
    assert '"STRICT"' in text and ours["SCHEDULER"] == {"scheduler.strict6": {"type": "STRICT"}}
    wd = ours["PFC_WD"]
    assert "'PFC_WD'" in text and "'GLOBAL'" in text and "'POLL_INTERVAL'" in text
    for field in wd[SONIC_PORT]:
        assert f"'{field}'" in text
    assert wd[SONIC_PORT] == {"action": "drop", "detection_time": "200", "restoration_time": "200"}


def test_no_pfc_no_watchdog_where_the_provider_owns_qos() -> None:
    q = planned(spec("llm-training-16k.yaml")).qos
    assert "PFC_WD" not in sonic_config(q) and q.strict_priorities == ()
    assert not any("pfc-watchdog" in c for c in nvue_commands(q))


def test_sonic_fragment_names_every_port_of_the_wired_switch_as_sonic_does(tmp_path: Path) -> None:
    """Issue 37 item 8: where the wiring plan cables SONiC switches, the config_db fragment carries each port by
    SONiC's own name (the SN5600's 2x400G port_config.ini, tests/fixtures/switch), never a placeholder."""
    bp = planned(spec())
    folder, _ = build(bp, tmp_path)
    fragment = json.loads((folder / "switch" / "sonic-cleaf-config_db.json").read_text())
    recorded = [line.split()[0] for line in (FIX / "sonic-SN5600-O128.port_config.ini").read_text().splitlines()
                if line.startswith("Ethernet") and line.split()[4] == "400000"]
    assert len(recorded) == 128
    assert [k for k in fragment["PORT_QOS_MAP"] if k != "global"] == recorded
    assert [k for k in fragment["PFC_WD"] if k != "GLOBAL"] == recorded
    assert {k.split("|")[0] for k in fragment["QUEUE"]} == set(recorded)
    assert SONIC_PORT not in json.dumps(fragment)
    assert not (folder / "switch" / "sonic-config_db.json").exists()
    assert "`sonic-cleaf-config_db.json`" in (folder / "switch" / "qos-policy.md").read_text()


def test_each_wired_tier_gets_an_nvue_script_naming_every_port_as_cumulus_does(tmp_path: Path) -> None:
    """Issue 37 item 8: the switch configurations name real ports from the wiring plan. On the SN5600 at 400G
    Cumulus breaks each of the 64 OSFP cages into 2x (swp1s0, swp1s1, ...); every command has a documented form."""
    bp = planned(spec())
    folder, _ = build(bp, tmp_path)
    switch = folder / "switch"
    assert sorted(p.name for p in switch.glob("cumulus-*")) == [
        "cumulus-cleaf-nvue.sh", "cumulus-cspine-nvue.sh", "cumulus-sleaf-nvue.sh", "cumulus-sspine-nvue.sh"]
    assert not (switch / "cumulus-nvue.sh").exists()
    lines = (switch / "cumulus-cleaf-nvue.sh").read_text().splitlines()
    assert "PORTS" not in "\n".join(lines)
    commands = [ln for ln in lines if ln.startswith("nv ")]
    assert commands[0] == "nv set interface swp1-64 link breakout 2x" and commands[-1] == "nv config apply"
    watchdog = next(c for c in commands if c.endswith("qos pfc-watchdog")).split()[3].split(",")
    assert watchdog == [f"swp{c}s0-1" for c in range(1, 65)]  # 128 ports: each cage's two
    documented = _documented()
    for c in commands:
        assert _shape(c) in documented, c
    text = (switch / "qos-policy.md").read_text()
    assert "| every cleaf-* (SN5600-400G, compute leaf) | `cumulus-cleaf-nvue.sh` | `sonic-cleaf-config_db.json` |" \
        in text


def test_where_the_provider_owns_qos_the_policy_names_no_file_to_apply(tmp_path: Path) -> None:
    folder, _ = build(planned(spec("llm-training-16k.yaml")), tmp_path)
    text = (folder / "switch" / "qos-policy.md").read_text()
    assert "No switch policy to apply" in text and "Applyable configuration" not in text
    assert sorted(p.name for p in (folder / "switch").iterdir()) == ["qos-policy.md"]
