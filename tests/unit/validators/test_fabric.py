"""QoS layers and Prometheus answers recorded in the QEMU lab (tests/fixtures/lab/record.py), and their rules.
Plan values (DSCP, priority, ToS) come from the Blueprint; the host side from the recordings."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint
from blueprints.loader import load_requirements
from blueprints.planner import plan
from validators.errors import ParseError
from validators.evaluate import evaluate
from validators.monitoring import parse_targets, parse_vector
from validators.outcome import CheckResult, exit_code
from validators.qos import host_layers, parse_env_file
from validators.results import Results

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"


@pytest.fixture(scope="module")
def bp() -> Blueprint:
    return plan(load_requirements(REPO / "examples" / "lab.yaml"))


def judged(bp: Blueprint, root: Path, check_id: str) -> CheckResult:
    return evaluate(bp, Results(root), [check_id], strict=True)[0]


def recorded_roce_tos() -> dict[str, str]:
    """The runner's qos/<host>/rdma_cm_tos.json, from the recorded `grep -H` of rdma_cm's configfs."""
    lines = (FIXTURES / "qos" / "lab-rdma_cm.txt").read_text().splitlines()
    return dict(line.split(":", 1) for line in lines if "default_roce_tos" in line.split(":", 1)[0])


def nccl_conf(bp: Blueprint) -> str:
    """/etc/nccl.conf as the nccl role writes it (its own conf_text) from the Blueprint's NCCL environment."""
    spec = importlib.util.spec_from_file_location("nccl_config", REPO / "roles/nccl/library/nccl_config.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return str(module.conf_text({e.name: e.value for e in bp.nccl_environment()}))


def qos_results(root: Path, host: str, roce_tos: dict[str, str], conf: str | None,
                others: dict[str, str] | None = None) -> Path:
    """``host`` with the given layers; every other lab client with ``others`` (the recorded ToS) and the planned
    nccl.conf, so the result covers the plan's GPU nodes."""
    for name in ("client-1", "client-2"):
        folder = root / "qos" / name
        folder.mkdir(parents=True, exist_ok=True)
        tos, text = (roce_tos, conf) if name == host else (others if others is not None else roce_tos, conf)
        (folder / "rdma_cm_tos.json").write_text(json.dumps(tos))
        if text is not None:
            (folder / "nccl.conf").write_text(text)
    return root


def test_recorded_rdma_cm_tos_and_the_planned_nccl_tc_agree(bp: Blueprint, tmp_path: Path) -> None:
    got = judged(bp, qos_results(tmp_path, "client-1", recorded_roce_tos(), nccl_conf(bp)), "qos.consistency")
    assert got.status == "pass" and got.measured == 1
    assert "rdma_cm rxe0 default_roce_tos" in got.details[0].note and "NCCL_IB_TC" in got.details[0].note


def test_a_layer_on_the_cnp_class_is_named_with_both_values(bp: Blueprint, tmp_path: Path) -> None:
    wrong = {path: str(bp.qos.cnp_dscp.value << 2) for path in recorded_roce_tos()}
    got = judged(bp, qos_results(tmp_path, "client-1", wrong, nccl_conf(bp), recorded_roce_tos()),
                 "qos.consistency")
    assert got.status == "fail" and got.measured == 0
    assert f"(DSCP {bp.qos.cnp_dscp.value})" in got.message and f"DSCP {bp.qos.dscp.value}" in got.message


def test_a_host_stating_no_layer_fails(bp: Blueprint, tmp_path: Path) -> None:
    folder = qos_results(tmp_path, "client-1", recorded_roce_tos(), nccl_conf(bp)) / "qos" / "client-2"
    (folder / "rdma_cm_tos.json").write_text("{}")
    (folder / "nccl.conf").unlink()
    got = judged(bp, tmp_path, "qos.consistency")
    assert got.status == "fail" and "client-2: no layer states a QoS marking" in got.message


def test_qos_of_a_host_the_blueprint_does_not_plan_is_a_setup_error(bp: Blueprint, tmp_path: Path) -> None:
    qos_results(tmp_path, "client-1", recorded_roce_tos(), nccl_conf(bp))
    (tmp_path / "qos" / "client-2").rename(tmp_path / "qos" / "client-9")
    got = judged(bp, tmp_path, "qos.consistency")
    assert got.status == "setup_error" and "missing: client-2; not in the Blueprint: client-9" in got.message


def test_discovery_conf_tos_options_are_layers() -> None:
    text = "# written by the nvmeof role\n--transport=rdma --traddr=10.77.0.1 --trsvcid=4420 --tos=106\n"
    layers = host_layers("client-1", None, text, {})
    assert [(layer.layer, layer.dscp, layer.field) for layer in layers] == \
        [("nvmeof", 106 >> 2, "client-1:/etc/nvme/discovery.conf line 2")]


def test_bad_nccl_conf_line() -> None:
    with pytest.raises(ParseError, match="line 2: expected KEY=VALUE"):
        parse_env_file("NCCL_IB_TC=106\nNCCL_IB_HCA\n", "nccl.conf")


def test_recorded_targets_of_a_stock_prometheus_are_not_the_plans(bp: Blueprint, tmp_path: Path) -> None:
    """Debian's Prometheus as its package starts it (the recording: its own localhost targets, both down) is not the
    Blueprint's monitoring: a setup error naming the planned targets it lacks and the ones the Blueprint does not
    name, its down targets still shown with their errors."""
    targets = parse_targets((FIXTURES / "monitoring" / "lab-targets.json").read_text(), "x")
    assert [t.health for t in targets.active] == ["down", "down"] and targets.up_ratio == 0
    (tmp_path / "prometheus").mkdir()
    (tmp_path / "prometheus" / "targets.json").write_text((FIXTURES / "monitoring" / "lab-targets.json").read_text())
    got = judged(bp, tmp_path, "monitoring.targets_up")
    assert got.status == "setup_error", got
    assert "0 of 6 targets in the result; missing: node client-1, node client-2, node storage-1, prometheus storage-1" \
        in got.message, got.message
    assert "not in the Blueprint: node localhost:9100, prometheus localhost:9090" in got.message, got.message
    assert got.notes == ("down: node localhost:9100, prometheus localhost:9090",)
    assert "network is unreachable" in got.details[0].note


def targets_answer(up: dict[str, str]) -> str:
    """A Prometheus targets answer (the API's shape, as in the recording above) with these "job instance" targets and
    their health."""
    return json.dumps({"status": "success", "data": {"activeTargets": [
        {"labels": {"job": where.split()[0], "instance": where.split()[1]}, "scrapeUrl": f"https://{where.split()[1]}/",
         "health": health, "lastError": ""} for where, health in up.items()], "droppedTargets": []}})


def test_every_target_up_passes_only_when_every_planned_target_is_there(bp: Blueprint, tmp_path: Path) -> None:
    """A job or host missing from Prometheus' targets (a target file not installed, a host left out) would leave the
    ratio of the others at 1: it is a setup error naming what is missing, never a pass."""
    planned = [f"{g.job} {h}" for g in bp.scrape_targets() for h in g.hosts]
    assert "node client-2" in planned and len(planned) > 3
    (tmp_path / "prometheus").mkdir()
    answer = tmp_path / "prometheus" / "targets.json"
    answer.write_text(targets_answer(dict.fromkeys(planned, "up")))
    got = judged(bp, tmp_path, "monitoring.targets_up")
    assert got.status == "pass" and got.measured == 1, got
    answer.write_text(targets_answer(dict.fromkeys([p for p in planned if p != "node client-2"], "up")))
    got = judged(bp, tmp_path, "monitoring.targets_up")
    assert got.status == "setup_error" and "missing: node client-2" in got.message, got


@pytest.mark.parametrize(("text", "field", "message"), [
    ('{"status": "error", "error": "bad query"}', "status", "expected a Prometheus API answer"),
    ('{"status": "success", "data": {"activeTargets": {}}}', "data.activeTargets", "expected a list"),
])
def test_bad_targets_answer(text: str, field: str, message: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_targets(text, "t.json")
    assert err.value.problems[0].path == field and message in err.value.problems[0].message


def test_bad_query_answer() -> None:
    with pytest.raises(ParseError, match="expected an instant vector"):
        parse_vector('{"status": "success", "data": {"resultType": "matrix", "result": []}}', "q.json")


def cache_results(root: Path, hosts: list[str] | None) -> Path:
    """A results folder with the recorded hit ratio answer and, as `accept` writes it, the hosts with a cache."""
    (root / "prometheus").mkdir()
    (root / "prometheus" / "cache_hit_ratio.json").write_text(
        (FIXTURES / "monitoring" / "lab-cache-hit-ratio.json").read_text())
    if hosts is not None:
        (root / "cache-hosts.json").write_text(json.dumps(hosts))
    return root


def test_recorded_cache_hit_ratios_count_the_lowest_host(bp: Blueprint, tmp_path: Path) -> None:
    samples = parse_vector((FIXTURES / "monitoring" / "lab-cache-hit-ratio.json").read_text(), "x")
    assert sorted(s.labels["instance"] for s in samples) == ["client-1", "client-2"]
    got = judged(bp, cache_results(tmp_path, ["client-1", "client-2"]), "cache.hit_ratio")
    assert got.status == "info" and got.measured == min(s.value for s in samples)  # lab: judged info only
    assert {d.where for d in got.details} == {"client-1", "client-2"}


def test_a_cache_host_without_a_ratio_is_a_setup_error_naming_it(bp: Blueprint, tmp_path: Path) -> None:
    got = judged(bp, cache_results(tmp_path, ["client-1", "client-2", "client-3"]), "cache.hit_ratio")
    assert got.status == "setup_error" and got.measured is None
    assert "no cache.read_hit_ratio for client-3, where storage_tiering puts a cache" in got.message
    assert {d.where for d in got.details} == {"client-1", "client-2"}  # what was measured stays visible


def test_a_cache_no_read_reached_in_the_window_is_a_setup_error_not_a_ratio(bp: Blueprint, tmp_path: Path) -> None:
    """0 / 0 is NaN in PromQL: the recorded answer with client-2's value as Prometheus writes a NaN sample."""
    root = cache_results(tmp_path, ["client-1", "client-2"])
    answer = json.loads((root / "prometheus" / "cache_hit_ratio.json").read_text())
    answer["data"]["result"][1]["value"][1] = "NaN"
    (root / "prometheus" / "cache_hit_ratio.json").write_text(json.dumps(answer))
    got = judged(bp, root, "cache.hit_ratio")
    assert got.status == "setup_error" and got.measured is None
    assert "no reads reached the cache of client-2 while the fio workloads ran" in got.message
    assert [(d.where, d.value is None) for d in got.details] == [("client-1", False), ("client-2", True)]


def test_hand_made_results_without_cache_hosts_judge_the_ratios_found(bp: Blueprint, tmp_path: Path) -> None:
    assert judged(bp, cache_results(tmp_path, None), "cache.hit_ratio").status == "info"


def test_a_gpu_node_without_a_hit_ratio_is_missing_even_in_hand_made_results(tmp_path: Path) -> None:
    """The lab plans client-1 and client-2, the hosts the recorded answer names; an edit renames one of them."""
    prod = plan(load_requirements(REPO / "examples" / "lab.yaml"))
    got = judged(prod, cache_results(tmp_path, None), "cache.hit_ratio")
    assert got.coverage_shown == "2 of 2 hosts" and got.status == "info"
    answer = json.loads((tmp_path / "prometheus" / "cache_hit_ratio.json").read_text())
    answer["data"]["result"][1]["metric"]["instance"] = "client-9"  # edit: the second series' host renamed
    (tmp_path / "prometheus" / "cache_hit_ratio.json").write_text(json.dumps(answer))
    got = judged(prod, tmp_path, "cache.hit_ratio")
    assert got.status == "setup_error" and "missing: client-2; not in the Blueprint: client-9" in got.message


def test_a_disagreeing_layer_fails_even_where_another_node_is_missing(bp: Blueprint, tmp_path: Path) -> None:
    """Issue 37 item 4: client-1's RDMA CM marks the CNP class; client-2's folder is missing. The disagreement is a
    failure of the cluster (exit 1); the missing node stands beside it, named."""
    wrong = {path: str(bp.qos.cnp_dscp.value << 2) for path in recorded_roce_tos()}
    qos_results(tmp_path, "client-1", wrong, nccl_conf(bp), recorded_roce_tos())
    shutil.rmtree(tmp_path / "qos" / "client-2")
    got = evaluate(bp, Results(tmp_path), ["qos.consistency"], strict=False)[0]
    assert got.status == "fail", got.message
    assert f"(DSCP {bp.qos.cnp_dscp.value})" in got.message
    assert "and the result does not cover the plan: 1 of 2 hosts in the result; missing: client-2" in got.message
    assert exit_code([got]) == 1
