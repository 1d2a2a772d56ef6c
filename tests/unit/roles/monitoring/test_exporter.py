"""clustersmith-exporter: its parsers on real recorded tool output and a laid-out sysfs tree, its output
checked by promtool, and one real run against this machine.

Fixtures under roles/monitoring/tests/fixtures/ were recorded from the lab VMs by
roles/monitoring/tests/record_fixtures.py (see the README there).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import require_tool
from tests.promtool.support import EXAMPLES, REPO, blueprint

ROLE = REPO / "roles" / "monitoring"
FIXTURES = ROLE / "tests" / "fixtures"
EXPORTER = ROLE / "files" / "clustersmith-exporter"


def _load() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("clustersmith_exporter", str(EXPORTER))
    spec = importlib.util.spec_from_loader("clustersmith_exporter", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["clustersmith_exporter"] = module
    loader.exec_module(module)
    return module


exporter = _load()


def sysfs_from_dump(dump: str, root: Path) -> Path:
    """Lay out the files a ``record_fixtures.py`` sysfs dump (path<TAB>first line) lists, under ``root``."""
    for line in dump.splitlines():
        path, _, value = line.partition("\t")
        target = root / path.lstrip("/")
        if value == "<dir>":
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(value + "\n")
    return root / "sys"


def test_rdma_ports_of_the_lab_client_are_active_with_their_rails(tmp_path: Path) -> None:
    sysfs = sysfs_from_dump((FIXTURES / "sysfs-client-live.tsv").read_text(), tmp_path)
    active, counters, cnp = exporter.rdma_ports(sysfs)
    got = {(s.labels["device"], s.labels["netdev"]): s.value for s in active.samples}
    assert got == {("rxe0", "rail0"): 1.0, ("rxe1", "rail1"): 1.0}
    assert counters.samples, "rxe exposes hw_counters"
    assert not cnp.samples, "Soft-RoCE has no np_cnp_sent counter"


def test_a_cut_rail_shows_as_an_inactive_port_and_a_path_not_live(tmp_path: Path) -> None:
    sysfs = sysfs_from_dump((FIXTURES / "sysfs-client-rail0-cut.tsv").read_text(), tmp_path)
    active = {s.labels["netdev"]: s.value for s in exporter.rdma_ports(sysfs)[0].samples}
    assert active == {"rail0": 0.0, "rail1": 1.0}
    live = {s.labels["address"].split(",")[0]: s.value for s in exporter.nvme_paths(sysfs)[0].samples}
    assert live == {"traddr=10.77.0.1": 0.0, "traddr=10.77.1.1": 1.0}


def test_both_paths_of_the_lab_subsystem_are_live(tmp_path: Path) -> None:
    sysfs = sysfs_from_dump((FIXTURES / "sysfs-client-live.tsv").read_text(), tmp_path)
    samples = exporter.nvme_paths(sysfs)[0].samples
    assert [s.value for s in samples] == [1.0, 1.0]
    assert {s.labels["transport"] for s in samples} == {"rdma"}
    assert {s.labels["subsys"] for s in samples} == {"nqn.2026-11.io.clustersmith:record:hot-1"}
    assert exporter.fabric_namespaces(sysfs) == ["nvme0n1"]


def test_sysfs_paths_agree_with_nvme_list_subsys(tmp_path: Path) -> None:
    """The sysfs reading and nvme-cli's own view of the same moment name the same paths and states."""
    for dump, listing in (("sysfs-client-live.tsv", "nvme-list-subsys.json"),
                          ("sysfs-client-rail0-cut.tsv", "nvme-list-subsys-rail0-cut.json")):
        sysfs = sysfs_from_dump((FIXTURES / dump).read_text(), tmp_path / dump)
        ours = {s.labels["path"]: s.value for s in exporter.nvme_paths(sysfs)[0].samples}
        cli = json.loads((FIXTURES / listing).read_text())
        theirs = {p["Name"]: 1.0 if p["State"] == "live" else 0.0
                  for host in cli for subsys in host["Subsystems"] for p in subsys["Paths"]}
        assert ours == theirs


def test_pcie_subsystems_are_not_probed(tmp_path: Path) -> None:
    subsys = tmp_path / "sys/class/nvme-subsystem/nvme-subsys0"
    (subsys / "nvme0").mkdir(parents=True)
    (subsys / "nvme0/transport").write_text("pcie\n")
    (subsys / "nvme0/state").write_text("live\n")
    (subsys / "nvme0n1").mkdir()
    assert exporter.fabric_namespaces(tmp_path / "sys") == []
    assert [s.labels["transport"] for s in exporter.nvme_paths(tmp_path / "sys")[0].samples] == ["pcie"]


def test_dmsetup_cache_status_gives_hits_and_misses() -> None:
    parsed = exporter.parse_dmsetup_cache((FIXTURES / "dmsetup-status-cache.txt").read_text())
    assert list(parsed) == ["cs-data"]
    c = parsed["cs-data"]
    assert c["read_hits"] > 0 and c["read_misses"] > 0, "the recording read the same blocks twice"
    assert 0 < c["used_blocks"] <= c["total_blocks"]


def test_the_hit_ratio_query_reads_the_exporters_dm_cache_counters(tmp_path: Path) -> None:
    """The lab's real ``dmsetup status --target cache`` line (record_fixtures.py, client-1 after two reads):

        cs-data: 0 1048576 cache 8 13/2048 128 265/2048 7147 1101 0 0 0 265 0 2 metadata2 writethrough 2 ...

    words 8-11 after the name are read hits, read misses, write hits, write misses. The exporter keeps them as
    counters; the Blueprint's one hit ratio (monitoring query cache.read_hit_ratio) is their increase over a window.
    """
    fake = tmp_path / "dmsetup"  # prints the recorded answer, as the real dmsetup printed it
    fake.write_text(f"#!/bin/sh\ncat {FIXTURES / 'dmsetup-status-cache.txt'}\n")
    fake.chmod(0o755)
    families = {f.name: f for f in exporter.lvmcache(str(fake))}
    counters = {name: families[name].samples[0].value for name in (
        "clustersmith_lvmcache_read_hits_total", "clustersmith_lvmcache_read_misses_total",
        "clustersmith_lvmcache_write_hits_total", "clustersmith_lvmcache_write_misses_total")}
    assert list(counters.values()) == [7147, 1101, 0, 0]
    assert all(families[n].samples[0].labels == {"lv": "cs-data"} for n in counters)
    bp = blueprint(next(e for e in EXAMPLES if e.stem == "lab"))
    expr = bp.monitoring.query("cache.read_hit_ratio").over("5m")
    assert "clustersmith_lvmcache_read_hits_total[5m]" in expr and "clustersmith_lvmcache_read_misses_total[5m]" in expr


def test_fscache_counters_are_every_counter_of_the_stats_file_and_no_gauge(tmp_path: Path) -> None:
    """/proc/fs/fscache/stats as the lab's 6.1 kernel printed it (tests/fixtures/fscache/README.md): every key=value
    of each line becomes clustersmith_fscache_events_total{line, key}, the repeated netfs "RdHelp" lines included;
    the current numbers of cookies, volumes and LRU entries, and the LRU timer, are not counters and are left out.
    The counters the lab's hit ratio is planned on are among them."""
    stats = REPO / "tests" / "fixtures" / "fscache" / "stats-6.1-nfs-lab.txt"
    (family,) = exporter.fscache(stats)
    got = {(s.labels["line"], s.labels["key"]): s.value for s in family.samples}
    assert family.kind == "counter"
    assert got[("IO", "rd")] == 32768 and got[("IO", "wr")] == 16384 and got[("NoSpace", "nwr")] == 0
    assert got[("RdHelp", "RD")] == 0 and got[("RdHelp", "DL")] == 0 and got[("LRU", "rmv")] == 22
    assert not {("Cookies", "n"), ("Cookies", "v"), ("LRU", "n"), ("LRU", "at")} & set(got)
    assert ("Cookies", "vcol") in got and ("LRU", "exp") in got
    assert len(got) == 39  # 43 key=value pairs in the file, 4 of them gauges
    fs = blueprint(next(e for e in EXAMPLES if e.stem == "lab")).storage.shared.fscache
    assert fs is not None and set(fs.counters[-1].hits) | set(fs.counters[-1].misses) <= set(got)  # 5.17-6.7's


def test_fscache_counters_of_612_come_first_under_their_new_labels() -> None:
    """The lab's 6.12 file (tests/fixtures/fscache/README.md): netfs's renamed lines before the dashed heading; the
    counters the plan's 6.11-and-later set names are among the exporter's, and the heading is no counter."""
    stats = REPO / "tests" / "fixtures" / "fscache" / "cephfs-6.12-lab" / "fio" / "cache_read" / "client-1.fscache.2"
    (family,) = exporter.fscache(stats)
    got = {(s.labels["line"], s.labels["key"]): s.value for s in family.samples}
    assert got[("CaRdOps", "RD")] == 4 and got[("DownOps", "DL")] == 8200 and got[("IO", "mis")] == 0
    assert not any("statistics" in line for line, _ in got)
    fs = blueprint(next(e for e in EXAMPLES if e.stem == "lab")).storage.shared.fscache
    assert fs is not None and set(fs.counters[0].hits) | set(fs.counters[0].misses) <= set(got)


def test_dmsetup_status_of_other_targets_is_ignored() -> None:
    text = (FIXTURES / "dmsetup-status.txt").read_text()
    assert set(exporter.parse_dmsetup_cache(text)) == {"cs-data"}
    assert exporter.parse_dmsetup_cache("No devices found\n") == {}


@pytest.mark.parametrize(("name", "expected"), [
    ("rx_prio3_pause", [("rx", "3", 7.0)]),
    ("tx_prio0_pause", [("tx", "0", 7.0)]),
    ("rx_prio3_pause_duration", []),
    ("rx_pause_ctrl_phy", []),
    ("rx_prio8_pause", []),
])
def test_only_per_priority_pause_frame_counters_count(name: str, expected: list[tuple[str, str, float]]) -> None:
    """Counter names as mlx5 documents them (Documentation/networking/device_drivers/ethernet/mellanox/mlx5/
    counters.rst: rx_prio[p]_pause, tx_prio[p]_pause, rx_prio[p]_pause_duration); no mlx5 NIC here to record."""
    assert exporter.pause_counters({name: 7.0}) == expected


def test_ping_round_trips_are_read_per_reply() -> None:
    rtts = exporter.parse_ping((FIXTURES / "ping-rail0.txt").read_text())
    assert len(rtts) == 5
    assert all(0 < r < 1 for r in rtts)


def test_histograms_are_cumulative_across_runs() -> None:
    state: dict[str, list[float]] = {}
    bounds = (0.001, 0.01)
    exporter.observe(state, "nvme0n1", bounds, [0.0005, 0.005])
    exporter.observe(state, "nvme0n1", bounds, [0.05])
    fam = exporter.histogram_family("x_seconds", "h", state, bounds, ("device",))
    buckets = [(s.labels["le"], s.value) for s in fam.samples if s.name == "x_seconds_bucket"]
    assert buckets == [("0.001", 1.0), ("0.01", 2.0), ("+Inf", 3.0)]
    count = next(s.value for s in fam.samples if s.name == "x_seconds_count")
    assert count == 3.0
    assert next(s.value for s in fam.samples if s.name == "x_seconds_sum") == pytest.approx(0.0555)


def test_histograms_recorded_with_other_bounds_are_dropped() -> None:
    state = {"nvme0n1": [1.0, 2.0, 2.0, 0.1]}
    assert exporter.histogram_family("x", "h", state, (0.001, 0.01, 0.1), ("device",)).samples == []


def test_o_direct_reads_are_timed(tmp_path: Path) -> None:
    data = tmp_path / "disk.img"
    data.write_bytes(os.urandom(64 * 4096))
    try:
        times = exporter.time_reads(data, 8, random.Random(1))
    except OSError as err:
        pytest.fail(f"O_DIRECT reads of a file on {tmp_path} failed: {err}")
    assert len(times) == 8 and all(t > 0 for t in times)


def test_a_full_run_writes_metrics_promtool_accepts(tmp_path: Path) -> None:
    """Run the exporter for real against this machine's /sys, then lint its output with promtool."""
    promtool = require_tool("promtool", "prometheus")
    out, state = tmp_path / "clustersmith.prom", tmp_path / "state.json"
    argv = [sys.executable, str(EXPORTER), "--output", str(out), "--state", str(state),
            "--latency-buckets", "0.0001,0.001", "--probe-reads", "4"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert 'clustersmith_exporter_collector_success{collector="rdma"} 1' in text
    assert "clustersmith_exporter_last_run_timestamp_seconds " in text
    lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_exposition_of_recorded_lab_state_passes_promtool(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    sysfs = sysfs_from_dump((FIXTURES / "sysfs-client-live.tsv").read_text(), tmp_path)
    state: dict[str, list[float]] = {}
    exporter.observe(state, "nvme0n1", (0.0001, 0.02), [0.00005, 0.03])
    families = [*exporter.rdma_ports(sysfs), *exporter.nvme_paths(sysfs),
                exporter.histogram_family("clustersmith_storage_read_latency_seconds", "probe", state,
                                          (0.0001, 0.02), ("device",))]
    text = exporter.exposition(families)
    assert 'clustersmith_nvme_path_live{subsys="nqn.2026-11.io.clustersmith:record:hot-1"' in text
    assert 'clustersmith_storage_read_latency_seconds_bucket{device="nvme0n1",le="+Inf"} 2' in text
    lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_a_probe_that_hangs_is_abandoned_and_reported(tmp_path: Path) -> None:
    """A namespace whose reads never return (all paths down) costs --probe-timeout, not the exporter's run."""
    subsys = tmp_path / "sys/class/nvme-subsystem/nvme-subsys0"
    (subsys / "nvme0").mkdir(parents=True)
    (subsys / "nvme0/transport").write_text("rdma\n")
    (subsys / "nvme0/state").write_text("connecting\n")
    (subsys / "nvme0n1").mkdir()
    dev = tmp_path / "dev"
    dev.mkdir()
    os.mkfifo(dev / "nvme0n1")  # opening a FIFO with no writer blocks, as a read with no live path does
    args = exporter.parse_args(["--output", str(tmp_path / "out.prom"), "--state", str(tmp_path / "state.json"),
                                "--sysfs", str(tmp_path / "sys"), "--dev", str(dev), "--latency-buckets", "0.001",
                                "--probe-timeout", "0.5"])
    state: dict[str, dict[str, list[float]]] = {}
    families = exporter.collect(args, state)
    started = time.monotonic()
    probed = exporter.with_probe(args, state, families)
    assert time.monotonic() - started < 5
    text = exporter.exposition(probed)
    assert 'clustersmith_exporter_collector_success{collector="latency_probe"} 0' in text
    assert 'clustersmith_nvme_path_live{subsys="nvme-subsys0",path="nvme0",transport="rdma",address=""} 0' in text
    with open(dev / "nvme0n1", "wb"):  # release the abandoned reader
        pass
