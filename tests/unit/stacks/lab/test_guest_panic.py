"""A guest whose kernel panicked is named with its panic (`lab status`, the lab tier's summary), not left as an SSH
refusal: the lab boots with ``panic=-1`` and ``-no-reboot``, so the VM's QEMU exits and every later SSH is refused.

tests/fixtures/lab/panic-rxe-6.12-ci.txt is client-2's real console log from the CI run of stop 53 (see the
fixtures' README)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from stacks.lab import vm
from stacks.lab.cli import print_status
from stacks.lab.state import HostStatus, LabStatus, RailStatus

PANIC = (Path(__file__).resolve().parents[3] / "fixtures" / "lab" / "panic-rxe-6.12-ci.txt").read_text()


def test_the_panic_is_read_from_the_console_oops_task_queue_instruction_and_panic_in_order() -> None:
    assert vm.kernel_panic(PANIC).splitlines() == [
        "Oops: double fault: 0000 [#1] PREEMPT SMP NOPTI",
        "CPU: 0 UID: 0 PID: 1933 Comm: kworker/u4:1 Not tainted 6.12.95+deb12-amd64 #1  Debian 6.12.95-1~bpo12+1",
        "Workqueue: rxe_wq do_work [rdma_rxe]",
        "RIP: 0010:kmem_cache_alloc_node_noprof+0x70/0x330",
        "Kernel panic - not syncing: Fatal exception in interrupt",
    ]


def test_a_console_without_a_panic_names_none_even_with_a_warning_oops_line() -> None:
    booted = PANIC.split("[ 1909.961151]")[0]  # the same guest's console up to the fault: booted, a refused connect
    assert "client-2 login:" in booted and vm.kernel_panic(booted) == ""
    assert vm.kernel_panic(booted + "[  5.1] BUG: soft lockup - CPU#0 stuck for 22s! [fio:99]\n") == ""  # lived on


def test_status_shows_the_panicked_guest_and_its_panic() -> None:
    rail = RailStatus(name="rail0", netdev="eth1", address="10.0.0.3/24", link_up=True)
    status = LabStatus(name="lab", accel="tcg", hosts=(
        HostStatus(name="client-1", role="gpu_client", ssh_port=2201, power="running", rails=(rail,)),
        HostStatus(name="client-2", role="gpu_client", ssh_port=2202, power="stopped", rails=(rail,),
                   panic=vm.kernel_panic(PANIC)),
    ))
    out = io.StringIO()
    print_status(Console(file=out, width=200), status)
    text = out.getvalue()
    assert "stopped (kernel panic)" in text and text.count("(kernel panic)") == 1
    assert "client-2: the guest kernel panicked:\nOops: double fault" in text
    assert "Workqueue: rxe_wq do_work [rdma_rxe]" in text
