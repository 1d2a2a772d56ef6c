"""Network rules: NCCL all_reduce busbw at the large sizes, RDMA write bandwidth per rail against line rate."""

from __future__ import annotations

import re

from blueprints.blueprint import Check
from validators.checks import missing, rule, setup_failure
from validators.errors import parse_error
from validators.nccl import NcclRun, parse_nccl_file
from validators.outcome import Detail, Measurement, Series
from validators.rdma import parse_perftest_bw_file
from validators.results import Results

NCCL_SIZE = re.compile(r"^(?P<n>\d+)(?P<unit>[KMGT]?)$")  # nccl-tests' -b/-e: K, M, G are powers of 1024


def nccl_bytes(text: str) -> int:
    m = NCCL_SIZE.match(text.strip().upper())
    if m is None:
        raise parse_error("blueprint", "a size", "args.minbytes", "expected a size like 2G", text)
    return int(m.group("n")) * int(1024 ** " KMGT".index(m.group("unit") or " "))


def _no_gpu(results: Results) -> str | None:
    facts = results.host_facts()
    if facts and all(int(f.get("gpus", 0)) == 0 for f in facts.values()):
        return (f"no GPU on {', '.join(sorted(facts))} (the NVIDIA driver lists none in /proc/driver/nvidia/gpus); "
                f"NCCL needs one per rank")
    return None


def _busbw_series(run: NcclRun, name: str) -> tuple[Series, ...]:
    oop = tuple((float(r.size), r.out_of_place.busbw) for r in run.rows if r.out_of_place is not None)
    ip = tuple((float(r.size), r.in_place.busbw) for r in run.rows if r.in_place is not None)
    return (Series(kind="busbw", name=f"{name} out-of-place", points=oop),
            Series(kind="busbw", name=f"{name} in-place", points=ip))


@rule("nccl.allreduce_busbw")
def allreduce_busbw(check: Check, results: Results) -> Measurement:
    if check.args.get("requires") == "gpu" and (why := _no_gpu(results)) is not None:
        return Measurement(not_applicable=why)
    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed
    files = results.files("nccl", pattern="*.txt") + results.files("nccl", pattern="*.json")
    if not files:
        return missing("all_reduce_perf output", "nccl/<name>.txt or nccl/<name>.json")
    min_bytes = nccl_bytes(check.args.get("minbytes", "0"))
    details: list[Detail] = []
    series: list[Series] = []
    notes: list[str] = []
    for path in files:
        run = parse_nccl_file(path)
        large = [r for r in run.large(min_bytes) if r.out_of_place is not None]
        series += _busbw_series(run, path.stem)
        if not large:
            largest = max(r.size for r in run.rows)
            return Measurement(setup_error=f"{path.name} stops at {largest} B; busbw is read at sizes >= "
                                           f"{check.args.get('minbytes')} (run all_reduce_perf -b "
                                           f"{check.args.get('minbytes')} -e {check.args.get('maxbytes', '8G')})")
        worst = min(large, key=lambda r: r.out_of_place.busbw if r.out_of_place else 0.0)
        busbw = worst.out_of_place.busbw if worst.out_of_place else 0.0
        details.append(Detail(where=path.name, value=busbw, unit="GB/s",
                              note=f"lowest out-of-place busbw over {len(large)} size(s) >= {min_bytes} B, "
                                   f"at {worst.size} B"))
        if run.avg_busbw is not None:
            notes.append(f"{path.name}: footer 'Avg bus bandwidth' {run.avg_busbw:g} GB/s averages the whole "
                         f"sweep and is not the measure")
    notes.append(f"on two nodes run with NCCL_ALGO={check.args.get('algo', 'Ring')}: tree busbw can exceed the wire")
    return Measurement(value=min(d.value or 0.0 for d in details), details=tuple(details), series=tuple(series),
                       notes=tuple(notes))


@rule("rdma.write_bw")
def write_bw(check: Check, results: Results) -> Measurement:
    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed
    rails = sorted(p.name for p in (results.root / "ib_write_bw").glob("rail*") if p.is_dir()) \
        if (results.root / "ib_write_bw").is_dir() else []
    if not rails:
        return missing("ib_write_bw output", "ib_write_bw/rail<i>/<host>.txt")
    details = []
    for rail in rails:
        for path in results.files("ib_write_bw", rail, pattern="*.txt"):
            out = parse_perftest_bw_file(path)
            details.append(Detail(where=f"{rail} {path.stem}", value=out.average_gbit, unit="Gb/s",
                                  note=f"{out.banner.device or '?'}, {out.rows[-1].bytes} B messages, "
                                       f"{out.banner.qps or '?'} QP(s)"))
    if not details:
        return missing("ib_write_bw output", "ib_write_bw/rail<i>/<host>.txt")
    return Measurement(value=min(d.value or 0.0 for d in details), details=tuple(details),
                       notes=("the slowest rail counts: every rail must reach the pass mark",))
