"""Network rules: NCCL all_reduce busbw at the large sizes, RDMA write bandwidth per rail against line rate."""

from __future__ import annotations

import os
import re
from pathlib import Path

from blueprints.blueprint import Check
from validators.checks import missing, rule, setup_failure
from validators.errors import ParseError, parse_error
from validators.nccl import NcclRun, parse_nccl_file
from validators.nccl_debug import NcclDebug, parse_nccl_debug_file
from validators.nccl_run import debug_violations, emulated, judge_preflight, read_preflight
from validators.outcome import Detail, Measurement, Series
from validators.rdma import parse_perftest_bw_file
from validators.results import Results

PLAN_ALGOS = re.compile(r"NVLSTree|NVLS|CollNet|Tree|Ring|PAT")  # names in nccl.algorithm_expectation
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


def debug_note(name: str, debug: NcclDebug, expectation: str | None) -> str:
    """What NCCL said it used and chose, as information: it never changes the check's pass or fail."""
    net = ", ".join(debug.networks) or "not printed"
    devices = " ".join(f"{d.name}:{d.port}/{d.link}" for d in debug.ib_devices)
    parts = [f"{name}: NCCL {', '.join(debug.versions) or '?'}, {debug.ranks_seen or '?'} rank(s) seen"
             + (f" of {debug.nranks}" if debug.nranks else "") + f" on {len(debug.hosts) or '?'} host(s)",
             f"network {net} (transport {debug.transport}" + (f"; devices {devices}" if devices else "") + ")"]
    if debug.socket_fallback:
        parts.append("SOCKET FALLBACK: inter-node traffic went over TCP sockets, not RDMA")
    if forced := {k: v for k, v in debug.env.items() if k in ("NCCL_ALGO", "NCCL_PROTO")}:
        parts.append("forced by environment: " + ", ".join(f"{k}={v}" for k, v in forced.items()))
    if debug.choices:
        parts.append("chosen: " + ", ".join(f"{c.algorithm}/{c.protocol} {c.min_bytes}..{c.max_bytes} B"
                                            for c in debug.choices))
    else:
        built = [w for w, ok in (("rings", debug.connected_rings), ("trees", debug.connected_trees)) if ok]
        parts.append("algorithms per size not in the log (set NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING); built: "
                     + (", ".join(built) or "nothing printed"))
    if expectation:
        named = dict.fromkeys(PLAN_ALGOS.findall(expectation))
        if debug.choices:
            unseen = [a for a in named if not any(s.startswith(a) for s in debug.algorithms)]
            parts.append(f"plan expected: {expectation}" + (f"; not chosen in this run: {', '.join(unseen)}"
                                                             if unseen else "; all of it chosen"))
        else:
            parts.append(f"plan expected: {expectation} (not comparable without TUNING lines)")
    return "; ".join(parts)


def _debug(path: Path) -> NcclDebug | None:
    """The NCCL INFO lines of an nccl-tests log (NCCL_DEBUG=INFO interleaves them), or a beside-it ``.debug.log``."""
    for candidate in (path.with_suffix(".debug.log"), path):
        if candidate.is_file() and candidate.suffix != ".json":
            try:
                return parse_nccl_debug_file(candidate)
            except ParseError:
                continue
    return None


def _gpu_gate(check: Check, results: Results) -> Measurement | None:
    """The runner's GPU pre-flight (nccl/preflight.json) judged against the plan; not applicable only where the
    Blueprint says the GPUs are emulated. A Blueprint from before the plan said so keeps the older rule."""
    if "gpus" not in check.args:
        why = _no_gpu(results) if check.args.get("requires") == "gpu" else None
        return Measurement(not_applicable=why) if why is not None else None
    if emulated(check):
        return judge_preflight(check, {})
    path = results.root / "nccl" / "preflight.json"
    if not os.path.lexists(path):
        return None  # hand-made results: no pre-flight to judge, the log is judged alone
    return judge_preflight(check, read_preflight(results.json_file(path), str(path)))


@rule("nccl.allreduce_busbw")
def allreduce_busbw(check: Check, results: Results) -> Measurement:
    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed
    if (gate := _gpu_gate(check, results)) is not None:
        return gate
    files = results.files("nccl", pattern="*.txt") + results.files("nccl", pattern="*.json")
    if not files:
        return missing("all_reduce_perf output", "nccl/<name>.txt or nccl/<name>.json")
    min_bytes = nccl_bytes(check.args.get("minbytes", "0"))
    details: list[Detail] = []
    series: list[Series] = []
    notes: list[str] = []
    violations: list[str] = []
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
        debug = _debug(path)
        violations += debug_violations(debug, check, path.name)
        if debug is not None:
            notes.append(debug_note(path.name, debug, check.args.get("algorithm_expectation")))
        if run.avg_busbw is not None:
            notes.append(f"{path.name}: footer 'Avg bus bandwidth' {run.avg_busbw:g} GB/s averages the whole "
                         f"sweep and is not the measure")
    for path in results.files("nccl", "collectives", pattern="*.txt"):  # the plan's other collectives
        other = [r.out_of_place.busbw for r in parse_nccl_file(path).large(min_bytes) if r.out_of_place is not None]
        violations += debug_violations(debug := _debug(path), check, f"collectives/{path.name}")
        notes.append(f"collectives/{path.name}: lowest out-of-place busbw "
                     + (f"{min(other):g} GB/s" if other else "none") + f" at sizes >= {min_bytes} B (information)")
    notes.append(f"on two nodes run with NCCL_ALGO={check.args.get('algo', 'Ring')}: tree busbw can exceed the wire")
    return Measurement(value=min(d.value or 0.0 for d in details), details=tuple(details), series=tuple(series),
                       notes=tuple(notes), violations=tuple(violations))


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
