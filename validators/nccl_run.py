"""NCCL across every GPU node: the launch (hostfile, mpirun or srun command line), the GPU pre-flight, what the debug
log must show, and the pairwise sweep that names slow nodes. Pure functions over typed inputs; the runner step
(``validators.run.nccl``) plays them out over the inventory and the rule (``nccl.allreduce_busbw``) judges.

What the planner decided is read from the check's arguments (``blueprints/planner/acceptance.py``): ``tests`` (the
nccl-tests binaries: all_reduce always, all_gather and reduce_scatter for LLM training, alltoall for recsys),
``nodes`` and ``gpus_per_node`` (one rank per GPU), ``transport`` (``ib``, ``ofi`` or ``gib``) and ``gpus``
(``emulated`` on the lab). The environment is the Blueprint's (``Blueprint.nccl_environment()``) plus
``NCCL_DEBUG=INFO``; NCCL_IB_HCA is per host and comes from ``/etc/nccl.conf``, which the nccl role writes.

MPI carries only nccl-tests' bootstrap (the unique id, barriers): NCCL moves the data itself. So Open MPI is held to
its TCP transport (``pml ob1``, ``btl tcp,vader,self``): UCX or the openib BTL finding the RDMA devices would only
add a second, unneeded user of them (and Soft-RoCE under TCG trips them).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import Field, ValidationError

from blueprints.blueprint import Blueprint, Check
from blueprints.blueprint.check_args import NcclArgs, args_as
from blueprints.figures import plain
from blueprints.model import Frozen
from blueprints.units import Size
from validators.errors import parse_error
from validators.inventory import Inventory
from validators.nccl_debug import NcclDebug
from validators.outcome import Detail, Measurement

SLURM_GROUP = "slurm_controller"  # inventory group: where srun runs (blueprints/templates/ansible/README.md)
GPU_GROUP = "gpu_clients"
GPU_LINE = re.compile(r"^GPU \d+: .*\(UUID: ")  # nvidia-smi -L: "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)"
TRANSPORT_NAMES = {"ib": "NET/IB (NCCL's IB verbs transport)", "ofi": "the libfabric (aws-ofi-nccl) plugin",
                   "gib": "the gIB plugin", "socket": "NET/Socket (TCP)"}
WORKDIR = "/tmp/clustersmith-accept-nccl"  # on each launch node, for this step only: hostfile, logs, the lab's key
LAB_RSH_AGENT = (f"ssh -i {WORKDIR}/launch_key -o BatchMode=yes -o StrictHostKeyChecking=no "
                 "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR")  # the lab's own key (stacks/lab/ssh.py)


class LaunchNode(Frozen):
    name: str = Field(description="Inventory host name (Slurm node name under srun)")
    address: str = Field(description="Where the launcher reaches it: rail 0's address, else the host name")


class Launch(Frozen):
    """One job over GPU nodes, one rank per GPU."""

    kind: Literal["mpirun", "srun"]
    launcher: str = Field(description="Host the command runs on: the first GPU node, or the Slurm controller")
    nodes: tuple[LaunchNode, ...]
    gpus_per_node: int = Field(ge=1)
    env: tuple[tuple[str, str], ...] = Field(description="Exported to every rank, in order")
    network: str | None = Field(default=None, description="CIDR Open MPI's own TCP is held to (the lab's rail 0)")
    rsh_agent: str | None = Field(default=None, description="mpirun's SSH command (the lab's key), else ssh")

    @property
    def ranks(self) -> int:
        return len(self.nodes) * self.gpus_per_node

    def hostfile(self) -> str:
        """Open MPI's hostfile: one line per node, ``slots`` = its GPUs."""
        return "".join(f"{n.address} slots={self.gpus_per_node}\n" for n in self.nodes)

    def argv(self, program: Sequence[str]) -> list[str]:
        """The command line on the launcher (the hostfile is ``WORKDIR/hostfile`` there)."""
        if self.kind == "srun":  # the environment through env(1): --export's list splits values at commas
            return ["srun", f"--nodes={len(self.nodes)}", f"--ntasks={self.ranks}",
                    f"--ntasks-per-node={self.gpus_per_node}", "--gpus-per-task=1",
                    f"--nodelist={','.join(n.name for n in self.nodes)}", "--export=ALL",
                    "env", *(f"{k}={v}" for k, v in self.env), *program]
        argv = ["mpirun", "--allow-run-as-root", "--hostfile", f"{WORKDIR}/hostfile", "-np", str(self.ranks),
                "--map-by", f"ppr:{self.gpus_per_node}:node", "--bind-to", "none", "--tag-output",
                "--mca", "pml", "ob1", "--mca", "btl", "tcp,vader,self"]
        if self.network is not None:
            argv += ["--mca", "oob_tcp_if_include", self.network, "--mca", "btl_tcp_if_include", self.network]
        if self.rsh_agent is not None:
            argv += ["--mca", "plm_rsh_agent", self.rsh_agent]
        for name, value in self.env:
            argv += ["-x", f"{name}={value}"]
        return argv + list(program)

    def subset(self, names: Iterable[str]) -> Launch:
        """The same launch over some of its nodes (a pair of the sweep), from the first of them."""
        wanted = set(names)
        nodes = tuple(n for n in self.nodes if n.name in wanted)
        launcher = self.launcher if self.kind == "srun" else nodes[0].name
        return self.model_copy(update={"nodes": nodes, "launcher": launcher})


class LaunchError(Exception):
    """No launch is possible from this inventory: a setup error, in words that name what is missing."""


def environment(bp: Blueprint) -> tuple[tuple[str, str], ...]:
    """Every rank's environment: NCCL_DEBUG=INFO (the transport and counts are read from it), then the Blueprint's."""
    return (("NCCL_DEBUG", "INFO"), *((v.name, v.value) for v in bp.nccl_environment()))


def plan_launch(bp: Blueprint, inventory: Inventory, rsh_agent: str | None = None) -> Launch:
    """The inventory's GPU hosts (its gpu_clients group, in its order) and who launches. Whether they are the
    Blueprint's is judged from NCCL's own counts (``debug_violations``); none at all is a setup error."""
    names = inventory.group(GPU_GROUP)
    if not names:
        planned = bp.hosts_by_role().get("gpu_client", [])
        raise LaunchError(f"no GPU node matched: the inventory's {GPU_GROUP} group is empty or absent (the Blueprint "
                          f"plans {len(planned)}: {', '.join(planned[:3])}{', ...' if len(planned) > 3 else ''})")
    nodes = []
    for name in names:
        rails = sorted(inventory.hosts[name].rails, key=lambda r: r.index) if name in inventory.hosts else []
        nodes.append(LaunchNode(name=name, address=rails[0].address if rails else name))
    controllers = inventory.group(SLURM_GROUP)
    network = bp.lab.rails[0].subnet if bp.lab is not None and bp.lab.rails else None
    gpus = bp.compute.gpus_per_node
    if controllers:
        return Launch(kind="srun", launcher=controllers[0], nodes=tuple(nodes), gpus_per_node=gpus,
                      env=environment(bp))
    return Launch(kind="mpirun", launcher=names[0], nodes=tuple(nodes), gpus_per_node=gpus, env=environment(bp),
                  network=network, rsh_agent=rsh_agent)


def collectives(check: Check) -> tuple[str, ...]:
    """The nccl-tests binaries the plan runs; all_reduce_perf first, always."""
    named = args_as(check.args, NcclArgs).tests
    return ("all_reduce_perf", *(t for t in named if t != "all_reduce_perf"))


def sweep(check: Check) -> list[str]:
    """nccl-tests' size sweep: the plan's sizes, doubling, one GPU per rank."""
    args = args_as(check.args, NcclArgs)
    return ["-b", nccl_size(args.minbytes), "-e", nccl_size(args.maxbytes), "-f", "2", "-g", "1"]


def nccl_size(size: Size) -> str:
    """A size as nccl-tests reads it (-b, -e): a whole number of its binary K, M or G where it is one (2GiB: 2G)."""
    n = int(size.value)
    for suffix, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{suffix}"
    return str(n)


def emulated(check: Check) -> bool:
    return args_as(check.args, NcclArgs).gpus == "emulated"


# -- pre-flight ------------------------------------------------------------------------------------------------


def count_gpus(listing: str) -> int:
    """GPUs in ``nvidia-smi -L`` output (one ``GPU n: <name> (UUID: ...)`` line each; MIG lines do not count)."""
    return sum(1 for line in listing.splitlines() if GPU_LINE.match(line.strip()))


class GpuCount(Frozen):
    """What the pre-flight found on one node: its GPUs, or why nvidia-smi gave none."""

    gpus: int = Field(ge=0)
    error: str | None = None


def judge_preflight(check: Check, counted: Mapping[str, GpuCount]) -> Measurement | None:
    """None when every node holds its planned GPUs; else the verdict that stops the check: not applicable where the
    Blueprint says the GPUs are emulated, a setup error when no node was counted, a fail naming every node short of
    its plan with its count."""
    if emulated(check):
        return Measurement(not_applicable="the Blueprint's GPUs are emulated (lab target): no GPU to count or run "
                                          "NCCL on; the launch itself is proven by the runner (see the notes)")
    if not counted:
        return Measurement(setup_error="the GPU pre-flight matched no host (nvidia-smi -L ran nowhere)")
    planned = args_as(check.args, NcclArgs).gpus_per_node
    short = {h: c for h, c in sorted(counted.items()) if c.gpus < planned}
    if not short:
        return None
    details = tuple(Detail(where=h, value=float(c.gpus), unit="GPUs",
                           note=f"planned {planned}" + (f"; {c.error}" if c.error else "")) for h, c in short.items())
    violations = tuple(f"{h}: {c.gpus} of {planned} GPUs" + (f" ({c.error})" if c.error else "")
                       for h, c in short.items())
    return Measurement(value=0.0, details=details, failures=violations,
                       notes=(f"busbw not measured: {len(short)} of {len(counted)} node(s) short of their planned "
                              f"GPUs, so the collective was not run",))


# -- what the debug log must show ------------------------------------------------------------------------------


def debug_missing(debug: NcclDebug | None, check: Check, name: str) -> str | None:
    """What NCCL's INFO lines do not show and the plan needs confirmed: the transport between nodes and the
    communicator's size. Missing evidence, a setup error that says what to rerun with (never a pass, and not a
    failure: nothing failed); what the lines do show is ``debug_violations``'."""
    want = args_as(check.args, NcclArgs).transport
    if want is None:  # a Blueprint from before the plan named the transport
        return None
    if debug is None:
        return (f"{name}: no NCCL INFO lines, so the transport ({TRANSPORT_NAMES[want]}) and the rank count cannot "
                "be confirmed: rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET is enough)")
    unseen = []
    if debug.transport == "unknown":
        unseen.append(f"no network between nodes (no 'NET/' channel path, no 'Using network' line), so the transport "
                      f"({TRANSPORT_NAMES[want]}) cannot be confirmed")
    if debug.nranks is None:
        unseen.append("no communicator size (no 'comm ... nranks' line), so the rank count cannot be confirmed")
    if not unseen:
        return None
    return (f"{name}: NCCL's INFO lines show " + " and ".join(unseen)
            + ": rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET (NCCL prints both at INIT)")


def debug_violations(debug: NcclDebug | None, check: Check, name: str) -> tuple[list[str], list[str]]:
    """The transport NCCL used between nodes and the communicator's size, against the plan, from NCCL's INFO lines
    (what they do not show, ``debug_missing`` says): (failures: NCCL off the planned transport, e.g. on sockets; a
    run short of the plan: a communicator or node count other than planned)."""
    args = args_as(check.args, NcclArgs)
    want = args.transport
    if want is None or debug is None:  # a Blueprint from before the plan named it; no INFO lines
        return [], []
    failed = []
    if debug.socket_fallback:
        failed.append(f"{name}: NCCL fell back to NET/Socket (TCP) between nodes; expected {TRANSPORT_NAMES[want]}")
    elif debug.transport not in (want, "unknown"):
        got = TRANSPORT_NAMES.get(debug.transport, debug.transport)
        failed.append(f"{name}: NCCL used {got} (networks {', '.join(debug.networks) or 'not printed'}); expected "
                      f"{TRANSPORT_NAMES[want]}")
    found = []
    nodes, per_node = args.nodes, args.gpus_per_node
    ranks = nodes * per_node
    if debug.nranks is not None and debug.nranks != ranks:
        found.append(f"{name}: NCCL's communicator has {debug.nranks} ranks; planned {ranks} "
                     f"({nodes} node(s) x {per_node} GPU(s))")
    seen = debug.nnodes if debug.nnodes is not None else len(debug.hosts) or None
    if seen is not None and seen != nodes:
        found.append(f"{name}: NCCL ran on {seen} node(s); planned {nodes}")
    return failed, found


# -- pairwise sweep --------------------------------------------------------------------------------------------

Pair = tuple[str, str]


def pair_waves(nodes: Sequence[str], rounds: int = 2) -> list[list[Pair]]:
    """Disjoint node pairs in waves (the circle method of a round-robin): within a wave no node is in two pairs, and
    across ``rounds`` waves each node meets a different partner, so a slow node misses with every partner while a
    slow link misses only with one. An odd node out sits one wave out."""
    ring = list(nodes) + ([""] if len(nodes) % 2 else [])
    n = len(ring)
    waves: list[list[Pair]] = []
    for _ in range(min(rounds, max(n - 1, 0))):
        wave = [(ring[i], ring[n - 1 - i]) for i in range(n // 2)]
        waves.append([p for p in wave if "" not in p])
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return [w for w in waves if w]


class SweepVerdict(Frozen):
    slow: tuple[str, ...] = Field(description="Nodes that missed the bar with every partner")
    slow_links: tuple[Pair, ...] = Field(description="Pairs that missed while both nodes reached it elsewhere")
    undecided: tuple[Pair, ...] = Field(description="Missed pairs whose nodes met no other partner")

    def note(self, bar: float) -> str:
        parts = []
        if self.slow:
            parts.append(f"slow node(s): {', '.join(self.slow)} (below {plain(bar)} GB/s with every partner)")
        if self.slow_links:
            parts.append("slow pair(s), both nodes fine elsewhere (the path between them): "
                         + ", ".join(f"{a}+{b}" for a, b in self.slow_links))
        if self.undecided:
            parts.append("missed, with no other partner to tell which node: "
                         + ", ".join(f"{a}+{b}" for a, b in self.undecided))
        return "pairwise sweep: " + ("; ".join(parts) if parts else f"every pair reached {plain(bar)} GB/s")


def slow_nodes(busbw: Mapping[Pair, float | None], bar: float) -> SweepVerdict:
    """Name the slow nodes from each pair's busbw (None: the pair's run failed, a miss)."""
    missed = {p for p, v in busbw.items() if v is None or v < bar}
    partners: dict[str, list[Pair]] = {}
    for pair in busbw:
        for node in pair:
            partners.setdefault(node, []).append(pair)
    slow = sorted(n for n, ps in partners.items() if len(ps) > 1 and all(p in missed for p in ps))
    links, undecided = [], []
    for pair in sorted(missed):
        if any(n in slow for n in pair):
            continue
        if all(len(partners[n]) > 1 for n in pair):
            links.append(pair)
        else:
            undecided.append(pair)
    return SweepVerdict(slow=tuple(slow), slow_links=tuple(links), undecided=tuple(undecided))


def quoted(argv: Sequence[str]) -> str:
    """An argv as one shell line, for notes and the README."""
    return shlex.join(argv)


# -- the launch proven without a GPU (the lab) -----------------------------------------------------------------

PROOF_PROGRAM = "mpi_ring.py"  # validators/playbooks/files, copied to WORKDIR on every node
PROOF_LINE = re.compile(r"^\[\d+,(?P<tag>\d+)\]<stdout>:\s*rank (?P<rank>\d+) of (?P<size>\d+) on (?P<host>\S+): "
                        r"allreduce (?P<sum>-?\d+) ring (?P<got>-?\d+)\s*$")


class LaunchProof(Frozen):
    ranks: int = Field(description="Ranks that reported")
    hosts: dict[str, int] = Field(description="Host name -> ranks that ran there")
    problems: tuple[str, ...]

    def note(self, launch: Launch) -> str:
        where = ", ".join(f"{h} ({n})" for h, n in sorted(self.hosts.items()))
        if self.problems:
            return "launch not proven: " + "; ".join(self.problems)
        return (f"launch proven without a GPU: {launch.kind} started {self.ranks} ranks of an MPI program "
                f"({PROOF_PROGRAM}: MPI_Allreduce and a ring MPI_Sendrecv, both correct) on {where}, through the "
                f"NCCL run's hostfile (slots={launch.gpus_per_node}), rank placement and --tag-output log; no "
                "NCCL or GPU was involved")


def judge_launch_proof(log: str, launch: Launch) -> LaunchProof:
    """Every rank once, tagged by mpirun with its own rank, the world size planned, the sums right and the ring closed,
    and ``gpus_per_node`` ranks on each node of the launch."""
    size = launch.ranks
    seen: dict[int, str] = {}
    problems: list[str] = []
    for line in log.splitlines():
        m = PROOF_LINE.match(line.strip())
        if m is None:
            continue
        rank, host = int(m.group("rank")), m.group("host")
        if int(m.group("tag")) != rank:
            problems.append(f"rank {rank}'s line carries mpirun's tag of rank {m.group('tag')}")
        if int(m.group("size")) != size:
            problems.append(f"rank {rank} saw a world of {m.group('size')}; planned {size}")
        if int(m.group("sum")) != size * (size + 1) // 2:
            problems.append(f"rank {rank}: MPI_Allreduce gave {m.group('sum')}; expected {size * (size + 1) // 2}")
        if int(m.group("got")) != (rank - 1) % size:
            problems.append(f"rank {rank}: the ring delivered {m.group('got')}; expected {(rank - 1) % size}")
        if rank in seen:
            problems.append(f"rank {rank} reported twice")
        seen[rank] = host
    missing = sorted(set(range(size)) - set(seen))
    if missing:
        problems.append(f"{len(missing)} of {size} ranks did not report (ranks {', '.join(map(str, missing[:8]))}"
                        f"{', ...' if len(missing) > 8 else ''})")
    hosts: dict[str, int] = {}
    for host in seen.values():
        hosts[host] = hosts.get(host, 0) + 1
    crowded = {h: n for h, n in hosts.items() if n != launch.gpus_per_node}
    if crowded:
        problems.append("ranks per node not as planned (" + ", ".join(f"{h}: {n}" for h, n in sorted(crowded.items()))
                        + f"; planned {launch.gpus_per_node} each)")
    names = {n.name for n in launch.nodes}
    if seen and set(hosts) != names:
        problems.append(f"ranks ran on {', '.join(sorted(hosts))}; the launch named {', '.join(sorted(names))}")
    return LaunchProof(ranks=len(seen), hosts=hosts, problems=tuple(problems))


def read_preflight(data: object, source: str) -> dict[str, GpuCount]:
    """``nccl/preflight.json`` as the runner writes it: ``{host: {"gpus": n, "error": why or null}}``."""
    if not isinstance(data, dict):
        raise parse_error(source, "GPU pre-flight", "(document)", 'expected an object of host: {"gpus": n}', data)
    counted = {}
    for host, found in data.items():
        try:
            counted[str(host)] = GpuCount.model_validate(found)
        except ValidationError:
            raise parse_error(source, "GPU pre-flight", str(host), 'expected {"gpus": n, "error": text or null}',
                              found) from None
    return counted
