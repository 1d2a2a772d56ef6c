"""Network rules: NCCL all_reduce busbw at the large sizes, RDMA write bandwidth per rail against line rate.

NCCL judges a run only when it covers the plan: as many ranks as the Blueprint's GPU nodes x GPUs per node, on as
many nodes, a complete sweep (rows up to the plan's ``maxbytes`` and the footer). Every run of every log in
``nccl/`` is read on its own; any run nccl-tests reported as wrong (``#wrong``, out-of-bounds values) fails the
check. RDMA judges every GPU node on every compute rail (paired with another GPU node) and on every storage NIC
(paired with a storage target); perftest's server side is not a measurement.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from blueprints.blueprint import Check
from blueprints.blueprint.check_args import NcclArgs, PerftestArgs, args_as
from blueprints.figures import plain
from blueprints.units import Size
from validators.checks import missing, rule, setup_failure
from validators.coverage import Planned, count, cover
from validators.errors import ParseError, parse_error
from validators.nccl import NcclRun, parse_nccl_file
from validators.nccl_debug import NcclDebug, parse_nccl_debug_file
from validators.nccl_run import debug_missing, debug_violations, emulated, judge_preflight, nccl_size, read_preflight
from validators.outcome import Coverage, Detail, Measurement, Reference, Series
from validators.rdma import BwRow, PerftestBw, parse_perftest_bw_file
from validators.results import Results

PLAN_ALGOS = re.compile(r"NVLSTree|NVLS|CollNet|Tree|Ring|PAT")  # names in nccl.algorithm_expectation
NCCL_SIZE = re.compile(r"^(?P<n>\d+)(?P<unit>[KMGT]?)$")  # nccl-tests' -b/-e: K, M, G are powers of 1024


def nccl_bytes(text: str) -> int:
    m = NCCL_SIZE.match(text.strip().upper())
    if m is None:
        raise parse_error("blueprint", "a size", "args.minbytes", "expected a size like 2G", text)
    return int(m.group("n")) * int(1024 ** " KMGT".index(m.group("unit") or " "))


ALLREDUCE_TESTS = (None, "all_reduce_perf")  # a log without the "Collective test starting" line is all_reduce


def _gpus(results: Results, planned: Planned) -> Measurement | None:
    """The pre-flight's GPU count per node (host-facts.json) against the plan: not applicable only where the
    Blueprint itself says the GPUs are emulated (the lab); elsewhere a node short of its GPUs fails, by name."""
    facts = results.host_facts()
    counted = {h: int(f["gpus"]) for h, f in facts.items() if "gpus" in f and h in planned.gpu_nodes}
    if not counted:
        return None
    if planned.gpus_emulated and all(n == 0 for n in counted.values()):
        return Measurement(not_applicable=f"no GPU on {', '.join(sorted(counted))} (the NVIDIA driver lists none in "
                                          "/proc/driver/nvidia/gpus) and the Blueprint's lab emulates them; NCCL "
                                          "needs one per rank")
    short = [f"{h}: {n} GPU(s), planned {planned.gpus_per_node}" for h, n in sorted(counted.items())
             if n < planned.gpus_per_node]
    if short:
        return Measurement(failed_runs=("GPU pre-flight: " + "; ".join(short),),
                           coverage=(count("GPUs", sum(min(n, planned.gpus_per_node) for n in counted.values()),
                                           planned.ranks).model_copy(update={"gate": False}),))
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


def algorithm_note(debugs: list[NcclDebug], nodes: int) -> str | None:
    """The algorithm(s) the all_reduce runs used, as NCCL's debug output says (forced by NCCL_ALGO, else chosen per
    size in its TUNING lines); None where it says neither: nothing sets the algorithm, so nothing is claimed. On
    ``nodes`` 2, where Tree ran, its busbw can exceed the wire."""
    forced = sorted({d.env["NCCL_ALGO"] for d in debugs if "NCCL_ALGO" in d.env})
    chosen = sorted({a for d in debugs if "NCCL_ALGO" not in d.env for a in d.algorithms})
    if not forced and not chosen:
        return None
    said = ([f"NCCL_ALGO={', '.join(forced)} (set in the environment)"] if forced else []) + \
        ([f"{', '.join(chosen)} (NCCL's choice per size)"] if chosen else [])
    tree = any(a.startswith("Tree") for a in forced + chosen)
    return f"all_reduce ran with {'; '.join(said)}, from NCCL's debug output" + (
        ": on two nodes Tree's busbw can exceed the wire" if tree and nodes == 2 else "")


def _debug(path: Path) -> NcclDebug | None:
    """The NCCL INFO lines of an nccl-tests log (NCCL_DEBUG=INFO interleaves them), or a beside-it ``.debug.log``."""
    for candidate in (path.with_suffix(".debug.log"), path):
        if candidate.is_file() and candidate.suffix != ".json":
            try:
                return parse_nccl_debug_file(candidate)
            except ParseError:
                continue
    return None


def _run_coverage(run: NcclRun, debug: NcclDebug | None, planned: Planned) -> tuple[Coverage, Coverage]:
    """Ranks and nodes the run says it had (its device report, else NCCL's INFO lines) against the plan."""
    ranks = run.ranks or (debug.nranks if debug is not None else None) or 0
    nodes = len(run.hosts) or (len(debug.hosts) if debug is not None else 0)
    return count("ranks", ranks, planned.ranks), count("nodes", nodes, len(planned.gpu_nodes))


def _incomplete(run: NcclRun, where: str, min_bytes: int, max_size: Size) -> str | None:
    """Why a run's sweep is not whole: rows missing up to the plan's largest size, or no footer."""
    largest = max(r.size for r in run.rows)
    max_bytes, max_text = int(max_size.value), nccl_size(max_size)
    if largest < max_bytes:
        return (f"{where} stops at {largest} B, short of the plan's {max_text} ({max_bytes} B)"
                + ("" if run.footer else ", with no footer ('# Avg bus bandwidth'): the sweep was cut off")
                + (f"; busbw is read at sizes >= {min_bytes} B" if largest < min_bytes else ""))
    if not run.footer:
        return f"{where} has no footer ('# Avg bus bandwidth'): the sweep did not finish"
    return None


def _gpu_gate(check: Check, results: Results, planned: Planned) -> Measurement | None:
    """The runner's GPU pre-flight (nccl/preflight.json) judged against the plan; not applicable only where the
    Blueprint says the GPUs are emulated. Without a pre-flight (hand-made results), or for a Blueprint from before
    the plan said so (no ``gpus`` argument), host-facts.json's counts are judged."""
    args = args_as(check.args, NcclArgs)
    if args.gpus is None:
        return _gpus(results, planned) if args.requires == "gpu" else None
    if emulated(check):
        return judge_preflight(check, {})
    path = results.root / "nccl" / "preflight.json"
    if not os.path.lexists(path):  # hand-made results: the facts step's counts where there are some
        return _gpus(results, planned)
    return judge_preflight(check, read_preflight(results.json_file(path), str(path)))


@rule("nccl.allreduce_busbw",
      measures="nccl-tests `all_reduce_perf` over every GPU node at once, one rank per GPU, `-b minbytes -e maxbytes "
               "-f 2`: the lowest out-of-place busbw at sizes >= `minbytes` (never the footer's whole-sweep average), "
               "the lowest of every run; the plan's other collectives (`args.tests`) are judged for errors and "
               "completeness, their busbw shown",
      passes="the planner's figure: compute rails x rail speed x the catalog's busbw per NIC (46 GB/s per 400G NIC, "
             "nccl-tests#290); besides, every node must hold its planned GPUs (the pre-flight), and NCCL's debug "
             "log must show the planned transport (`args.transport`, never NET/Socket) and a communicator of the "
             "planned ranks on the planned nodes; `#wrong` or out-of-bounds values fail. Not applicable where the "
             "Blueprint's GPUs are emulated (the lab: the runner proves the MPI launch instead)",
      setup_error="no host ran it (the runner's record, a failed launch proof in the lab included) or the GPU "
                  "pre-flight matched no host; no `nccl/<name>.txt` or `.json`; a sweep that stops short of "
                  "`maxbytes` or has no footer; no `all_reduce_perf` run among the logs; a run with fewer ranks or "
                  "nodes than planned (its device report, else NCCL's INFO lines); a log without NCCL INFO lines, "
                  "or whose INFO lines name no network between nodes or no communicator size, where nothing else "
                  "failed (the transport or the rank count cannot be confirmed: the message says to rerun with "
                  "`NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET`)")
def allreduce_busbw(check: Check, results: Results, planned: Planned) -> Measurement:
    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed
    if (gate := _gpu_gate(check, results, planned)) is not None:
        return gate
    files = results.files("nccl", pattern="*.txt") + [p for p in results.files("nccl", pattern="*.json")
                                                      if p.name != "preflight.json"]  # the runner's GPU counts
    if not files:
        return missing("all_reduce_perf output", "nccl/<name>.txt or nccl/<name>.json").model_copy(
            update={"coverage": (count("ranks", 0, planned.ranks),)})
    args = args_as(check.args, NcclArgs)
    min_bytes, max_size = int(args.minbytes.value), args.maxbytes
    details: list[Detail] = []
    debugs: list[NcclDebug] = []
    series: list[Series] = []
    notes: list[str] = []
    failures: list[str] = []
    incomplete: list[str] = []
    coverage: list[Coverage] = []
    off_plan: list[str] = []  # NCCL off the planned transport: a failure of the cluster
    violations: list[str] = []  # a run short of the plan
    unconfirmed: list[str] = []
    for path in files:
        debug = _debug(path)
        off, short = debug_violations(debug, check, path.name)
        off_plan += off
        violations += short
        unconfirmed += [m] if (m := debug_missing(debug, check, path.name)) is not None else []
        if debug is not None:
            notes.append(debug_note(path.name, debug, args.algorithm_expectation))
            debugs.append(debug)
        for run in parse_nccl_file(path).runs:
            where = f"{path.name} {run.name}" if run.test or run.first_line > 1 else path.name
            failures += [f"{where}: {f}" for f in run.failures()]
            if (why := _incomplete(run, where, min_bytes, max_size)) is not None:
                incomplete.append(why)
            if run.test not in ALLREDUCE_TESTS:
                notes.append(f"{where}: judged for errors and completeness only (the check measures all_reduce)")
                continue
            ranks, nodes = _run_coverage(run, debug, planned)
            coverage += [ranks, nodes]
            series += _busbw_series(run, where)
            large = [r for r in run.large(min_bytes) if r.out_of_place is not None]
            if not large:
                continue
            worst = min(large, key=lambda r: r.out_of_place.busbw if r.out_of_place else 0.0)
            busbw = worst.out_of_place.busbw if worst.out_of_place else 0.0
            details.append(Detail(where=where, value=busbw, unit="GB/s",
                                  note=f"lowest out-of-place busbw over {len(large)} size(s) >= {min_bytes} B, "
                                       f"at {worst.size} B; {ranks.seen} rank(s) on {nodes.seen} node(s)"))
            if run.avg_busbw is not None:
                notes.append(f"{where}: footer 'Avg bus bandwidth' {plain(run.avg_busbw)} GB/s averages the whole "
                             f"sweep and is not the measure")
    for path in results.files("nccl", "collectives", pattern="*.txt"):  # the plan's other collectives, one per file
        debug = _debug(path)
        off, short = debug_violations(debug, check, f"collectives/{path.name}")
        off_plan += off
        violations += short
        unconfirmed += [m] if (m := debug_missing(debug, check, f"collectives/{path.name}")) is not None else []
        for run in parse_nccl_file(path).runs:
            where = f"collectives/{path.name}" + (f" {run.name}" if run.test or run.first_line > 1 else "")
            failures += [f"{where}: {f}" for f in run.failures()]
            if (why := _incomplete(run, where, min_bytes, max_size)) is not None:
                incomplete.append(why)
            other = [r.out_of_place.busbw for r in run.large(min_bytes) if r.out_of_place is not None]
            notes.append(f"{where}: lowest out-of-place busbw " + (f"{plain(min(other))} GB/s" if other else "none")
                         + f" at sizes >= {min_bytes} B (information)")
    if (used := algorithm_note(debugs, args.nodes)) is not None:
        notes.append(used)
    lines = (Reference(kind="busbw", y=check.threshold, label=f"{check.op} {plain(check.threshold)} {check.unit}"),) \
        if check.unit == "GB/s" else ()
    judged = Measurement(value=min((d.value or 0.0 for d in details), default=None), details=tuple(details),
                         series=tuple(series), references=lines, notes=tuple(notes), failed_runs=tuple(failures),
                         failures=tuple(off_plan), violations=tuple(violations),
                         coverage=_worst(coverage, planned))
    if incomplete:
        return judged.model_copy(update={"setup_error": "; ".join(incomplete + unconfirmed)})
    if unconfirmed and not (off_plan or violations):  # what NCCL's lines show is reported; the rest awaits evidence
        return judged.model_copy(update={"setup_error": "; ".join(unconfirmed)})
    if unconfirmed:
        judged = judged.model_copy(update={"notes": (*judged.notes, *unconfirmed)})
    if not details:
        return judged.model_copy(update={"setup_error": "no all_reduce_perf run in nccl/ (only "
                                         + ", ".join(sorted({r.test or "?" for p in files
                                                             for r in parse_nccl_file(p).runs})) + ")"})
    return judged


def _worst(coverage: list[Coverage], planned: Planned) -> tuple[Coverage, ...]:
    """Every all_reduce run must cover the plan: show the smallest of each unit, which judges them all."""
    out = []
    for what, total in (("ranks", planned.ranks), ("nodes", len(planned.gpu_nodes))):
        found = [c for c in coverage if c.what == what]
        if found:
            out.append(min(found, key=lambda c: (c.seen == c.planned, c.seen)))
        else:
            out.append(count(what, 0, total))
    return tuple(out)


# What rdma.write_bw runs (validators/run/perftest.py): ib_write_bw, one direction, one work request a post.
PLANNED_TEST = ("RDMA_Write", "BW", False, 1)
# A pair's average above its NIC's line rate is not a measurement of the wire: no margin over the signalling rate, as a
# link's payload never reaches it (200 Gb/s HDR: ~194 Gb/s achieved, field-numbers 3.1 and 8), while a loopback on
# one adapter does (superbenchmark's ib_loopback: 201.8 Gb/s on a 200 Gb/s HDR port, tests/fixtures/rdma/README.md).
LINE_RATE_MARGIN = 1.0


def _not_the_planned_test(out: PerftestBw, row: BwRow | None, size: int) -> str | None:
    """What a client's output ran where it is not ib_write_bw one way without a post list at the planned message size
    (``row``: its row of that size, if any; None where it is the planned test)."""
    b = out.banner
    if (b.verb, b.kind, b.bidirectional, b.post_list) != PLANNED_TEST:
        return f"ran {b.describe()}, not the planned RDMA_Write BW (one direction): not judged"
    if row is None:
        sizes = sorted({r.bytes for r in out.rows})
        shown = f"{sizes[0]}-{sizes[-1]} B" if len(sizes) > 1 else f"{sizes[0]} B"
        return f"measured {shown} messages, none of the planned {size} B (-s {size}): not judged"
    return None


def _planned_row(out: PerftestBw, size: int) -> BwRow | None:
    return next((r for r in out.rows if r.bytes == size), None)


def _above_line_rate(row: BwRow, gbit: float | None) -> str | None:
    if gbit is None or row.average_gbit <= gbit * LINE_RATE_MARGIN:
        return None
    return (f"{plain(row.average_gbit)} Gb/s is more than the wire can carry ({plain(gbit)} Gb/s planned for this "
            "NIC): wrong test, wrong file, or a loopback; not judged")


@rule("rdma.write_bw",
      measures="`ib_write_bw` average bandwidth at the planned message size (64 KiB messages, 2 QPs, 10 s), read "
               "on the client side of each "
               "pair: every GPU node on every compute rail (rail i against another GPU node's rail i) and on every "
               "storage NIC (against a storage target's NIC); the slowest measurement counts",
      passes="the planner's line-rate share: the catalog NIC's RDMA pass fraction of the compute rail speed (the NGC "
             "multinode pass mark); a pair that perftest reports failed fails the check (each failed pair is "
             "measured once more first)",
      setup_error="a pair the runner could not run (its record); no client output in "
                  "`ib_write_bw/rail<i>/<client>@<server>.txt`; a GPU node missing on a compute rail or storage NIC, "
                  "a host the Blueprint does not name, or one measured twice (server output is noted, never counted); "
                  "a client output of another test (read, send, bidirectional, post list: the banner's title), "
                  "without a row of the planned message size (`args.size`), or whose average there is above its NIC's "
                  "planned line rate, each named and not counted")
def write_bw(check: Check, results: Results, planned: Planned) -> Measurement:
    """Every GPU node on both fabrics: ``ib_write_bw/rail<i>/<client>@<server>.txt``, the client side of one pair.

    A pair of two GPU nodes measures both nodes' rail i (the compute fabric: the server's NIC carries what the
    client sends); a pair with a storage target measures the GPU node's storage NIC i (the storage fabric). A file
    named ``<host>.txt`` (a hand-made run, peer unnamed) is a compute-rail measurement of that host."""
    compute = [f"rail{i} {h}" for i in range(planned.rails) for h in planned.gpu_nodes]
    storage = [f"rail{i} {h}" for i in planned.storage_rails for h in planned.gpu_nodes] \
        if planned.storage_targets else []

    def coverage(compute_seen: list[str], storage_seen: list[str]) -> tuple[Coverage, ...]:
        return (cover("compute rail measurements", compute_seen, compute),) + \
            ((cover("storage rail measurements", storage_seen, storage),) if storage else ())

    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed.model_copy(update={"coverage": coverage([], [])})
    rails = sorted(p.name for p in (results.root / "ib_write_bw").glob("rail*") if p.is_dir()) \
        if (results.root / "ib_write_bw").is_dir() else []
    details, failures, servers = [], [], []
    clients: list[str] = []
    peers: list[str] = []  # GPU nodes measured as the server side of a compute pair
    storage_seen: list[str] = []
    warned: list[str] = []
    refused: list[str] = []  # client outputs that are not a measurement of the planned test on the wire
    size = int(args_as(check.args, PerftestArgs).size.value)
    for rail in rails:
        for path in results.files("ib_write_bw", rail, pattern="*.txt"):
            out = parse_perftest_bw_file(path)
            warned += [f"{rail}/{path.name}: perftest warned: {w}" for w in out.warnings[:1]]
            if out.server:
                servers.append(f"{rail}/{path.name}")
                continue
            client, _, server = path.stem.partition("@")
            to_storage = bool(server) and server in planned.storage_targets
            row = _planned_row(out, size)
            why = out.rows and (_not_the_planned_test(out, row, size) or (row is not None and _above_line_rate(
                row, planned.storage_nic_gbit if to_storage else planned.rail_gbit)))
            if why:
                refused.append(f"{rail}/{path.name}: {why}")
                continue
            if to_storage:
                storage_seen.append(f"{rail} {client}")
            else:
                clients.append(f"{rail} {client}")
                if server:
                    peers.append(f"{rail} {server}")
            if out.errors:
                failures.append(f"{rail}/{path.name}: " + "; ".join(out.errors))
            if row is None:
                continue
            details.append(Detail(where=f"{rail} {path.stem}", value=row.average_gbit, unit="Gb/s",
                                  note=f"{out.banner.device or '?'}, {row.bytes} B messages, "
                                       f"{out.banner.qps or '?'} QP(s)"))
    compute_seen = clients + sorted(set(peers) - set(clients))
    notes = ["the slowest rail counts: every rail must reach the pass mark"]
    if servers:
        notes.append(f"perftest server output, not a measurement (the client side measures): {', '.join(servers)}")
    notes += warned  # CPU frequency scaling on: the figure stands, the host's setting is worth a look
    if not details and not failures and not refused:
        return missing("ib_write_bw client output", "ib_write_bw/rail<i>/<client>@<server>.txt").model_copy(
            update={"coverage": coverage(compute_seen, storage_seen), "notes": tuple(notes)})
    return Measurement(value=min((d.value or 0.0 for d in details), default=None), details=tuple(details),
                       notes=tuple(notes), coverage=coverage(compute_seen, storage_seen),
                       failed_runs=tuple(failures), setup_error="; ".join(refused) or None)
