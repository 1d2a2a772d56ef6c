"""The NCCL all_reduce busbw model (blueprints/planner/nccl_model.py), on hand-solved shapes; its error on published
logs it was not calibrated on is the benchmark's (tests/bench_nccl_prediction.py, docs/benchmarks.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from blueprints.cli import plan_file
from blueprints.planner.nccl_model import NcclFabric, allreduce_busbw, nic_busbw

REPO = Path(__file__).resolve().parents[4]


def fabric(nodes: int, gpu: str = "H100-SXM", nics: int = 8, gbit: float = 400) -> NcclFabric:
    return NcclFabric(nodes=nodes, gpus_per_node=8, nics=nics, nic_gbit=gbit, gpu=gpu)


def test_one_node_is_its_nvlink_domain_where_a_figure_is_published() -> None:
    got = allreduce_busbw(fabric(1))
    assert got is not None and got.busbw == 480 and "nccl-tests#212" in got.formula
    assert allreduce_busbw(fabric(1, gpu="A100")) is None, "no published single-node A100 figure: no prediction"


def test_two_nodes_take_the_tree_each_byte_crossing_the_network_once() -> None:
    # 16 ranks: 2 x 15/16 = 1.875 x 8 x 47 GB/s = 705 GB/s, above H100's NVLS 480: the NVLink domain caps it
    h100 = allreduce_busbw(fabric(2))
    assert h100 is not None and h100.busbw == 480 and "capped by the NVLink domain" in h100.formula
    b200 = allreduce_busbw(fabric(2, gpu="B200"))  # no published NVLink 5 figure: the network's alone
    assert b200 is not None and b200.busbw == pytest.approx(705)
    ring = allreduce_busbw(fabric(2), algorithm="ring")  # NCCL_ALGO=Ring: the network's bandwidth
    assert ring is not None and ring.busbw == 376


def test_three_nodes_and_more_are_the_nodes_network() -> None:
    a100 = allreduce_busbw(fabric(3, gpu="A100", nics=4, gbit=200))  # 4 x 24 GB/s (nccl-tests#160)
    assert a100 is not None and a100.busbw == 96 and a100.formula == \
        "3 nodes: 4 NICs x 24 GB/s per 200G NIC (nccl-tests#160) = 96 GB/s"
    many = allreduce_busbw(fabric(64))
    assert many is not None and many.busbw == 376
    assert many.formula.endswith("an upper bound at 512 ranks, past the 64 of the published logs that judged the "
                                 "model: per-step latency is not modelled")


def test_a_speed_with_no_published_figure_gets_400gs_share_and_says_it_is_derived() -> None:
    share, source = nic_busbw(800)
    assert share == pytest.approx(94) and source == "94 GB/s per 800G NIC (400G's 94% of line rate, derived)"
    assert allreduce_busbw(fabric(4, nics=0)) is None, "no network between the nodes: no prediction"


def test_the_planner_predicts_the_examples_busbw_with_the_model() -> None:
    checks = {ex: next(c for c in plan_file(REPO / "examples" / f"{ex}.yaml").acceptance.checks
                       if c.id == "nccl.allreduce_busbw") for ex in ("cv-training-500tb", "llm-training-16k", "lab")}
    cv, llm = checks["cv-training-500tb"].predicted, checks["llm-training-16k"].predicted
    assert cv is not None and cv.figure.value == 376 and cv.figure.derived_from.rule == "acceptance.predicted_nccl"
    assert llm is not None and llm.figure.value == pytest.approx(390.4)  # p5: 32 EFA x 12.2 GB/s per 100G
    assert checks["lab"].predicted is None
