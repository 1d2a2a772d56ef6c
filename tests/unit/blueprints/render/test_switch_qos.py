"""switch/qos-policy.md: the Blueprint's switch QoS policy, readable by a network team."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import build
from blueprints.render.switch_qos import render

REPO = Path(__file__).resolve().parents[4]


def _bp(name: str) -> Blueprint:
    spec = REPO / "examples" / f"{name}.yaml"
    return plan(load_requirements(spec), spec_file=str(spec))


def _rows(text: str, heading: str) -> list[list[str]]:
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows[1:]]


@pytest.mark.parametrize("name", ["lab", "cv-training-500tb"])
def test_policy_carries_the_blueprints_map_pfc_and_ecn(tmp_path: Path, name: str) -> None:
    bp = _bp(name)
    [path] = render(bp, tmp_path)
    assert path == tmp_path / "switch" / "qos-policy.md"
    text = path.read_text()
    q = bp.qos
    assert {(int(d), int(p)) for d, p in _rows(text, "DSCP to priority map")} == set(q.switch_dscp_to_priority.items())
    per_prio = {int(r[0]): r for r in _rows(text, "Per priority: PFC and ECN")}
    assert sorted(per_prio) == list(range(8))
    assert [p for p, r in per_prio.items() if r[2] == "on"] == list(q.pfc_priorities)
    assert [p for p, r in per_prio.items() if r[3] == "on"] == list(q.dcqcn_priorities)
    assert per_prio[q.roce_priority.value][1] == str(q.dscp.value)
    hosts = {r[1]: r[2] for r in _rows(text, "The same values on the hosts")}
    assert hosts["NCCL_IB_TC"] == str(q.traffic_class.value) and hosts["tos"] == str(q.traffic_class.value)
    # every table row has the header's number of cells: formulas with '|' are escaped
    assert all(len(r) == 3 for r in _rows(text, "Classes"))


def test_ecn_thresholds_are_nvidias_published_ones(tmp_path: Path) -> None:
    text = render(_bp("cv-training-500tb"), tmp_path)[0].read_text()
    section = text.split("## ECN marking thresholds\n", 1)[1].split("\n## ", 1)[0]
    # field-numbers 10.3: Onyx/Cumulus RoCE defaults, 150 KB and 1500 KB on the RoCE queue, with the source
    assert "150000 bytes" in section and "1500000 bytes" in section and "onyx" in section.lower()
    assert "priority 3" in section


def test_provider_managed_fabric_says_there_is_nothing_to_apply(tmp_path: Path) -> None:
    text = render(_bp("llm-training-16k"), tmp_path)[0].read_text()
    assert "No switch policy to apply." in text and "provider-managed" in text


def test_build_writes_the_policy(tmp_path: Path) -> None:
    folder, files = build(_bp("lab"), tmp_path)
    assert folder / "switch" / "qos-policy.md" in files
