"""The acceptance renderer: plan.yaml and fio job files that fio itself accepts, shaped by the Blueprint."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from blueprints.blueprint import BUFFERED_WORKLOAD, FioWorkload
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import build
from tests.conftest import require_tool

REPO = Path(__file__).resolve().parents[4]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


@pytest.fixture(scope="module", params=EXAMPLES, ids=[e.stem for e in EXAMPLES])
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    bp = plan(load_requirements(request.param))
    folder, _ = build(bp, tmp_path_factory.mktemp("out"))
    return bp, folder


def test_plan_lists_every_check_with_threshold_and_provenance(built: tuple[object, Path]) -> None:
    bp, folder = built
    data = yaml.safe_load((folder / "acceptance" / "plan.yaml").read_text())
    assert data["kind"] == "AcceptancePlan" and data["name"] == bp.name  # type: ignore[attr-defined]
    planned = {c.id: c for c in bp.acceptance.checks}  # type: ignore[attr-defined]
    assert [c["id"] for c in data["checks"]] == list(planned)
    for item in data["checks"]:
        assert item["threshold"] == planned[item["id"]].threshold and item["derived_from"]["spec"]
        if item["tool"] == "fio":
            assert (folder / "acceptance" / item["job_file"]).is_file()
    assert data["scratch"][0]["path"].startswith(data["scratch"][0]["mount"])


def test_job_files_carry_the_planned_shape(built: tuple[object, Path]) -> None:
    bp, folder = built
    for w in bp.acceptance.workloads:  # type: ignore[attr-defined]
        text = (folder / "acceptance" / "fio" / f"{w.name}.fio").read_text()
        assert f"directory={bp.acceptance.scratch_dir(w.on).path}\n" in text  # type: ignore[attr-defined]
        assert f"numjobs={w.numjobs.value}\n" in text and f"iodepth={w.iodepth.value}\n" in text
        assert f"runtime={w.runtime_s.value}\n" in text and f"size={int(w.size.value.value)}\n" in text
        # O_DIRECT everywhere, but the FS-Cache check: direct I/O bypasses FS-Cache, so it reads buffered
        # (blueprints.blueprint.BUFFERED_WORKLOAD, the one exception the FioWorkload model allows)
        direct = 0 if w.name == BUFFERED_WORKLOAD else 1
        assert f"direct={direct}\n" in text and "ioengine=libaio\n" in text
        if not direct:
            assert "invalidate=1\n" in text and "time_based" not in text  # a whole pass, page cache dropped first
    mixed = (folder / "acceptance" / "fio" / "mixed.fio").read_text()
    assert "rw=randrw\n" in mixed and "rwmixread=70\n" in mixed and "bsrange=4k-1M\n" in mixed
    assert "verify=crc32c\n" in mixed and "verify_state_save=0\n" in mixed  # no state files left behind


def test_fio_accepts_every_job_file(built: tuple[object, Path]) -> None:
    _, folder = built
    require_tool("fio")
    for job in sorted((folder / "acceptance" / "fio").glob("*.fio")):
        done = subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, text=True, timeout=60,
                              env={"CLUSTERSMITH_HOST": "client-1", "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, f"{job.name}: {done.stderr}"


@pytest.mark.parametrize(("name", "direct"), [("seq_read", False), ("cache_read", True)])
def test_only_the_cache_check_reads_buffered(built: tuple[object, Path], name: str, direct: bool) -> None:
    """direct=0 on any workload but the FS-Cache check, or direct=1 on it, is refused where the Blueprint is made."""
    bp, _ = built
    base = bp.acceptance.workloads[0]  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=f"workload {name}: direct={int(direct)}; expected direct={int(not direct)}"):
        FioWorkload.model_validate({**base.model_dump(), "name": name, "direct": direct})


def test_the_4k_reader_lays_its_files_out_1m_at_a_time_and_reads_4k(built: tuple[object, Path],
                                                                     tmp_path: Path) -> None:
    """rand_read_4k renders bs=4k,1M: fio writes a new file in blocks of the job's write size (filesetup.c
    extend_file), so the layout is 1M writes, not 4k ones (under the lab's TCG the 4k layout of a 32 MiB file took a
    minute); every read it measures stays 4k. Run by real fio on a small file: the report's I/Os are 4 KiB each."""
    bp, folder = built
    require_tool("fio")
    w = next(w for w in bp.acceptance.workloads if w.name == "rand_read_4k")  # type: ignore[attr-defined]
    assert w.layout_bs == "1M"
    text = (folder / "acceptance" / "fio" / "rand_read_4k.fio").read_text()
    assert "bs=4k,1M\n" in text
    small = "".join(f"directory={tmp_path}\n" if line.startswith("directory=") else
                    "size=4194304\n" if line.startswith("size=") else
                    "runtime=1\n" if line.startswith("runtime=") else
                    "ramp_time=0\n" if line.startswith("ramp_time=") else
                    "direct=0\n" if line.startswith("direct=") else "numjobs=1\n" if line.startswith("numjobs=") else
                    line for line in text.splitlines(keepends=True))
    job = tmp_path / "small.fio"
    job.write_text(small)
    done = subprocess.run(["fio", "--output-format=json", str(job)], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={"CLUSTERSMITH_HOST": "client-1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout[done.stdout.index("{"):])["jobs"][0]["read"]
    assert read["total_ios"] > 0 and read["io_bytes"] == 4096 * read["total_ios"]
    assert (tmp_path / "clustersmith-accept.client-1.0").stat().st_size == 4194304


@pytest.mark.parametrize(("rw", "bs"), [("randrw", "4k"), ("write", "4k"), ("read", "4k-1M")])
def test_a_layout_block_only_on_a_read_only_job_of_one_block_size(built: tuple[object, Path], rw: str,
                                                                    bs: str) -> None:
    bp, _ = built
    base = next(w for w in bp.acceptance.workloads if w.name == "rand_read_4k")  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=f"layout_bs 1M with rw={rw}, bs={bs}; expected it only on a read-only"):
        FioWorkload.model_validate({**base.model_dump(), "rw": rw, "bs": bs, "rwmixread": None})
