"""The tier's jobs: dm-cache counters as Prometheus text, and which files the hot-set warm-up reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.roles.library import load

metrics = load("storage_tiering", "cache_metrics.py", folder="files")
warmup = load("storage_tiering", "cache_warmup.py", folder="files")
FIXTURES = Path(__file__).resolve().parents[1] / "roles" / "fixtures"


def test_recorded_dm_cache_status_parses_into_its_counters() -> None:
    status = metrics.parse_status((FIXTURES / "dmsetup-status-cache.txt").read_text())
    assert (status.used_blocks, status.total_blocks, status.block_sectors) == (204, 4096, 128)
    assert (status.read_hits, status.read_misses, status.write_hits, status.write_misses) == (127, 61, 520, 2113)
    assert (status.promotions, status.demotions, status.dirty) == (204, 0, 0)
    assert (status.mode, status.policy) == ("writethrough", "smq")
    assert status.read_hit_ratio == pytest.approx(127 / 188)


def test_prometheus_text_carries_the_hit_ratio_mode_and_policy() -> None:
    text = metrics.render(metrics.parse_status((FIXTURES / "dmsetup-status-cache.txt").read_text()), "vg/data")
    assert 'clustersmith_dmcache_read_hit_ratio{volume="vg/data"} 0.675532' in text
    assert 'clustersmith_dmcache_info{volume="vg/data",mode="writethrough",policy="smq"} 1' in text
    assert 'clustersmith_dmcache_block_bytes{volume="vg/data"} 65536' in text
    assert text.count("# TYPE ") == text.count("# HELP ") == 12


def test_no_reads_yet_means_no_ratio_rather_than_a_false_zero() -> None:
    line = ("0 8380416 cache 8 24/2048 128 0/4096 0 0 0 0 0 0 0 2 metadata2 writeback "
            "2 migration_threshold 2048 smq 0 rw -")
    status = metrics.parse_status(line)
    assert status.read_hit_ratio is None and status.mode == "writeback"
    assert "read_hit_ratio" not in metrics.render(status, "vg/data")


def test_a_line_of_another_target_is_refused() -> None:
    with pytest.raises(ValueError, match="not a dm-cache status line"):
        metrics.parse_status("0 8380416 linear")


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
