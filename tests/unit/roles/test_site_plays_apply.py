"""Every example built for every provider: site.yml holds only plays whose hosts have what the play needs, on the
inventory each target really gets (the clouds': `clustersmith inventory --from-stack`, which names no disks; the
others': the build's). The combinations the planner refuses are named here with their exit-2 message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.blueprint import Blueprint
from blueprints.errors import ClusterSmithError
from blueprints.hosts import expand
from blueprints.loader import parse_requirements
from blueprints.planner import plan
from blueprints.render.ansible import group_vars, plays
from stacks.inventory import build as stack_inventory
from stacks.outputs import StackOutputs
from tests.stacks.test_stacks_every_pair import PROVIDERS

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = sorted(p.stem for p in (REPO / "examples").glob("*.yaml"))
TARGETS = {**PROVIDERS, "lab": {"provider": "lab", "clients": 2, "storage_targets": 1, "rails": 2}}
# (example, provider) -> the message the planner refuses it with (exit 2 through `build`).
GCP_H100 = "compute.accelerator: 'H100-SXM' on target.provider gcp: a3-megagpu-8g networks its GPUs with GPUDirect"
AZURE_FITS = "no azure managed file system in the catalog fits: amlfs-durable-premium-500 needs"
LAB_INGEST = "performance.storage.read_throughput: read_throughput {} cannot be met: 2 GPU nodes x 1GB/s per node"
REFUSED = {
    ("cv-training-500tb", "gcp"): GCP_H100,
    ("cv-training-500tb", "azure"): "performance.storage.read_throughput: " + AZURE_FITS,
    ("cv-training-500tb", "lab"): LAB_INGEST.format(">=500GB/s"),
    ("lab", "gcp"): GCP_H100,
    ("llm-training-16k", "gcp"): GCP_H100,
    ("llm-training-16k", "azure"): "data.training_set: " + AZURE_FITS,
    ("llm-training-16k", "lab"): LAB_INGEST.format(">=1TB/s"),
    ("recsys-inference", "azure"): "performance.storage.read_throughput: " + AZURE_FITS,
    ("recsys-inference", "lab"): LAB_INGEST.format(">=100GB/s"),
}
PAIRS = [(e, p) for e in EXAMPLES for p in TARGETS]


def _spec(example: str, provider: str) -> dict[str, Any]:
    doc = yaml.safe_load((REPO / "examples" / f"{example}.yaml").read_text())
    if doc["target"]["provider"] != provider:  # an instance type names its own provider's machine
        doc["target"] = TARGETS[provider]
        doc["compute"].pop("instance_type", None)
        if provider != "lab" and doc["compute"]["gpus"] % 8:  # the lab's 2 GPU clients: one whole 8-GPU node
            doc["compute"]["gpus"] = 8
    return doc


def _inventory(bp: Blueprint) -> dict[str, dict[str, Any]]:
    """host -> its variables, as the target's inventory gives them."""
    if bp.target.provider in ("aws", "gcp", "azure"):
        hosts = [{"name": h.name, "role": h.role, "group": h.group, "node_type": h.node_type, "address": "10.0.0.9",
                  "user": "u", "rails": [{"index": i, "name": f"rail{i}", "kind": "efa-only"}
                                         for i in range(h.rail_nics)]} for h in expand(bp.hosts)]
        fs = bp.storage.managed
        outputs = StackOutputs.parse({"design": bp.name, "provider": bp.target.provider, "hosts": hosts,
                                      "file_system": None if fs is None else {
                                          "service": fs.service, "capacity_gib": fs.capacity_gib,
                                          "throughput_mbps": 1, "mount": "10.0.0.4@tcp:/fsname"}})
        inv = stack_inventory(outputs)["all"]
        top = inv["vars"]
        return {name: {**top, **hv, "group": group} for group, g in inv["children"].items()
                for name, hv in g["hosts"].items()}
    found: dict[str, dict[str, Any]] = {}
    for g in bp.hosts:  # the build's inventory: every planned disk of the group, filled in by the user
        for name in g.names():
            found.setdefault(name, {"group": g.group, "disks": {}, "rails": list(range(g.rail_nics))})
            found[name]["disks"].update({d.name: "/dev/x" for d in g.disks})
    return found


def _needs(role: str, bp: Blueprint, group: str, name: str) -> list[str]:
    """What a play of ``role`` needs on each host of ``group``: inventory keys (disks.<name>, top-level vars)."""
    needs: list[str] = []
    if role == "storage_tiering":
        needs += ["disks.fast", "disks.slow"]
    if role == "shared_fs":
        shared = bp.storage.shared
        needs += ["disks.fast"] if shared.fscache is not None else []
        needs += ["clustersmith_file_system"] if shared.source_from == "stack_outputs" else []
    if role == "nvmeof" and group == "gpu_clients":
        needs += ["disks.slow"]
    served = {s.served_by for s in bp.storage.nvmeof.subsystems} if bp.storage.nvmeof else set()
    if role == "nvmeof" and group == "storage_targets" and name in served:
        needs += ["disks.nvmeof"]
    if role == "ceph":
        needs += [f"disks.osd{i}" for i in range(1)]
    return needs


def _has(host: dict[str, Any], need: str) -> bool:
    if need.startswith("disks."):
        return need.split(".", 1)[1] in (host.get("disks") or {})
    return host.get(need) is not None


@pytest.mark.parametrize(("example", "provider"), PAIRS, ids=[f"{e}-{p}" for e, p in PAIRS])
def test_every_play_applies_to_its_hosts(example: str, provider: str) -> None:
    try:
        bp = plan(parse_requirements(yaml.safe_dump(_spec(example, provider))))
    except ClusterSmithError as exc:
        assert (example, provider) in REFUSED, f"{example} on {provider} was refused: {exc}"
        assert REFUSED[(example, provider)] in " ".join(p.render("spec.yaml") for p in exc.problems)
        return
    assert (example, provider) not in REFUSED, f"{example} on {provider} now builds: drop it from REFUSED"
    inventory = _inventory(bp)
    with_vars = group_vars(bp)
    for play in plays(bp):
        groups = play.hosts.split(":")
        hosts = {n: h for n, h in inventory.items() if h["group"] in groups or "all" in groups}
        assert hosts, f"{play.role}: no host in {play.hosts}"
        assert play.role in with_vars, f"{play.role} has a play but no variables"
        for name, host in hosts.items():
            missing = [n for n in _needs(play.role, bp, host["group"], name) if not _has(host, n)]
            assert not missing, f"{example} on {provider}: play {play.role} needs {missing} on {name}"


def test_cloud_site_has_no_block_device_roles() -> None:
    bp = plan(parse_requirements((REPO / "examples" / "llm-training-16k.yaml").read_text()))
    assert [p.role for p in plays(bp)] == ["shared_fs", "nccl", "monitoring"]
