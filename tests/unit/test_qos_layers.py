"""Plan-time rule qos.layers_agree: one priority and DSCP across NIC, NCCL, NVMe-oF and the switch."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.blueprint import Blueprint, dump_blueprint, load_blueprint
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.planner.qos_rules import check_qos_layers
from blueprints.qos_consistency import (
    LayerQos,
    QosMismatchError,
    compare,
    layer_from_tos,
    nccl_conf_layer,
    nic_layer,
    reference_layer,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def _plan(name: str) -> Blueprint:
    spec = REPO / "examples" / f"{name}.yaml"
    return plan(load_requirements(spec), spec_file=str(spec))


def _env_index(data: dict[str, Any], name: str) -> int:
    return next(i for i, v in enumerate(data["nccl"]["env"]) if v["name"] == name)


def _set_env(data: dict[str, Any], name: str, value: str) -> None:
    data["nccl"]["env"][_env_index(data, name)]["value"] = value


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *head, last = dotted.split(".")
    node = data
    for key in head:
        node = node[key]
    node[last] = value


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_plans_one_consistent_qos(spec: Path) -> None:
    bp = plan(load_requirements(spec), spec_file=str(spec))
    assert check_qos_layers(bp) == []


# Each row edits one layer of the lab Blueprint, as a user might in blueprint.yaml, and names the
# two layers and the two values the message must carry.
CASES = [
    ("nccl env TC", lambda d: _set_env(d, "NCCL_IB_TC", "110"),
     ["nccl.env.2.value"], ["nccl nccl.env.2.value = NCCL_IB_TC=110 (DSCP 27)", "nic qos.dscp = 26"]),
    ("nccl plan TC", lambda d: _set(d, "qos.nccl_ib_tc", 98),
     ["qos.nccl_ib_tc"], ["nccl qos.nccl_ib_tc = 98 (DSCP 24)", "nic qos.dscp = 26"]),
    ("nvmeof tos", lambda d: _set(d, "storage.nvmeof.tos", 184),
     ["storage.nvmeof.tos"], ["nvmeof storage.nvmeof.tos = 184 (DSCP 46)", "nic qos.dscp = 26"]),
    ("nvmeof plan tos", lambda d: _set(d, "qos.nvmeof_tos", 0),
     ["qos.nvmeof_tos"], ["nvmeof qos.nvmeof_tos = 0 (DSCP 0)", "nic qos.dscp = 26"]),
    ("nic dscp", lambda d: _set(d, "qos.dscp.value", 24),
     ["qos.traffic_class.value", "qos.nccl_ib_tc", "qos.nvmeof_tos", "nccl.env.2.value", "storage.nvmeof.tos",
      "qos.switch_dscp_to_priority.26", "qos.switch_dscp_to_priority"],
     ["nic qos.traffic_class.value = 106 (DSCP 26)", "nic qos.dscp = 24"]),
    ("switch dscp", lambda d: _set(d, "qos.switch_dscp_to_priority", {27: 3, 48: 6}),
     ["qos.switch_dscp_to_priority.27", "qos.switch_dscp_to_priority"],
     ["switch qos.switch_dscp_to_priority.27 = 27: 3 (DSCP 27, priority 3)", "nic qos.dscp = 26 (DSCP 26, priority 3)",
      "has no entry for DSCP 26"]),
    ("switch priority", lambda d: _set(d, "qos.switch_dscp_to_priority", {26: 4, 48: 6}),
     ["qos.switch_dscp_to_priority.26"], ["switch qos.switch_dscp_to_priority.26 = 26: 4 (DSCP 26, priority 4)",
                                        "disagree on priority", "priority 3"]),
    ("switch cnp", lambda d: _set(d, "qos.switch_dscp_to_priority", {26: 3, 48: 5}),
     ["qos.switch_dscp_to_priority.48"], ["switch qos.switch_dscp_to_priority.48 = 48: 5 (DSCP 48, priority 5)",
                                        "nic qos.cnp_dscp = 48 (DSCP 48, priority 6)"]),
    ("pfc priority", lambda d: _set(d, "qos.pfc_priorities", [4]),
     ["qos.pfc_priorities"], ["nic qos.pfc_priorities = [4]", "nic qos.dscp = 26 (DSCP 26, priority 3)"]),
]


@pytest.fixture(scope="module")
def lab_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(dump_blueprint(_plan("lab")))
    return data


@pytest.mark.parametrize(("edit", "paths", "needles"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_changed_layer_is_named_with_both_values(lab_data: dict[str, Any], edit: Any, paths: list[str],
                                                     needles: list[str]) -> None:
    data = copy.deepcopy(lab_data)
    edit(data)
    problems = check_qos_layers(Blueprint.model_validate(data))
    assert [p.path for p in problems] == paths
    first = problems[0].message
    for needle in needles:
        assert needle in first or needle in problems[-1].message


def test_hand_edited_blueprint_yaml_is_rejected_on_load(tmp_path: Path, lab_data: dict[str, Any]) -> None:
    data = copy.deepcopy(lab_data)
    _set_env(data, "NCCL_IB_TC", "110")
    path = tmp_path / "blueprint.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(QosMismatchError) as info:
        load_blueprint(path)
    text = str(info.value)
    assert "QoS plan is inconsistent across layers: 1 problem(s)" in text
    assert "NCCL_IB_TC=110 (DSCP 27)" in text and "nic qos.dscp = 26" in text
    line = text.split(f"{path}:")[1].split(":")[0]
    assert path.read_text().splitlines()[int(line) - 1].strip() == "value: '110'"


def test_cli_exits_2_without_traceback_on_an_inconsistent_blueprint(tmp_path: Path, lab_data: dict[str, Any]) -> None:
    data = copy.deepcopy(lab_data)
    _set(data, "storage.nvmeof.tos", 184)
    (tmp_path / "blueprint.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    proc = subprocess.run([sys.executable, "-c", "from blueprints.cli import main; main()", "explain",
                           str(tmp_path), "qos.dscp"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "storage.nvmeof.tos = 184 (DSCP 46)" in proc.stderr and "nic qos.dscp = 26" in proc.stderr


def test_consistent_blueprint_loads(tmp_path: Path, lab_data: dict[str, Any]) -> None:
    (tmp_path / "blueprint.yaml").write_text(yaml.safe_dump(lab_data, sort_keys=False))
    assert load_blueprint(tmp_path).qos.dscp.value == 26


def test_measured_layers_compare_the_same_way() -> None:
    nic = LayerQos(layer="nic", field="dcb app dscp-prio", dscp=26, priority=3, shown="26:3")
    nccl = layer_from_tos("nccl", "/etc/nccl.conf NCCL_IB_TC", 106)
    nvme = layer_from_tos("nvmeof", "tos", 104)  # DSCP 26 without ECN bits: the same DSCP
    assert compare(nic, [nccl, nvme]) == []
    wrong = compare(nic, [layer_from_tos("nccl", "/etc/nccl.conf NCCL_IB_TC", 0)])
    assert len(wrong) == 1 and "DSCP 0" in wrong[0].message and "DSCP 26" in wrong[0].message


def test_tos_outside_a_byte_is_refused() -> None:
    with pytest.raises(ValueError, match="ToS 256 is not a byte"):
        layer_from_tos("nccl", "NCCL_IB_TC", 256)


def test_host_readings_are_compared_with_the_plan() -> None:
    bp = _plan("lab")
    ref = reference_layer(bp.qos.dscp.value, bp.qos.roce_priority.value)
    conf = f"# header\nNCCL_IB_HCA=rxe0\nNCCL_IB_TC={bp.qos.nccl_ib_tc}\n"
    env_file = f'NCCL_IB_TC="{bp.qos.nccl_ib_tc + 4}"\n'  # one DSCP up: a mismatch
    nic = nic_layer({bp.qos.dscp.value: [bp.qos.roce_priority.value]}, bp.qos.dscp.value, "dcb app rail0")
    layers = [x for x in (nic, nccl_conf_layer(conf), nccl_conf_layer(env_file, "/etc/nccl.env")) if x]
    problems = compare(ref, layers)
    assert [p.path for p in problems] == ["/etc/nccl.env NCCL_IB_TC"]
    assert "DSCP 27" in problems[0].message and "plan qos.dscp = 26" in problems[0].message
    assert nccl_conf_layer("NCCL_ALGO=Ring\n") is None
    assert nic_layer({}, 26, "dcb app rail0") is None
    moved = nic_layer({26: [4]}, 26, "dcb app rail0")
    assert moved is not None and "disagree on priority" in compare(ref, [moved])[0].message
