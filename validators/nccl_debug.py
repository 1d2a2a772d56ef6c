"""NCCL's own debug output (``NCCL_DEBUG=INFO``, optionally ``NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING``) into a typed
summary: the NCCL version, the ranks and nodes seen, the network NCCL used and its devices, and what it built and
chose (rings, trees, channels; with TUNING, the algorithm and protocol per message size).

Streaming: lines are read one at a time and folded into counters whose size grows with the number of ranks,
hosts and distinct (algorithm, protocol) pairs, never with the length of the log (thousands of ranks write
gigabytes). Any prefix before the ``host:pid:tid [dev] NCCL INFO`` part (``mpirun --tag-output``'s
``[1,0]<stdout>:``, a ``[155]`` rank label, a timestamp) is skipped; lines without ``NCCL INFO`` (the nccl-tests
table, launcher noise) are ignored, so one interleaved log feeds both this parser and ``validators.nccl``.

Line shapes, as printed by NCCL (tests/fixtures/nccl/debug, sources in its README):
- ``NCCL version 2.12.7+cuda11.4`` (older: a bare line; newer: after ``NCCL INFO``)
- ``Using network IB`` / ``Using network Socket`` / ``Using network AWS Libfabric`` / ``Using network IBext_v6``
- ``NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]; OOB enp220s0np0:...``; ``NET/IB : No device found.``
- ``comm 0x.. rank 1 nranks 2 cudaDev 0 busId f5000 - Init COMPLETE``; ``comm 0x.. rank 13 nRanks 16 nNodes 2 ...``
- ``Channel 00/0 : 0[35000] -> 1[f5000] [send] via NET/AWS Libfabric/0`` (the transport that carried the bytes)
- ``Connected all rings``, ``Connected all trees``, ``Trees [0] ...``, ``2 coll channels, 2 p2p channels, ...``
- ``NCCL_ALGO set by environment to Tree`` (a forced choice)
- TUNING: ``805306368 Bytes -> Algo 1 proto 2 time 3970.683594``; the numbers are NCCL's enums in
  ``src/include/nccl_common.h`` (NVIDIA/nccl#1444: "Consult include/nccl_common.h to translate the numeric
  output"): algorithms Tree 0, Ring 1, CollNetDirect 2, CollNetChain 3, NVLS 4, NVLSTree 5, PAT 6; protocols
  LL 0, LL128 1, Simple 2.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import Field

from blueprints.model import Frozen
from validators.errors import parse_error
from validators.nccl import TAG
from validators.source import lines

INFO = re.compile(r"(?:(?P<host>[^\s:\[\]]+):\d+:\d+ \[\d+\] )?NCCL INFO (?P<msg>.*)$")
VERSION = re.compile(r"NCCL version (?P<v>\d+\.\d+\.\d+\S*)")
USING_NETWORK = re.compile(r"^Using (?:internal )?[Nn]etwork (?P<name>.+?)\s*$")
IB_DEVICES = re.compile(r"^NET/IB ?: Using (?P<devs>.*?)(?:; OOB (?P<oob>\S+))?\s*$")
IB_DEVICE = re.compile(r"\[\d+\] ?(?P<dev>[\w.\-]+):(?P<port>\d+)/(?P<link>[\w/]+)")
COMM = re.compile(r"\bcomm 0x[0-9a-f]+ rank (?P<rank>\d+) n[Rr]anks (?P<nranks>\d+)(?: nNodes (?P<nnodes>\d+))?")
CHANNEL_VIA = re.compile(r"^Channel \d+(?:/\d+)? : .* via (?P<via>.+?)\s*$")
CHANNELS = re.compile(r"^(?P<coll>\d+) coll channels")
RING_CHANNEL = re.compile(r"^Channel (?P<i>\d+)/(?P<n>\d+) :\s+\d")
SET_BY_ENV = re.compile(r"^(?P<name>NCCL_\w+) set by environment to (?P<value>.*?)\.?\s*$")
TUNING = re.compile(r"^(?:(?P<coll>[A-Za-z]+): )?(?P<bytes>\d+) Bytes -> Algo (?P<algo>\w+) proto (?P<proto>\w+)")
ALGOS = {"0": "Tree", "1": "Ring", "2": "CollNetDirect", "3": "CollNetChain", "4": "NVLS", "5": "NVLSTree",
         "6": "PAT"}
PROTOS = {"0": "LL", "1": "LL128", "2": "Simple"}
Transport = Literal["ib", "socket", "ofi", "gib", "other", "unknown"]


class IbDevice(Frozen):
    name: str = Field(description="RDMA device, e.g. mlx5_10")
    port: int
    link: str = Field(description="IB, RoCE, or IB/SHARP as NCCL prints it")


class AlgoChoice(Frozen):
    """One (algorithm, protocol) pair NCCL's tuner chose (TUNING lines), over the sizes it was chosen for."""

    algorithm: str
    protocol: str
    collective: str | None = Field(default=None, description="When the line names it; older lines do not")
    calls: int = Field(description="TUNING lines with this choice (every rank prints its own)")
    min_bytes: int
    max_bytes: int


class NcclDebug(Frozen):
    source: str
    lines: int = Field(description="Lines read")
    info_lines: int = Field(description="Lines carrying NCCL INFO")
    versions: tuple[str, ...] = Field(description="NCCL versions printed (more than one: ranks disagree)")
    hosts: tuple[str, ...] = Field(description="Host names in the line prefixes (nodes seen)")
    ranks_seen: int = Field(description="Distinct ranks in 'comm ... rank R nranks N' lines")
    nranks: int | None = Field(default=None, description="Communicator size NCCL reported (largest)")
    nnodes: int | None = Field(default=None, description="nNodes NCCL reported (newer versions)")
    networks: tuple[str, ...] = Field(description="'Using network X' names, e.g. IB, Socket, AWS Libfabric")
    transport: Transport = Field(description="What carried inter-node traffic: the channel paths if printed, "
                                 "else the 'Using network' name")
    socket_fallback: bool = Field(description="NCCL used its socket transport between nodes (TCP, not RDMA)")
    ib_no_device: bool = Field(default=False, description="'NET/IB : No device found' was printed")
    ib_devices: tuple[IbDevice, ...] = Field(default=(), description="From 'NET/IB : Using [0]mlx5_0:1/RoCE ...'")
    net_paths: dict[str, int] = Field(default_factory=dict, description="Channel connections per 'via' path "
                                      "(NET/IB/0/GDRDMA, NET/Socket/1, P2P/IPC, SHM ...), counted")
    gpudirect_rdma: bool = Field(default=False, description="A network path ended in /GDRDMA")
    ring_channels: int | None = Field(default=None, description="Ring channels ('Channel 00/16 : 0 7 ...')")
    coll_channels: int | None = Field(default=None, description="'N coll channels' (largest)")
    connected_rings: bool = False
    connected_trees: bool = False
    env: dict[str, str] = Field(default_factory=dict, description="'NCCL_X set by environment to Y': forced")
    choices: tuple[AlgoChoice, ...] = Field(default=(), description="TUNING: algorithm/protocol per size range; "
                                            "empty without NCCL_DEBUG_SUBSYS=TUNING")

    @property
    def algorithms(self) -> tuple[str, ...]:
        return tuple(sorted({c.algorithm for c in self.choices}))


def _transport(name: str) -> Transport:
    low = name.lower()
    if low.startswith("net/"):
        low = low[4:]
    if low.startswith("socket"):
        return "socket"
    if low.startswith("gib"):
        return "gib"
    if low.startswith("ib"):  # IB, IBext, IBext_v6 (the SHARP plugin's IB transport)
        return "ib"
    if "libfabric" in low or low.startswith("ofi") or low.startswith("aws"):
        return "ofi"
    return "other"


class _Fold:
    """The running state of one parse: bounded by ranks, hosts and distinct choices."""

    def __init__(self) -> None:
        self.lines = self.info = 0
        self.versions: dict[str, None] = {}
        self.hosts: set[str] = set()
        self.ranks: set[int] = set()
        self.nranks: int | None = None
        self.nnodes: int | None = None
        self.ring_channels: int | None = None
        self.coll_channels: int | None = None
        self.networks: dict[str, None] = {}
        self.devices: dict[tuple[str, int, str], None] = {}
        self.paths: dict[str, int] = {}
        self.no_ib = self.socket_if = self.rings = self.trees = False
        self.env: dict[str, str] = {}
        self.choices: dict[tuple[str, str, str | None], list[int]] = {}  # -> [calls, min, max]

    def line(self, raw: str) -> None:
        self.lines += 1
        text = TAG.sub("", raw.rstrip("\n"))
        if "NCCL version" in text and (v := VERSION.search(text)):
            self.versions.setdefault(v.group("v"), None)
        m = INFO.search(text)
        if m is None:
            return
        self.info += 1
        if m.group("host"):
            self.hosts.add(m.group("host"))
        self.message(m.group("msg").strip())

    def message(self, msg: str) -> None:
        if (t := TUNING.match(msg)) is not None:
            algo = ALGOS.get(t.group("algo"), t.group("algo").capitalize() if not t.group("algo").isdigit()
                             else f"algo {t.group('algo')}")
            proto = PROTOS.get(t.group("proto"), t.group("proto"))
            size = int(t.group("bytes"))
            slot = self.choices.setdefault((algo, proto, t.group("coll")), [0, size, size])
            slot[0] += 1
            slot[1], slot[2] = min(slot[1], size), max(slot[2], size)
        elif msg.startswith("Channel ") and " via " in msg:
            if (c := CHANNEL_VIA.match(msg)) is not None:
                self.paths[c.group("via")] = self.paths.get(c.group("via"), 0) + 1
        elif (r := RING_CHANNEL.match(msg)) is not None:
            self.ring_channels = max(self.ring_channels or 0, int(r.group("n")))
        elif (c := COMM.search(msg)) is not None:
            self.ranks.add(int(c.group("rank")))
            self.nranks = max(self.nranks or 0, int(c.group("nranks")))
            if c.group("nnodes"):
                self.nnodes = max(self.nnodes or 0, int(c.group("nnodes")))
        elif (u := USING_NETWORK.match(msg)) is not None:
            self.networks.setdefault(u.group("name"), None)
        elif msg.startswith("NET/IB"):
            if "No device found" in msg:
                self.no_ib = True
            elif (d := IB_DEVICES.match(msg)) is not None:
                for dev in IB_DEVICE.finditer(d.group("devs")):
                    self.devices.setdefault((dev.group("dev"), int(dev.group("port")), dev.group("link")), None)
            elif (d := IB_DEVICE.search(msg)) is not None:  # NCCL 2.3: "NET/IB: [0] mlx5_1:1/IB", one per line
                self.devices.setdefault((d.group("dev"), int(d.group("port")), d.group("link")), None)
        elif msg.startswith("NET/Socket : Using"):
            self.socket_if = True
        elif msg.startswith("Connected all rings"):
            self.rings = True
        elif msg.startswith("Connected all trees"):
            self.trees = True
        elif (n := CHANNELS.match(msg)) is not None:
            self.coll_channels = max(self.coll_channels or 0, int(n.group("coll")))
        elif (e := SET_BY_ENV.match(msg)) is not None:
            self.env[e.group("name")] = e.group("value")

    def result(self, source: str) -> NcclDebug:
        net_paths = {p: n for p, n in self.paths.items() if p.startswith("NET/")}
        if net_paths:
            kinds = {_transport(p.split("/")[1]) for p in net_paths}
            transport: Transport = "socket" if "socket" in kinds else sorted(kinds)[0]
        elif self.networks:
            kinds = {_transport(n) for n in self.networks}
            transport = "socket" if "socket" in kinds else sorted(kinds)[0]
        elif self.no_ib and self.socket_if:  # older NCCL: no 'Using network' line, IB missing, sockets set up
            transport = "socket"
        else:
            transport = "unknown"
        return NcclDebug(
            source=source, lines=self.lines, info_lines=self.info, versions=tuple(self.versions),
            hosts=tuple(sorted(self.hosts)), ranks_seen=len(self.ranks), nranks=self.nranks, nnodes=self.nnodes,
            networks=tuple(self.networks), transport=transport, socket_fallback=transport == "socket",
            ib_no_device=self.no_ib,
            ib_devices=tuple(IbDevice(name=d, port=p, link=link) for d, p, link in sorted(self.devices)),
            net_paths=dict(sorted(self.paths.items())), gpudirect_rdma=any(p.endswith("/GDRDMA") for p in net_paths),
            ring_channels=self.ring_channels, coll_channels=self.coll_channels, connected_rings=self.rings,
            connected_trees=self.trees, env=dict(sorted(self.env.items())),
            choices=tuple(AlgoChoice(algorithm=a, protocol=p, collective=c, calls=v[0], min_bytes=v[1],
                                     max_bytes=v[2])
                          for (a, p, c), v in sorted(self.choices.items(), key=lambda kv: (kv[1][1], kv[0][0]))),
        )


def parse_nccl_debug_lines(lines: Iterable[str], source: str = "<nccl-debug>") -> NcclDebug:
    """Fold any iterable of lines (a file object streams): no INFO line gives ``info_lines == 0``, not an error."""
    fold = _Fold()
    for raw in lines:
        fold.line(raw)
    return fold.result(source)


def parse_nccl_debug_file(path: Path) -> NcclDebug:
    """Stream a log from disk, line by line; a log without any NCCL INFO line is not NCCL debug output."""
    return _require_info(parse_nccl_debug_lines(lines(path), str(path)))


def parse_nccl_debug(text: str, source: str = "<nccl-debug>") -> NcclDebug:
    return _require_info(parse_nccl_debug_lines(text.splitlines(), source))


def _require_info(run: NcclDebug) -> NcclDebug:
    if run.info_lines == 0:
        raise parse_error(run.source, "NCCL debug", "(document)", "expected NCCL INFO lines (run with "
                          "NCCL_DEBUG=INFO, and NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING for the algorithms)",
                          f"{run.lines} line(s) without one")
    return run
