"""The tier's warm-up job: which files it reads, and what it reports."""

from __future__ import annotations

import os
from pathlib import Path

from tests.roles.library import load

warmup = load("storage_tiering", "cache_warmup.py", folder="files")


def test_warmup_reads_the_newest_files_first_up_to_the_budget(tmp_path: Path) -> None:
    for age, (name, size) in enumerate([("new.bin", 300), ("mid.bin", 500), ("old.bin", 700)]):
        path = tmp_path / "data" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"x" * size)
        os.utime(path, (1_000_000 - age * 100, 1_000_000 - age * 100))
    (tmp_path / "data" / "lost+found").mkdir()
    (tmp_path / "data" / "lost+found" / "orphan").write_bytes(b"y" * 50)
    chosen = warmup.select(warmup.hot_files([str(tmp_path / "data")]), budget=600)
    assert [(Path(p).name, n) for p, n in chosen] == [("new.bin", 300), ("mid.bin", 300)]


def test_warmup_reads_every_pass_and_reports_it(tmp_path: Path) -> None:
    (tmp_path / "hot.bin").write_bytes(os.urandom(3 << 20))
    result = warmup.warm({"paths": [str(tmp_path)], "budget_bytes": 2 << 20, "passes": 2})
    assert (result["files"], result["bytes"], result["passes"]) == (1, 4 << 20, 2)
    assert "clustersmith_cache_warmup_bytes 4.1943e+06" in warmup.render(result)
