"""The Ceph plan (issue 18 item 3): per-node rates from the catalog's published per-OSD figures, protection
amplification, k+m+1 hosts, PG counts, daemons, networks, and the lab's listed exceptions."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blueprints.blueprint import Blueprint, CephPlan, ProtectionOption
from blueprints.catalog import load_catalog
from blueprints.errors import InfeasibleError
from blueprints.loader import parse_requirements
from blueprints.planner.ceph import node_rates, pg_count, protection_label
from blueprints.planner.context import PlanContext
from blueprints.planner.storage import protection_options
from blueprints.units import Rate, Size
from tests.unit.blueprints.planner.test_rules import planned, spec
from tests.unit.blueprints.test_cli import run

GIB = 2.0**30


def _ceph(bp: Blueprint) -> CephPlan:
    assert bp.storage.ceph is not None
    return bp.storage.ceph


def test_catalog_per_osd_rates_are_the_published_result_divided_by_its_osds() -> None:
    # ceph.io "Ceph: A Journey to 1 TiB/s", 630 OSDs: 3x 1025 GiB/s read, 270 GiB/s write; EC 6+2 547 / 387 GiB/s
    rate = load_catalog().drives["nvme-tlc-15tb"].ceph_osd
    assert rate is not None
    assert rate.read_replicated.value == pytest.approx(1025 / 630 * GIB, rel=1e-3)
    assert rate.write_replicated.value == pytest.approx(270 * 3 / 630 * GIB, rel=1e-3)
    assert rate.read_erasure.value == pytest.approx(547 / 630 * GIB, rel=1e-3)
    assert rate.write_erasure.value == pytest.approx(387 * 8 / 6 / 630 * GIB, rel=1e-3)
    assert "ceph.io/en/news/blog/2024/ceph-a-journey-to-1tibps" in rate.source
    assert all(d.osds_per_drive == 1 for d in load_catalog().drives.values())


def test_cv_training_500tb_hot_tier_is_bound_by_its_osds() -> None:
    bp = planned(spec())
    ceph = _ceph(bp)
    hot = next(t for t in bp.storage.tiers if t.name == "hot")
    group = ceph.osd_groups[0]
    rate = load_catalog().drives["nvme-tlc-15tb"].ceph_osd
    assert rate is not None
    # 24 OSDs x 1.627 GiB/s = 41.9 GB/s, below 1 public 400G NIC (50 GB/s) and 24 drives x 7 GB/s
    assert hot.protection.value == "replica-3"
    assert group.per_node_read.value.value == pytest.approx(24 * rate.read_replicated.value)
    assert "24 OSDs x" in group.per_node_read.derived_from.formula
    assert hot.nodes.value == math.ceil(500e9 / group.per_node_read.value.value) == 12
    assert bp.storage.read_throughput.value.value >= 500e9
    # writes after 3 copies: 24 x 1.286 GiB/s / 3
    assert group.per_node_write.value.value == pytest.approx(24 * rate.write_replicated.value / 3)
    assert bp.storage.write_throughput.value.value == pytest.approx(12 * group.per_node_write.value.value)
    assert bp.storage.write_throughput.value.value >= 100e9
    assert ceph.daemons.monitors.value == 5 and ceph.daemons.managers.value == 5
    assert (ceph.daemons.mds_active.value, ceph.daemons.mds_standby.value) == (1, 1)
    assert ceph.failure_domain.value == "host"


def test_warm_and_cold_take_an_erasure_code_where_it_saves_servers() -> None:
    """With 24 drives a server, a small warm or cold tier needs more servers under EC 4+2 (k+m+1 = 7) than under
    3 replicas (4): EC would buy more disks, not fewer. Past that size the erasure code needs no more servers than
    replicas and is taken, with room to rebuild (k+m+1 hosts) and less raw capacity."""
    small = planned(spec())
    for tier in (t for t in small.storage.tiers if t.name in ("warm", "cold")):
        assert (tier.protection.value, tier.nodes.value) == ("replica-3", 4), tier.protection
        ec = {o.data: o for o in tier.alternatives if o.scheme == "erasure"}[4]
        assert ec.min_nodes == 7 > tier.nodes.value
        assert tier.protection.derived_from.rule == "storage.ec_where_it_saves_servers"
    big = planned(spec(data__training_set="5PB"))
    for tier in (t for t in big.storage.tiers if t.name in ("warm", "cold")):
        assert tier.protection.value.startswith("ec-"), tier.protection
        k, m = (int(x) for x in tier.protection.value.removeprefix("ec-").split("+"))
        assert tier.nodes.value >= k + m + 1
        assert tier.raw.value.value < tier.usable.value.value * 3  # saves raw against 3 replicas
    pools = {p.tier: p for p in _ceph(big).pools if p.tier}
    assert pools["warm"].crush_device_class == "qlc" and pools["cold"].crush_device_class == "hdd"
    assert pools["hot"].crush_device_class == "nvme"
    assert all(p.allow_ec_overwrites for p in pools.values() if p.type == "erasure")
    assert {p.directory for p in pools.values()} == {"/hot", "/warm", "/cold"}


@pytest.mark.parametrize(("k", "m"), [(8, 2), (6, 3), (4, 2)])
def test_erasure_codes_need_k_plus_m_plus_one_hosts(k: int, m: int) -> None:
    by = {(o.data, o.parity): o for o in protection_options(1e15) if o.scheme == "erasure"}
    assert by[(k, m)].min_nodes == k + m + 1
    assert by[(k, m)].multiplier == pytest.approx((k + m) / k)
    replica = next(o for o in protection_options(1e15) if o.scheme == "replica")
    assert replica.min_nodes == replica.parity + 1 + 1


@pytest.mark.parametrize(("k", "m"), [(8, 2), (4, 2), (2, 1)])
def test_write_per_node_is_divided_by_the_ec_amplification(k: int, m: int) -> None:
    ctx = PlanContext(req=parse_requirements(yaml.safe_dump(spec())), catalog=load_catalog())
    server = ctx.catalog.storage_servers["nvme-tlc-server"]
    opt = ProtectionOption(scheme="erasure", data=k, parity=m, multiplier=(k + m) / k, raw=Size.of(1e12),
                           min_nodes=k + m + 1)
    rate = ctx.catalog.drives["nvme-tlc-15tb"].ceph_osd
    assert rate is not None
    got = node_rates(ctx, server, opt)
    assert got.write.value == pytest.approx(min(24 * rate.write_erasure.value / ((k + m) / k),
                                                50e9, 24 * 7e9 / ((k + m) / k), 50e9 / ((k + m) / k - 1)))
    assert f"/ {(k + m) / k:.4g}" in got.write_why
    assert got.read.value == pytest.approx(24 * rate.read_erasure.value)


def test_drives_without_a_published_ceph_rate_say_so() -> None:
    ctx = PlanContext(req=parse_requirements(yaml.safe_dump(spec())), catalog=load_catalog())
    opt = protection_options(1e12)[2]
    got = node_rates(ctx, ctx.catalog.storage_servers["hdd-server"], opt)
    assert got.read == Rate.of(60 * 285e6)
    assert "no published per-OSD Ceph rate for hdd-24tb" in got.read_why


@given(osds=st.integers(min_value=1, max_value=200_000), size=st.integers(min_value=2, max_value=20),
       share=st.sampled_from([0.0, 1.0]))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_pg_count_is_a_power_of_two_near_the_calculator(osds: int, size: int, share: float) -> None:
    pgs, formula = pg_count(osds, size, share)
    assert pgs & (pgs - 1) == 0
    value = max(100 * osds * share / size, osds / size)
    assert value * 0.75 <= pgs <= value * 2 or pgs == 1  # never more than 25 % under the calculator's value
    assert f"power of two {pgs}" in formula


def test_pg_counts_of_cv_training_500tb() -> None:
    pools = {p.name: p for p in _ceph(planned(spec())).pools}
    # 12 hot hosts x 24 OSDs = 288: 100 x 288 / 3 = 9600 -> 8192; warm 7 x 24 = 168 / 6 = 2800 -> 2048 is > 25 %
    # under, so 4096; metadata holds no file data: 288 / 3 = 96 -> 128
    assert pools["cephfs_hot"].pg_num.value == 8192
    assert pools["cephfs_warm"].pg_num.value == 4096
    assert pools["cephfs_metadata"].pg_num.value == 128
    assert all(p.pg_autoscale_mode.value == "warn" for p in pools.values())
    assert pools["cephfs_metadata"].type == pools["cephfs_data"].type == "replicated"


def test_llm_training_16k_on_aws_has_no_ceph_and_on_bare_metal_five_monitors() -> None:
    assert planned(spec("llm-training-16k.yaml")).storage.ceph is None  # FSx for Lustre
    bp = planned(spec("llm-training-16k.yaml", target={"provider": "baremetal", "fabric": "roce",
                                                      "management_network": "10.0.0.0/16"},
                      compute__instance_type=None))
    ceph = _ceph(bp)
    assert ceph.daemons.monitors.value == 5
    assert ceph.osds.value == sum(g.hosts * g.osds_per_host.value for g in ceph.osd_groups)
    hot = next(t for t in bp.storage.tiers if t.name == "hot")
    per_node = ceph.osd_groups[0].per_node_read.value.value
    assert hot.aggregate_read.value.value == pytest.approx(hot.nodes.value * per_node)


def test_ceph_is_tcp_on_the_default_lossy_class() -> None:
    bp = planned(spec())
    net = _ceph(bp).network
    assert net.dscp.value == 0 and net.dscp.value != bp.qos.dscp.value
    assert net.lossless is False
    assert net.public_nic.value != net.cluster_nic.value


def test_lab_plan_is_one_vm_with_its_exceptions_listed() -> None:
    bp = planned(spec("lab.yaml"))
    ceph = _ceph(bp)
    assert (ceph.daemons.monitors.value, ceph.daemons.managers.value, ceph.daemons.mds_active.value) == (1, 1, 1)
    assert ceph.osds.value == 4 and ceph.failure_domain.value == "osd"
    hot = next(p for p in ceph.pools if p.tier == "hot")
    profile = next(p for p in ceph.ec_profiles if p.name == hot.erasure_code_profile)
    assert (profile.k, profile.m, profile.crush_failure_domain) == (2, 1, "osd")
    assert ceph.osds.value >= profile.k + profile.m + 1
    assert hot.min_size.value == 2
    assert any(p.type == "replicated" for p in ceph.pools)
    rules = {e.rule for e in ceph.lab_exceptions}
    assert {"monitors", "failure domain", "hosts", "EC min_size", "MDS", "PGs per OSD"} <= rules
    # the lab's PG target (16 per OSD, not 100): 16 x 4 / 3 = 21.3 -> 16 PGs on the EC pool, not 128
    assert ceph.target_pgs_per_osd == 16 and planned(spec()).storage.ceph.target_pgs_per_osd == 100  # type: ignore[union-attr]
    assert hot.pg_num.value == 16 and hot.pg_num.derived_from.formula.startswith("lab: 16 x 4 OSDs / size 3 = 21.33")
    assert ceph.network.public_subnet == "10.77.0.0/24" and ceph.network.cluster_subnet == "10.77.1.0/24"
    assert ceph.osd_device_min_size is not None and ceph.osd_device_min_size.value >= 6 * GIB


def test_clouds_have_no_ceph() -> None:
    bp = planned(spec(target={"provider": "aws", "region": "us-east-1"}, performance__storage__latency_p99="<2ms",
                      performance__storage__read_throughput=">=50GB/s",
                      performance__storage__write_throughput=">=10GB/s",
                      data__training_set="50TB", data__validation_set="5TB"))
    assert bp.storage.ceph is None


def test_a_tier_past_the_server_bound_names_the_ceph_arithmetic() -> None:
    doc = spec(performance__storage__read_throughput=">=1PB/s", compute__gpus=131072)
    with pytest.raises(InfeasibleError) as info:
        planned(doc)
    msgs = {p.path: p.message for p in info.value.problems}
    msg = msgs["performance.storage.read_throughput"]
    assert msg.startswith("the hot tier needs 23851 storage servers (read: 1PB/s / 41.9275GB/s per node")
    assert "24 OSDs x 1.627GiB/s replicated" in msg and msg.endswith("expected at most 10000 per tier")


def test_plan_cli_shows_the_ceph_design_and_exit_2_on_an_unmeetable_target(tmp_path: Path) -> None:
    shown = run("plan", "examples/cv-training-500tb.yaml")
    assert shown.returncode == 0, shown.stderr
    for text in ("Ceph cluster", "Ceph pools", "cephfs_hot", "cephfs_warm", "24 OSDs x"):
        assert text in shown.stdout
    lab = run("plan", "examples/lab.yaml")
    assert "lab exceptions to the real-design rules" in lab.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(spec(performance__storage__read_throughput=">=1PB/s", compute__gpus=131072)))
    out = run("plan", bad)
    assert out.returncode == 2
    assert "performance.storage.read_throughput" in out.stdout + out.stderr
    assert "Traceback" not in out.stderr


@given(read_gb=st.integers(min_value=1, max_value=20_000), write_gb=st.integers(min_value=1, max_value=4_000),
       train_tb=st.integers(min_value=1, max_value=50_000), hot=st.integers(min_value=1, max_value=100))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
def test_every_planned_ceph_design_keeps_its_rules(read_gb: int, write_gb: int, train_tb: int, hot: int) -> None:
    doc = spec(performance__storage__read_throughput=f">={read_gb}GB/s",
               performance__storage__write_throughput=f">={write_gb}GB/s", data__training_set=f"{train_tb}TB",
               data__validation_set=f"{train_tb / 10:g}TB",
               data__hot_fraction=f"{hot}%", compute__gpus=max(512, 8 * math.ceil(read_gb / 40) * 8))
    try:
        bp = planned(doc)
    except InfeasibleError as exc:  # a target past the planner's bounds: every problem names a spec field
        assert all(p.path.startswith(("performance.", "data.", "compute.")) for p in exc.problems)
        return
    ceph = _ceph(bp)
    tiers = {t.name: t for t in bp.storage.tiers}
    for group in ceph.osd_groups:
        tier = tiers[group.tier]
        chosen = next(o for o in tier.alternatives if protection_label(o) == tier.protection.value)
        assert group.hosts >= chosen.min_nodes  # k+m+1, replicas+1
        assert tier.aggregate_read.value.value == pytest.approx(group.hosts * group.per_node_read.value.value)
    for pool in ceph.pools:
        assert pool.pg_num.value & (pool.pg_num.value - 1) == 0
        assert pool.min_size.value < pool.size.value
    assert bp.storage.read_throughput.value.value >= read_gb * 1e9 * (1 - 1e-9)
    assert bp.storage.write_throughput.value.value >= write_gb * 1e9 * (1 - 1e-9)
    assert ceph.daemons.monitors.value in (3, 5) and ceph.network.lossless is False
