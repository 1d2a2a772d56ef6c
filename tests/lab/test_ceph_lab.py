"""Ceph and CephFS on the example lab after site.yml (issue 18, items 1, 2 and 7): what the ceph and shared_fs roles
built, read back from the cluster and the clients.

HEALTH_OK with nothing muted; every planned pool with its type, size, min_size, pg_num, autoscale mode, CRUSH rule,
EC profile and flags (``ceph osd pool ls detail``); every OSD with the tier's CRUSH device class; the manager's
prometheus module serving; both clients with CephFS mounted by the systemd mount unit, as their own cephx entity;
/hot laid out on the EC pool; files one client writes with verify=crc32c read back and verified by the other. Every
figure it prints is a lab figure (TCG): behaviour, never performance.
"""

from __future__ import annotations

import json
import time

import pytest

from blueprints.blueprint import CephPlan
from stacks.lab import Lab
from tests.lab.conftest import TIMINGS, ExampleLab

pytestmark = pytest.mark.lab

FIO_FILES = 4
FIO_FILE_MIB = 16


def ssh_out(lab: Lab, host: str, command: str, timeout: float = 600) -> str:
    done = lab.ssh(host, command, timeout=timeout)
    assert done.returncode == 0, f"{host}: `{command}` exited {done.returncode}: {done.stderr or done.stdout}"
    return done.stdout


def ceph_json(lab: Lab, host: str, command: str) -> object:
    return json.loads(ssh_out(lab, host, f"ceph --connect-timeout 120 {command} -f json"))


def plan(deployed: ExampleLab) -> CephPlan:
    ceph = deployed.blueprint.storage.ceph
    assert ceph is not None, "the example lab plans Ceph"
    return ceph


def mon_host(deployed: ExampleLab) -> str:
    return plan(deployed).daemons.monitor_hosts[0]


def test_health_ok_with_nothing_muted(deployed: ExampleLab) -> None:
    health = ceph_json(deployed.lab, mon_host(deployed), "health detail")
    assert isinstance(health, dict)
    assert health["status"] == "HEALTH_OK", health
    assert not health.get("mutes"), f"muted health checks: {health.get('mutes')}"


def test_every_planned_pool_has_its_profile(deployed: ExampleLab) -> None:
    ceph = plan(deployed)
    lab, host = deployed.lab, mon_host(deployed)
    listed = ceph_json(lab, host, "osd pool ls detail")
    rules = {r["rule_id"]: r["rule_name"] for r in ceph_json(lab, host, "osd crush rule dump")}  # type: ignore[union-attr]
    assert isinstance(listed, list)
    pools = {p["pool_name"]: p for p in listed}
    for want in ceph.pools:
        got = pools.get(want.name)
        assert got is not None, f"pool {want.name} missing; pools: {sorted(pools)}"
        seen = {"type": got["type"], "size": got["size"], "min_size": got["min_size"], "pg_num": got["pg_num"],
                "pgp_num": got["pg_placement_num"], "autoscale": got["pg_autoscale_mode"],
                "rule": rules[got["crush_rule"]], "application": sorted(got["application_metadata"]),
                "ec_overwrites": "ec_overwrites" in got["flags_names"].split(","),
                "profile": got["erasure_code_profile"] or None}
        planned = {"type": 3 if want.type == "erasure" else 1, "size": want.size.value,
                   "min_size": want.min_size.value, "pg_num": want.pg_num.value, "pgp_num": want.pg_num.value,
                   "autoscale": want.pg_autoscale_mode.value, "rule": want.crush_rule, "application": ["cephfs"],
                   "ec_overwrites": want.allow_ec_overwrites, "profile": want.erasure_code_profile}
        assert seen == planned, f"pool {want.name}"
    for profile in ceph.ec_profiles:
        got = ceph_json(lab, host, f"osd erasure-code-profile get {profile.name}")
        assert isinstance(got, dict)
        assert {k: got.get(k) for k in ("k", "m", "crush-failure-domain", "crush-device-class", "plugin")} == {
            "k": str(profile.k), "m": str(profile.m), "crush-failure-domain": profile.crush_failure_domain,
            "crush-device-class": profile.crush_device_class, "plugin": profile.plugin}, profile.name
    fs = ceph_json(lab, host, "fs ls")
    assert isinstance(fs, list)
    assert [(f["name"], f["metadata_pool"], sorted(f["data_pools"])) for f in fs] == [(
        ceph.fs_name, next(p.name for p in ceph.pools if p.purpose == "metadata"),
        sorted(p.name for p in ceph.pools if p.purpose != "metadata"))]


def test_every_osd_has_its_tier_device_class(deployed: ExampleLab) -> None:
    ceph = plan(deployed)
    tree = ceph_json(deployed.lab, mon_host(deployed), "osd tree")
    assert isinstance(tree, dict)
    osds = [n for n in tree["nodes"] if n["type"] == "osd"]
    assert len(osds) == ceph.osds.value
    assert {(n["name"], n.get("device_class"), n["status"]) for n in osds} == {
        (n["name"], ceph.osd_groups[0].device_class, "up") for n in osds}


def test_the_manager_serves_prometheus_metrics(deployed: ExampleLab) -> None:
    host = mon_host(deployed)
    body = ssh_out(deployed.lab, host, "timeout 60 python3 -c \"import urllib.request; "
                   "print(urllib.request.urlopen('http://127.0.0.1:9283/metrics', timeout=50).read().decode())\"")
    assert "ceph_health_status 0.0" in body, body[:2000]


def clients(deployed: ExampleLab) -> list[str]:
    return deployed.blueprint.hosts_by_role()["gpu_client"]


def test_both_clients_mount_cephfs_through_the_systemd_unit(deployed: ExampleLab) -> None:
    ceph = plan(deployed)
    mount = ceph.mount.mount_point
    unit = mount.strip("/").replace("/", "-") + ".mount"
    for host in clients(deployed):
        assert ssh_out(deployed.lab, host, f"systemctl is-active {unit}").strip() == "active", host
        assert ssh_out(deployed.lab, host, f"systemctl is-enabled {unit}").strip() == "enabled", host
        found = json.loads(ssh_out(deployed.lab, host, f"findmnt -J -o SOURCE,FSTYPE,OPTIONS {mount}"))
        (fs,) = found["filesystems"]
        assert fs["fstype"] == "ceph", (host, fs)
        assert f"name=fs-{host}" in fs["options"], (host, fs)
        assert fs["source"].endswith(":6789:/"), (host, fs)


def test_hot_is_laid_out_on_the_ec_pool(deployed: ExampleLab) -> None:
    ceph = plan(deployed)
    for pool in (p for p in ceph.pools if p.directory):
        path = ceph.mount.mount_point + pool.directory  # type: ignore[operator]
        got = ssh_out(deployed.lab, clients(deployed)[0], f"getfattr -n ceph.dir.layout.pool --only-values {path}")
        assert got.strip() == pool.name, path


def fio(directory: str, verify_only: bool) -> str:
    return (f"fio --name=xclient --directory={directory} --nrfiles={FIO_FILES} --filesize={FIO_FILE_MIB}M "
            f"--size={FIO_FILES * FIO_FILE_MIB}M --rw=write --bs=1M --direct=1 --ioengine=libaio --iodepth=4 "
            f"--verify=crc32c --verify_fatal=1 {'--verify_only=1' if verify_only else '--do_verify=1'} "
            "--output-format=json")


def test_one_client_writes_the_other_reads_and_verifies(deployed: ExampleLab) -> None:
    """client-1 writes a small file set under /hot (the EC pool) with crc32c verify headers, client-2 reads every
    block back and checks them: 0 errors on both."""
    ceph = plan(deployed)
    writer, reader = clients(deployed)[:2]
    hot = next(p for p in ceph.pools if p.tier == "hot")
    directory = f"{ceph.mount.mount_point}{hot.directory}/fio-xclient"
    lab = deployed.lab
    ssh_out(lab, writer, f"rm -rf {directory} && mkdir -p {directory}")
    for host, verify_only in ((writer, False), (reader, True)):
        started = time.monotonic()
        out = ssh_out(lab, host, fio(directory, verify_only), timeout=1800)
        TIMINGS[f"ceph fio {'verify on' if verify_only else 'write on'} {host} (lab, emulated)"] = (
            time.monotonic() - started)
        job = json.loads(out[out.index("{"):])["jobs"][0]
        assert job["error"] == 0, (host, job["error"])
        done = job["read"]["io_bytes"] if verify_only else job["write"]["io_bytes"]
        assert done == FIO_FILES * FIO_FILE_MIB << 20, (host, done)
