"""Step ``perftest``: ib_write_bw (or another perftest bandwidth tool) in pairs, on both fabrics the Blueprint plans.

- compute fabric: rail i of a GPU node against rail i of another GPU node (``compute.rails``), the nodes paired
  (1, 2), (3, 4), ... and, with an odd count, the last against the first in a wave of its own;
- storage fabric: each GPU node's storage NICs (``storage_fabric.client_rails``) against a storage target's NICs,
  the node's storage NIC j against the target's NIC j modulo the target's count (8 compute rails and 2 storage
  NICs on a GPU node against a 2-NIC target: storage NICs 8 and 9 against the target's 0 and 1); a target NIC
  serves one node at a time, every NIC of every target at once (as training reads load them).

A wave is a set of pairs that start at once; waves follow one another. In a compute wave no host is in two pairs; in
a storage wave no GPU node is, and no target NIC (a target serves on several of its NICs at once, one server each).
Every wave runs in one host job (``files/job_perftest.sh``): each host gets its entries (a client's at most one per
wave, a target's one per NIC it serves in it) and wave w begins ``slot`` x w after the common start the runner sets,
``slot`` being the tool's duration and ``SLOT_EXTRA_S`` (server start, the client's delay, connection and teardown) x
``--timeout-scale``: the tool times itself (``-D``), so only what is not the measurement stretches on slow hosts
(under TCG a 10 s ib_write_bw ran 14.5 s from its client's start to its end). Each host's RDMA device and GID index
are the rdma role's record (``facts`` step), never a name assumed from the rail. Each client's output lands in
``<tool>/rail<i>/<client>@<server>.txt`` (only a run that ended 0; ``.out`` otherwise) with its exit status (``.rc``);
``<tool>/pairs.json`` lists every pair the Blueprint plans. Every wave's servers listen on ports of their own
(``PERFTEST_PORT`` + w x k + the NIC, k one more than the highest NIC index) and each lives until it has served its
client or its timeout ends it: a client whose host comes to a wave late (an earlier wave of its own past its slot)
still finds its server, never a later wave's on the same port (the CI of 2026-12-07 lost four pairs that way, every
try refused). Each server's stdout, stderr and exit status come back beside its client's output (``.server``,
``.server.err``, ``.server.rc``): a pair that could not measure is named with what both ends said. A pair whose client
ran and failed is measured once more, in a second job of the failed pairs in their waves.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from blueprints.blueprint import Check
from blueprints.blueprint.check_args import PerftestArgs
from blueprints.hosts import expand
from validators.run.jobs import Job, SpecValue, argv_text
from validators.run.plumbing import TIMED_OUT, HostOutcome, Session, last_line

PERFTEST_PORT = 18515  # perftest's own default: the first wave's rail 0; every wave has ports of its own after it
PORTS = 65536 - PERFTEST_PORT
# A wave's slot beyond the tool's duration: server start, CLIENT_DELAY_S, connection, teardown. In the lab (TCG,
# --timeout-scale 4, 2026-12-06, timings.json) the slowest client of six waves ended 16.5 s into a 25 s slot for a 5 s
# ib_write_bw started 8 s into it (CLIENT_DELAY_S 2 x 4): 3.5 s of connection and teardown beyond the tool; with a
# 4 s delay (1 x 4), 12.7 s into a 21 s slot (5 + 4 x 4) in a clean-clone CI: 3.7 s beyond the tool. At 3 x 4 the slot
# is 17 s: 4 s of delay, the tool's 5 s and 8 s for connection and teardown, twice the most seen. On real hosts (scale
# 1) a 10 s tool gets a 13 s slot: 1 s of delay, 2 s beyond the tool. A server not listening yet when its client
# starts costs the client a try (TRY_DELAY_S), still inside the slot.
SLOT_EXTRA_S = 3
CLIENT_DELAY_S = 1  # a client starts this long (x --timeout-scale) into its slot, its server listening by then
TRIES, TRY_DELAY_S = 6, 3  # a client that cannot connect (its server not listening yet) tries again
SERVER_FILES = (".server", ".server.err", ".server.rc")  # a pair's server: its stdout, stderr and exit status
SERVER_SAID_LINES = 3  # a failed server's stderr, quoted: its first lines name the cause ("Couldn't listen to port")
TOKEN = re.compile(r"[A-Za-z0-9_.:@/+%=-]+")  # a schedule field: one word, no shell or space in it
Fabric = Literal["compute", "storage"]


@dataclass(frozen=True)
class Pair:
    fabric: Fabric
    client: str
    client_rail: int
    server: str
    server_rail: int

    @property
    def label(self) -> str:
        """How the results name it: ``rail<i> <client>@<server>`` (the client's rail)."""
        return f"rail{self.client_rail} {self.client}@{self.server}"

    def stem(self, tool: str) -> tuple[str, str, str]:
        return tool, f"rail{self.client_rail}", f"{self.client}@{self.server}"

    def file(self, session: Session, tool: str, suffix: str) -> Path:
        """Where the playbook puts this pair's client output (``.txt``: a run that ended 0, ``.out``: one that did
        not, ``.rc``: its exit status)."""
        folder, rail, name = self.stem(tool)
        return session.results / folder / rail / f"{name}{suffix}"


Wave = list[Pair]


def compute_waves(nodes: list[str], rails: int) -> list[Wave]:
    """Rail i of each GPU node against rail i of another, in host-disjoint pairs."""
    waves: list[Wave] = []
    if len(nodes) < 2:
        return waves
    for rail in range(rails):
        waves.append([Pair("compute", nodes[i], rail, nodes[i + 1], rail) for i in range(0, len(nodes) - 1, 2)])
        if len(nodes) % 2:
            waves.append([Pair("compute", nodes[-1], rail, nodes[0], rail)])
    return waves


def storage_waves(nodes: list[str], client_rails: tuple[int, ...], targets: dict[str, int]) -> list[Wave]:
    """Each GPU node's storage NIC j against NIC j modulo its count of a target, in as few waves as first fit finds:
    per wave a node is one pair's client and a target NIC one pair's server. Node i meets target i modulo the
    targets' count; the nodes that share a target take their NICs in rotation (the r-th starts at its NIC r), so
    that together they use every NIC of the target in one wave."""
    servers = [t for t, count in targets.items() if count > 0]
    if not servers or not client_rails:
        return []
    positions = len(client_rails)
    pending = []
    for turn in range(positions):
        for i, node in enumerate(nodes):
            server = servers[i % len(servers)]
            position = (i // len(servers) + turn) % positions
            pending.append(Pair("storage", node, client_rails[position], server, position % targets[server]))
    waves: list[Wave] = []
    taken: list[set[tuple[str, int]]] = []  # per wave: ("<node>", -1) for a client, (target, NIC) for a server
    for pair in pending:
        keys = {(pair.client, -1), (pair.server, pair.server_rail)}
        w = next((w for w, used in enumerate(taken) if not keys & used), len(waves))
        if w == len(waves):
            waves.append([])
            taken.append(set())
        waves[w].append(pair)
        taken[w] |= keys
    return waves


def plan_waves(session: Session) -> tuple[list[Wave], list[str]]:
    """The waves the Blueprint's fabrics call for over the inventory's hosts, and what cannot be paired."""
    bp, inv = session.bp, session.inventory
    nodes = inv.group("gpu_clients")
    planned_nics = {h.name: h.rail_nics for h in expand(bp.hosts) if h.role == "storage_target"}
    targets = {t: planned_nics.get(t, len(inv.hosts[t].rails)) for t in inv.group("storage_targets")}
    problems = []
    if len(nodes) < 2:
        problems.append(f"the compute fabric needs two GPU nodes to pair; the inventory has {len(nodes)}")
    client_rails = bp.storage_fabric.client_rails.value
    if client_rails and not targets:
        problems.append("the storage fabric's pairs need a storage target; the inventory's storage_targets is empty")
    return compute_waves(nodes, bp.compute.rails.value) + storage_waves(nodes, client_rails, targets), problems


def write_bw_args(args: PerftestArgs) -> tuple[list[str], int]:
    """ib_write_bw's flags from the check's arguments (message size, seconds, queue pairs), and its seconds."""
    duration = round(args.duration.value)
    return ["-s", str(int(args.size.value)), "-D", str(duration), "-q", str(args.qps), "--report_gbits",
            "-F"], duration


def run(session: Session, check: Check, tool: str, args: list[str], duration_s: int) -> None:
    waves, problems = plan_waves(session)
    for problem in problems:
        session.setup_error(check.id, "pairs", problem)
    session.write(tool, "pairs.json", text=json.dumps([{**asdict(p), "label": p.label} for w in waves for p in w],
                                                      indent=2))
    run_waves(session, check, tool, args, duration_s, waves)


def _endpoint(session: Session, host: str, rail: int) -> tuple[dict[str, Any] | None, str]:
    """What perftest needs of one host on one rail (its recorded device and GID index, its rail address)."""
    address = next((r.address for r in session.inventory.hosts[host].rails if r.index == rail), None)
    if address is None:
        return None, f"{host} has no address on rail {rail} in the inventory"
    found = session.rdma.get(host, {}).get(rail)
    if not found:
        return None, (f"{host} has no RDMA device recorded for rail {rail} (/etc/ansible/facts.d/rdma.fact: run the "
                      f"rdma role)")
    gid = found.get("gid_index")
    return {"device": str(found["device"]), "address": address, "gid": "-" if gid is None else str(gid)}, ""


def schedule(session: Session, check: Check, tool: str, waves: list[Wave]) -> tuple[dict[str, list[str]],
                                                                                     list[Pair]]:
    """Each host's entries (``job_perftest.sh``'s schedule lines, in wave order) and the pairs they measure; a pair
    whose endpoint the inventory or the rdma record cannot give, or whose names would not make one word, is a setup
    error and not scheduled."""
    entries: dict[str, list[str]] = {}
    ready: list[Pair] = []
    stride = 1 + max((p.server_rail for wave in waves for p in wave), default=0)
    for w, wave in enumerate(waves):
        for pair in wave:
            client, why = _endpoint(session, pair.client, pair.client_rail)
            server, why_server = _endpoint(session, pair.server, pair.server_rail)
            if client is None or server is None:
                session.setup_error(check.id, pair.label, why or why_server)
                continue
            port = str(PERFTEST_PORT + (w * stride + pair.server_rail) % PORTS)
            path = "/".join(pair.stem(tool))
            fields = [server["device"], server["gid"], client["device"], client["gid"], server["address"], path]
            if not all(TOKEN.fullmatch(f) for f in fields):
                session.setup_error(check.id, pair.label, f"a device, address or host name is not one word: {fields}")
                continue
            entries.setdefault(pair.server, []).append(f"{w} server {server['device']} {port} {server['gid']} - {path}")
            entries.setdefault(pair.client, []).append(
                f"{w} client {client['device']} {port} {client['gid']} {server['address']} {path}")
            ready.append(pair)
    return entries, ready


def server_words(session: Session, tool: str, pair: Pair, timeout_s: int) -> str | None:
    """What the pair's server said when it did not end 0 (its exit status and last line; a timeout: it waited for a
    client that never came), or None: it served its client, or its host sent nothing back."""
    rc_file = pair.file(session, tool, ".server.rc")
    rc = rc_file.read_text(encoding="utf-8").strip() if rc_file.is_file() else "0"
    if rc == "0":
        return None
    if rc == str(TIMED_OUT):
        return f"its server on {pair.server} waited {timeout_s} s and no client came"
    err = pair.file(session, tool, ".server.err")
    lines = [line.strip() for line in err.read_text(encoding="utf-8", errors="replace").splitlines()
             if line.strip()] if err.is_file() else []
    said = " / ".join(lines[:SERVER_SAID_LINES]) or last_line(pair.file(session, tool, ".server"))
    return f"its server on {pair.server} exited {rc}" + (f": {said}" if said else " with no output")


def run_waves(session: Session, check: Check, tool: str, args: list[str], duration_s: int, waves: list[Wave],
              attempt: int = 1) -> None:
    """Every wave in one host job; a pair whose client ran and failed is measured once more (a second job of the
    failed pairs, each in its wave, servers started anew), the first attempt's failure kept as a note. A perftest
    server serves one connection and exits, so the client's own tries cannot recover a run that connected and then
    failed (Soft-RoCE under TCG: a completion error)."""
    entries, ready = schedule(session, check, tool, waves)
    if not ready:
        return
    for pair in ready:  # a file of an earlier attempt is not this attempt's measure
        for suffix in (".txt", ".out", ".rc", *SERVER_FILES):
            pair.file(session, tool, suffix).unlink(missing_ok=True)
    scale = session.scale
    tool_timeout = int((duration_s + 60) * scale)
    slot_s = duration_s + SLOT_EXTRA_S * scale
    common: dict[str, SpecValue] = {
        "tool": tool, "args": argv_text(args), "tool_timeout": tool_timeout, "slot_ms": int(slot_s * 1000),
        "client_delay_ms": int(CLIENT_DELAY_S * scale * 1000), "tries": TRIES, "try_delay_s": TRY_DELAY_S}
    specs: dict[str, dict[str, SpecValue]] = {h: {"host": h, **common, "schedule": "\n".join(lines)}
                                              for h, lines in entries.items()}
    limit = int(len(waves) * slot_s + TRIES * (tool_timeout + TRY_DELAY_S) + 60 * scale)
    step = tool + (f"-attempt{attempt}" if attempt > 1 else "")
    outputs = (f"{tool}/rail*/{{host}}@*.txt", f"{tool}/rail*/{{host}}@*.out", f"{tool}/rail*/{{host}}@*.rc",
               *(f"{tool}/rail*/*@{{host}}{suffix}" for suffix in SERVER_FILES))
    outcomes = session.job(Job(step, "perftest", specs, outputs, limit, aligned=True, slot_s=slot_s))
    session.late([check.id], outcomes, f"{tool} pairs")
    again: list[Wave] = [[] for _ in waves]
    by_pair = {pair: w for w, wave in enumerate(waves) for pair in wave}
    for pair in ready:
        rc_file = pair.file(session, tool, ".rc")
        status = rc_file.read_text(encoding="utf-8").strip() if rc_file.is_file() else None
        if status == "0" and pair.file(session, tool, ".txt").is_file():
            continue
        key = "/".join(pair.stem(tool))
        client, server = outcomes.get(pair.client, HostOutcome()), outcomes.get(pair.server, HostOutcome())
        why = client.problem or next(iter(client.failed_for(key)), None) or server.problem or (
            f"{tool} exited {status}" if status else "no output")
        if (said := server_words(session, tool, pair, tool_timeout)) is not None:
            why += f"; {said}"
        if status is not None and attempt == 1:  # it ran and failed: once more, with the first try's own words
            first = next(iter(client.retried_for(key)), why)
            session.note(check.id, f"{pair.label}: first attempt failed ({first}); measured again")
            again[by_pair[pair]].append(pair)
        else:
            session.setup_error(check.id, pair.label, why)
    if any(again):
        run_waves(session, check, tool, args, duration_s, [w for w in again if w], attempt + 1)
