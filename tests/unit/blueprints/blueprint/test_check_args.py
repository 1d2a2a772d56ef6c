"""Check arguments typed per tool family (blueprints.blueprint.check_args): each default once, a check built with
another tool's arguments refused, the tools' command lines as the lab tier runs them, and blueprint.yaml's format."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from blueprints.blueprint import Blueprint, Check, Provenance, load_blueprint
from blueprints.blueprint.check_args import (
    CephArgs,
    FioArgs,
    NcclArgs,
    NvmeArgs,
    PerftestArgs,
    QosArgs,
    args_as,
)
from blueprints.blueprint.format import BLUEPRINT_FORMAT
from blueprints.errors import ClusterSmithError
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import build
from blueprints.units import Size
from validators.nccl_run import collectives, nccl_size, sweep
from validators.run.perftest import write_bw_args

REPO = Path(__file__).resolve().parents[4]
# blueprint.yaml as clustersmith wrote it before its format was versioned (tests/golden/lab at 03968cc)
FORMAT_1 = REPO / "tests" / "fixtures" / "blueprint-format-1" / "blueprint.yaml"
ENV = {"COLUMNS": "200", "PATH": "/usr/bin:/bin", "CLUSTERSMITH_SECRETS_DIR": os.environ["CLUSTERSMITH_SECRETS_DIR"]}


@pytest.fixture(scope="module")
def lab() -> Blueprint:
    return plan(load_requirements(REPO / "examples" / "lab.yaml"))


def check(bp: Blueprint, check_id: str) -> Check:
    return next(c for c in bp.acceptance.checks if c.id == check_id)


def a_check(tool: str, args: object) -> Check:
    return Check.model_validate({"id": "x.y", "tool": tool, "metric": "m", "op": ">=", "threshold": 1, "unit": "u",
                                 "severity": "error", "scope": "cluster", "args": args,
                                 "derived_from": Provenance(spec=("target.provider",), rule="test")})


@pytest.mark.parametrize(("tool", "args"), [
    ("fio", CephArgs(monitor="storage-1")),
    ("ib_write_bw", NcclArgs(nodes=2, gpus_per_node=1)),
    ("nvme", {"kind": "qos", "dscp": 26, "priority": 3, "tos": 106}),
    ("prometheus", {"kind": "fio", "workload": "seq_read", "rw": "read", "iodepth": 1, "numjobs": 1, "direct": True}),
])
def test_a_check_with_another_tools_arguments_fails_validation(tool: str, args: object) -> None:
    with pytest.raises(ValidationError, match="expected kind"):
        a_check(tool, args)


def test_arguments_in_the_old_string_form_or_with_an_unknown_field_fail_validation() -> None:
    with pytest.raises(ValidationError, match="discriminator 'kind'"):
        a_check("ceph", {"monitor": "storage-1"})
    with pytest.raises(ValidationError, match="algo"):
        a_check("nccl", {"kind": "nccl", "nodes": 2, "gpus_per_node": 1, "algo": "Ring"})
    with pytest.raises(ValidationError, match="qps"):
        a_check("ib_write_bw", {"kind": "perftest", "qps": "two"})


def test_each_tool_takes_its_familys_arguments() -> None:
    assert isinstance(a_check("ib_read_lat", {"kind": "perftest"}).args, PerftestArgs)
    assert a_check("prometheus", {"kind": "prometheus"}).args.model_dump() == {"kind": "prometheus"}
    assert a_check("qos", QosArgs(dscp=26, priority=3, tos=106)).args.kind == "qos"


def test_each_default_is_the_one_the_plan_ran() -> None:
    """The defaults the planner and runner disagreed on: qps 2 and the 2G-8G sweep are what every plan set and the
    runner ran; a probe with no paths check settles for no time."""
    assert (PerftestArgs().qps, PerftestArgs().size.value, PerftestArgs().duration.value) == (2, 65536, 10)
    assert (NcclArgs(nodes=1, gpus_per_node=1).minbytes.value, NcclArgs(nodes=1, gpus_per_node=1).maxbytes.value) \
        == (2 * 2**30, 8 * 2**30)
    assert (NvmeArgs().settle.value, NvmeArgs().reset_extra.value) == (0, 0)


def test_the_tools_command_lines_are_the_ones_the_lab_ran(lab: Blueprint) -> None:
    """What the lab tier drives: ib_write_bw's flags and nccl-tests' sweep as before the arguments were typed (the
    strings "65536", "10", "2", "2G", "8G" of format 1), but for the lab's own 5 s of ib_write_bw a pair (it proves
    traffic, never speed; real hosts keep PerftestArgs' 10 s)."""
    perftest = args_as(check(lab, "rdma.write_bw").args, PerftestArgs)
    assert write_bw_args(perftest) == (["-s", "65536", "-D", "5", "-q", "2", "--report_gbits", "-F"], 5)
    real = plan(load_requirements(REPO / "examples" / "cv-training-500tb.yaml"))
    assert write_bw_args(args_as(check(real, "rdma.write_bw").args, PerftestArgs))[1] == 10
    nccl = check(lab, "nccl.allreduce_busbw")
    assert sweep(nccl) == ["-b", "2G", "-e", "8G", "-f", "2", "-g", "1"]
    assert collectives(nccl) == ("all_reduce_perf",)
    llm = plan(load_requirements(REPO / "examples" / "llm-training-16k.yaml"))
    assert collectives(check(llm, "nccl.allreduce_busbw")) == ("all_reduce_perf", "all_gather_perf",
                                                               "reduce_scatter_perf")
    assert [nccl_size(Size.parse(s)) for s in ("2GiB", "512MiB", "1KiB", "1000B")] == ["2G", "512M", "1K", "1000"]
    paths = args_as(check(lab, "nvmeof.paths").args, NvmeArgs)
    assert (str(paths.settle), str(paths.reset_extra), paths.iopolicy) == ("30s", "20s", "round-robin")


def test_the_blueprint_round_trips_with_its_typed_arguments(lab: Blueprint, tmp_path: Path) -> None:
    build(lab, tmp_path)
    text = (tmp_path / "lab" / "blueprint.yaml").read_text()
    assert f"\nformat: {BLUEPRINT_FORMAT}\n" in text
    again = load_blueprint(tmp_path / "lab")
    assert again.acceptance.checks == lab.acceptance.checks
    assert args_as(check(again, "storage.ceph_health").args, CephArgs).monitor == "storage-1"
    sets = args_as(check(again, "cache.fscache_hit_ratio").args, FioArgs).counters
    assert [c.hit_counters for c in sets] == [(("CaRdOps", "RD"),), (("Netfs", "RD"),), (("RdHelp", "RD"),)]


def old_build(tmp_path: Path, text: str | None = None) -> Path:
    folder = tmp_path / "lab"
    folder.mkdir()
    if text is None:
        shutil.copy(FORMAT_1, folder / "blueprint.yaml")
    else:
        (folder / "blueprint.yaml").write_text(text)
    return folder


@pytest.mark.parametrize("command", [("accept",), ("explain", "acceptance.storage.read_throughput")])
def test_a_build_folder_from_an_older_clustersmith_is_refused_through_the_cli(tmp_path: Path,
                                                                           command: tuple[str, ...]) -> None:
    folder = old_build(tmp_path)
    r = subprocess.run([sys.executable, "-m", "blueprints", command[0], str(folder), *command[1:]], cwd=REPO,
                       capture_output=True, text=True, timeout=120, env=ENV)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{folder / 'blueprint.yaml'}: format: written by an older clustersmith (no format field)" in r.stderr
    assert "rebuild it with `clustersmith build`" in r.stderr
    assert "Traceback" not in r.stderr and "validation error" not in r.stderr and "input_value" not in r.stderr
    assert list(folder.iterdir()) == [folder / "blueprint.yaml"], "nothing written"


@pytest.mark.parametrize(("edit", "said"), [
    (("kind: Blueprint\n", f"kind: Blueprint\nformat: {BLUEPRINT_FORMAT - 1}\n"), f"format {BLUEPRINT_FORMAT - 1}"),
    (("kind: Blueprint\n", f"kind: Blueprint\nformat: {BLUEPRINT_FORMAT}\n"), "check arguments in the old form"),
])
def test_an_older_format_or_old_arguments_under_the_new_format_are_refused(tmp_path: Path, edit: tuple[str, str],
                                                                           said: str) -> None:
    folder = old_build(tmp_path, FORMAT_1.read_text().replace(*edit, 1))
    with pytest.raises(ClusterSmithError) as caught:
        load_blueprint(folder)
    assert said in str(caught.value) and "rebuild it with `clustersmith build`" in str(caught.value)
