"""NCCL debug output (NCCL_DEBUG=INFO) on published logs (tests/fixtures/nccl/debug, sources in its README): version,
ranks and nodes, the network and its devices, a socket fallback shown as such, the algorithms chosen, and one
interleaved nccl-tests log read by both parsers."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from validators.errors import ParseError
from validators.nccl import parse_nccl
from validators.nccl_debug import NcclDebug, parse_nccl_debug, parse_nccl_debug_file, parse_nccl_debug_lines

DEBUG = Path(__file__).resolve().parents[2] / "fixtures" / "nccl" / "debug"


def load(name: str) -> NcclDebug:
    return parse_nccl_debug_file(DEBUG / name)


def test_interleaved_efa_log_whole() -> None:
    run = load("eks-efa-2x1-t4-interleaved.txt")
    assert run.versions == ("2.12.7+cuda11.4",)
    assert run.hosts == ("test-nccl-efa-worker-0", "test-nccl-efa-worker-1")
    assert (run.ranks_seen, run.nranks, run.nnodes) == (2, 2, None)
    assert run.networks == ("AWS Libfabric",) and run.transport == "ofi" and not run.socket_fallback
    assert run.net_paths == {"NET/AWS Libfabric/0": 8} and not run.gpudirect_rdma
    assert (run.ring_channels, run.coll_channels, run.connected_rings, run.connected_trees) == (2, 2, True, True)
    assert run.env == {"NCCL_SHM_DISABLE": "0"} and run.choices == ()


def test_both_parsers_on_one_interleaved_log() -> None:
    path = DEBUG / "eks-efa-2x1-t4-interleaved.txt"
    table = parse_nccl(path.read_text(), str(path))  # INFO lines and the Warning lines are not rows
    assert len(table.rows) == 31 and table.ranks == 2 and table.avg_busbw == 1.15327
    debug = load(path.name)  # table rows, '#' lines and launcher noise are not INFO lines
    # 94 lines: 31 rows, 2 ssh warnings, 12 '#' lines, the bare version line, one empty tagged line, 47 INFO
    assert debug.lines == 94 and debug.info_lines == 47


@pytest.mark.parametrize(("name", "transport", "no_ib"), [
    ("nccl-300-socket-lo-tag-output.txt", "socket", True),          # NCCL 2.5.6: no 'Using network' line yet
    ("nccl-952-no-ib-device-socket-channels.txt", "socket", False),  # channels via NET/Socket/3
    ("nccl-tests-185-dgxh100-roce.txt", "ib", False),
    ("nccl-tests-294-ibext-sharp.txt", "ib", False),
])
def test_transport_and_socket_fallback(name: str, transport: str, no_ib: bool) -> None:
    run = load(name)
    assert run.transport == transport and run.socket_fallback == (transport == "socket") and run.ib_no_device == no_ib


def test_socket_channels_counted_beside_intra_node_paths() -> None:
    run = load("nccl-952-no-ib-device-socket-channels.txt")
    assert run.net_paths == {"NET/Socket/3": 2, "P2P/IPC/read": 14}
    assert run.hosts == ("<cluster_name>",)


def test_ib_devices_with_link_layer_and_rank_label_prefix() -> None:
    run = load("nccl-302-ib-and-roce-devices.txt")
    assert [(d.name, d.port, d.link) for d in run.ib_devices] == [
        ("mlx5_0", 1, "IB"), ("mlx5_1", 1, "IB"), ("mlx5_2", 1, "RoCE"), ("mlx5_3", 1, "IB"), ("mlx5_4", 1, "IB")]
    assert run.hosts == ("crow-ib-new-nccl-256-info-19",)


def test_roce_devices_past_mlx5_9_and_bare_version_line() -> None:
    run = load("nccl-tests-185-dgxh100-roce.txt")
    assert [d.name for d in run.ib_devices] == ["mlx5_10", "mlx5_11"] and {d.link for d in run.ib_devices} == {"RoCE"}
    assert run.versions == ("2.19.3+cuda12.3",) and run.networks == ("IB",)
    assert run.hosts == ("dgxh100-3", "dgxh100-4")


def test_sharp_plugin_devices() -> None:
    run = load("nccl-tests-294-ibext-sharp.txt")
    assert run.networks == ("IBext_v6",) and len(run.ib_devices) == 8
    assert run.ib_devices[0].link == "IB/SHARP"


def test_newer_comm_line_gives_nodes() -> None:
    run = load("nccl-1357-h100-2node-comm.txt")
    assert (run.ranks_seen, run.nranks, run.nnodes) == (1, 16, 2)


def test_tuning_choices_folded_by_algorithm_and_protocol() -> None:
    run = load("nccl-1453-tuning-interleaved.txt")
    assert [(c.algorithm, c.protocol, c.calls, c.min_bytes, c.max_bytes) for c in run.choices] == [
        ("Tree", "LL", 5, 256, 512), ("Tree", "LL128", 2, 262144, 262144)]
    assert run.algorithms == ("Tree",) and run.ring_channels == 16


def test_tuning_line_without_host_prefix() -> None:
    run = load("nccl-1595-tuning-ring-simple.txt")
    assert [(c.algorithm, c.protocol, c.calls) for c in run.choices] == [("Ring", "Simple", 3)] and run.hosts == ()


def test_forced_algorithm_is_recorded_and_model_table_is_not_a_choice() -> None:
    run = load("nccl-1154-algo-set-by-environment.txt")
    assert run.env == {"NCCL_ALGO": "Tree"} and run.choices == ()


def test_streams_from_any_line_iterable() -> None:
    text = (DEBUG / "nccl-1595-tuning-ring-simple.txt").read_text()
    streamed = parse_nccl_debug_lines(io.StringIO(text * 1000), "stream")
    assert streamed.lines == 3000 and streamed.choices[0].calls == 3000


def test_a_table_without_info_lines_is_not_debug_output() -> None:
    with pytest.raises(ParseError, match="expected NCCL INFO lines"):
        parse_nccl_debug((DEBUG.parent / "sample-b-1x8-h100.txt").read_text(), "sample-b")


@pytest.mark.parametrize(("debug_log", "expected_in_note"), [
    ("nccl-952-no-ib-device-socket-channels.txt", "SOCKET FALLBACK"),
    ("nccl-1595-tuning-ring-simple.txt", "chosen: Ring/Simple 805306368..805306368 B"),
    ("nccl-1154-algo-set-by-environment.txt", "forced by environment: NCCL_ALGO=Tree"),
])
def test_acceptance_reports_the_debug_log_as_information_only(tmp_path: Path, debug_log: str,
                                                             expected_in_note: str) -> None:
    from tests.unit.validators.checks.test_checks import FIXTURES, blueprint, judged, results_with

    bp = blueprint("cv-training-500tb")
    table = {"nccl/run.txt": FIXTURES / "nccl" / "a3mega-2x8-h100.txt"}
    without = judged(bp, results_with(tmp_path / "a", table), "nccl.allreduce_busbw")["nccl.allreduce_busbw"]
    with_log = judged(bp, results_with(tmp_path / "b", {**table, "nccl/run.debug.log": DEBUG / debug_log}),
                      "nccl.allreduce_busbw")["nccl.allreduce_busbw"]
    assert without.status == "setup_error"  # 2 nodes of the 64 planned: short of the plan
    if expected_in_note == "SOCKET FALLBACK":  # the transport is judged, never the algorithm note: NCCL on TCP is a
        # failure of the cluster, shown whatever the run's size (issue 37 item 4)
        assert (with_log.status, with_log.measured) == ("fail", without.measured)
        assert with_log.message.startswith("run.txt: NCCL fell back to NET/Socket (TCP) between nodes")
        assert "and the result does not cover the plan" in with_log.message
    else:
        assert (with_log.status, with_log.measured) == (without.status, without.measured)  # never pass/fail
    note = next(n for n in with_log.notes if n.startswith("run.txt: NCCL"))
    assert expected_in_note in note
    assert f"plan expected: {bp.nccl.algorithm_expectation.value}" in note
    assert not any(n.startswith("run.txt: NCCL") for n in without.notes)


def test_plan_expectation_compared_with_the_choices(tmp_path: Path) -> None:
    from validators.checks.network import debug_note

    note = debug_note("run.txt", load("nccl-1595-tuning-ring-simple.txt"),
                      "AllReduce on 16 GPUs: Tree for small and Ring for large messages")
    assert note.endswith("; not chosen in this run: Tree")


def test_cli_parse_kind_prints_the_typed_json() -> None:
    import json

    from click.testing import CliRunner

    from validators.cli import parse

    got = CliRunner().invoke(parse, ["nccl-debug", str(DEBUG / "nccl-tests-185-dgxh100-roce.txt")])
    assert got.exit_code == 0 and json.loads(got.output)["transport"] == "ib"
