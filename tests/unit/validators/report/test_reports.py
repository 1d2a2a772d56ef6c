"""Reports from a judged run on real recorded output: JUnit XML, JSON, and the HTML page with its plots."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from blueprints.loader import load_requirements
from blueprints.planner import plan
from tests.report_html import chromium, plots, rendered_dom
from validators.evaluate import evaluate
from validators.report import RunReport, write_all
from validators.results import Results

REPO = Path(__file__).resolve().parents[4]
FIXTURES = REPO / "tests" / "fixtures"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> RunReport:
    """The lab Blueprint judged on the recorded fio run plus an NCCL sweep and a verify failure elsewhere."""
    root = tmp_path_factory.mktemp("results")
    shutil.copytree(FIXTURES / "fio" / "results" / "fio", root / "fio")
    (root / "nccl").mkdir()
    shutil.copy(FIXTURES / "nccl" / "a3mega-2x8-h100.txt", root / "nccl" / "a3mega.txt")
    (root / "setup-errors.json").write_text(json.dumps({"rdma.write_bw": {"client-2": "unreachable: timed out"}}))
    bp = plan(load_requirements(REPO / "examples" / "lab.yaml"), spec_file="examples/lab.yaml",
              spec_lines={"performance.storage.read_throughput": 21})
    # edited: the lab's GPUs are emulated (its NCCL check is not applicable there); its NCCL check is judged here as
    # if they were real, so that the recorded two-node sweep is judged and plotted
    edited = tuple(c.model_copy(update={"args": c.args.model_copy(update={"gpus": "real"})})
                   if c.id == "nccl.allreduce_busbw" else c for c in bp.acceptance.checks)
    bp = bp.model_copy(update={"acceptance": bp.acceptance.model_copy(update={"checks": edited})})
    checks = evaluate(bp, Results(root), strict=False)
    return RunReport(blueprint=bp.name, spec_file=bp.spec_file, spec_lines=bp.spec_lines,
                     started="2026-11-29T16:00:00+00:00", duration_s=12.5, results_dir=str(root),
                     hosts=("client-1", "client-2", "storage-1"), checks=tuple(checks))


@pytest.fixture(scope="module")
def written(report: RunReport, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {p.name: p for p in write_all(report, tmp_path_factory.mktemp("report"))}


def test_exit_code_reflects_setup_errors(report: RunReport) -> None:
    statuses = {c.id: c.status for c in report.checks}
    assert statuses["rdma.write_bw"] == "setup_error" and statuses["storage.mixed"] == "pass"
    assert report.exit_code == 2


def test_junit_has_one_testcase_per_check(report: RunReport, written: dict[str, Path]) -> None:
    suite = ET.parse(written["junit.xml"]).getroot()
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [c.id for c in report.checks]
    assert suite.get("errors") == str(sum(c.status == "setup_error" for c in report.checks))
    by_name = {c.get("name"): c for c in cases}
    assert by_name["rdma.write_bw"].find("error") is not None
    assert "client-2: unreachable" in (by_name["rdma.write_bw"].find("error").text or "")  # type: ignore[union-attr]
    props = {p.get("name"): p.get("value") for p in by_name["storage.read_throughput"].iter("property")}
    assert props["unit"] == "GB/s" and props["expected"].startswith(">= ")
    assert props["spec"] == "performance.storage.read_throughput (examples/lab.yaml:21)"
    assert by_name["storage.mixed"].find("failure") is None


def test_json_report_round_trips(report: RunReport, written: dict[str, Path]) -> None:
    data = json.loads(written["report.json"].read_text())
    assert data["exit_code"] == 2 and data["blueprint"] == "lab"
    checks = {c["id"]: c for c in data["checks"]}
    assert checks["storage.read_throughput"]["measured"] == report.checks[0].measured
    assert checks["storage.read_throughput"]["spec"] == ["performance.storage.read_throughput"]
    assert {"measured", "threshold", "op", "unit", "status", "message"} <= set(checks["storage.jitter"])


def test_html_is_self_contained_with_the_expected_plots(report: RunReport, written: dict[str, Path]) -> None:
    parser = plots(written["report.html"].read_text())
    assert parser.external == []
    assert any("throughput over time per client" in t for t in parser.svgs["storage.read_throughput"])
    assert any("latency percentiles" in t for t in parser.svgs["storage.latency_p99"])
    assert any("busbw versus message size" in t for t in parser.svgs["nccl.allreduce_busbw"])
    assert len(parser.lines["storage.read_throughput"]) == 3  # all clients summed, then one line per client
    assert all(n >= 2 for lines in parser.lines.values() for n in lines)
    html = written["report.html"].read_text()
    for c in report.checks:
        assert f"id='{c.id}'" in html and f"data-status='{c.status}'" in html


def test_html_lists_failures_first_and_draws_thresholds_and_coverage(report: RunReport,
                                                                     written: dict[str, Path]) -> None:
    html = written["report.html"].read_text()
    order = [c.status for c in sorted(report.checks, key=lambda c: html.index(f"id='{c.id}'"))]
    ranks = {"fail": 0, "setup_error": 1, "warn": 2, "info": 3, "not_applicable": 4, "pass": 5}
    assert order == sorted(order, key=ranks.__getitem__) and order[0] in ("fail", "setup_error")
    cards = {c.id: html[html.index(f"id='{c.id}'"):].split("</section>", 1)[0] for c in report.checks}
    for check_id in ("storage.read_throughput", "storage.latency_p99", "storage.jitter", "nccl.allreduce_busbw"):
        assert "class=\"threshold\"" in cards[check_id], check_id
    threshold = next(c for c in report.checks if c.id == "storage.read_throughput").threshold
    assert f'data-label="&gt;= {threshold:g} GB/s (all clients)"' in cards["storage.read_throughput"]
    assert "<td>coverage</td><td>2 of 2 hosts</td>" in cards["storage.read_throughput"]
    assert "<td>coverage</td><td>16 of 2 ranks, 2 of 2 nodes</td>" in cards["nccl.allreduce_busbw"]


def _png_pixels(path: Path) -> tuple[int, int, int, bytearray]:
    """Width, height, bytes per pixel and the unfiltered pixel bytes of an 8-bit RGB(A) PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, color = struct.unpack(">IIBB", data[16:26])
    assert depth == 8 and color in (2, 6)
    bpp = 3 if color == 2 else 4
    idat, pos = b"", 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * bpp
    out = bytearray(height * stride)
    for y in range(height):
        kind, row = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        for x in range(stride):
            a = out[y * stride + x - bpp] if x >= bpp else 0
            b = out[(y - 1) * stride + x] if y else 0
            c = out[(y - 1) * stride + x - bpp] if y and x >= bpp else 0
            pred = (0, a, b, (a + b) // 2)[kind] if kind < 4 else (
                a if abs(b - c) <= abs(a - c) and abs(b - c) <= abs(a + b - 2 * c) else
                b if abs(a - c) <= abs(a + b - 2 * c) else c)
            out[y * stride + x] = (row[x] + pred) & 0xFF
    return width, height, bpp, out


def test_html_renders_in_headless_chromium(written: dict[str, Path], tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    assert rendered_dom(written["report.html"]).count("<polyline") >= 5
    subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1000,6000", f"--screenshot={shot}", written["report.html"].as_uri()],
                   capture_output=True, timeout=120, check=True)
    width, height, bpp, pixels = _png_pixels(shot)
    assert (width, height) == (1000, 6000)  # failures first: the storage plots sit lower
    blue = sum(1 for i in range(0, len(pixels), bpp)
               if abs(pixels[i] - 0x1F) < 24 and abs(pixels[i + 1] - 0x77) < 24 and abs(pixels[i + 2] - 0xB4) < 24)
    assert blue > 200, f"only {blue} pixels of the first plot line's colour: the plots did not render"
