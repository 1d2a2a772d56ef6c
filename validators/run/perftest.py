"""Step ``perftest``: ib_write_bw (or another perftest bandwidth tool) in pairs, on both fabrics the Blueprint plans.

- compute fabric: rail i of a GPU node against rail i of another GPU node (``compute.rails``), the nodes paired
  (1, 2), (3, 4), ... and, with an odd count, the last against the first in a wave of its own;
- storage fabric: each GPU node's storage NICs (``storage_fabric.client_rails``) against a storage target's NICs,
  the node's storage NIC j against the target's NIC j modulo the target's count (8 compute rails and 2 storage
  NICs on a GPU node against a 2-NIC target: storage NICs 8 and 9 against the target's 0 and 1); a target serves
  one node at a time, every target at once.

A wave is a set of pairs on one rail index with no host in two of them; all its pairs start at once. Each host's
RDMA device and GID index are the rdma role's record (``facts`` step), never a name assumed from the rail. The
playbook fetches each client's output into ``<tool>/rail<i>/<client>@<server>.txt`` (only a run that ended 0;
``.out`` otherwise) with its exit status (``.rc``); ``<tool>/pairs.json`` lists every pair the Blueprint plans.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from blueprints.blueprint import Check
from blueprints.hosts import expand
from validators.run.plumbing import Session

PERFTEST_PORT = 18515
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
    """Each GPU node's storage NIC j against NIC j modulo its count of a target; one node per target per wave."""
    waves: list[Wave] = []
    servers = [t for t, count in targets.items() if count > 0]
    if not servers:
        return waves
    for position, rail in enumerate(client_rails):
        queue = list(nodes)
        while queue:
            wave = [Pair("storage", node, rail, server, position % targets[server])
                    for node, server in zip(queue[: len(servers)], servers, strict=False)]
            queue = queue[len(servers):]
            waves.append(wave)
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


def run(session: Session, check: Check, tool: str, args: list[str], duration_s: int) -> None:
    waves, problems = plan_waves(session)
    for problem in problems:
        session.setup_error(check.id, "pairs", problem)
    session.write(tool, "pairs.json", text=json.dumps([{**asdict(p), "label": p.label} for w in waves for p in w],
                                                      indent=2))
    for wave in waves:
        run_wave(session, check, tool, args, duration_s, wave)


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
    return {"device": str(found["device"]), "address": address, "gid": [] if gid is None else ["-x", str(gid)]}, ""


def run_wave(session: Session, check: Check, tool: str, args: list[str], duration_s: int, wave: Wave,
             attempt: int = 1) -> None:
    """One wave of pairs; a pair whose client ran and failed is measured once more, servers restarted, and the first
    attempt's failure kept as a note. A perftest server serves one connection and exits, so the client's own
    retries cannot recover a run that connected and then failed (Soft-RoCE under TCG: a completion error)."""
    hosts: dict[str, dict[str, Any]] = {}
    ready: list[Pair] = []
    for pair in wave:
        client, why = _endpoint(session, pair.client, pair.client_rail)
        server, why_server = _endpoint(session, pair.server, pair.server_rail)
        if client is None or server is None:
            session.setup_error(check.id, pair.label, why or why_server)
            continue
        port = PERFTEST_PORT + pair.server_rail
        hosts[pair.server] = {**server, "port": port}
        hosts[pair.client] = {**client, "port": port, "address": server["address"],
                              "dest": str(pair.file(session, tool, ""))}
        ready.append(pair)
    if not ready:
        return
    clients, servers = [p.client for p in ready], sorted({p.server for p in ready})
    for pair in ready:  # a file of an earlier attempt is not this attempt's measure
        for suffix in (".txt", ".out", ".rc"):
            pair.file(session, tool, suffix).unlink(missing_ok=True)
    timeout = duration_s + 60
    rail = ready[0].client_rail
    step = f"{tool}-{ready[0].fabric}-rail{rail}-{'-'.join(clients)}" + (f"-attempt{attempt}" if attempt > 1 else "")
    outcomes = session.play(step, "perftest.yml", sorted(set(clients) | set(servers)), {
        "accept_tool": tool, "accept_args": args, "accept_pairs": hosts, "accept_servers": servers,
        "accept_clients": clients, "accept_timeout": int(timeout * session.scale),
    }, timeout * 2)
    again: list[Pair] = []
    for pair in ready:
        rc_file = pair.file(session, tool, ".rc")
        status = rc_file.read_text(encoding="utf-8").strip() if rc_file.is_file() else None
        if status == "0" and pair.file(session, tool, ".txt").is_file():
            continue
        why = outcomes[pair.client].problem or outcomes[pair.server].problem or (
            f"{tool} exited {status}" if status else "no output")
        if status is not None and attempt == 1:  # it ran and failed: once more, with the first try's own words
            first = outcomes[pair.client].retried[0] if outcomes[pair.client].retried else why
            session.note(check.id, f"{pair.label}: first attempt failed ({first}); measured again")
            again.append(pair)
        else:
            session.setup_error(check.id, pair.label, why)
    if again:
        run_wave(session, check, tool, args, duration_s, again, attempt + 1)
