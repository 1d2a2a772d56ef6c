"""Results folders for the verdict tests, made from recorded output by named edits only.

A verdict now covers what the Blueprint plans, so a test that judges a recording against a plan lays it out for
the plan's hosts. Each helper says what it edits in the recording; the numbers are never touched unless a test
says so itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from blueprints.blueprint import Blueprint
from blueprints.loader import load_requirements
from blueprints.planner import plan

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
FIO = FIXTURES / "fio" / "results" / "fio"
RECORDED_HOSTS = ("client-1", "client-2")  # the two clients tests/fixtures/fio/record.sh ran


def two_node_blueprint(tmp_path: Path) -> Blueprint:
    """examples/cv-training-500tb.yaml edited to 16 GPUs (2 nodes x 8, the a3mega recording's shape), its storage
    targets scaled to what 2 nodes can ingest (60 / 20 GB/s) and its name to cv-training-2x8."""
    text = (REPO / "examples" / "cv-training-500tb.yaml").read_text()
    for old, new in (("gpus: 512", "gpus: 16"), ("name: cv-training-500tb", "name: cv-training-2x8"),
                     (">=500GB/s", ">=60GB/s"), (">=100GB/s", ">=20GB/s")):
        assert old in text
        text = text.replace(old, new)
    spec = tmp_path / "cv-training-2x8.yaml"
    spec.write_text(text)
    return plan(load_requirements(spec))


def fio_as(src: Path, dest: Path, recorded: str, host: str) -> None:
    """A recorded fio report (or bandwidth log) filed for ``host``: the recorded client name, which the job file
    puts in write_bw_log and filename_format from CLUSTERSMITH_HOST, replaced by ``host``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(src.read_text().replace(f'"{recorded}"', f'"{host}"').replace(
        f"clustersmith-accept.{recorded}.", f"clustersmith-accept.{host}."))


def fio_results(root: Path, hosts: list[str], workloads: tuple[str, ...] = ("seq_read", "seq_write",
                                                                               "rand_read_4k", "mixed")) -> Path:
    """The recorded two-client workloads laid out for ``hosts``: host i gets recorded client (i mod 2)'s report
    and bandwidth logs, with the host name edited as ``fio_as`` says."""
    for workload in workloads:
        for i, host in enumerate(hosts):
            recorded = RECORDED_HOSTS[i % 2]
            fio_as(FIO / workload / f"{recorded}.json", root / "fio" / workload / f"{host}.json", recorded, host)
            for log in sorted((FIO / workload).glob(f"{recorded}_bw.*.log")):
                shutil.copy(log, root / "fio" / workload / log.name.replace(recorded, host))
    return root


def nvme_results(root: Path, bp: Blueprint, listing: Path, policy: str = "round-robin",
                 hosts: list[str] | None = None) -> Path:
    """A recorded ``nvme list-subsys`` filed for each host that owns one of the Blueprint's subsystems, its recorded
    subsystem NQN (the lab recording's ``...:lab:record``) replaced by the host's own one and its recorded host NQN
    (the guest's random one, recorded before the Blueprint assigned host NQNs) by the host's planned NQN; the
    recording holds one subsystem, as the plan gives each host one."""
    recorded = json.loads(listing.read_text())
    nqn, host_nqn = recorded[0]["Subsystems"][0]["NQN"], recorded[0]["HostNQN"]
    nvmeof = bp.storage.nvmeof
    owned = bp.nvmeof_owned()
    (root / "nvme").mkdir(parents=True, exist_ok=True)
    for host in hosts if hosts is not None else list(owned):
        text = listing.read_text().replace(nqn, owned[host][0].nqn if host in owned else nqn)
        if nvmeof is not None:
            text = text.replace(host_nqn, nvmeof.host(host).nqn)
        (root / "nvme" / f"{host}.json").write_text(text)
        (root / "nvme" / f"{host}.iopolicy.json").write_text(json.dumps({"nvme-subsys0": policy}))
    return root
