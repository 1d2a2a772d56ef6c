"""Predicted figures (issue 41 item 4, first part): the plan predicts what the built cluster's storage should measure
(the storage design's own aggregate), and every report prints measured / predicted beside the verdict. The lab
predicts nothing: its throughput is emulated."""

from __future__ import annotations

from pathlib import Path

import pytest

from blueprints.blueprint import Check
from blueprints.cli import plan_file
from validators.outcome import Measurement, judge

REPO = Path(__file__).resolve().parents[3]


def check(example: str, id: str) -> Check:
    return next(c for c in plan_file(REPO / "examples" / f"{example}.yaml").acceptance.checks if c.id == id)


def test_the_storage_checks_predict_the_designs_aggregate_traced_to_its_arithmetic() -> None:
    read = check("cv-training-500tb", "storage.read_throughput")
    assert read.threshold == 500 and read.predicted is not None  # the spec asks 500 GB/s; 12 hot nodes deliver more
    assert read.predicted.value == pytest.approx(503.129649)
    assert read.predicted.derived_from.rule == "acceptance.predicted_from_design"
    assert read.predicted.derived_from.formula == "the design's 503.13GB/s: 12 nodes x 41.9275GB/s = 503.13GB/s"
    write = check("llm-training-16k", "storage.write_throughput")
    assert (write.threshold, write.predicted and write.predicted.value) == (500, 1875)  # FSx: 1875 TiB x 1000 MB/s


def test_the_lab_and_checks_no_model_predicts_carry_no_prediction() -> None:
    assert check("lab", "storage.read_throughput").predicted is None
    assert check("cv-training-500tb", "nccl.allreduce_busbw").predicted is None


def test_a_pass_at_60_percent_of_the_prediction_says_so() -> None:
    """The issue's case: the fabric and servers can carry 1.875 TB/s, the cluster reads 1.1 TB/s, the spec asks
    1 TB/s: a pass, and the report says it is 59 % of what the design should deliver."""
    got = judge(check("llm-training-16k", "storage.read_throughput"), Measurement(value=1100.0))
    assert got.status == "pass" and got.predicted == 1875 and got.of_predicted == pytest.approx(0.5867, abs=1e-4)
    assert ("measured 1100 GB/s is 59% of the predicted 1875 GB/s (the design's 1.875TB/s: 1875TiB x 1000MB/s per "
            "TiB = 1.875TB/s)") in got.notes


def test_nothing_measured_has_no_ratio() -> None:
    got = judge(check("llm-training-16k", "storage.read_throughput"), Measurement(setup_error="fio did not run"))
    assert got.status == "setup_error" and got.of_predicted is None and got.predicted == 1875
    assert not any("of the predicted" in note for note in got.notes)
