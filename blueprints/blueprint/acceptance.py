"""The acceptance plan: the checks, the fio workloads, where they may write and what they take."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from blueprints.blueprint.check_args import CheckArgs, Tool
from blueprints.hosts import HostRole
from blueprints.model import Frozen
from blueprints.traced import Provenance, Traced
from blueprints.units import Duration, Size


class Prediction(Frozen):
    """What the built cluster should measure for a check, and how far below it a measure may come."""

    figure: Traced[float] = Field(description="The predicted figure, in the check's unit (the report prints measured "
                                              "/ predicted)")
    floor: Traced[float] = Field(description="A measure below this share of the figure is a finding")
    gate: Traced[bool] = Field(description="Whether a measure below the floor fails the check (else information)")


class Check(Frozen):
    id: str = Field(description="Stable id, e.g. storage.read_throughput")
    tool: Tool
    metric: str = Field(description="What is measured")
    op: Literal[">=", "<=", "==", "<", ">"]
    threshold: float = Field(description="In the unit below")
    unit: str
    severity: Literal["error", "warning", "info"]
    scope: Literal["cluster", "host", "rail"] = Field(description="Where the measure is taken")
    args: CheckArgs = Field(description="Tool arguments from the plan, typed per tool family (check_args)")
    derived_from: Provenance
    predicted: Prediction | None = Field(
        default=None, description="What the built cluster should measure, from the plan, and the floor below which a "
                                  "measure is a finding; None where the plan predicts nothing: the lab (emulated), "
                                  "or a check no model predicts yet")


ScratchFs = Literal["shared", "tier"]


# The one workload that reads through the page cache: a file opened for direct I/O bypasses FS-Cache (and flushes its
# cached copy): RHEL 7 Storage Administration Guide 10.3.2, "Cache Limitations with NFS". The cache check reads
# buffered; every other workload measures the storage with O_DIRECT.
BUFFERED_WORKLOAD = "cache_read"


class FioWorkload(Frozen):
    """One fio job run on every GPU client at once; rendered as ``acceptance/fio/<name>.fio``."""

    name: str = Field(description="Job name and file stem, e.g. seq_read; fio checks name it in args.workload")
    purpose: str = Field(description="What the workload measures")
    rw: Literal["read", "write", "randread", "randwrite", "randrw"]
    bs: str = Field(description="Block size (4k, 1M) or a range lo-hi (bsrange)")
    layout_bs: str | None = Field(default=None, description="Write block size of a read-only job, where it is not bs: "
                                  "the block fio lays the job's new files out with (fio writes a new file in blocks "
                                  "of the job's largest write size, filesetup.c extend_file), rendered bs=<bs>,<this>")
    rwmixread: int | None = Field(default=None, description="Read share in percent for randrw")
    iodepth: Traced[int] = Field(description="Outstanding I/Os per job")
    numjobs: Traced[int] = Field(description="Jobs per client, each on its own scratch file")
    size: Traced[Size] = Field(description="Scratch file size per job")
    runtime_s: Traced[int] = Field(description="Measured seconds (time_based), after ramp_s")
    ramp_s: int = Field(description="Seconds run before measuring starts")
    direct: bool = Field(default=True, description="O_DIRECT: bypass the page cache")
    time_based: bool = Field(default=True, description="Loop over the files for runtime_s; False: one pass over them "
                                                       "(runtime_s bounds it)")
    ioengine: Literal["libaio"] = "libaio"
    verify: Literal["crc32c"] | None = Field(default=None, description="Checksum written data and read it back")
    log_avg_ms: int = Field(description="Interval of the per-interval bandwidth log (ms)")
    on: ScratchFs = Field(default="tier", description="The file system it runs on: shared (the storage system, "
                          "every GPU node at once) or tier (each node's own tiered file system)")

    @model_validator(mode="after")
    def _direct_but_the_cache_check(self) -> FioWorkload:
        """Every workload measures the storage, not the client's page cache: O_DIRECT, but for the FS-Cache check,
        which must read buffered (FS-Cache serves only buffered reads) and must not be O_DIRECT."""
        if self.direct == (self.name == BUFFERED_WORKLOAD):
            raise ValueError(f"workload {self.name}: direct={int(self.direct)}; expected direct="
                             f"{int(self.name != BUFFERED_WORKLOAD)} (O_DIRECT for every workload but "
                             f"{BUFFERED_WORKLOAD}, the FS-Cache check, which FS-Cache serves only buffered)")
        if self.layout_bs is not None and (self.rw not in ("read", "randread") or "-" in self.bs):
            raise ValueError(f"workload {self.name}: layout_bs {self.layout_bs} with rw={self.rw}, bs={self.bs}; "
                             "expected it only on a read-only job of one block size (its writes are the layout)")
        return self


class ScratchArea(Frozen):
    """Where acceptance may write without --destructive: its own files in a directory on the shared file system
    or on the node's tiered file system, or a raw namespace the plan reserves as scratch. Nothing else is written
    unless asked."""

    kind: Literal["directory", "namespace"]
    path: str = Field(description="The directory (kind directory) or the subsystem NQN (kind namespace)")
    mount: str | None = Field(default=None, description="Mount point the directory must be on")
    fs: ScratchFs | None = Field(default=None, description="Directory: the file system it is on, as workloads name it")
    role: HostRole = Field(description="Hosts that hold it")
    derived_from: Provenance


class FioFootprint(Frozen):
    """What the fio workloads' scratch files take together (every workload reuses the same files)."""

    files: int = Field(description="Scratch files: one per job on every GPU node")
    per_file: Size
    footprint: Traced[Size] = Field(description="files x per_file, capped at half the hot tier's usable capacity")
    tier_usable: Size = Field(description="Usable capacity of the hot tier the cap is taken from")
    fill_time: Traced[Duration] = Field(description="footprint / the design's write throughput")


class AcceptancePlan(Frozen):
    checks: tuple[Check, ...]
    workloads: tuple[FioWorkload, ...] = Field(default=(), description="fio jobs the fio checks run")
    scratch: tuple[ScratchArea, ...] = Field(default=(), description="Where write tests may write")
    footprint: FioFootprint | None = Field(default=None, description="The fio working set on the hot tier")

    @model_validator(mode="after")
    def _workloads_have_scratch(self) -> AcceptancePlan:
        have = {a.fs for a in self.scratch if a.kind == "directory"}
        if lost := sorted({w.name for w in self.workloads if w.on not in have}):
            raise ValueError(f"workloads {', '.join(lost)} run on a file system with no scratch directory")
        return self

    def scratch_dir(self, on: ScratchFs) -> ScratchArea:
        """The scratch directory of the file system ``on``."""
        return next(a for a in self.scratch if a.kind == "directory" and a.fs == on)
