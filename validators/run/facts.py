"""Step ``facts``: what acceptance needs to know about each host before it runs anything. A host job
(``files/job_facts.sh``) brings each host's GPU count and the rdma role's record (/etc/ansible/facts.d/rdma.fact)
into ``facts/``; this step sums them up in ``host-facts.json`` and keeps the records for the perftest pairs."""

from __future__ import annotations

import json

from validators.inventory import rdma_record
from validators.run.jobs import Job
from validators.run.plumbing import Session
from validators.source import json_loads

LIMIT_S = 120


def run(session: Session) -> None:
    hosts = sorted(session.inventory.hosts)
    outcomes = session.job(Job("facts", "facts", {h: {"host": h} for h in hosts},
                               ("facts/{host}.json", "facts/{host}.rdma.fact"), int(LIMIT_S * session.scale),
                               short=True))
    folder = session.results / "facts"
    facts = {}
    for host, o in outcomes.items():
        found = folder / f"{host}.json"
        if o.problem is None and found.is_file():
            gpus = json_loads(found.read_text(encoding="utf-8")).get("gpus", 0)
            facts[host] = {"gpus": int(gpus), "rails": len(session.inventory.hosts[host].rails)}
        elif o.problem is None:
            o.failed.append("the facts play fetched no facts file")
        record = folder / f"{host}.rdma.fact"
        session.rdma[host] = rdma_record(record.read_text(encoding="utf-8")) if record.is_file() else {}
    session.write("host-facts.json", text=json.dumps(facts, indent=2))
    session.record(["nccl.allreduce_busbw"], outcomes)
