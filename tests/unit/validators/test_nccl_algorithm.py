"""The NCCL report says which algorithm a run used only from the run's own output (NCCL's debug lines): nothing in
clustersmith sets NCCL_ALGO, so without those lines it says nothing about it."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.unit.validators.gate_inputs import FIXTURES, two_node_blueprint
from validators.checks.network import algorithm_note
from validators.evaluate import evaluate
from validators.nccl_debug import parse_nccl_debug_file
from validators.results import Results

NCCL = FIXTURES / "nccl"
DEBUG = NCCL / "debug"


def test_the_note_names_the_algorithm_forced_or_chosen_and_nothing_without_debug_lines() -> None:
    forced = parse_nccl_debug_file(DEBUG / "nccl-1154-algo-set-by-environment.txt")
    chosen = parse_nccl_debug_file(DEBUG / "nccl-1595-tuning-ring-simple.txt")
    silent = parse_nccl_debug_file(DEBUG / "nccl-1357-h100-2node-comm.txt")
    assert algorithm_note([forced], 2) == ("all_reduce ran with NCCL_ALGO=Tree (set in the environment), from "
                                           "NCCL's debug output: on two nodes Tree's busbw can exceed the wire")
    assert algorithm_note([forced], 4) == ("all_reduce ran with NCCL_ALGO=Tree (set in the environment), from "
                                           "NCCL's debug output")
    assert algorithm_note([chosen], 2) == "all_reduce ran with Ring (NCCL's choice per size), from NCCL's debug output"
    assert algorithm_note([silent], 2) is None
    assert algorithm_note([], 2) is None


def test_a_report_never_claims_an_algorithm_nothing_set(tmp_path: Path) -> None:
    """The recorded two-node sweep: without NCCL's debug lines no algorithm is named (format 1 said "run with
    NCCL_ALGO=Ring" for every run); with a TUNING log beside it, the algorithm that log shows."""
    bp = two_node_blueprint(tmp_path)
    root = tmp_path / "r"
    (root / "nccl").mkdir(parents=True)
    shutil.copy(NCCL / "a3mega-2x8-h100.txt", root / "nccl" / "a3mega.txt")
    got = evaluate(bp, Results(root), ["nccl.allreduce_busbw"], strict=False)[0]
    assert got.notes and not any("NCCL_ALGO" in n or "ran with" in n for n in got.notes), got.notes
    shutil.copy(DEBUG / "nccl-1595-tuning-ring-simple.txt", root / "nccl" / "a3mega.debug.log")
    got = evaluate(bp, Results(root), ["nccl.allreduce_busbw"], strict=False)[0]
    assert "all_reduce ran with Ring (NCCL's choice per size), from NCCL's debug output" in got.notes
    assert not any("NCCL_ALGO" in n for n in got.notes)
