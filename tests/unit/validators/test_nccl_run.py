"""NCCL across every GPU node (validators.nccl_run): the launch from each example's Blueprint, the GPU pre-flight, the
transport and counts NCCL's debug log must show, the pairwise sweep, and the lab's launch proof. Thresholds and plans
come from the planner; tool output from recordings (tests/fixtures/nccl/*/README.md), edits said where made."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint, Check
from blueprints.loader import load_requirements
from blueprints.planner import plan
from tests.unit.validators.gate_inputs import two_node_blueprint
from validators.evaluate import evaluate
from validators.inventory import Host, Inventory, Rail
from validators.nccl_debug import parse_nccl_debug_file
from validators.nccl_run import (
    LAB_RSH_AGENT,
    GpuCount,
    Launch,
    LaunchError,
    LaunchNode,
    collectives,
    count_gpus,
    debug_missing,
    debug_violations,
    judge_launch_proof,
    judge_preflight,
    pair_waves,
    plan_launch,
    slow_nodes,
)
from validators.results import Results

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "nccl"
EXAMPLES = sorted(p.stem for p in (REPO / "examples").glob("*.yaml"))
LISTING = (FIXTURES / "nvidia-smi" / "ccr-h100-8gpu.txt").read_text()
PROOF = (FIXTURES / "launch" / "mpi_ring-local-2ranks.txt").read_text()


def blueprint(name: str) -> Blueprint:
    return plan(load_requirements(REPO / "examples" / f"{name}.yaml"))


def nccl_check(bp: Blueprint) -> Check:
    return next(c for c in bp.acceptance.checks if c.id == "nccl.allreduce_busbw")


def with_args(check: Check, **args: object) -> Check:
    return Check.model_validate({**dict(check), "args": {**check.args.model_dump(), **args}})


def inventory(bp: Blueprint, rails: bool = True, slurm: str | None = None) -> Inventory:
    """The Blueprint's GPU nodes as an inventory lists them, rail 0 at 10.77.<n / 250>.<n % 250 + 1>."""
    names = bp.hosts_by_role()["gpu_client"]
    hosts = {h: Host(name=h, rails=(Rail(index=0, address=f"10.77.{i // 250}.{i % 250 + 1}"),) if rails else ())
             for i, h in enumerate(names)}
    groups = {"gpu_clients": tuple(names)}
    if slurm is not None:
        groups["slurm_controller"] = (slurm,)
        hosts[slurm] = Host(name=slurm)
    return Inventory(path="inventory.yml", groups=groups, hosts=hosts)


# -- the launch ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES)
def test_hostfile_and_mpirun_line_from_every_example(example: str) -> None:
    bp = blueprint(example)
    launch = plan_launch(bp, inventory(bp))
    nodes, gpus = bp.compute.nodes.value, bp.compute.gpus_per_node
    lines = launch.hostfile().splitlines()
    assert len(lines) == nodes and lines[0] == f"10.77.0.1 slots={gpus}"
    assert all(line.endswith(f" slots={gpus}") for line in lines)
    argv = launch.argv(["all_reduce_perf", "-b", "2G"])
    assert argv[0] == "mpirun" and argv[-3:] == ["all_reduce_perf", "-b", "2G"]
    assert argv[argv.index("-np") + 1] == str(nodes * gpus)
    assert argv[argv.index("--map-by") + 1] == f"ppr:{gpus}:node" and "--tag-output" in argv
    exported = [argv[i + 1] for i, a in enumerate(argv) if a == "-x"]
    assert exported == ["NCCL_DEBUG=INFO", *(f"{v.name}={v.value}" for v in bp.nccl_environment())]
    assert launch.launcher == bp.hosts_by_role()["gpu_client"][0]


def test_the_planned_environment_travels_with_every_rank() -> None:
    roce, efa, gcp = (plan_launch(bp, inventory(bp)).argv(["x"]) for bp in
                      (blueprint("cv-training-500tb"), blueprint("llm-training-16k"), blueprint("recsys-inference")))
    assert "NCCL_IB_TC=106" in roce  # the QoS plan's ToS byte (DSCP 26)
    assert "FI_PROVIDER=efa" in efa
    assert "NCCL_NET=gIB" in gcp and "NCCL_SOCKET_IFNAME=enp0s19,enp192s20" in gcp


def test_the_lab_holds_mpi_to_rail_0_and_uses_its_own_key() -> None:
    bp = blueprint("lab")
    argv = plan_launch(bp, inventory(bp), rsh_agent=LAB_RSH_AGENT).argv(["python3", "ring.py"])
    subnet = bp.lab.rails[0].subnet if bp.lab else ""
    assert argv[argv.index("oob_tcp_if_include") + 1] == subnet
    assert argv[argv.index("btl_tcp_if_include") + 1] == subnet
    assert argv[argv.index("plm_rsh_agent") + 1] == LAB_RSH_AGENT


def test_a_node_without_rails_is_reached_by_its_name() -> None:
    bp = blueprint("recsys-inference")
    assert plan_launch(bp, inventory(bp, rails=False)).hostfile().splitlines()[0] == "gpu-1 slots=8"


def test_srun_where_the_inventory_names_a_slurm_controller() -> None:
    bp = blueprint("recsys-inference")
    launch = plan_launch(bp, inventory(bp, slurm="slurmctl-1"))
    argv = launch.argv(["alltoall_perf", "-b", "2G"])
    assert launch.kind == "srun" and launch.launcher == "slurmctl-1"
    assert argv[:6] == ["srun", "--nodes=32", "--ntasks=256", "--ntasks-per-node=8", "--gpus-per-task=1",
                        "--nodelist=" + ",".join(f"gpu-{i}" for i in range(1, 33))]
    # env(1) carries the environment: NCCL_SOCKET_IFNAME's comma would split srun's --export list
    assert argv[6:9] == ["--export=ALL", "env", "NCCL_DEBUG=INFO"]
    assert "NCCL_SOCKET_IFNAME=enp0s19,enp192s20" in argv and argv[-3:] == ["alltoall_perf", "-b", "2G"]


def test_no_gpu_host_in_the_inventory_is_a_setup_error() -> None:
    bp = blueprint("cv-training-500tb")
    empty = Inventory(path="inventory.yml", groups={"storage_targets": ("hot-1",)}, hosts={"hot-1": Host(name="hot-1")})
    with pytest.raises(LaunchError, match="no GPU node matched: the inventory's gpu_clients group is empty"):
        plan_launch(bp, empty)


@pytest.mark.parametrize(("example", "expected"), [
    ("lab", ("all_reduce_perf",)),
    ("cv-training-500tb", ("all_reduce_perf",)),
    ("llm-training-16k", ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf")),
    ("recsys-inference", ("all_reduce_perf", "alltoall_perf")),
])
def test_which_collectives_follow_the_business(example: str, expected: tuple[str, ...]) -> None:
    check = nccl_check(blueprint(example))
    assert collectives(check) == expected
    assert {"business.type", "business.domain"} <= set(check.derived_from.spec)


# -- the GPU pre-flight ----------------------------------------------------------------------------------------


def test_nvidia_smi_listing_counts_the_gpus() -> None:
    assert count_gpus(LISTING) == 8
    assert count_gpus("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.") == 0


def test_a_node_short_of_its_gpus_fails_naming_it_and_its_count() -> None:
    check = nccl_check(blueprint("cv-training-500tb"))
    short = "".join(LISTING.splitlines(keepends=True)[:6])  # edited: the recording without GPUs 6 and 7
    counted = {"gpu-1": GpuCount(gpus=count_gpus(LISTING)), "gpu-2": GpuCount(gpus=count_gpus(short)),
               "gpu-3": GpuCount(gpus=0, error="nvidia-smi -L exited 9: No devices were found")}
    got = judge_preflight(check, counted)
    assert got is not None and got.value == 0.0
    assert got.failures == ("gpu-2: 6 of 8 GPUs",
                            "gpu-3: 0 of 8 GPUs (nvidia-smi -L exited 9: No devices were found)")
    assert [d.where for d in got.details] == ["gpu-2", "gpu-3"]
    assert judge_preflight(check, {"gpu-1": GpuCount(gpus=8)}) is None


def test_preflight_that_counted_nothing_is_a_setup_error_and_only_the_lab_is_not_applicable() -> None:
    assert "matched no host" in (judge_preflight(nccl_check(blueprint("cv-training-500tb")), {}).setup_error or "")
    lab = judge_preflight(nccl_check(blueprint("lab")), {"client-1": GpuCount(gpus=0)})
    assert lab is not None and "GPUs are emulated (lab target)" in (lab.not_applicable or "")


def test_the_rule_fails_a_short_node_from_the_runner_preflight(tmp_path: Path) -> None:
    (tmp_path / "nccl").mkdir()
    (tmp_path / "nccl" / "preflight.json").write_text(json.dumps({"gpu-1": {"gpus": 8, "error": None},
                                                                  "gpu-7": {"gpus": 7, "error": None}}))
    got = evaluate(blueprint("cv-training-500tb"), Results(tmp_path), ["nccl.allreduce_busbw"], strict=False)[0]
    assert got.status == "fail" and "gpu-7: 7 of 8 GPUs" in got.message
    assert "collective was not run" in " ".join(got.notes)


def test_a_malformed_preflight_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "nccl").mkdir()
    (tmp_path / "nccl" / "preflight.json").write_text(json.dumps({"gpu-1": {"gpus": "eight"}}))
    got = evaluate(blueprint("cv-training-500tb"), Results(tmp_path), ["nccl.allreduce_busbw"], strict=False)[0]
    assert got.status == "setup_error" and "preflight.json" in got.message and "gpu-1" in got.message


# -- what the debug log must show ------------------------------------------------------------------------------


def test_efa_log_with_its_planned_counts_shows_no_violation() -> None:
    debug = parse_nccl_debug_file(FIXTURES / "debug" / "eks-efa-2x1-t4-interleaved.txt")
    # edited: the llm plan's counts set to the recording's 2 nodes x 1 GPU
    check = with_args(nccl_check(blueprint("llm-training-16k")), nodes=2, gpus_per_node=1)
    assert debug_violations(debug, check, "run.txt") == ([], [])


def test_the_socket_fallback_is_never_a_pass() -> None:
    debug = parse_nccl_debug_file(FIXTURES / "debug" / "nccl-300-socket-lo-tag-output.txt")
    failed, _ = debug_violations(debug, nccl_check(blueprint("cv-training-500tb")), "run.txt")
    assert failed[0] == "run.txt: NCCL fell back to NET/Socket (TCP) between nodes; expected NET/IB (NCCL's IB verbs " \
                       "transport)"
    channels = parse_nccl_debug_file(FIXTURES / "debug" / "nccl-952-no-ib-device-socket-channels.txt")
    assert "fell back to NET/Socket" in debug_violations(channels, nccl_check(blueprint("lab")), "x")[0][0]


def test_the_wrong_plugin_and_the_wrong_counts_are_named() -> None:
    efa = parse_nccl_debug_file(FIXTURES / "debug" / "eks-efa-2x1-t4-interleaved.txt")
    # the transport is a failure of the cluster; the counts say the run was short of the plan
    assert debug_violations(efa, nccl_check(blueprint("cv-training-500tb")), "run.txt") == (
        ["run.txt: NCCL used the libfabric (aws-ofi-nccl) plugin (networks AWS Libfabric); expected NET/IB (NCCL's IB "
         "verbs transport)"],
        ["run.txt: NCCL's communicator has 2 ranks; planned 512 (64 node(s) x 8 GPU(s))",
         "run.txt: NCCL ran on 2 node(s); planned 64"])
    roce = parse_nccl_debug_file(FIXTURES / "debug" / "nccl-tests-185-dgxh100-roce.txt")  # IB, no comm line
    assert debug_violations(roce, nccl_check(blueprint("cv-training-500tb")), "r") == (
        [], ["r: NCCL ran on 2 node(s); planned 64"])
    assert debug_missing(roce, nccl_check(blueprint("cv-training-500tb")), "r") == (
        "r: NCCL's INFO lines show no communicator size (no 'comm ... nranks' line), so the rank count cannot be "
        "confirmed: rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET (NCCL prints both at INIT)")


def test_info_lines_that_name_no_network_are_missing_evidence_not_a_failure() -> None:
    """NVIDIA/nccl#1357's H100 log (nRanks 16, nNodes 2) prints no 'NET/' path and no 'Using network' line: the
    transport is unconfirmed, a setup error saying what to rerun with, never 'NCCL used unknown' as a failure."""
    h100 = parse_nccl_debug_file(FIXTURES / "debug" / "nccl-1357-h100-2node-comm.txt")
    gib = with_args(nccl_check(blueprint("recsys-inference")), nodes=2)  # edited: 2 nodes, as the recording
    assert debug_violations(h100, gib, "r") == ([], [])
    assert debug_missing(h100, gib, "r") == (
        "r: NCCL's INFO lines show no network between nodes (no 'NET/' channel path, no 'Using network' line), so "
        "the transport (the gIB plugin) cannot be confirmed: rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET "
        "(NCCL prints both at INIT)")


def test_a_log_without_nccl_info_lines_is_not_confirmed_and_says_what_to_rerun_with() -> None:
    check = nccl_check(blueprint("cv-training-500tb"))
    assert debug_violations(None, check, "run.txt") == ([], []), "missing evidence is not a violation"
    assert debug_missing(None, check, "run.txt") == (
        "run.txt: no NCCL INFO lines, so the transport (NET/IB (NCCL's IB verbs transport)) and the rank count cannot "
        "be confirmed: rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET is enough)")


def test_the_rule_fails_a_sweep_whose_debug_log_shows_the_socket_fallback(tmp_path: Path) -> None:
    (tmp_path / "nccl").mkdir()
    shutil.copy(FIXTURES / "a3mega-2x8-h100.txt", tmp_path / "nccl" / "all_reduce_perf.txt")
    shutil.copy(FIXTURES / "debug" / "nccl-300-socket-lo-tag-output.txt",
                tmp_path / "nccl" / "all_reduce_perf.debug.log")
    bp = two_node_blueprint(tmp_path)  # 2 nodes x 8 GPUs, the a3mega recording's shape: the run covers the plan
    got = evaluate(bp, Results(tmp_path), ["nccl.allreduce_busbw"], strict=False)[0]
    assert got.status == "fail" and "all_reduce_perf.txt: NCCL fell back to NET/Socket" in got.message


# -- pairwise sweep --------------------------------------------------------------------------------------------


def test_pair_waves_are_disjoint_and_change_partners() -> None:
    nodes = [f"gpu-{i}" for i in range(1, 7)]
    waves = pair_waves(nodes)
    assert len(waves) == 2 and all(len(w) == 3 for w in waves)
    for wave in waves:
        members = [n for pair in wave for n in pair]
        assert sorted(members) == sorted(nodes)  # every node once per wave
    first, second = ({frozenset(p) for p in w} for w in waves)
    assert not first & second  # nobody meets the same partner twice
    odd = pair_waves(nodes[:5], rounds=4)
    assert all(len(w) == 2 for w in odd) and len(odd) == 4
    sat_out = [next(n for n in nodes[:5] if all(n not in p for p in w)) for w in odd]
    assert len(set(sat_out)) == 4  # a different node sits each wave out
    assert pair_waves(["a", "b"]) == [[("a", "b")]]


def test_the_sweep_names_the_slow_node_and_the_slow_link() -> None:
    waves = pair_waves(["gpu-1", "gpu-2", "gpu-3", "gpu-4"])
    pairs = [p for w in waves for p in w]
    assert pairs == [("gpu-1", "gpu-4"), ("gpu-2", "gpu-3"), ("gpu-1", "gpu-3"), ("gpu-4", "gpu-2")]
    slow = slow_nodes({("gpu-1", "gpu-4"): 40.0, ("gpu-2", "gpu-3"): 90.0, ("gpu-1", "gpu-3"): 41.0,
                       ("gpu-4", "gpu-2"): 92.0}, 80.0)
    assert slow.slow == ("gpu-1",) and slow.slow_links == () and slow.undecided == ()
    assert slow.note(80.0).startswith("pairwise sweep: slow node(s): gpu-1 (below 80 GB/s with every partner)")
    link = slow_nodes({("gpu-1", "gpu-4"): 90.0, ("gpu-2", "gpu-3"): 20.0, ("gpu-1", "gpu-3"): 90.0,
                       ("gpu-4", "gpu-2"): None}, 80.0)  # None: that pair's run failed
    assert link.slow == ("gpu-2",) and link.slow_links == ()
    only = slow_nodes({("gpu-1", "gpu-4"): 90.0, ("gpu-2", "gpu-3"): 20.0, ("gpu-1", "gpu-3"): 90.0,
                       ("gpu-4", "gpu-2"): 91.0}, 80.0)
    assert only.slow == () and only.slow_links == (("gpu-2", "gpu-3"),)
    two = slow_nodes({("a", "b"): 10.0}, 80.0)
    assert two.undecided == (("a", "b"),) and "no other partner" in two.note(80.0)
    assert slow_nodes({("a", "b"): 90.0}, 80.0).note(80.0) == "pairwise sweep: every pair reached 80 GB/s"


def test_a_pair_is_launched_from_its_first_node_with_its_own_hostfile() -> None:
    bp = blueprint("cv-training-500tb")
    pair = plan_launch(bp, inventory(bp)).subset(("gpu-3", "gpu-9"))
    assert pair.launcher == "gpu-3" and pair.ranks == 16
    assert pair.hostfile() == "10.77.0.3 slots=8\n10.77.0.9 slots=8\n"


# -- the launch proof ------------------------------------------------------------------------------------------


def local(ranks: int) -> Launch:
    return Launch(kind="mpirun", launcher="vm", nodes=(LaunchNode(name="vm", address="localhost"),),
                  gpus_per_node=ranks, env=(("NCCL_DEBUG", "INFO"),))


def test_the_recorded_launch_proof_holds() -> None:
    proof = judge_launch_proof(PROOF, local(2))
    assert proof.problems == () and proof.ranks == 2 and proof.hosts == {"vm": 2}
    assert proof.note(local(2)).startswith("launch proven without a GPU: mpirun started 2 ranks")


def test_the_lab_recording_proves_one_rank_on_each_client() -> None:
    lab = (FIXTURES / "launch" / "lab-2clients.txt").read_text()
    launch = Launch(kind="mpirun", launcher="client-1", nodes=(LaunchNode(name="client-1", address="10.77.0.2"),
                                                               LaunchNode(name="client-2", address="10.77.0.3")),
                    gpus_per_node=1, env=())
    proof = judge_launch_proof(lab, launch)
    assert proof.problems == () and proof.hosts == {"client-1": 1, "client-2": 1}
    both = lab.replace("on client-2", "on client-1")  # edited: both ranks on client-1
    assert judge_launch_proof(both, launch).problems == (
        "ranks per node not as planned (client-1: 2; planned 1 each)",
        "ranks ran on client-1; the launch named client-1, client-2")


def test_a_launch_proof_that_lost_a_rank_or_a_sum_is_named() -> None:
    lost = PROOF.splitlines()[0]  # edited: rank 1's line removed
    assert judge_launch_proof(lost, local(2)).problems == ("1 of 2 ranks did not report (ranks 1)",
                                                           "ranks per node not as planned (vm: 1; planned 2 each)")
    wrong = PROOF.replace("allreduce 3 ring 0", "allreduce 2 ring 1")  # edited: rank 1's sum and ring value
    assert judge_launch_proof(wrong, local(2)).problems == ("rank 1: MPI_Allreduce gave 2; expected 3",
                                                            "rank 1: the ring delivered 1; expected 0")
    assert judge_launch_proof(PROOF, local(4)).problems[0] == "rank 0 saw a world of 2; planned 4"
    retagged = PROOF.replace("[1,1]<stdout>", "[1,0]<stdout>")  # edited: mpirun's tag of rank 1
    assert "rank 1's line carries mpirun's tag of rank 0" in judge_launch_proof(retagged, local(2)).problems
