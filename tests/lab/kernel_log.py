"""What a client's kernel log says about a rail flap on Soft-RoCE (issue 18 item 8; tests/bench_flap_lab.py).

Soft-RoCE (rdma_rxe) runs a retransmission from the oldest unacknowledged work request and executes again every
local operation queued after it: nvme-rdma's fast registration (IB_WR_REG_MR) of an I/O that was already registered
is then refused, because the memory region is no longer free (drivers/infiniband/sw/rxe/rxe_req.c req_retry and
rxe_requester, rxe_mr.c rxe_reg_fast_mr, in Debian's 6.1.192 and 6.12.95 sources alike). The queue pair goes to
the error state. 6.1 puts only the requester in error: the error completion waits behind the unacknowledged
request, so nvme-rdma recovers the path when it is acknowledged ("MEMREG ... failed") or, with no acknowledgement
coming, only when keep-alive or an I/O times out (30 s: a silent stall, also of the rail that was not cut). 6.12
puts the whole queue pair in error and flushes it ("SEND ... WR flushed"): the path is recovered at once. 6.1 logs
the refusal as a warning, 6.12 at debug level (rdma_rxe's dynamic debug must be on to see it).
A kernel driver fault, not a setting of ours: a hardware RNIC does not execute a registration twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MEMREG_FAILED = re.compile(r"MEMREG for CQE \S+ failed")
# 6.1: "I/O 21 QID 1 timeout"; 6.12: "I/O tag 0 (f000) opcode 0x18 (Admin Cmd) QID 0 timeout"
_IO_TIMEOUT = re.compile(r"I/O (?:tag )?\d+ .*?QID \d+ timeout")


@dataclass(frozen=True)
class FlapEvidence:
    reg_mr_refused: int  # "rxe_reg_fast_mr: mr->lkey = 0x... not free"
    memreg_failed: int  # 6.1: nvme-rdma saw the refused registration's error completion and started recovery
    io_timeouts: int  # "I/O N QID Q timeout": keep-alive (QID 0) or an I/O queue recovered only by its timeout


def flap_evidence(log: str) -> FlapEvidence:
    """Counts in ``dmesg`` text (tests/fixtures/lab/flap-dmesg-6.1.txt is a real one)."""
    refused = sum("rxe_reg_fast_mr" in line and "not free" in line for line in log.splitlines())  # both forms
    return FlapEvidence(refused, len(_MEMREG_FAILED.findall(log)), len(_IO_TIMEOUT.findall(log)))


def since(before: str, after: str) -> str:
    """The lines of ``after`` (a later ``dmesg``) past the last line of ``before``; all of them where that line is
    gone (the ring buffer wrapped, or someone cleared it)."""
    old = before.splitlines()
    new = after.splitlines()
    if old and old[-1] in new:
        new = new[len(new) - new[::-1].index(old[-1]):]
    return "\n".join(new)
