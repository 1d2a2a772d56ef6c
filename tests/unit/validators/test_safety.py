"""What a run may write, decided from the Blueprint before anything runs."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint, ScratchArea
from blueprints.errors import ClusterSmithError
from blueprints.loader import load_requirements
from blueprints.planner import plan
from validators.evaluate import select
from validators.safety import WriteArea, plan_writes

REPO = Path(__file__).resolve().parents[3]
HOSTS = ["client-1", "client-2"]


@pytest.fixture(scope="module")
def bp() -> Blueprint:
    return plan(load_requirements(REPO / "examples" / "lab.yaml"))


def test_default_writes_only_the_plans_scratch_files_each_workload_on_its_file_system(bp: Blueprint) -> None:
    w = plan_writes(bp, select(bp), None, False, HOSTS)
    shared, tier = bp.acceptance.scratch_dir("shared"), bp.acceptance.scratch_dir("tier")
    assert (w.kind, w.destructive) == ("scratch_dir", False)
    assert w.scratch == {"shared": WriteArea(path=shared.path, mount=shared.mount),
                         "tier": WriteArea(path=tier.path, mount=tier.mount)}
    workloads = {x.name: x for x in bp.acceptance.workloads}
    assert w.area(workloads["seq_read"]).path == "/mnt/cephfs/hot/.clustersmith-accept"
    assert w.area(workloads["rand_read_4k"]).path == "/mnt/clustersmith/.clustersmith-accept"
    assert (f"in {shared.path} (plan scratch on {shared.mount}); {tier.path} (plan scratch on {tier.mount}) on "
            "client-1, client-2") in w.summary
    assert "removes them afterwards" in w.summary
    assert w.cleanup_paths == (shared.path, tier.path)  # what the cleanup job removes files in
    assert not w.keep


def test_only_the_file_systems_the_selected_workloads_use_are_written(bp: Blueprint) -> None:
    w = plan_writes(bp, select(bp, ["storage.latency_p99"]), None, False, HOSTS)
    assert list(w.scratch) == ["tier"]
    # the clean-up still covers every scratch directory of the plan: an earlier --keep-scratch run may have left
    # files on the shared file system, which this run does not write
    assert w.cleanup_paths == (bp.acceptance.scratch_dir("shared").path, bp.acceptance.scratch_dir("tier").path)


def test_keep_scratch_leaves_the_files_and_says_so(bp: Blueprint) -> None:
    w = plan_writes(bp, select(bp), None, False, HOSTS, keep=True)
    assert w.keep and w.summary.endswith("and keeps them for the next run (--keep-scratch)"), w.summary
    target = "/tmp/clustersmith-scratch-test"
    kept = plan_writes(bp, select(bp), target, True, HOSTS, keep=True)
    assert (kept.kind, kept.keep, kept.cleanup_paths) == ("directory", True, (target,))
    assert kept.summary.endswith(" and keep them for the next run (--keep-scratch)"), kept.summary


def test_a_target_naming_one_scratch_directory_takes_every_workload_there(bp: Blueprint) -> None:
    tier = bp.acceptance.scratch_dir("tier")
    w = plan_writes(bp, select(bp), tier.path, False, HOSTS)
    assert (w.kind, w.destructive) == ("scratch_dir", False)
    assert {a.path for a in w.scratch.values()} == {tier.path}


def test_a_blueprint_without_the_workloads_scratch_directory_is_refused_by_name(bp: Blueprint) -> None:
    only_tier = bp.acceptance.model_copy(update={"scratch": (bp.acceptance.scratch_dir("tier"),)})
    with pytest.raises(ClusterSmithError) as err:
        plan_writes(bp.model_copy(update={"acceptance": only_tier}), select(bp), None, False, HOSTS)
    problem = err.value.problems[0]
    assert problem.path == "acceptance.scratch"
    assert problem.message.startswith("the Blueprint names no scratch directory on the shared file system")


def test_read_only_checks_write_nothing(bp: Blueprint) -> None:
    w = plan_writes(bp, select(bp, ["nvmeof.paths", "rdma.write_bw", "qos.consistency"]), "/dev/sda", False, HOSTS)
    assert w.kind == "none"


@pytest.mark.parametrize(("target", "fragment"), [
    ("/dev/nvme0n1", "would overwrite the data on /dev/nvme0n1 on client-1, client-2; pass --destructive"),
    ("/data", "would write 1 file(s) of up to 34 MB per client into /data on client-1, client-2"),
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


@pytest.mark.parametrize("target", ["scratch", "dev/sda", "./data"])
def test_relative_targets_are_refused(bp: Blueprint, target: str) -> None:
    with pytest.raises(ClusterSmithError, match="expected one absolute directory or /dev/ device path"):
        plan_writes(bp, select(bp), target, True, HOSTS)


@pytest.mark.parametrize(("target", "shown"), [
    ("/dev/sda:/dev/nvme1n1", "':'"),  # fio's filename=: two files, both written (issue 16)
    ("/dev/sda /dev/nvme1n1", "' '"),  # two paths
    ("/dev/dsk/foo@3,0\\:c", "',' ':' '\\\\'"),
    ("/data/$jobname", "'$'"),
    ("/data\ndirectory=/", "'\\n' '='"),
    ("/data/%d", "'%'"),
])
def test_targets_fio_reads_as_more_than_one_path_are_refused_even_with_destructive(
        bp: Blueprint, target: str, shown: str) -> None:
    with pytest.raises(ClusterSmithError) as err:
        plan_writes(bp, select(bp), target, True, HOSTS)
    message = err.value.problems[0].message
    assert message.startswith(f"expected one plain path: {shown} would reach fio as more than a path"), message


@pytest.mark.parametrize("target", ["/dev/../dev/sda", "/data/./x", "/data//x", "/data/"])
def test_targets_that_are_not_normalised_are_refused(bp: Blueprint, target: str) -> None:
    with pytest.raises(ClusterSmithError, match="expected a normalised path"):
        plan_writes(bp, select(bp), target, True, HOSTS)


def block_device() -> Path | None:
    """A block device of this machine (its disk, a loop device), as /dev names it."""
    for entry in sorted(Path("/sys/class/block").glob("*")):
        dev = Path("/dev") / entry.name
        if dev.is_block_device():
            return dev
    return None


def check_device(tmp_path: Path, target: Path, nqns: str, sysfs_nqn: str | None = None) -> tuple[int, str]:
    """files/job_fio.sh's device check, run by /bin/sh as the fio job runs it, its sysfs in ``tmp_path``, where the
    device at ``target`` (links followed) has ``sysfs_nqn`` as its subsystem NQN; its status and what it failed
    with."""
    if sysfs_nqn is not None:
        real = target.resolve().stat().st_rdev
        found = tmp_path / "block" / f"{os.major(real)}:{os.minor(real)}" / "device"
        found.mkdir(parents=True, exist_ok=True)
        (found / "subsysnqn").write_text(sysfs_nqn + "\n")
    body = REPO / "validators" / "playbooks" / "files" / "job_fio.sh"
    script = (f". {shlex.quote(str(body))}; fail() {{ printf '%s: %s' \"$1\" \"$2\"; }}; "
              f"job_dir={shlex.quote(str(tmp_path))}; sys_block={shlex.quote(str(tmp_path / 'block'))}; "
              f"target={shlex.quote(str(target))}; nqns={shlex.quote(nqns)}; check_device")
    done = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout


def test_the_host_check_reads_the_device_at_the_exact_path(tmp_path: Path) -> None:
    """The fio job finds the NQN through the major:minor of what the path opens (links followed, as fio's open
    does), never through its name: a link named like a scratch namespace is judged by the device behind it, and a
    path that is no block device is refused before anything is read."""
    device = block_device()
    if device is None:
        pytest.skip("this machine has no block device")
    scratch = "nqn.2014-08.org.clustersmith:scratch"
    link = tmp_path / "nvme9n1"  # the name of a namespace, pointing at another device
    link.symlink_to(device)
    assert check_device(tmp_path, link, scratch, scratch) == (0, "")
    assert check_device(tmp_path, link, scratch, "nqn.other:data") == (1, (
        f"Refuse a device that is not a scratch namespace of the plan: {link} belongs to nqn.other:data, not to a "
        f"scratch namespace of the plan ({scratch}); nothing was written"))
    plain = tmp_path / "nvme8n1"
    plain.write_text("")
    assert check_device(tmp_path, plain, scratch) == (1, (
        f"Refuse a target that is not a block device: {plain} is a regular empty file, not a block device; "
        "nothing was written"))
