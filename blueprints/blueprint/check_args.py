"""The arguments a check hands its tool, one typed model per tool family, each default defined once here.

A check's ``args`` is one of these models, told apart by ``kind`` (written into blueprint.yaml and
acceptance/plan.yaml): the planner builds them, the runner turns them into command lines, the rules read them. A
check whose arguments are of another tool's family fails validation. Values are the project's units (sizes,
durations), ints for counts and Literals for enums; a field left at None is not written.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    model_serializer,
)

from blueprints.model import Frozen
from blueprints.units import Duration, Size

# The tools a check runs, and the family of arguments each takes: defined side by side, once.
Tool = Literal["fio", "nccl", "ib_write_bw", "ib_read_lat", "nvme", "qos", "prometheus", "ceph"]
FAMILY: dict[Tool, str] = {"fio": "fio", "nccl": "nccl", "ib_write_bw": "perftest", "ib_read_lat": "perftest",
                           "nvme": "nvme", "qos": "qos", "prometheus": "prometheus", "ceph": "ceph"}
assert set(FAMILY) == set(get_args(Tool)), "every tool has its argument family"


class _Args(Frozen):
    """The project's frozen model, writing only what the plan set."""

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """None and empty fields are not written: the YAML holds what the plan set."""
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if v is not None and v != [] and v != ()}


Counter = tuple[str, str]  # a line of /proc/fs/fscache/stats and a key on it, e.g. ("IO", "rd")
# a counter as the arguments write it, LINE:KEY (IO:rd)
CounterName = Annotated[str, Field(pattern=r"^[^:,\s]+:[^:,\s]+$")]


class CounterSet(_Args):
    """One kernel range's FS-Cache counters of a hit (``hits``) and of a miss (``misses``), written LINE:KEY."""

    kernels: str = Field(description="The kernels that count by these (FsCacheCounters.kernels)")
    hits: tuple[CounterName, ...] = Field(min_length=1, description="Counters (LINE:KEY) that count a hit")
    misses: tuple[CounterName, ...] = Field(min_length=1, description="Counters (LINE:KEY) that count a miss")

    @property
    def hit_counters(self) -> tuple[Counter, ...]:
        return tuple(_counter(c) for c in self.hits)

    @property
    def miss_counters(self) -> tuple[Counter, ...]:
        return tuple(_counter(c) for c in self.misses)

    @property
    def formula(self) -> str:
        return ratio_formula(self.hit_counters, self.miss_counters)


class FioArgs(_Args):
    """A fio check: the workload it judges (acceptance/fio/<workload>.fio), its shape repeated for `explain`, and
    where it measured."""

    kind: Literal["fio"] = "fio"
    workload: str = Field(description="The workload's name (FioWorkload.name)")
    rw: Literal["read", "write", "randread", "randwrite", "randrw"]
    bs: str | None = Field(default=None, description="Block size, where one")
    bsrange: str | None = Field(default=None, description="Block size range lo-hi, where one")
    iodepth: int
    numjobs: int
    direct: bool
    ioengine: Literal["libaio"] = "libaio"
    rwmixread: int | None = Field(default=None, description="Read share in percent for randrw")
    verify: Literal["crc32c"] | None = None
    bwavgtime: Duration = Field(default=Duration.parse("500ms"),
                                description="Interval of the bandwidth log its series is summed over (fio's "
                                            "bwavgtime, log_avg_msec; fio's default 500 ms, field-numbers 2.1)")
    passes: int | None = Field(default=None, description="Read passes over the files (the FS-Cache check: 2)")
    counters: tuple[CounterSet, ...] = Field(default=(), description="The FS-Cache counters of the hit ratio, one set "
                                                                     "per kernel range, newest first")
    system: str | None = Field(default=None, description="The shared file system measured, in words")
    owner: Literal["clustersmith", "provider", "user"] | None = None
    mount: str | None = None

    @property
    def interval_ms(self) -> int:
        return round(self.bwavgtime.value * 1000)



def ratio_formula(hits: tuple[Counter, ...], misses: tuple[Counter, ...]) -> str:
    """``CaRdOps RD / (CaRdOps RD + DownOps DL)``: the hit ratio of these counters, as plans and reports write it."""
    shown = " + ".join(f"{line} {key}" for line, key in hits)
    return f"{shown} / ({shown} + {' + '.join(f'{line} {key}' for line, key in misses)})"


def counter_name(counter: Counter) -> str:
    return f"{counter[0]}:{counter[1]}"


def _counter(name: str) -> Counter:
    line, _, key = name.partition(":")
    return line, key


class NcclArgs(_Args):
    """The nccl-tests run: its size sweep, the binaries, the ranks, and what NCCL's debug log must show."""

    kind: Literal["nccl"] = "nccl"
    op: Literal["all_reduce"] = "all_reduce"
    minbytes: Size = Field(default=Size.parse("2GiB"), description="Smallest size of the sweep; busbw is read at "
                                                                     "sizes from it up (nccl-tests -b)")
    maxbytes: Size = Field(default=Size.parse("8GiB"), description="Largest size (nccl-tests -e)")
    requires: Literal["gpu"] = "gpu"
    algorithm_expectation: str | None = Field(default=None, description="For the report beside what NCCL chose")
    tests: tuple[str, ...] = Field(default=("all_reduce_perf",), description="nccl-tests binaries run")
    nodes: int
    gpus_per_node: int
    transport: Literal["ib", "ofi", "gib"] | None = Field(default=None,
                                                          description="The transport NCCL must use between nodes")
    gpus: Literal["emulated", "real"] | None = None


class PerftestArgs(_Args):
    """ib_write_bw (and its siblings) per rail: message size, duration and queue pairs."""

    kind: Literal["perftest"] = "perftest"
    size: Size = Field(default=Size.parse("65536B"), description="Message size (-s)")
    duration: Duration = Field(default=Duration.parse("10s"), description="Seconds measured (-D)")
    qps: int = Field(default=2, description="Queue pairs (-q)")


class NvmeArgs(_Args):
    """The paths probe: the I/O policy planned and how long a path may settle before it is judged."""

    kind: Literal["nvme"] = "nvme"
    iopolicy: Literal["numa", "round-robin", "queue-depth"] | None = None
    settle: Duration = Field(default=Duration.parse("0s"), description="How long a connecting path may settle")
    reset_extra: Duration = Field(default=Duration.parse("0s"),
                                  description="A resetting path's wait beyond the host's admin timeout")


class QosArgs(_Args):
    """The QoS plan every layer must agree with."""

    kind: Literal["qos"] = "qos"
    dscp: int
    priority: int
    tos: int


class PrometheusArgs(_Args):
    """A Prometheus check: the plan's query, where it asks one (targets up asks Prometheus's own)."""

    kind: Literal["prometheus"] = "prometheus"
    query: str | None = Field(default=None, description="The monitoring plan's query name")


class CephArgs(_Args):
    """Ceph's own account of itself, read on one monitor host."""

    kind: Literal["ceph"] = "ceph"
    monitor: str = Field(description="The monitor host the ceph CLI runs on")


AnyArgs = Annotated[FioArgs | NcclArgs | PerftestArgs | NvmeArgs | QosArgs | PrometheusArgs | CephArgs,
                    Field(discriminator="kind")]


def _of_the_tool(args: BaseModel, info: ValidationInfo) -> BaseModel:
    tool = info.data.get("tool")
    want = FAMILY.get(tool) if isinstance(tool, str) else None  # type: ignore[call-overload]
    got = getattr(args, "kind", None)
    if want is not None and got != want:
        raise ValueError(f"arguments of kind {got!r} for tool {tool}; expected kind {want!r}")
    return args


# Check.args: the arguments of the check's own tool family
CheckArgs = Annotated[AnyArgs, AfterValidator(_of_the_tool)]

A = TypeVar("A", bound=_Args)


def args_as(args: object, kind: type[A]) -> A:
    """``args`` as the family ``kind``; Check's validation guarantees it for the check's tool."""
    if not isinstance(args, kind):
        raise TypeError(f"check arguments {type(args).__name__}; expected {kind.__name__}")
    return args
