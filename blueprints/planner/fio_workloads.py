"""The fio workloads acceptance runs on every GPU client at once, and where they may write.

- seq_read (1M sequential read, iodepth 32; 4 in the lab): aggregate read throughput, and jitter from its bandwidth log;
- seq_write (1M sequential write): aggregate write throughput;
- rand_read_4k (4k random read, iodepth 1): p99 completion latency;
- mixed: the design's mixed workload, randrw 70/30 with 4k-1M blocks, checksummed (verify=crc32c).

One job per GPU (each GPU's data loader reads on its own), each on its own scratch file
(``clustersmith-accept.<host>.<job>``) in a scratch directory; nothing else is written without ``--destructive``.
The throughput, jitter and mixed workloads run on the shared file system (CephFS's hot directory, the clouds'
managed Lustre, the user's external system), from every GPU node at once: they measure the storage system, not the
client. Where each GPU node owns an NVMe-oF namespace (Ceph designs: bare metal, the lab), the latency workload runs
on the node's tiered file system, on that namespace behind its dm-cache: device latency over the fabric, and the
cache's hit ratio. Where no node owns a block device (the clouds, external systems) it runs on the shared mount too.
Where FS-Cache is planned, a fifth workload, cache_read, reads the shared mount buffered, twice (the cache check).

Every workload reuses the same files, so the run's footprint is one file per job on every GPU node. On the shared
hot tier all nodes' files together are capped at half its usable capacity (issue 18: the working set stays within
half the tier's free capacity; an accepted cluster is empty); on a node's own namespace its files are capped at
half the namespace. ``plan`` shows the footprint with the time the design's write throughput needs to lay it out.
"""

from __future__ import annotations

from typing import NamedTuple

from blueprints.blueprint import (
    ComputePlan,
    FioFootprint,
    FioWorkload,
    Provenance,
    ScratchArea,
    ScratchFs,
    StoragePlan,
    Traced,
    traced,
)
from blueprints.blueprint.check_args import FioArgs
from blueprints.figures import counted
from blueprints.planner.context import PlanContext
from blueprints.units import Duration, Size

TIERED_MOUNT = "/mnt/clustersmith"  # where storage_tiering mounts the client's tiered file system
SCRATCH_NAME = ".clustersmith-accept"
SCRATCH_DIR = f"{TIERED_MOUNT}/{SCRATCH_NAME}"
LOG_AVG_MS = 500  # fio's default bwavgtime (field-numbers 2.1)
SEQ_DEPTH = 32
# The lab's sequential depth. A time-based run ends by waiting for every I/O still in flight, which counts in its
# runtime: 32 1M I/Os at the lab's emulated few MiB/s took 4.6 s (seq_read), 12-14 s (seq_write) and 3-5 s (mixed)
# past the 5 s measured (job_runtime of the clean-clone CI runs of 2026-12-06). 4 in flight drain in about 1 s.
LAB_SEQ_DEPTH = 4
SEQ_BS = "1M"
MIB = 1 << 20
SHARE_OF_TIER = 0.5  # issue 18: the acceptance working set stays within half the tier's free capacity
SMALLEST_FILE = SEQ_DEPTH * MIB  # a sequential job keeps SEQ_DEPTH 1M I/Os in flight inside its own file
CACHE_PASS_BOUND = 600  # seconds: a bound on one read pass of the cache check, not its expected length
# A read-only job lays its new files out in blocks of its write size (fio filesetup.c extend_file writes
# td->o.max_bs[DDIR_WRITE] at a time): the 4k reader's files are laid out 1M at a time (bs=4k,1M), not 4k.
LATENCY_PURPOSE = "4k random read completion latency on the node's own NVMe-oF namespace, behind its cache"


def _shape(ctx: PlanContext) -> tuple[int, int, Size, str]:
    """Measured seconds, ramp seconds, scratch file size per job, and why."""
    if ctx.is_lab:
        # the smallest file a sequential job allows: under TCG laying out 64 MiB took 60-75 s a workload; 5 s measured
        # gives the jitter check 10 bandwidth samples at fio's 500 ms average (it needs 2)
        return 5, 2, Size.parse("32MiB"), "lab: short runs on the smallest files (throughput is emulated)"
    return 60, 5, Size.parse("4GiB"), "choice: time_based runs loop over the file; 4GiB per job"


def _whole_mib(value: float) -> Size:
    """``value`` rounded down to whole MiB, written in binary units so that it reads back to the same bytes
    (Size.of writes decimal units to 6 significant figures: 64 MiB would read back as 67108900 bytes)."""
    mib = int(value) // MIB
    return Size.parse(f"{mib // 1024}GiB" if mib and mib % 1024 == 0 else f"{mib}MiB")


def _hot(storage: StoragePlan) -> Traced[Size]:
    return next(t.usable for t in storage.tiers if t.name == "hot")


class _Room(NamedTuple):
    """What one file may take under one cap, how that reads, and what the cap would need to fit the smallest file."""

    each: float
    what: str
    fits: str
    expected: str


def _rooms(compute: ComputePlan, storage: StoragePlan, choice: Size) -> list[_Room]:
    hot = _hot(storage)
    files = compute.nodes.value * compute.gpus_per_node
    rooms = [_Room(hot.value.value * SHARE_OF_TIER / files,
                   f"half the hot tier's {hot.value} usable / {counted(files, 'file')} (one per GPU)",
                   f"{counted(files, 'file')} x {choice} = {Size.of(files * choice.value)} <= half the hot tier's "
                   f"{hot.value} usable",
                   f"a hot tier of at least {Size.of(files * SMALLEST_FILE / SHARE_OF_TIER)} (a larger training set "
                   "or hot fraction)")]
    if storage.nvmeof is not None:
        ns, jobs = storage.nvmeof.namespace_size, compute.gpus_per_node
        rooms.append(_Room(ns.value.value * SHARE_OF_TIER / jobs,
                           f"half the node's own {ns.value} namespace / {counted(jobs, 'file')} (one per GPU)",
                           f"{counted(jobs, 'file')} x {choice} = {Size.of(jobs * choice.value)} <= half the node's "
                           f"{ns.value} namespace",
                           f"namespaces of at least {Size.of(jobs * SMALLEST_FILE / SHARE_OF_TIER)} (larger hot-tier "
                           "drives, or more targets for the GPU nodes)"))
    return rooms


def _file_size(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan, choice: Size, why: str) -> Traced[Size]:
    """The scratch file per job: the shape's choice, or less where every GPU node's files would take more than
    half the hot tier, or one node's more than half its own namespace."""
    spec = ["target.provider", *_hot(storage).derived_from.spec]
    if storage.nvmeof is not None:
        spec += [s for s in storage.nvmeof.namespace_size.derived_from.spec if s not in spec]
    rooms = _rooms(compute, storage, choice)
    tight = min(rooms, key=lambda r: r.each)
    if choice.value <= tight.each:
        return traced(choice, spec, "acceptance.fio_file_size", f"{why}; " + "; ".join(r.fits for r in rooms))
    capped = _whole_mib(tight.each)
    if capped.value < SMALLEST_FILE:
        raise ctx.infeasible("data.training_set",
                             f"acceptance writes one scratch file per GPU, each at least {SMALLEST_FILE // MIB}MiB "
                             f"({SEQ_DEPTH} x {SEQ_BS} in flight per job): {tight.what} = {Size.of(tight.each)} each "
                             f"is left; expected {tight.expected}")
    return traced(capped, spec, "acceptance.fio_file_size",
                  f"{tight.what} = {Size.of(tight.each)}, whole MiB {capped} (under the {choice} of {why})")


def plan_footprint(compute: ComputePlan, storage: StoragePlan, workload: FioWorkload) -> FioFootprint:
    """What every GPU node's scratch files take on the hot tier together, and the time to write them."""
    files = compute.nodes.value * workload.numjobs.value
    total = Size.of(files * workload.size.value.value)
    write = storage.write_throughput
    seconds = total.value / write.value.value
    return FioFootprint(
        files=files, per_file=workload.size.value,
        footprint=traced(total, workload.size.derived_from.spec, "acceptance.fio_footprint",
                         f"{counted(compute.nodes.value, 'GPU node')} x {counted(workload.numjobs.value, 'job')} x "
                         f"{workload.size.value}"),
        tier_usable=_hot(storage).value,
        fill_time=traced(Duration.of(seconds), [*workload.size.derived_from.spec, *write.derived_from.spec],
                         "acceptance.fio_fill_time", f"{total} / the design's {write.value} write"),
    )


def _cache_workload(storage: StoragePlan, common: dict[str, object], jobs: Traced[int]) -> FioWorkload | None:
    """The FS-Cache check's reads: buffered (the page cache dropped before each pass), one whole pass over files that
    fit half the cache, run twice; the second pass must be served by the cache."""
    fscache = storage.shared.fscache
    if fscache is None:
        return None
    size = common["size"]
    assert isinstance(size, Traced)
    room = fscache.size.value.value * SHARE_OF_TIER / jobs.value
    each = _whole_mib(min(size.value.value, room))
    if each.value < SMALLEST_FILE:
        return None
    spec = list(dict.fromkeys([*size.derived_from.spec, *fscache.size.derived_from.spec]))
    cache_size = traced(each, spec, "acceptance.cache_files_fit_half_the_cache",
                        f"min(the workloads' {size.value}, half the node's {fscache.size.value} FS-Cache / "
                        f"{counted(jobs.value, 'file')} = {Size.of(room)}), whole MiB = {each}")
    return FioWorkload(name="cache_read", purpose="FS-Cache: a first read pass fills the cache, a second must be "
                       "served by it (the kernel's FS-Cache counters read before and after each pass)", rw="read",
                       bs=SEQ_BS, iodepth=traced(1, ["data.hot_fraction"], "acceptance.cache_read_depth",
                                                 "buffered reads: the page cache issues them, one job per GPU"),
                       numjobs=jobs, size=cache_size, ramp_s=0, log_avg_ms=LOG_AVG_MS, on="shared", direct=False,
                       time_based=False,
                       runtime_s=traced(CACHE_PASS_BOUND, ["target.provider"], "acceptance.cache_pass_bound",
                                        f"one pass reads its files and stops; {CACHE_PASS_BOUND} s bounds a pass "
                                        "that hangs"))


def plan_workloads(ctx: PlanContext, compute: ComputePlan, storage: StoragePlan) -> tuple[FioWorkload, ...]:
    runtime, ramp, size, why = _shape(ctx)
    shared: ScratchFs = "shared"
    own: ScratchFs = "tier" if storage.nvmeof is not None else "shared"  # the node's own namespace, where it has one
    jobs = traced(compute.gpus_per_node, ["compute.accelerator", "compute.gpus"], "acceptance.fio_job_per_gpu",
                  f"one reader per GPU: {counted(compute.gpus_per_node, 'GPU')} per node")
    spec = ["target.provider"]
    runtime_t = traced(runtime, spec, "acceptance.fio_runtime", why)
    size_t = _file_size(ctx, compute, storage, size, why)
    depth = traced(LAB_SEQ_DEPTH, ["target.provider", "performance.storage.read_throughput"],
                   "acceptance.fio_queue_depth",
                   f"lab: {LAB_SEQ_DEPTH} outstanding 1M I/Os per job (throughput is emulated): a time-based run "
                   f"waits for every I/O in flight at its end, and {SEQ_DEPTH} MiB in flight took the lab 3-14 s "
                   "to drain") if ctx.is_lab else \
        traced(SEQ_DEPTH, ["performance.storage.read_throughput"], "acceptance.fio_queue_depth",
               f"{SEQ_DEPTH} outstanding 1M I/Os per job keep a streaming client busy")
    lat_depth = traced(1, ["performance.storage.latency_p99"], "acceptance.fio_latency_depth",
                       "one I/O at a time: completion latency without queueing")
    common = {"numjobs": jobs, "size": size_t, "runtime_s": runtime_t, "ramp_s": ramp, "log_avg_ms": LOG_AVG_MS}
    workloads = [
        FioWorkload(name="seq_read", purpose="aggregate sequential read throughput and its jitter", rw="read",
                    bs=SEQ_BS, iodepth=depth, on=shared, **common),
    ]
    if ctx.req.performance.storage.write_throughput is not None:
        workloads.append(FioWorkload(name="seq_write", purpose="aggregate sequential write throughput", rw="write",
                                     bs=SEQ_BS, iodepth=depth, on=shared, **common))
    workloads += [
        FioWorkload(name="rand_read_4k", purpose=LATENCY_PURPOSE if storage.nvmeof is not None else
                    "4k random read completion latency on the shared file system", rw="randread", bs="4k",
                    layout_bs=SEQ_BS, iodepth=lat_depth, on=own, **common),
        FioWorkload(name="mixed", purpose="the design's mixed workload, data verified", rw="randrw",
                    bs="4k-1M", rwmixread=70, iodepth=depth, verify="crc32c", on=shared, **common),
    ]
    cache = _cache_workload(storage, common, jobs)
    return tuple(workloads) + ((cache,) if cache is not None else ())


def plan_scratch(storage: StoragePlan) -> tuple[ScratchArea, ...]:
    tier = ScratchArea(kind="directory", path=SCRATCH_DIR, mount=TIERED_MOUNT, role="gpu_client", fs="tier",
                       derived_from=Provenance(spec=("data.training_set",), rule="acceptance.scratch_on_tiered_fs",
                                               formula=f"acceptance writes only its own files in {SCRATCH_DIR}"))
    fs = storage.shared
    path = fs.scratch_dir
    where = (f"CephFS's hot directory, laid out on pool {next(p.name for p in storage.ceph.pools if p.tier == 'hot')}"
             if storage.ceph is not None else fs.described)
    shared = ScratchArea(kind="directory", path=path, mount=fs.mount_point, role="gpu_client", fs="shared",
                         derived_from=Provenance(spec=tuple(fs.engine.derived_from.spec),
                                                 rule="acceptance.scratch_on_shared_fs",
                                                 formula=f"acceptance writes only its own files in {path}: {where}"))
    return (shared, tier) if storage.nvmeof is not None else (shared,)


def workload_args(w: FioWorkload) -> FioArgs:
    """The check arguments that name a workload and repeat its shape (for `clustersmith explain`), with the interval
    of its bandwidth log (fio's bwavgtime, ``log_avg_msec`` in the job file) a per-interval series is summed over."""
    ranged = "-" in w.bs
    return FioArgs(workload=w.name, rw=w.rw, bs=None if ranged else w.bs, bsrange=w.bs if ranged else None,
                   iodepth=w.iodepth.value, numjobs=w.numjobs.value, direct=w.direct, ioengine=w.ioengine,
                   rwmixread=w.rwmixread, verify=w.verify, bwavgtime=Duration.of(w.log_avg_ms / 1000))
