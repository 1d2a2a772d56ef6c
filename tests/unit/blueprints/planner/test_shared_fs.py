"""The storage engine per target and the spec's storage.external: one row per error message (field, value, what was
expected; exit 2 through `build`), the engine each target gets, and the external system's stated capability checked
against the spec's targets."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.blueprint.check_args import FioArgs, args_as
from blueprints.errors import InfeasibleError, SpecError
from blueprints.loader import parse_requirements
from blueprints.planner import plan
from blueprints.planner.monitoring import FSCACHE_HIT_RATIO
from tests.stacks.test_stacks_every_pair import PROVIDERS

REPO = Path(__file__).resolve().parents[4]
BASE = yaml.safe_load((REPO / "examples" / "cv-training-500tb.yaml").read_text())
NFS = {"type": "nfs", "source": "10.0.0.5:/export/train"}


def _doc(external: dict[str, Any] | None = None, target: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    if target is not None:
        doc["target"] = target
    if external is not None:
        doc["storage"] = {"external": external}
    return doc


def _problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as info:
        parse_requirements(yaml.safe_dump(doc, sort_keys=False), "spec.yaml")
    return [(p.path, p.message) for p in info.value.problems]


LAB = {"provider": "lab", "clients": 2, "storage_targets": 1, "rails": 2}
SPEC_ERRORS = [
    ({**NFS, "source": "10.0.0.5/export"}, None, "storage.external.source",
     "source '10.0.0.5/export' is not host:/path for nfs; expected a source such as '10.0.0.5:/export/train'"),
    ({"type": "lustre", "source": "10.0.0.5@tcp:/averyverylongname"}, None, "storage.external.source",
     "does not end in :/<fsname> of at most 8 characters"),
    ({"type": "lustre", "source": "10.0.0.5@eth:/lustre"}, None, "storage.external.source",
     "'10.0.0.5@eth' is not an LNet NID such as 10.0.0.5@tcp or 10.0.0.5@o2ib"),
    ({"type": "weka", "source": "backend-1"}, None, "storage.external.source",
     "is not backend[,backend...]/<file system> for weka"),
    ({"type": "gpfs", "source": "/dev/gpfs0"}, None, "storage.external.source",
     "'/dev/gpfs0' is not a Storage Scale device name"),
    ({"type": "nfs4", "source": "x:/y"}, None, "storage.external.type",
     "expected one of: nfs, lustre, weka, vast, gpfs"),
    ({"type": "weka", "source": "b1/fs", "transport": "rdma"}, None, "storage.external.transport",
     "transport 'rdma' is set for type weka; expected it only for nfs or vast"),
    ({**NFS, "transport": "rdma", "nconnect": 8}, None, "storage.external.nconnect",
     "nconnect 8 is set for nfs over rdma; expected it only for nfs or vast over tcp"),
    ({**NFS, "nconnect": 17}, None, "storage.external.nconnect", "less than or equal to 16"),
    ({**NFS, "options": ["rsize=1048576,wsize=1048576"]}, None, "storage.external.options",
     "option 'rsize=1048576,wsize=1048576' is not key or key=value"),
    ({**NFS, "options": ["proto=udp"]}, None, "storage.external.options",
     "option 'proto=udp' is one the planner sets"),
    ({**NFS, "mount_point": "mnt/data"}, None, "storage.external.mount_point",
     "mount_point 'mnt/data' is not an absolute, normalised path"),
    ({**NFS, "mount_point": "/var/lib/data"}, None, "storage.external.mount_point",
     "mount_point '/var/lib/data' is or lies under a system or clustersmith path"),
    ({**NFS, "capability": {"read_throughput": "fast"}}, None, "storage.external.capability.read_throughput",
     "expected a rate"),
    ({**NFS, "transport": "rdma"}, PROVIDERS["aws"], "storage.external.transport",
     "transport 'rdma' on target.provider aws; expected tcp: the aws RDMA network (EFA, SRD transport)"),
    ({"type": "lustre", "source": "10.0.0.5@o2ib:/lustre"}, PROVIDERS["azure"], "storage.external.source",
     "names o2ib NIDs on target.provider azure; expected @tcp NIDs"),
    ({"type": "weka", "source": "b1/fs"}, LAB, "storage.external.type",
     "type 'weka' on target.provider lab; expected nfs: the lab's image carries the kernel NFS client only"),
]


@pytest.mark.parametrize(("external", "target", "path", "message"), SPEC_ERRORS,
                         ids=[f"{c[2]}:{c[3][:30]}" for c in SPEC_ERRORS])
def test_external_spec_error(external: dict[str, Any], target: dict[str, Any] | None, path: str,
                             message: str) -> None:
    problems = _problems(_doc(external, target))
    assert any(p == path and message in m for p, m in problems), problems


@pytest.mark.parametrize(("provider", "engine", "client"), [
    ("aws", "managed-lustre", "lustre"), ("gcp", "managed-lustre", "lustre"), ("azure", "managed-lustre", "lustre"),
    ("baremetal", "ceph", "cephfs")])
def test_the_engine_follows_the_target(provider: str, engine: str, client: str) -> None:
    doc = _doc(target=PROVIDERS[provider])
    doc["compute"] = {"accelerator": "H200", "gpus": 16}
    doc["data"] = {"training_set": "20TB", "validation_set": "1TB", "hot_fraction": "20%"}
    doc["performance"]["storage"].update(read_throughput=">=20GB/s", write_throughput=">=5GB/s")
    bp = plan(parse_requirements(yaml.safe_dump(doc)))
    shared = bp.storage.shared
    assert (shared.engine.value, shared.client) == (engine, client)
    assert shared.engine.derived_from.rule == "storage.engine_by_target"
    assert (bp.storage.ceph is None) == (engine != "ceph")
    assert (bp.storage.managed is None) == (engine != "managed-lustre")
    # dm-cache only where a node owns a block device (its own NVMe-oF namespace: bare metal); FS-Cache for CephFS
    assert (bp.storage.cache is None) == (provider != "baremetal")
    assert (shared.fscache is not None) == (client == "cephfs")


def test_an_external_system_replaces_every_storage_server() -> None:
    doc = _doc({**NFS, "transport": "rdma", "capability": {"read_throughput": "600GB/s", "capacity": "2PB"}})
    bp = plan(parse_requirements(yaml.safe_dump(doc)))
    shared = bp.storage.shared
    assert shared.engine.value == "external" and shared.owner == "user" and shared.client == "nfs"
    assert shared.engine.derived_from.spec == ("storage.external.type",)
    assert shared.options == ("proto=rdma", "port=20049", "fsc")
    assert shared.source == "10.0.0.5:/export/train" and shared.mount_point == "/mnt/nfs"
    assert bp.storage.ceph is None and bp.storage.nvmeof is None and bp.storage.cache is None
    assert [g.role for g in bp.hosts] == ["gpu_client", "monitoring"]
    assert [d.name for d in bp.hosts[0].disks] == ["fast"]  # FS-Cache's volume
    assert str(bp.storage.read_throughput.value) == "600GB/s"
    assert bp.storage.read_throughput.derived_from.spec == ("storage.external.capability.read_throughput",)
    assert bp.storage.write_throughput.derived_from.rule == "storage.external_target_unstated"
    assert FSCACHE_HIT_RATIO in {q.name for q in bp.monitoring.queries}
    checks = {c.id: c for c in bp.acceptance.checks}
    assert "cache.hit_ratio" not in checks and "storage.ceph_health" not in checks and "nvmeof.paths" not in checks
    for cid in ("storage.read_throughput", "storage.write_throughput", "storage.latency_p99", "storage.mixed",
                "cache.fscache_hit_ratio"):
        args = args_as(checks[cid].args, FioArgs)
        assert args.owner == "user", cid
        assert (args.system or "").startswith("the user's own nfs at 10.0.0.5:/export/train"), cid
    assert {w.on for w in bp.acceptance.workloads} == {"shared"}
    cache = args_as(checks["cache.fscache_hit_ratio"].args, FioArgs)
    # NFS: through netfs on 6.11 and later, page by page through FS-Cache's fallback API (the IO line) before
    assert [(c.kernels, c.hits, c.misses) for c in cache.counters] == [
        ("6.11 and later", ("CaRdOps:RD",), ("DownOps:DL",)), ("5.17-6.10", ("IO:rd",), ("IO:wr", "NoSpace:nwr"))]
    assert (cache.counters[1].hit_counters, cache.counters[1].miss_counters) == (
        (("IO", "rd"),), (("IO", "wr"), ("NoSpace", "nwr")))


@pytest.mark.parametrize(("capability", "path", "message"), [
    ({"read_throughput": "400GB/s"}, "storage.external.capability.read_throughput",
     "read_throughput 400GB/s is below performance.storage.read_throughput 500GB/s: the nfs system at "
     "10.0.0.5:/export/train cannot meet the target; expected at least 500GB/s"),
    ({"write_throughput": "50GB/s"}, "storage.external.capability.write_throughput",
     "write_throughput 50GB/s is below performance.storage.write_throughput 100GB/s"),
    ({"capacity": "100TB"}, "storage.external.capability.capacity",
     "capacity 100TB is below the data it must hold (training + validation sets + 2 checkpoints = 554TB)"),
])
def test_a_stated_capability_below_the_targets_is_refused(capability: dict[str, str], path: str,
                                                          message: str) -> None:
    doc = _doc({**NFS, "capability": capability})
    with pytest.raises(InfeasibleError) as info:
        plan(parse_requirements(yaml.safe_dump(doc)))
    ((found_path, found),) = [(p.path, p.message) for p in info.value.problems]
    assert found_path == path and found.startswith(message)


def test_build_exits_2_naming_the_capability(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from blueprints.cli import main

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(_doc({**NFS, "capability": {"read_throughput": "400GB/s"}}), sort_keys=False))
    monkeypatch.setattr(sys, "argv", ["clustersmith", "build", str(spec), "-o", str(tmp_path / "out")])
    with pytest.raises(SystemExit) as info:
        main()
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert "storage.external.capability.read_throughput" in err and "400GB/s" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_the_lab_plans_fscache_beside_dm_cache_on_its_fast_disk() -> None:
    bp = plan(parse_requirements((REPO / "examples" / "lab.yaml").read_text()))
    cache, fscache = bp.storage.cache, bp.storage.shared.fscache
    assert cache is not None and fscache is not None
    # CephFS reads through netfs on every kernel since 5.17; its lines moved and were renamed (newest first)
    assert [(c.kernels, c.hits, c.misses) for c in fscache.counters] == [
        ("6.11 and later", (("CaRdOps", "RD"),), (("DownOps", "DL"),)),
        ("6.8-6.10", (("Netfs", "RD"),), (("Netfs", "DL"),)),
        ("5.17-6.7", (("RdHelp", "RD"),), (("RdHelp", "DL"),))]
    assert cache.size.value.value + fscache.size.value.value + (64 << 20) <= 1 << 30  # the lab's 1 GiB fast disk
    assert "fsc" in bp.storage.shared.options
