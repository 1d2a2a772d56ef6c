"""Planner rules as tables: each row is an input and the decision the rule must make."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.blueprint import Blueprint
from blueprints.errors import InfeasibleError
from blueprints.loader import parse_requirements
from blueprints.planner import plan
from blueprints.planner.qos import traffic_class
from blueprints.planner.storage import protection_options
from blueprints.units import Size

REPO = Path(__file__).resolve().parents[4]


def spec(path: str = "cv-training-500tb.yaml", **changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((REPO / "examples" / path).read_text())
    for dotted, value in changes.items():
        node = doc
        *parents, last = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return doc


def planned(doc: dict[str, Any]) -> Blueprint:
    return plan(parse_requirements(yaml.safe_dump(doc, sort_keys=False)))


# fat-tree sizing against the SuperPOD tables: tests/unit/blueprints/planner/test_fabric_sizing.py


FORCED = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE", "NCCL_NET_GDR_LEVEL",
          "NCCL_IB_GID_INDEX", "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", "NCCL_IB_HCA"}


@pytest.mark.parametrize(("gpus", "nodes"), [(8, 1), (64, 8), (72, 9), (512, 64)])
def test_nodes_and_no_forced_nccl_choice(gpus: int, nodes: int) -> None:
    bp = planned(spec(compute__gpus=gpus, performance__storage__read_throughput=">=10GB/s"))
    assert bp.compute.nodes.value == nodes
    assert not FORCED & {e.name for e in bp.nccl_environment()}
    assert f"AllReduce on {gpus} GPUs" in bp.nccl.algorithm_expectation.value
    (algo,) = bp.nccl.degraded_env
    assert algo.name == "NCCL_ALGO" and algo.value.endswith(";allreduce:ring")
    assert ":" not in algo.value.split(";")[0]  # a default list for every other collective


@pytest.mark.parametrize(("provider_block", "instance", "env", "note"), [
    ({"provider": "aws", "region": "us-east-1"}, None, {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"},
     "aws-ofi-nccl plugin"),
    ({"provider": "gcp", "region": "us-central1"}, "a3-ultragpu-8g", {"NCCL_NET": "gIB"}, "set_nccl_env.sh"),
    ({"provider": "gcp", "region": "us-central1"}, "a4-highgpu-8g", {"NCCL_NET": "gIB"}, "set_nccl_env.sh"),
    ({"provider": "azure", "region": "eastus"}, "Standard_ND96isr_H100_v5",
     {"NCCL_TOPO_FILE": "/opt/microsoft/ndv5/topo.xml"}, None),
    ({"provider": "azure", "region": "eastus"}, "Standard_ND96isr_H200_v5", {}, "NCCL_TOPO_FILE is not set"),
])
def test_provider_nccl_settings_cite_their_document(provider_block: dict[str, str], instance: str | None,
                                                    env: dict[str, str], note: str | None) -> None:
    changes: dict[str, Any] = {"target": provider_block, "performance__storage__latency_p99": "<2ms",
                               "performance__storage__read_throughput": ">=50GB/s",
                               "performance__storage__write_throughput": ">=10GB/s",
                               "data__training_set": "50TB", "data__validation_set": "5TB"}
    if instance is not None:
        changes["compute__instance_type"] = instance
        changes["compute__accelerator"] = {"a3-ultragpu-8g": "H200", "a4-highgpu-8g": "B200",
                                           "Standard_ND96isr_H200_v5": "H200"}.get(instance, "H100-SXM")
    bp = planned(spec(**changes))
    got = {e.name: e for e in bp.nccl.env}
    for name, value in env.items():
        assert got[name].value == value
        assert any(s in got[name].derived_from.formula for s in ("docs.aws", "sagemaker", "cluster-toolkit",
                                                                  "azhpc-images"))
    if note is not None:
        assert any(note in n for n in bp.notes)
    assert not bp.nccl.ib_hca_rails.value if "NCCL_NET" in env or "FI_PROVIDER" in env else True


@pytest.mark.parametrize(("dscp", "tos"), [(26, 106), (24, 98), (0, 2)])
def test_traffic_class(dscp: int, tos: int) -> None:
    assert traffic_class(dscp) == tos


def test_one_qos_plan_feeds_every_layer() -> None:
    bp = planned(spec())
    env = {e.name: e.value for e in bp.nccl_environment()}
    assert bp.qos.dscp.value == 26 and bp.qos.roce_priority.value == 3
    assert int(env["NCCL_IB_TC"]) == bp.qos.traffic_class.value == 106
    assert "NCCL_IB_TC" not in {e.name for e in bp.nccl.env}  # stored once, in the QoS plan
    assert bp.qos.pfc_priorities == (3,) and bp.qos.dcqcn_priorities == (3,)
    assert bp.qos.switch_dscp_to_priority == {26: 3, 48: 6}


@pytest.mark.parametrize(
    ("provider_block", "kind", "managed"),
    [
        ({"provider": "baremetal", "fabric": "roce", "management_network": "10.0.0.0/16"}, "roce", False),
        ({"provider": "baremetal", "fabric": "infiniband", "management_network": "10.0.0.0/16"}, "infiniband", False),
        ({"provider": "aws", "region": "us-east-1"}, "efa", True),
        ({"provider": "azure", "region": "eastus"}, "infiniband", True),
        ({"provider": "gcp", "region": "us-central1"}, "roce", True),
    ],
)
def test_fabric_by_target(provider_block: dict[str, str], kind: str, managed: bool) -> None:
    # targets every cloud's managed file system can hold (Azure Managed Lustre lists at most 128 TiB per tier);
    # GCP builds RDMA machine types only (H100 there is a3-megagpu-8g's TCPXO, refused): plan its H200
    gpu = {"compute__accelerator": "H200"} if provider_block["provider"] == "gcp" else {}
    bp = planned(spec(target=provider_block, **gpu, performance__storage__latency_p99="<2ms",
                      performance__storage__read_throughput=">=50GB/s",
                      performance__storage__write_throughput=">=10GB/s",
                      data__training_set="50TB", data__validation_set="5TB"))
    assert bp.fabric.kind.value == kind
    assert bp.fabric.provider_managed is managed
    assert bp.qos.applies is (kind == "roce" and not managed)


@pytest.mark.parametrize(
    ("label", "raw_tb"),
    # 500 TB usable (field-numbers 7): 8+2 -> 625 TB, 6+3 -> 750 TB, 4+2 -> 750 TB, 3 replicas -> 1,500 TB
    [("erasure-8+2", 625), ("erasure-6+3", 750), ("erasure-4+2", 750), ("replica-1+2", 1500)],
)
def test_protection_raw_capacity(label: str, raw_tb: float) -> None:
    by_label = {f"{o.scheme}-{o.data}+{o.parity}": o for o in protection_options(500e12)}
    assert by_label[label].raw.value == pytest.approx(raw_tb * 1e12)


def test_canonical_design_meets_500gbs_with_visible_arithmetic() -> None:
    bp = planned(spec())
    hot = next(t for t in bp.storage.tiers if t.name == "hot")
    assert hot.aggregate_read.value.value >= 500e9
    assert hot.aggregate_read.value.value == pytest.approx(hot.nodes.value * hot.per_node_read.value)
    assert "nodes x" in hot.aggregate_read.derived_from.formula
    assert hot.raw.value.value == pytest.approx(hot.usable.value.value * {"ec-4+2": 1.5, "ec-8+2": 1.25,
                                                                            "ec-6+3": 1.5, "replica-3": 3}[
        hot.protection.value])
    assert bp.storage.nvmeof is not None
    assert bp.storage.nvmeof.paths_per_subsystem.value == bp.compute.storage_nics
    assert [s.owner for s in bp.storage.nvmeof.subsystems] == bp.hosts_by_role()["gpu_client"]


@pytest.mark.parametrize(("read", "nodes_at_least"), [(">=500GB/s", 6), (">=900GB/s", 10), (">=90GB/s", 1)])
def test_hot_nodes_scale_with_throughput(read: str, nodes_at_least: int) -> None:
    doc = spec(performance__storage__read_throughput=read)
    bp = planned(doc)
    hot = next(t for t in bp.storage.tiers if t.name == "hot")
    assert hot.nodes.value >= nodes_at_least
    asked = parse_requirements(yaml.safe_dump(doc)).performance.storage.read_throughput
    assert hot.aggregate_read.value.value >= asked.value


@pytest.mark.parametrize(("business", "policy"), [("training", "round-robin"), ("inference", "queue-depth")])
def test_iopolicy_by_workload(business: str, policy: str) -> None:
    changes: dict[str, Any] = {"business__type": business}
    if business == "inference":
        changes["performance__serving"] = {"p99_latency": "<50ms", "qps_per_gpu": 5000}
    bp = planned(spec(**changes))
    assert bp.storage.nvmeof is not None and bp.storage.nvmeof.iopolicy.value == policy


@pytest.mark.parametrize(
    ("changes", "path", "fragments"),
    [
        ({"performance__storage__latency_p99": "<50us"}, "performance.storage.latency_p99",
         ["latency_p99 <50us cannot be met", "nvme-tlc-15tb", "75us", "77us"]),
        ({"compute__gpus": 8, "performance__storage__read_throughput": ">=500GB/s"},
         "performance.storage.read_throughput", ["read_throughput >=500GB/s cannot be met", "1 GPU nodes x 40GB/s"]),
        ({"compute__gpus": 800_000, "target": {"provider": "baremetal", "fabric": "infiniband",
                                               "management_network": "10.0.0.0/16"}}, "compute.gpus",
         ["gpus 800000 need 800000 fabric endpoints (100000 nodes x 8 rails)", "QM9700", "65536"]),
        ({"compute__instance_type": "p5.48xlarge"}, "compute.instance_type",
         ["'p5.48xlarge' is not a H100-SXM server in the catalog"]),
    ],
)
def test_infeasible_names_both_numbers(changes: dict[str, Any], path: str, fragments: list[str]) -> None:
    with pytest.raises(InfeasibleError) as info:
        planned(spec(**changes))
    (p,) = info.value.problems
    assert p.path == path
    for fragment in fragments:
        assert fragment in p.message


def test_lab_checks_are_informational_and_lab_plan_matches_target() -> None:
    bp = planned(spec("lab.yaml"))
    assert bp.lab is not None
    assert [h.role for h in bp.lab.hosts] == ["storage_target", "gpu_client", "gpu_client"]
    assert [r.subnet for r in bp.lab.rails] == ["10.77.0.0/24", "10.77.1.0/24"]
    judged = ("storage.mixed", "storage.ceph_health")  # errors and the cluster's state, not emulated performance
    perf = [c for c in bp.acceptance.checks if c.id.startswith("storage.") and c.id not in judged]
    assert perf and all(c.severity == "info" for c in perf)
    assert all(c.severity == "error" for c in bp.acceptance.checks if c.id in judged)
    assert bp.nccl.ib_hca_rails.value == (0, 1)  # NCCL_IB_HCA per host from the devices the rdma role finds


def test_the_lab_exporter_refreshes_less_often_than_real_hosts() -> None:
    """Each exporter run costs seconds of CPU in an emulated guest; real hosts refresh every 10 s."""
    assert planned(spec("lab.yaml")).monitoring.collect_interval.value == 30
    assert planned(spec()).monitoring.collect_interval.value == 10


def test_planning_is_deterministic() -> None:
    a = planned(spec()).model_dump_json()
    b = planned(spec()).model_dump_json()
    assert a == b


@pytest.mark.parametrize(
    ("accelerator", "fabric", "expected", "variable"),
    [
        ("H100-SXM", "infiniband", "sharp", "NCCL_COLLNET_ENABLE"),  # the catalog's QM9700 offers SHARP
        ("H100-SXM", "roce", "nvls", "NCCL_NVLS_ENABLE"),  # 8 GPUs on an NVSwitch with NVLink SHARP
        ("A100", "roce", "none", None),  # its NVSwitch has no NVLink SHARP
    ],
)
def test_in_network_reduction_comes_from_the_catalog(accelerator: str, fabric: str, expected: str,
                                                     variable: str | None) -> None:
    bp = planned(spec(compute__accelerator=accelerator, target__fabric=fabric))
    assert bp.nccl.in_network_reduction.value == expected
    env = {v.name for v in bp.nccl.env}
    assert not {"NCCL_COLLNET_ENABLE", "NCCL_NVLS_ENABLE"} & env  # expected, never forced node-wide (10.1)
    assert "catalog" in bp.nccl.in_network_reduction.derived_from.formula
    if variable:
        assert variable in bp.nccl.in_network_reduction.derived_from.formula


# the fio working set: half the hot tier at most (issue 18, item 5) -------------------------------------------------


def test_the_fio_files_fit_in_half_the_hot_tier_uncapped() -> None:
    bp = planned(spec())
    fp = bp.acceptance.footprint
    assert fp is not None
    assert fp.files == bp.compute.nodes.value * bp.compute.gpus_per_node
    assert fp.per_file.value == 4 * 2**30  # the shape's choice: it fits
    assert fp.footprint.value.value == fp.files * fp.per_file.value <= fp.tier_usable.value / 2
    assert fp.fill_time.value.value == pytest.approx(fp.footprint.value.value / bp.storage.write_throughput.value.value)
    # every workload reuses the same files, but the FS-Cache check's, which must fit half the cache
    assert all(w.size.value == fp.per_file for w in bp.acceptance.workloads if w.name != "cache_read")


def test_the_cache_check_files_fit_half_the_fscache_in_whole_mib() -> None:
    bp = planned(spec())
    fscache = bp.storage.shared.fscache
    assert fscache is not None  # cv-training: CephFS with FS-Cache on the local NVMe
    fp = bp.acceptance.footprint
    assert fp is not None
    cache = next(w for w in bp.acceptance.workloads if w.name == "cache_read")
    jobs = bp.compute.gpus_per_node
    room = fscache.size.value.value / 2 / jobs
    assert cache.size.value.value == min(fp.per_file.value, room) // 2**20 * 2**20
    assert Size.parse(cache.size.value.text).value == cache.size.value.value  # its text reads back to the same bytes
    assert cache.size.derived_from.rule == "acceptance.cache_files_fit_half_the_cache"
    assert "whole MiB" in cache.size.derived_from.formula
    assert (cache.on, cache.direct, cache.time_based) == ("shared", False, False)  # buffered: no O_DIRECT


def test_the_lab_cache_check_reads_whole_32mib_files() -> None:
    """The lab's 32 MiB files (the smallest a sequential job allows) fit its cache: 32 MiB exactly, in a text that a
    reloaded Blueprint reads back the same (Size.of's decimal text would make it 33554400 bytes, not a whole 1M
    block)."""
    bp = planned(spec("lab.yaml"))
    cache = next(w for w in bp.acceptance.workloads if w.name == "cache_read")
    assert cache.size.value.value == 32 * 2**20 and Size.parse(cache.size.value.text).value == 32 * 2**20


def test_a_ceph_design_measures_the_storage_system_on_its_shared_mount_and_latency_on_the_own_namespace() -> None:
    bp = planned(spec())
    assert bp.storage.ceph is not None and bp.storage.nvmeof is not None
    on = {w.name: w.on for w in bp.acceptance.workloads}
    assert bp.storage.shared.fscache is not None  # the cache check reads the shared mount (CephFS with fsc)
    assert on == {"seq_read": "shared", "seq_write": "shared", "rand_read_4k": "tier", "mixed": "shared",
                  "cache_read": "shared"}
    shared, tier = bp.acceptance.scratch_dir("shared"), bp.acceptance.scratch_dir("tier")
    hot = next(p for p in bp.storage.ceph.pools if p.tier == "hot")
    assert (shared.path, shared.mount) == (f"{bp.storage.ceph.mount.mount_point}{hot.directory}/.clustersmith-accept",
                                           bp.storage.ceph.mount.mount_point)
    assert hot.directory == "/hot" and shared.derived_from.rule == "acceptance.scratch_on_shared_fs"
    assert tier.mount == bp.storage.cache.mount_point
    latency = next(w for w in bp.acceptance.workloads if w.name == "rand_read_4k")
    assert "own NVMe-oF namespace" in latency.purpose
    # each node's latency files fit in half its namespace, and the formula says both caps
    size = latency.size
    assert bp.compute.gpus_per_node * size.value.value <= bp.storage.nvmeof.namespace_size.value.value / 2
    assert "half the hot tier" in size.derived_from.formula and "half the node's" in size.derived_from.formula


def test_where_no_node_owns_a_block_device_every_workload_runs_on_the_shared_mount() -> None:
    bp = planned(spec(target={"provider": "aws", "region": "us-east-1"}, performance__storage__latency_p99="<2ms"))
    assert bp.storage.ceph is None and bp.storage.nvmeof is None and bp.storage.cache is None
    assert bp.storage.shared.engine.value == "managed-lustre" and bp.storage.shared.fscache is None
    on = {w.name: w.on for w in bp.acceptance.workloads}
    assert on == {"seq_read": "shared", "seq_write": "shared", "rand_read_4k": "shared", "mixed": "shared"}
    assert [(a.fs, a.mount) for a in bp.acceptance.scratch] == [("shared", bp.storage.shared.mount_point)]
    latency = next(w for w in bp.acceptance.workloads if w.name == "rand_read_4k")
    assert latency.purpose == "4k random read completion latency on the shared file system"


def test_the_fio_files_shrink_to_half_the_hot_tier_on_a_large_fleet() -> None:
    bp = planned(spec(compute__gpus=100_000))
    fp = bp.acceptance.footprint
    assert fp is not None
    hot = next(t for t in bp.storage.tiers if t.name == "hot").usable.value.value
    assert fp.files * 4 * 2**30 > hot / 2  # the 4 GiB choice would not fit
    assert fp.per_file.value == int(hot / 2 / fp.files) // 2**20 * 2**20
    assert fp.footprint.value.value <= hot / 2
    size = bp.acceptance.workloads[0].size
    assert "half the hot tier" in size.derived_from.formula and size.derived_from.rule == "acceptance.fio_file_size"


def test_a_hot_tier_too_small_for_the_fio_files_is_refused() -> None:
    with pytest.raises(InfeasibleError) as refused:
        planned(spec(compute__gpus=100_000, data__training_set="2TB", data__validation_set="200GB",
                     performance__storage__read_throughput=">=50GB/s",
                     performance__storage__write_throughput=">=10GB/s"))
    problem = refused.value.problems[0]
    assert problem.path == "data.training_set"
    assert problem.message.startswith("acceptance writes one scratch file per GPU, each at least 32MiB")
    assert "half the hot tier's" in problem.message and "/ 100000 files (one per GPU)" in problem.message
    assert "expected a hot tier of at least" in problem.message
