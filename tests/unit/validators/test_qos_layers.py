"""One QoS plan: the Blueprint stores each QoS fact once, refuses a hand edit that breaks it, and acceptance
compares what each layer of a host applies with it (validators.qos_layers)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.blueprint import Blueprint, dump_blueprint, load_blueprint
from blueprints.errors import ClusterSmithError
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render.ansible import group_vars
from validators.qos_layers import LayerQos, compare, layer_from_tos, nccl_conf_layer, nic_layer, reference_layer

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def _plan(name: str) -> Blueprint:
    spec = REPO / "examples" / f"{name}.yaml"
    return plan(load_requirements(spec), spec_file=str(spec))


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *head, last = dotted.split(".")
    node = data
    for key in head:
        node = node[key]
    node[last] = value


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda p: p.stem)
def test_every_layer_reads_the_one_traffic_class(spec: Path) -> None:
    """NCCL_IB_TC, NVMe-oF's tos and RDMA-CM's ToS are the QoS plan's traffic class, not copies of it."""
    bp = plan(load_requirements(spec), spec_file=str(spec))
    tc = bp.qos.traffic_class.value
    assert tc == bp.qos.dscp.value << 2 | 0b10
    stated = {}
    for role, by_group in group_vars(bp).items():
        for values in by_group.values():
            data = values.model_dump()
            stated.update({f"{role}.{k}": v for k, v in data.items() if k in ("nvmeof_tos", "rdma_roce_tos")})
            stated.update({f"{role}.NCCL_IB_TC": int(e["value"]) for e in data.get("nccl_env", ())
                           if e["name"] == "NCCL_IB_TC"})
    assert set(stated.values()) <= {tc}
    if bp.fabric.kind.value == "roce" and bp.qos.applies:
        assert stated["nccl.NCCL_IB_TC"] == tc
    else:  # the provider owns QoS (GCP's RoCE VPC) or the fabric is not RoCE: NCCL keeps its default
        assert "nccl.NCCL_IB_TC" not in stated
    dumped = dump_blueprint(bp)
    for gone in ("nccl_ib_tc", "nvmeof_tos", "switch_dscp_to_priority", "pfc_priorities", "NCCL_IB_TC"):
        assert gone not in dumped, f"{gone} is stored in the Blueprint again"


@pytest.fixture(scope="module")
def lab_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(dump_blueprint(_plan("lab")))
    return data


# Each row edits blueprint.yaml as a user might and names what the message must say.
CASES = [
    ("tos without its dscp", "qos.dscp.value", 24, ["qos.traffic_class 106 does not carry qos.dscp 24",
                                                   "24 << 2 | ECT(0) = 98"]),
    ("tos edited", "qos.traffic_class.value", 184, ["qos.traffic_class 184 does not carry qos.dscp 26"]),
    ("cnp on roce dscp", "qos.cnp_dscp.value", 26, ["CNPs (DSCP 26, priority 6) must not share RoCE's DSCP 26"]),
    ("cnp on roce priority", "qos.cnp_priority", 3, ["CNPs (DSCP 48, priority 3)", "priority 3"]),
    ("priority out of range", "qos.roce_priority.value", 9, ["qos.roce_priority 9", "must be priorities (0..7)"]),
]


@pytest.mark.parametrize(("path", "value", "needles"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_hand_edit_that_breaks_the_plan_is_refused_on_load(tmp_path: Path, lab_data: dict[str, Any], path: str,
                                                            value: Any, needles: list[str]) -> None:
    data = copy.deepcopy(lab_data)
    _set(data, path, value)
    (tmp_path / "blueprint.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ClusterSmithError) as info:
        load_blueprint(tmp_path)
    text = str(info.value)
    assert "invalid blueprint" in text and "qos" in text
    for needle in needles:
        assert needle in text


def test_cli_exits_2_without_traceback_on_an_inconsistent_blueprint(tmp_path: Path, lab_data: dict[str, Any]) -> None:
    data = copy.deepcopy(lab_data)
    _set(data, "qos.traffic_class.value", 184)
    (tmp_path / "blueprint.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    proc = subprocess.run([sys.executable, "-c", "from blueprints.cli import main; main()", "explain",
                           str(tmp_path), "qos.dscp"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "qos.traffic_class 184 does not carry qos.dscp 26" in proc.stderr


def test_consistent_blueprint_loads_and_derives_the_rest(tmp_path: Path, lab_data: dict[str, Any]) -> None:
    (tmp_path / "blueprint.yaml").write_text(yaml.safe_dump(lab_data, sort_keys=False))
    q = load_blueprint(tmp_path).qos
    assert q.dscp.value == 26
    assert q.switch_dscp_to_priority == {26: 3, 48: 6}
    assert q.pfc_priorities == (3,) and q.dcqcn_priorities == (3,)


def test_loading_a_blueprint_imports_no_planner_code(tmp_path: Path, lab_data: dict[str, Any]) -> None:
    (tmp_path / "blueprint.yaml").write_text(yaml.safe_dump(lab_data, sort_keys=False))
    code = ("import sys; from pathlib import Path; from blueprints.blueprint import load_blueprint; "
            f"load_blueprint(Path({str(tmp_path)!r})); "
            "print(sorted(m for m in sys.modules if m.startswith(('blueprints.planner', 'blueprints.spec', "
            "'blueprints.loader'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


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
    conf = f"# header\nNCCL_IB_HCA=rxe0\nNCCL_IB_TC={bp.qos.traffic_class.value}\n"
    env_file = f'NCCL_IB_TC="{bp.qos.traffic_class.value + 4}"\n'  # one DSCP up: a mismatch
    nic = nic_layer({bp.qos.dscp.value: [bp.qos.roce_priority.value]}, bp.qos.dscp.value, "dcb app rail0")
    layers = [x for x in (nic, nccl_conf_layer(conf), nccl_conf_layer(env_file, "/etc/nccl.env")) if x]
    problems = compare(ref, layers)
    assert [p.path for p in problems] == ["/etc/nccl.env NCCL_IB_TC"]
    assert "DSCP 27" in problems[0].message and "plan qos.dscp = 26" in problems[0].message
    assert nccl_conf_layer("NCCL_ALGO=Ring\n") is None
    assert nic_layer({}, 26, "dcb app rail0") is None
    moved = nic_layer({26: [4]}, 26, "dcb app rail0")
    assert moved is not None and "disagree on priority" in compare(ref, [moved])[0].message
