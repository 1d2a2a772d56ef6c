"""Benchmark (issue 18 item 8): how often a short flap of rail 0 hangs verified writes on a client's own NVMe-oF
multipath namespace, on each lab kernel, and how long I/O pauses when it does not.

    .venv/bin/python tests/bench_flap_lab.py [--kernel bookworm bookworm-backports] [--runs 4] [--flap 20 5]

For each kernel: `clustersmith build examples/lab.yaml` with that ``target.kernel`` (the lab tier's own
``CLUSTERSMITH_LAB_KERNEL`` copy of the example), `lab up`, then only the data path's plays of the generated site.yml
(rdma, pfc_dcqcn, nvmeof, storage_tiering: what the flap goes through; no Ceph), and for each flap length, ``runs``
times, the lab tier's own verified write through a cut (tests/lab/test_storage_path_e2e.py: fio randwrite with
verify=crc32c on client-1's dm-cache tier over its own multipath namespace, rail 0 down for the flap, started after
10 s of writing). A run whose fio has not ended ``--hang-after`` seconds after its planned end is a hang: the script
prints what the lab test reads then on the client (controller states, each path's in-flight I/O, fio's kernel
stacks, the blocked tasks and the kernel log) and keeps it whole in OUT/KERNEL-flapF-runN.txt. Lab down at the end,
whatever happened, except with ``--keep-on-hang``: the first hang ends the runs and leaves its lab up to be read.

Each run also reads client-1's kernel log (kept in OUT/KERNEL-flapF-runN.dmesg) for the Soft-RoCE fault that
tests/lab/kernel_log.py explains: registrations rdma_rxe refused ("rxe_reg_fast_mr ... not free"; its debug message
is switched on where it is one, 6.12), nvme-rdma's MEMREG failures, and I/O timeouts.

Prints a line per run (kernel, flap, link down s, longest I/O pause s, those counts, outcome) and per kernel and flap
the hangs of runs, the pauses' min / median / max and the runs with a refusal or an I/O timeout; everything also
goes to OUT/flaps.json. Soft-RoCE under QEMU TCG on a shared 2-core machine: the pauses are the lab's kernel and
timers, never a real NIC's failover time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from blueprints.blueprint import load_blueprint
from stacks.lab import Lab
from tests.conftest import BIN
from tests.lab.conftest import LAB_KERNEL_ENV, REPO, TIMINGS, ExampleLab, example_spec, run, tail
from tests.lab.kernel_log import FlapEvidence, flap_evidence
from tests.lab.test_storage_path_e2e import failover_bound, verified_write_through_a_cut

DATA_PATH_ROLES = ("rdma", "pfc_dcqcn", "nvmeof", "storage_tiering")


@dataclass(frozen=True)
class FlapRun:
    kernel: str
    release: str
    flap_s: int
    run: int
    link_down_s: float
    longest_pause_s: float | None
    outcome: str  # "ok", "hang: ..." or "failed: ..."
    evidence: FlapEvidence  # client-1's kernel log over the run (tests/lab/kernel_log.py)


# Soft-RoCE's debug messages on (6.12 logs the refused registration at debug level, 6.1 as a warning)
RXE_DEBUG = "echo 'func rxe_reg_fast_mr +p' > /sys/kernel/debug/dynamic_debug/control"


def data_path_playbook(site: Path) -> Path:
    """A copy of the generated site.yml with only the data path's plays, beside it (this script's own build)."""
    plays = [p for p in yaml.safe_load(site.read_text())
             if {r["role"] if isinstance(r, dict) else r for r in p.get("roles", [])} & set(DATA_PATH_ROLES)]
    if len(plays) != len(DATA_PATH_ROLES):
        raise SystemExit(f"{site}: expected one play for each of {', '.join(DATA_PATH_ROLES)}, found {len(plays)}")
    path = site.with_name("data-path.yml")
    path.write_text(yaml.safe_dump(plays, sort_keys=False))
    return path


def step(what: str, argv: list[str | Path], timeout: float, env: dict[str, str] | None = None) -> None:
    started = time.monotonic()
    print(f"  {what} ...", flush=True)
    done = run(argv, timeout=timeout, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed ({done.returncode}):\n{tail(done, 4000)}")
    print(f"  {what}: {time.monotonic() - started:.0f} s", flush=True)


def one_kernel(kernel: str, flaps: list[int], runs: int, hang_after: float, out: Path,
               rows: list[FlapRun], keep_on_hang: bool = False) -> bool:
    """The runs on one kernel; True when a hang stopped them and the lab was left up to be read."""
    os.environ[LAB_KERNEL_ENV] = kernel
    build = out / kernel
    build.mkdir(parents=True)
    step(f"{kernel}: build", [sys.executable, "-m", "blueprints", "build", example_spec(build), "-o", build], 300)
    folder = build / "lab"
    kept = False
    try:
        step(f"{kernel}: lab up", [sys.executable, "-m", "blueprints", "lab", "up", folder], 3600)
        inventory, site = folder / "ansible" / "inventory.yml", folder / "ansible" / "site.yml"
        step(f"{kernel}: converge {', '.join(DATA_PATH_ROLES)}",
             [BIN / "ansible-playbook", "-i", inventory, data_path_playbook(site)], 3600,
             env={"ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
        lab = ExampleLab(load_blueprint(folder), folder, Lab.attach(folder))
        release = lab.lab.ssh("client-1", "uname -r", timeout=60).stdout.strip()
        bound = failover_bound(lab)
        if lab.lab.ssh("client-1", RXE_DEBUG, timeout=60).returncode != 0:  # 6.1: no debug message there
            print("  rxe_reg_fast_mr has no debug message to switch on: only its warnings are counted", flush=True)
        lab.lab.ssh("client-1", "dmesg -C", timeout=60)  # each run reads its own kernel log, from here
        for flap in flaps:
            for n in range(1, runs + 1):
                TIMINGS.clear()
                outcome = "ok"
                try:
                    verified_write_through_a_cut(lab, bound, flap, f"flap{flap}", "flap", hang_after_s=hang_after)
                except AssertionError as failed:
                    text = str(failed)
                    outcome = ("hang: " if text.startswith("fio hung") else "failed: ") + text[:3000]
                    report = out / f"{kernel}-flap{flap}-run{n}.txt"
                    report.write_text(text + "\n")  # whole: a hang's report runs to a few hundred lines
                    outcome += f"\n(whole report: {report})"
                if keep_on_hang and outcome.startswith("hang"):
                    log = ""  # left in the ring buffer for whoever reads the kept lab
                else:
                    log = lab.lab.ssh("client-1", "dmesg -c", timeout=60).stdout
                    (out / f"{kernel}-flap{flap}-run{n}.dmesg").write_text(log)
                row = FlapRun(kernel, release, flap, n, round(TIMINGS.get("flap: link down for (s)", 0.0), 1),
                              TIMINGS.get("flap: longest I/O pause (s)"), outcome, flap_evidence(log))
                rows.append(row)
                print(f"{kernel} ({release}) flap {flap} s run {n}: link down {row.link_down_s} s, longest "
                      f"pause {row.longest_pause_s} s, registrations refused {row.evidence.reg_mr_refused}, MEMREG "
                      f"failures {row.evidence.memreg_failed}, I/O timeouts {row.evidence.io_timeouts}, "
                      f"{outcome.splitlines()[0][:200]}", flush=True)
                if outcome != "ok":
                    print(outcome, flush=True)
                (out / "flaps.json").write_text(json.dumps([dataclasses.asdict(r) for r in rows], indent=2))
                if keep_on_hang and outcome.startswith("hang"):
                    kept = True
                    print(f"lab left up with the hung fio on client-1 (`{sys.executable} -m blueprints lab status "
                          f"{folder}` names its SSH port); `... lab down {folder}` when done", flush=True)
                    return True
        return False
    finally:
        if not kept:
            run([sys.executable, "-m", "blueprints", "lab", "down", folder], timeout=600)


def summary(rows: list[FlapRun]) -> None:
    print("\nkernel / flap: hangs of runs, longest I/O pause min / median / max (s)")
    for key in dict.fromkeys((r.kernel, r.release, r.flap_s) for r in rows):
        mine = [r for r in rows if (r.kernel, r.release, r.flap_s) == key]
        hangs = sum(r.outcome.startswith("hang") for r in mine)
        other = sum(r.outcome.startswith("failed") for r in mine)
        pauses = sorted(r.longest_pause_s for r in mine if r.longest_pause_s is not None)
        shown = f"{pauses[0]:.1f} / {statistics.median(pauses):.1f} / {pauses[-1]:.1f}" if pauses else "none"
        refused = sum(r.evidence.reg_mr_refused > 0 for r in mine)
        timed_out = sum(r.evidence.io_timeouts > 0 for r in mine)
        print(f"{key[0]} ({key[1]}), flap {key[2]} s: {hangs} hang(s) and {other} other failure(s) of {len(mine)} "
              f"runs; pause {shown}; runs with a refused registration {refused}, with an I/O timeout {timed_out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", nargs="+", default=["bookworm", "bookworm-backports"])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--flap", nargs="+", type=int, default=[20, 5], help="seconds rail 0 stays down")
    parser.add_argument("--hang-after", type=float, default=300,
                        help="seconds past fio's planned end that make a run a hang")
    parser.add_argument("--keep-on-hang", action="store_true",
                        help="at the first hang stop, and leave that lab up to be read (bring it down yourself)")
    parser.add_argument("--out", type=Path, default=None, help="a new folder (default: a temporary one)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="clustersmith-flap-"))
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise SystemExit(f"--out {out}: expected a new or empty folder; it holds files this script did not write")
    rows: list[FlapRun] = []
    for kernel in args.kernel:
        if one_kernel(kernel, args.flap, args.runs, args.hang_after, out, rows, args.keep_on_hang):
            break
    summary(rows)
    print(f"\nfigures: {out / 'flaps.json'}")


if __name__ == "__main__":
    main()
