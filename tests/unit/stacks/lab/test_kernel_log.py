"""tests/lab/kernel_log.py reads a real client kernel log of two 20 s flaps of rail 0 on the 6.1 lab kernel."""

from __future__ import annotations

from pathlib import Path

from tests.lab.kernel_log import FlapEvidence, flap_evidence, since

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "lab" / "flap-dmesg-6.1.txt"


def test_the_recorded_flaps_show_refused_registrations_and_their_recovery() -> None:
    # first and second cut: a refused fast registration on the flapped rail 3 s in, keep-alive (QID 0) timing out,
    # reconnect; after the first cut one refusal on rail 1 never completed in error and its 9 I/Os waited for their
    # timeout (QID 1, 30 s later); after the second nvme-rdma saw the error completion ("MEMREG ... failed") and
    # recovered at once; the third cut (read while rail 0 was still down) only timed keep-alive out
    assert flap_evidence(FIXTURE.read_text()) == FlapEvidence(reg_mr_refused=4, memreg_failed=1, io_timeouts=15)


def test_a_quiet_log_counts_nothing() -> None:
    quiet = "\n".join(line for line in FIXTURE.read_text().splitlines()
                      if "not free" not in line and "MEMREG" not in line and " timeout" not in line)
    assert flap_evidence(quiet) == FlapEvidence(0, 0, 0)


def test_a_refusal_of_another_kind_is_not_counted() -> None:
    # rxe's other refusals of a registration (wrong protection domain or key index) are not the retransmission fault
    line = "[  188.116000] rdma_rxe: rxe_reg_fast_mr: qp->pd and mr->pd don't match"
    assert flap_evidence(line).reg_mr_refused == 0


def test_since_keeps_only_what_the_run_logged() -> None:
    lines = FIXTURE.read_text().splitlines()
    before, during = "\n".join(lines[:40]), "\n".join(lines[40:])
    assert since(before, "\n".join(lines)) == during
    # the ring buffer wrapped past the last line read before, or the log was cleared: all of the later read counts
    assert since(before, during) == during
    assert since("", during) == during
    assert since("\n".join(lines), "\n".join(lines)) == ""


def test_the_6_12_forms_are_counted() -> None:
    # 6.12 with rdma_rxe's dynamic debug on: the refusal ("rxe1: mr#147 rxe_reg_fast_mr:  mr->lkey = ... not free",
    # once on the rail that was not cut, once after the reconnect) and the flush it causes ("SEND ... WR flushed")
    run1 = (FIXTURE.parent / "flap-dmesg-6.12-run1.txt").read_text()
    assert flap_evidence(run1) == FlapEvidence(reg_mr_refused=2, memreg_failed=0, io_timeouts=0)
    # 6.12's timeout line: "I/O tag 0 (f000) opcode 0x18 (Admin Cmd) QID 0 timeout" (keep-alive, no refusal)
    run3 = (FIXTURE.parent / "flap-dmesg-6.12-run3.txt").read_text()
    assert flap_evidence(run3) == FlapEvidence(reg_mr_refused=0, memreg_failed=0, io_timeouts=1)
