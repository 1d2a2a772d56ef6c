"""What a run may write, decided from the Blueprint before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint, ScratchArea
from blueprints.errors import ClusterSmithError
from blueprints.loader import load_requirements
from blueprints.planner import plan
from validators.evaluate import select
from validators.safety import plan_writes

REPO = Path(__file__).resolve().parents[2]
HOSTS = ["client-1", "client-2"]


@pytest.fixture(scope="module")
def bp() -> Blueprint:
    return plan(load_requirements(REPO / "examples" / "lab.yaml"))


def test_default_writes_only_the_plans_scratch_files(bp: Blueprint) -> None:
    w = plan_writes(bp, select(bp), None, False, HOSTS)
    scratch = bp.acceptance.scratch[0]
    assert (w.kind, w.path, w.mount, w.destructive) == ("scratch_dir", scratch.path, scratch.mount, False)
    assert f"in {scratch.path} (plan scratch on {scratch.mount}) on client-1, client-2" in w.summary
    assert "removes them afterwards" in w.summary


def test_read_only_checks_write_nothing(bp: Blueprint) -> None:
    w = plan_writes(bp, select(bp, ["nvmeof.paths", "rdma.write_bw", "qos.consistency"]), "/dev/sda", False, HOSTS)
    assert w.kind == "none"


@pytest.mark.parametrize(("target", "fragment"), [
    ("/dev/nvme0n1", "would overwrite the data on /dev/nvme0n1 on client-1, client-2; pass --destructive"),
    ("/data", "would write 1 file(s) of up to 67 MB per client into /data on client-1, client-2"),
])
def test_anything_else_needs_destructive_and_says_what(bp: Blueprint, target: str, fragment: str) -> None:
    with pytest.raises(ClusterSmithError) as err:
        plan_writes(bp, select(bp), target, False, HOSTS)
    problem = err.value.problems[0]
    assert problem.path == "--fio-target" and problem.value == target and fragment in problem.message
    allowed = plan_writes(bp, select(bp), target, True, HOSTS)
    assert allowed.destructive and allowed.summary.startswith("--destructive: fio will")


def test_a_scratch_namespace_of_the_plan_is_written_after_each_host_checks_it(bp: Blueprint) -> None:
    nqn = "nqn.2026-11.io.clustersmith:lab:scratch-1"
    area = ScratchArea(kind="namespace", path=nqn, role="gpu_client",
                       derived_from=bp.acceptance.scratch[0].derived_from)
    marked = bp.model_copy(update={"acceptance": bp.acceptance.model_copy(
        update={"scratch": (*bp.acceptance.scratch, area)})})
    w = plan_writes(marked, select(marked), "/dev/nvme1n1", False, HOSTS)
    assert (w.kind, w.scratch_nqns, w.destructive) == ("device", (nqn,), False)
    assert "after each host checks that it is a scratch namespace" in w.summary


def test_relative_targets_are_refused(bp: Blueprint) -> None:
    with pytest.raises(ClusterSmithError, match="expected an absolute directory or /dev/ device path"):
        plan_writes(bp, select(bp), "scratch", True, HOSTS)
