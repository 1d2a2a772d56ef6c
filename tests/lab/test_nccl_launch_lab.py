"""The NCCL launch proven on the example lab, whose GPUs are emulated: `clustersmith accept --only
nccl.allreduce_busbw` runs the nccl step, which starts an MPI program (validators/playbooks/files/mpi_ring.py, Open
MPI's library through ctypes: MPI_Init, MPI_Allreduce, a ring MPI_Sendrecv) from client-1 across both clients with
Debian's openmpi-bin, through the hostfile, rank placement and --tag-output log collection nccl-tests gets on a real
cluster. It proves the launch and MPI between the VMs over rail 0, never NCCL or a GPU: the check stays not
applicable, with the proof in its notes."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.lab.conftest import TIMINGS, ExampleLab, tail
from tests.lab.conftest import run as run_command
from validators.nccl_run import Launch, LaunchNode, judge_launch_proof

pytestmark = pytest.mark.lab


def test_mpirun_starts_an_mpi_program_on_every_client_through_the_nccl_launch(example_lab: ExampleLab) -> None:
    bp, folder = example_lab.blueprint, example_lab.folder
    assert bp.lab is not None
    before = set((folder / "acceptance" / "runs").glob("*")) if (folder / "acceptance" / "runs").is_dir() else set()
    started = time.monotonic()
    done = run_command([sys.executable, "-m", "validators", "accept", folder, "--only", "nccl.allreduce_busbw",
                        "--timeout-scale", "4"], timeout=1800)
    TIMINGS["accept --only nccl.allreduce_busbw (launch proof)"] = time.monotonic() - started
    runs = sorted(set((folder / "acceptance" / "runs").glob("*")) - before)
    assert runs and done.returncode == 0, tail(done)
    run: Path = runs[-1]
    log = (run / "nccl" / "launch" / "mpi_ring.txt").read_text()
    clients = [h.name for h in bp.lab.hosts if h.role == "gpu_client"]
    for rank, host in enumerate(clients):  # one rank per (emulated) GPU, client by client, tagged by mpirun
        assert f"[1,{rank}]<stdout>:rank {rank} of {len(clients)} on {host}: allreduce " in log, log
    launch = Launch(kind="mpirun", launcher=clients[0], nodes=tuple(LaunchNode(name=c, address=c) for c in clients),
                    gpus_per_node=bp.compute.gpus_per_node, env=())
    assert judge_launch_proof(log, launch).problems == ()
    report = (run / "report.json").read_text()
    assert '"status": "not_applicable"' in report and "launch proven without a GPU: mpirun started 2 ranks" in report
