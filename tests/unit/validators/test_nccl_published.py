"""Other people's nccl-tests logs (tests/fixtures/nccl/published/, verbatim, each with its source in README.md):
the parser reads every one as published (srun --label and mpirun --tag-output prefixes, a markdown indent, a table
whose comment marks were stripped, a tail with no header), and finds at the largest size the busbw read off the
table by hand. The same logs judge the busbw model (tests/bench_nccl_prediction.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from validators.nccl import parse_nccl_file

PUBLISHED = Path(__file__).resolve().parents[2] / "fixtures" / "nccl" / "published"
ENTRIES = yaml.safe_load((PUBLISHED / "hardware.yaml").read_text(encoding="utf-8"))


def test_every_published_log_is_indexed() -> None:
    assert sorted(e["file"] for e in ENTRIES) == sorted(p.name for p in PUBLISHED.glob("*.txt"))


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_the_parser_reads_each_published_log(entry: dict[str, object]) -> None:
    runs = parse_nccl_file(PUBLISHED / str(entry["file"])).runs
    rows = [r for run in runs for r in run.rows if r.out_of_place is not None]
    assert rows, entry["file"]
    top = max(rows, key=lambda r: r.size)
    assert top.out_of_place is not None and top.out_of_place.busbw == entry["largest_busbw"]
