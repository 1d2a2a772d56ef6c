"""The runner's NCCL step (validators/run/nccl.py) for real, on this machine through Ansible's local connection: the
nvidia-smi pre-flight (no GPU here, so the node is short of its plan and named), and the launch proof with Open MPI's
mpirun (Debian's openmpi-bin: .ci/run installs it; skipped
elsewhere when it is missing). The lab tier runs the same step across two VMs
(tests/lab)."""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import pytest
import yaml

from blueprints.blueprint import Blueprint, Check
from blueprints.lab_plan import LabRail
from blueprints.loader import load_requirements
from blueprints.planner import plan
from tests.conftest import require_tool
from validators.evaluate import evaluate
from validators.inventory import load_inventory
from validators.results import Results
from validators.run import nccl
from validators.run.plumbing import Session

REPO = Path(__file__).resolve().parents[4]
HOST = socket.gethostname()  # the launch proof checks that ranks ran on the hosts the launch named


def blueprint(name: str) -> Blueprint:
    return plan(load_requirements(REPO / "examples" / f"{name}.yaml"))


def nccl_check(bp: Blueprint) -> Check:
    return next(c for c in bp.acceptance.checks if c.id == "nccl.allreduce_busbw")


def session(bp: Blueprint, tmp_path: Path) -> Session:
    path = tmp_path / "inventory.yml"
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "rails": [{"index": 0, "name": "rail0", "address": "127.0.0.1", "prefix": 8}]}
    path.write_text(yaml.safe_dump({"all": {"children": {"gpu_clients": {"hosts": {HOST: host}}}}}))
    results = tmp_path / "results"
    results.mkdir()
    return Session(bp, tmp_path, load_inventory(path), results, lambda step, message: None)


def test_the_preflight_names_a_node_without_its_gpus(tmp_path: Path) -> None:
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has nvidia-smi: the test needs a node short of its planned GPUs")
    bp = blueprint("cv-training-500tb")
    run = session(bp, tmp_path)
    nccl.run(run, nccl_check(bp))
    run.finish()
    assert not (run.results / "nccl" / "all_reduce_perf.txt").exists(), "no collective after a failed pre-flight"
    got = evaluate(bp, Results(run.results), ["nccl.allreduce_busbw"])[0]
    assert got.status == "fail" and f"{HOST}: 0 of 8 GPUs (nvidia-smi -L exited 127" in got.message, got.message


def test_the_launch_proof_runs_mpi_through_the_same_launch(tmp_path: Path) -> None:
    require_tool("mpirun", "openmpi-bin")  # a failure under CI, which installs it (.ci/run)
    lab = blueprint("lab")
    assert lab.lab is not None
    # edited: the lab's rail 0 subnet set to loopback, the one network this machine's single node has
    rails = (LabRail(index=0, name="rail0", subnet="127.0.0.0/8", mtu=1500), *lab.lab.rails[1:])
    bp = lab.model_copy(update={"lab": lab.lab.model_copy(update={"rails": rails})})
    run = session(bp, tmp_path)
    nccl.run(run, nccl_check(bp))
    run.finish()
    assert run.setup_errors == {}, run.setup_errors
    log = (run.results / "nccl" / "launch" / "mpi_ring.txt").read_text()
    assert f"[1,0]<stdout>:rank 0 of 1 on {HOST}: allreduce 1 ring 0" in log
    note = run.notes["nccl.allreduce_busbw"][0]
    assert note.startswith("launch proven without a GPU: mpirun started 1 ranks") and f"{HOST} (1)" in note
    got = evaluate(bp, Results(run.results), ["nccl.allreduce_busbw"])[0]
    assert got.status == "not_applicable" and note in got.notes
