"""Benchmark: bring real Ceph (Debian bookworm's packages) up in the lab's TCG guests and print what it costs.

    flock /work/lab.lock .venv/bin/python tests/bench_ceph_lab.py [--workdir out/ceph-bench] [--keep]
    flock /work/lab.lock .venv/bin/python tests/bench_ceph_lab.py --resume [--from STEP] [--keep]
    flock /work/lab.lock .venv/bin/python tests/bench_ceph_lab.py --down

The measurement that issue 18 asks for before anyone writes the `ceph` role: the image with Ceph baked in (build
time, cpio.gz and unpacked size), one storage VM with 4 sparse 6 GiB OSD disks and two clients on the rails
(boot-to-SSH), then by hand over SSH what the role will run, each step timed: one monitor (ceph-mon --mkfs), one
manager, 4 OSDs (ceph-volume lvm create), one MDS, the pools (replicated metadata and default data pools, an EC
2+1 pool added with `ceph fs add_data_pool`, /hot laid out on it), HEALTH_OK without muting a check; CephFS on
both clients with the kernel client (`mon:6789:/`), fio write with verify=crc32c on one client and a verified
read on the other; memory per daemon, guest free memory, idle CPU; the cost of each ceph CLI call the role's
idempotent checks would make; an OSD stopped during a verified fio run.

Every throughput it prints is emulated (QEMU TCG on 2 shared host cores): a lab figure, never real hardware.
Figures go to stdout and to WORKDIR/figures.json; the steps done are kept there too, so ``--resume`` continues a
kept lab (``--keep``) from the first step not done, or from ``--from STEP``. Not run by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from blueprints.lab_plan import LabDisk, LabHost, LabPlan
from blueprints.planner.ceph import LAB_SETTINGS, SETTINGS
from blueprints.planner.lab import CEPH_MODULES, CEPH_PACKAGES, lab_image
from stacks.lab import image, processes, vm
from stacks.lab.lab import Lab
from tests.default_lab import default_lab_plan

GIB = 1 << 30
OSD_DISKS = 4
OSD_DISK_BYTES = 6 * GIB  # ceph-volume refuses devices under 5 GiB (DESIGN.md); measured here at 6 GiB
FS = "labfs"
POOLS = {"cephfs_metadata": "replicated", "cephfs_data": "replicated", "cephfs_hot": "erasure"}
PG_NUM = 16  # per pool; 3 pools x 16 PGs x 3 shards / 4 OSDs = 36 PGs per OSD, far under mon_max_pg_per_osd 250
MOUNT = "/mnt/labfs"
# The settings this lab changes from Ceph's defaults, each with its reason (printed and kept in figures.json): the
# planner's list, the same one the ceph role writes into ceph.conf (blueprints.planner.ceph).
CEPH_SETTINGS: tuple[tuple[str, str, str], ...] = tuple((s.name, s.value, s.why) for s in SETTINGS + LAB_SETTINGS)
MOUNT_TIMEOUT = 300  # client mount_timeout (s); Ceph's default is 60


class StepFailed(RuntimeError):
    pass


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.workdir = Path(args.workdir).resolve()
        self.figures_path = self.workdir / "figures.json"
        saved = json.loads(self.figures_path.read_text()) if self.figures_path.is_file() and args.resume else {}
        self.figures: dict[str, object] = saved.get("figures", {})
        self.done: list[str] = saved.get("done", [])
        self.lab: Lab | None = None
        self.t0 = time.monotonic()

    # -- bookkeeping ------------------------------------------------------------------------------

    def say(self, message: str) -> None:
        print(f"[{time.monotonic() - self.t0:7.1f} s] {message}", flush=True)

    def record(self, name: str, value: object) -> None:
        self.figures[name] = value
        self.save()

    def save(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.figures_path.write_text(json.dumps({"figures": self.figures, "done": self.done}, indent=2))

    def ssh(self, host: str, command: str, timeout: float = 900, check: bool = True) -> str:
        assert self.lab is not None
        try:
            done = self.lab.ssh(host, command, timeout=timeout)
        except subprocess.TimeoutExpired as err:
            raise StepFailed(f"{host}: timed out after {timeout:.0f} s: {command[:200]}") from err
        if check and done.returncode != 0:
            raise StepFailed(
                f"{host}: exit {done.returncode}: {command[:300]}\n--- stdout\n{done.stdout[-3000:]}\n"
                f"--- stderr\n{done.stderr[-3000:]}"
            )
        return done.stdout

    def timed(self, name: str, host: str, command: str, timeout: float = 900) -> str:
        start = time.monotonic()
        out = self.ssh(host, command, timeout)
        seconds = round(time.monotonic() - start, 1)
        self.record(f"seconds.{name}", seconds)
        self.say(f"{name}: {seconds} s")
        return out

    def ceph_json(self, args: str, timeout: float = 300) -> object:
        return json.loads(self.ssh("storage-1", f"ceph --connect-timeout 120 {args} -f json", timeout))

    # -- the plan ------------------------------------------------------------------------------------

    def plan(self) -> LabPlan:
        default = default_lab_plan()
        osd_disks = tuple(LabDisk(name=f"osd{i}", size_bytes=OSD_DISK_BYTES) for i in range(OSD_DISKS))
        hosts = [
            LabHost(
                name="storage-1",
                role="storage_target",
                memory_mib=self.args.storage_mib,
                cpus=self.args.storage_cpus,
                disks=osd_disks,
            )
        ]
        hosts += [LabHost(name=f"client-{i + 1}", role="gpu_client", memory_mib=self.args.client_mib, cpus=1)
                  for i in range(self.args.clients)]  # fmt: skip
        return LabPlan(hosts=tuple(hosts), rails=default.rails,
                       image=lab_image(default.image.kernel, CEPH_PACKAGES, CEPH_MODULES))

    def clients(self) -> list[str]:
        return [f"client-{i + 1}" for i in range(self.args.clients)]

    # -- steps ---------------------------------------------------------------------------------------------

    def step_image(self) -> None:
        plan = self.plan()
        start = time.monotonic()
        built = image.ensure(plan.image, lambda e: self.say(f"image: {e.message}"))
        self.record("seconds.image_ensure", round(time.monotonic() - start, 1))
        self.record("seconds.image_build", built.build_seconds)
        self.record("image.dir", str(built.directory))
        self.record("image.initrd_gz_mib", round(built.initrd.stat().st_size / 2**20, 1))
        unpacked = subprocess.run(f"gzip -dc {built.initrd} | wc -c", shell=True, capture_output=True, text=True,
                                  check=True)  # fmt: skip
        self.record("image.unpacked_mib", round(int(unpacked.stdout) / 2**20, 1))
        self.record("image.ceph_modules", [m for m in built.modules if re.search(r"ceph|netfs|fscache", m)])
        self.say(f"image {built.directory}: {self.figures['image.initrd_gz_mib']} MiB gz, "
                 f"{self.figures['image.unpacked_mib']} MiB unpacked, built in {built.build_seconds} s")  # fmt: skip

    def step_boot(self) -> None:
        if self.args.tb_mib:
            os.environ[vm.TB_SIZE_ENV] = str(self.args.tb_mib)
        self.record("boot.tb_mib", self.args.tb_mib or "qemu default")
        lab = Lab(self.plan(), "cephbench", self.workdir)
        start = time.monotonic()
        lab.up(progress=lambda e: self.say(f"{e.task}: {e.message}"))
        self.lab = lab
        self.record("seconds.lab_up", round(time.monotonic() - start, 1))
        for host in lab.saved_state().hosts:
            self.record(f"boot.{host.name}.ssh_seconds", host.boot_seconds)
        self.record("boot.memory_mib", {h.name: h.memory_mib for h in lab.plan.hosts})
        self.host_memory("after_boot")
        for host in ["storage-1", *self.clients()]:
            self.record(f"guest.{host}.after_boot", self.ssh(host, "free -m | sed -n 2p; df -m / | tail -1").strip())

    def host_memory(self, label: str) -> None:
        """The QEMU processes' resident memory on the host (guest RAM touched + TCG's translation cache)."""
        assert self.lab is not None
        rss = {}
        for host in self.lab.saved_state().hosts:
            pid = processes.read_pid(host.pidfile)
            if pid:
                status = Path(f"/proc/{pid}/status").read_text()
                rss[host.name] = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) // 1024  # type: ignore[union-attr]
        self.record(f"host.qemu_rss_mib.{label}", rss)
        self.say(f"host QEMU RSS MiB ({label}): {rss}")

    def step_conf(self) -> None:
        storage = self.lab_host("storage-1")
        public, cluster = storage.rails[0], storage.rails[1]
        settings = "\n".join(f"{k} = {v}" for k, v, _ in CEPH_SETTINGS)
        conf = f"""[global]
fsid = $(cat /proc/sys/kernel/random/uuid)
mon initial members = storage-1
mon host = [v2:{public.address}:3300,v1:{public.address}:6789]
public network = {public.address.rsplit(".", 1)[0]}.0/{public.prefix}
cluster network = {cluster.address.rsplit(".", 1)[0]}.0/{cluster.prefix}
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
{settings}
"""
        self.record("ceph.conf_settings", [{"setting": k, "value": v, "why": w} for k, v, w in CEPH_SETTINGS])
        conf_cmd = f"mkdir -p /etc/ceph && cat > /etc/ceph/ceph.conf <<EOF\n{conf}EOF\ncat /etc/ceph/ceph.conf"
        self.say(self.ssh("storage-1", conf_cmd))
        versions = self.ssh(
            "storage-1", 'ceph --version; command -v ceph-volume; dpkg -S "$(command -v ceph-volume)" || true'
        )
        self.record("ceph.version", versions.strip())
        self.say(versions)

    def step_mon(self) -> None:
        address = self.lab_host("storage-1").rails[0].address
        self.timed(
            "mon",
            "storage-1",
            f"""set -e
fsid=$(awk '/^fsid/ {{print $3}}' /etc/ceph/ceph.conf)
ceph-authtool --create-keyring /tmp/ceph.mon.keyring --gen-key -n mon. --cap mon 'allow *'
ceph-authtool --create-keyring /etc/ceph/ceph.client.admin.keyring --gen-key -n client.admin \
  --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *'
mkdir -p /var/lib/ceph/bootstrap-osd
ceph-authtool --create-keyring /var/lib/ceph/bootstrap-osd/ceph.keyring --gen-key -n client.bootstrap-osd \
  --cap mon 'profile bootstrap-osd' --cap mgr 'allow r'
ceph-authtool /tmp/ceph.mon.keyring --import-keyring /etc/ceph/ceph.client.admin.keyring
ceph-authtool /tmp/ceph.mon.keyring --import-keyring /var/lib/ceph/bootstrap-osd/ceph.keyring
chown ceph:ceph /tmp/ceph.mon.keyring
monmaptool --create --addv storage-1 '[v2:{address}:3300,v1:{address}:6789]' --fsid "$fsid" /tmp/monmap
install -d -o ceph -g ceph /var/lib/ceph/mon/ceph-storage-1
sudo -u ceph ceph-mon --mkfs -i storage-1 --monmap /tmp/monmap --keyring /tmp/ceph.mon.keyring
systemctl start ceph-mon@storage-1
timeout 600 sh -c 'until ceph --connect-timeout 30 mon stat; do sleep 2; done'
""",
        )

    def step_mgr(self) -> None:
        self.timed(
            "mgr",
            "storage-1",
            """set -e
install -d -o ceph -g ceph /var/lib/ceph/mgr/ceph-storage-1
ceph auth get-or-create mgr.storage-1 mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
  -o /var/lib/ceph/mgr/ceph-storage-1/keyring
chown ceph:ceph /var/lib/ceph/mgr/ceph-storage-1/keyring
systemctl start ceph-mgr@storage-1
timeout 900 sh -c 'until ceph mgr stat -f json-pretty | grep -q "\\"available\\": true"; do sleep 5; done'
""",
        )

    def step_osds(self) -> None:
        for i in range(OSD_DISKS):
            key = f"osd{i}"
            if key in self.done:
                continue
            device = f"$(readlink -f /dev/disk/by-id/virtio-osd{i})"
            if self.args.osd_mode == "lvm":
                command = f"ceph-volume lvm create --bluestore --data {device}"
            else:
                command = (f"ceph-volume raw prepare --bluestore --data {device} && "
                           f"ceph-volume raw activate --device {device} --no-systemd")  # fmt: skip
            self.timed(f"osd.{i}", "storage-1", f"set -e; {command} > /tmp/ceph-volume-{i}.log 2>&1 || "
                       f"{{ tail -40 /tmp/ceph-volume-{i}.log; exit 1; }}", timeout=1800)  # fmt: skip
            self.done.append(key)
            self.save()
        start = time.monotonic()
        while True:
            stat = self.ceph_json("osd stat")
            assert isinstance(stat, dict)
            if stat.get("num_up_osds") == OSD_DISKS and stat.get("num_in_osds") == OSD_DISKS:
                break
            if time.monotonic() > start + 900:
                raise StepFailed(f"not all {OSD_DISKS} OSDs up and in after 900 s: {stat}")
            time.sleep(5)
        self.record("seconds.osds_all_up_after_last_create", round(time.monotonic() - start, 1))
        self.say(self.ssh("storage-1", "ceph osd tree"))

    def step_mds(self) -> None:
        self.timed(
            "mds",
            "storage-1",
            """set -e
install -d -o ceph -g ceph /var/lib/ceph/mds/ceph-storage-1
ceph auth get-or-create mds.storage-1 mon 'profile mds' mgr 'profile mds' mds 'allow *' osd 'allow *' \
  -o /var/lib/ceph/mds/ceph-storage-1/keyring
chown ceph:ceph /var/lib/ceph/mds/ceph-storage-1/keyring
systemctl start ceph-mds@storage-1
""",
        )

    def step_pools(self) -> None:
        lines = ["set -e", "ceph osd erasure-code-profile set ec21 k=2 m=1 crush-failure-domain=osd"]
        for pool, kind in POOLS.items():
            lines.append(
                f"ceph osd pool create {pool} {PG_NUM} {PG_NUM} {kind}" + (" ec21" if kind == "erasure" else "")
            )
            lines.append(f"ceph osd pool set {pool} pg_autoscale_mode {self.args.autoscale}")
        lines += [
            "ceph osd pool set cephfs_hot allow_ec_overwrites true",
            f"ceph fs new {FS} cephfs_metadata cephfs_data",
            f"ceph fs add_data_pool {FS} cephfs_hot",
        ]
        self.timed("pools", "storage-1", "\n".join(lines))
        self.record("ceph.cli_calls_in_pools_step", len(lines) - 1)
        start = time.monotonic()
        self.ssh("storage-1", "timeout 900 sh -c 'until ceph mds stat | grep -q up:active; do sleep 5; done'")
        self.record("seconds.mds_active_after_fs_new", round(time.monotonic() - start, 1))

    def step_health(self) -> None:
        start = time.monotonic()
        seen: dict[str, str] = {}
        deadline = start + self.args.health_timeout
        while True:
            health = self.ceph_json("health detail")
            assert isinstance(health, dict)
            for name, check in health.get("checks", {}).items():
                message = check["summary"]["message"]
                if seen.get(name) != message:
                    self.say(f"health: {name}: {message}")
                seen[name] = message
            if health["status"] == "HEALTH_OK":
                break
            if time.monotonic() > deadline:
                self.record("health.checks_seen", seen)
                raise StepFailed(f"no HEALTH_OK within {self.args.health_timeout} s: {json.dumps(health)[:2000]}")
            time.sleep(10)
        seconds = round(time.monotonic() - start, 1)
        self.record("seconds.health_ok_after_pools", seconds)
        self.record("seconds.bringup_total_mon_to_health_ok", round(sum(
            v for k, v in self.figures.items()
            if isinstance(v, (int, float)) and re.match(r"seconds\.(mon|mgr|osd\.\d|mds|pools|health_ok_after_pools|"
                                                         r"osds_all_up_after_last_create|mds_active_after_fs_new)$", k)
        ), 1))  # fmt: skip
        self.record("health.checks_seen", seen)
        self.say(f"HEALTH_OK after {seconds} s; checks seen on the way: {sorted(seen) or 'none'}")
        self.say(self.ssh("storage-1", "ceph -s; ceph osd pool ls detail; ceph df"))

    def step_mount(self) -> None:
        address = self.lab_host("storage-1").rails[0].address
        key = self.ssh(
            "storage-1", f"ceph fs authorize {FS} client.lab / rwp >/dev/null && ceph auth get-key client.lab"
        )
        for host in self.clients():
            self.timed(
                f"mount.{host}",
                host,
                f"""set -e
modprobe ceph
install -d -m 700 /etc/ceph
printf %s '{key.strip()}' > /etc/ceph/lab.secret; chmod 600 /etc/ceph/lab.secret
mkdir -p {MOUNT}
mountpoint -q {MOUNT} || mount -t ceph {address}:6789:/ {MOUNT} \
  -o name=lab,secretfile=/etc/ceph/lab.secret,mount_timeout={MOUNT_TIMEOUT}
grep ' {MOUNT} ' /proc/mounts
""",
            )
        first = self.clients()[0]
        self.ssh(
            first,
            f"""set -e
mkdir -p {MOUNT}/hot
setfattr -n ceph.dir.layout.pool -v cephfs_hot {MOUNT}/hot
""",
        )
        layout = self.ssh(first, f"getfattr -n ceph.dir.layout {MOUNT}/hot")
        self.record("cephfs.hot_layout", layout.strip())
        self.say(layout)

    def fio_cmd(self, directory: str, name: str, size_mib: int, verify_only: bool, extra: str = "") -> str:
        return (
            f"fio --name={name} --directory={directory} --filename={name}.dat --rw=write --bs=1M --size={size_mib}M "
            f"--direct=1 --ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 "
            f"{'--verify_only=1' if verify_only else '--do_verify=1'} --output-format=json {extra}"
        )

    def fio(self, host: str, directory: str, name: str, size_mib: int, verify_only: bool) -> dict[str, object]:
        start = time.monotonic()
        out = self.ssh(host, self.fio_cmd(directory, name, size_mib, verify_only), timeout=3600)
        seconds = round(time.monotonic() - start, 1)
        job = json.loads(out[out.index("{") :])["jobs"][0]
        result = {
            "host": host, "pool_dir": directory, "size_mib": size_mib, "verify_only": verify_only,
            "error": job["error"], "seconds": seconds,
            "write_mib_s_emulated": round(job["write"]["bw"] / 1024, 2),
            "read_mib_s_emulated": round(job["read"]["bw"] / 1024, 2),
        }  # fmt: skip
        self.say(f"fio {name} on {host} ({directory}): {result}")
        return result

    def step_fio(self) -> None:
        clients = self.clients()
        reader = clients[-1]
        runs = []
        for directory, pool in ((f"{MOUNT}/hot", "ec21"), (MOUNT, "replicated")):
            runs.append(self.fio(clients[0], directory, f"w-{pool}", self.args.fio_mib, verify_only=False))
            runs.append(self.fio(reader, directory, f"w-{pool}", self.args.fio_mib, verify_only=True))
        self.record("fio.lab_emulated", runs)

    def step_memory(self) -> None:
        ps = self.ssh("storage-1", "ps -eo rss,args --sort=-rss | grep -E '[c]eph-(mon|mgr|osd|mds)'")
        daemons = {}
        for line in ps.splitlines():
            rss, _, rest = line.strip().partition(" ")
            match = re.search(r"ceph-(mon|mgr|osd|mds).*--id (\S+)", rest)
            if match:
                daemons[f"{match.group(1)}.{match.group(2)}"] = round(int(rss) / 1024, 1)
        self.record("memory.daemon_rss_mib", daemons)
        self.say(f"daemon RSS MiB: {daemons}")
        for host in ["storage-1", *self.clients()]:
            self.record(f"guest.{host}.free_after_health_ok", self.ssh(host, "free -m | sed -n 2p").strip())
        self.say(self.ssh("storage-1", "free -m; df -m /"))
        host_side = threading.Thread(target=self.host_cpu, args=("at_health_ok", 60))  # the same minute, seen outside
        host_side.start()
        stat = self.ssh("storage-1", "head -1 /proc/stat; sleep 60; head -1 /proc/stat")
        host_side.join()
        a, b = ([int(x) for x in line.split()[1:]] for line in stat.splitlines()[:2])
        delta = [y - x for x, y in zip(a, b, strict=True)]
        idle = (delta[3] + delta[4]) / sum(delta)
        self.record("cpu.storage_guest_busy_percent_at_health_ok", round(100 * (1 - idle), 1))
        self.host_memory("at_health_ok")
        top = self.ssh("storage-1", "top -b -n 1 -o %CPU | sed -n 1,20p")
        self.say(top)

    def host_cpu(self, label: str, seconds: float) -> None:
        """Each QEMU process's share of one host core over ``seconds`` (utime + stime from /proc)."""
        assert self.lab is not None
        pids = {h.name: processes.read_pid(h.pidfile) for h in self.lab.saved_state().hosts}

        def ticks() -> dict[str, int]:
            out = {}
            for name, pid in pids.items():
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                out[name] = int(fields[11]) + int(fields[12])
            return out

        before = ticks()
        time.sleep(seconds)
        after = ticks()
        hz = os.sysconf("SC_CLK_TCK")
        share = {n: round(100 * (after[n] - before[n]) / hz / seconds, 1) for n in pids}
        self.record(f"host.qemu_cpu_percent_of_one_core.{label}", share)
        self.say(f"host QEMU CPU % of one core ({label}): {share}")

    def step_rerun(self) -> None:
        checks = ["osd pool ls detail -f json", "fs ls -f json", "status -f json", "osd tree -f json",
                  "osd erasure-code-profile get ec21 -f json", "auth get client.admin"]  # fmt: skip
        figures = {}
        base = []
        for _ in range(3):
            start = time.monotonic()
            self.ssh("storage-1", "true")
            base.append(round(time.monotonic() - start, 2))
        figures["ssh true (baseline)"] = base
        for check in checks:
            runs = []
            for _ in range(3):
                start = time.monotonic()
                self.ssh("storage-1", f"ceph {check} >/dev/null")
                runs.append(round(time.monotonic() - start, 2))
            figures[f"ceph {check}"] = runs
            self.say(f"ceph {check}: {runs} s")
        start = time.monotonic()
        self.ssh("storage-1", "; ".join(f"ceph {c} >/dev/null" for c in checks))
        figures["all six in one ssh"] = round(time.monotonic() - start, 2)
        inside = self.ssh(
            "storage-1",
            "s=$(date +%s.%N); ceph status -f json >/dev/null; e=$(date +%s.%N); "
            "echo \"$e - $s\" | python3 -c 'print(round(eval(input()), 2))'",
        )
        figures["ceph status timed inside the guest"] = float(inside.strip())
        self.record("rerun.seconds_per_call", figures)

    def step_fault(self) -> None:
        writer = self.clients()[0]
        name = "fault"
        log = f"/tmp/fio-{name}.json"
        self.ssh(writer, f"rm -f {log}; nohup {self.fio_cmd(f'{MOUNT}/hot', name, self.args.fio_mib, False)} "
                         f"--output={log} >/dev/null 2>&1 & echo started")  # fmt: skip
        time.sleep(20)
        start = time.monotonic()
        self.ssh("storage-1", "systemctl stop ceph-osd@3")
        self.say("ceph-osd@3 stopped during the client's verified fio write on the EC pool")
        marks: dict[str, float] = {}
        states_seen: set[str] = set()
        deadline = start + self.args.fault_timeout
        while time.monotonic() < deadline:
            status = self.ceph_json("status")
            assert isinstance(status, dict)
            pgs = status["pgmap"].get("pgs_by_state", [])
            states = {p["state_name"] for p in pgs}
            states_seen |= states
            now = round(time.monotonic() - start, 1)
            if status["osdmap"]["num_up_osds"] < 4 and "osd_down" not in marks:
                marks["osd_down"] = now
            if any("undersized" in s for s in states) and "undersized" not in marks:
                marks["undersized"] = now
                self.say(f"undersized after {now} s: {sorted(states)}")
            if "undersized" in marks and now > marks["undersized"] + self.args.osd_down_s:
                break
            time.sleep(5)
        self.record("fault.pg_states_while_down", sorted(states_seen))
        fio_state = self.ssh(writer, "pgrep -x fio >/dev/null && echo running || echo ended").strip()
        self.record("fault.fio_while_osd_down", fio_state)
        restart = time.monotonic()
        self.ssh("storage-1", "systemctl start ceph-osd@3")
        while time.monotonic() < restart + self.args.fault_timeout:
            if self.ceph_json("health").get("status") == "HEALTH_OK":  # type: ignore[union-attr]
                marks["health_ok_after_osd_start"] = round(time.monotonic() - restart, 1)
                break
            time.sleep(10)
        self.ssh(writer, "timeout 1800 sh -c 'while pgrep -x fio >/dev/null; do sleep 5; done'", timeout=1900)
        out = self.ssh(writer, f"cat {log}")
        job = json.loads(out[out.index("{") :])["jobs"][0]
        marks["fio_error"] = job["error"]
        self.record("fault.seconds", marks)
        self.say(f"fault: {marks}")

    # -- driving ---------------------------------------------------------------------------------------

    def lab_host(self, name: str):  # type: ignore[no-untyped-def]
        assert self.lab is not None
        return self.lab.saved_state().host(name)

    # memory and the CLI cost right after HEALTH_OK: they decide the budget, and a short run should still get them
    STEPS = ("image", "boot", "conf", "mon", "mgr", "osds", "mds", "pools", "health", "memory", "rerun", "mount",
             "fio", "fault")  # fmt: skip

    def run(self) -> int:
        steps: list[tuple[str, Callable[[], None]]] = [(s, getattr(self, f"step_{s}")) for s in self.STEPS]
        if self.args.no_fault:
            steps = [s for s in steps if s[0] != "fault"]
        if self.args.resume:
            self.lab = Lab.attach(self.workdir)
            if self.args.from_step:
                names = [s for s, _ in steps]
                self.done = [d for d in self.done if d in names[: names.index(self.args.from_step)] or
                             (d.startswith("osd") and self.args.from_step != "osds")]  # fmt: skip
        failed = False
        try:
            for name, step in steps:
                if name in self.done:
                    continue
                self.say(f"== {name}")
                start = time.monotonic()
                step()
                self.record(f"step_seconds.{name}", round(time.monotonic() - start, 1))
                self.done.append(name)
                self.save()
        except StepFailed as err:
            failed = True
            self.say(f"FAILED: {err}")
        finally:
            self.print_figures()
            if self.lab is not None and not self.args.keep:
                self.say("stopping the lab")
                self.lab.down(progress=lambda e: None)
            elif self.lab is not None:
                self.say(f"lab kept up in {self.workdir}; --resume continues, --down stops it")
        return 1 if failed else 0

    def print_figures(self) -> None:
        print("\n== figures (lab, QEMU TCG on 2 host cores: every time and throughput is emulated)")
        for key, value in self.figures.items():
            print(f"{key:55} {json.dumps(value) if not isinstance(value, str) else value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="out/ceph-bench")
    parser.add_argument("--storage-mib", type=int, default=6144)
    parser.add_argument("--storage-cpus", type=int, default=1)
    parser.add_argument("--client-mib", type=int, default=2560)
    parser.add_argument("--clients", type=int, default=2, choices=(1, 2))
    parser.add_argument("--tb-mib", type=int, default=0, help="TCG translation cache per VM (MiB); 0: QEMU's")
    parser.add_argument("--osd-mode", choices=("lvm", "raw"), default="lvm")
    parser.add_argument("--autoscale", choices=("off", "on", "warn"), default="off")
    parser.add_argument("--fio-mib", type=int, default=64)
    parser.add_argument("--health-timeout", type=int, default=1800)
    parser.add_argument("--fault-timeout", type=int, default=900)
    parser.add_argument("--osd-down-s", type=int, default=60, help="how long the stopped OSD stays down")
    parser.add_argument("--no-fault", action="store_true")
    parser.add_argument("--keep", action="store_true", help="leave the lab up (for --resume)")
    parser.add_argument("--resume", action="store_true", help="attach to the kept lab, skip the steps done")
    parser.add_argument("--from", dest="from_step", choices=Bench.STEPS)
    parser.add_argument("--down", action="store_true", help="stop a kept lab and exit")
    args = parser.parse_args()
    if args.down:
        stopped = Lab.attach(Path(args.workdir)).down(progress=lambda e: print(e.message))
        sys.exit(0 if stopped else 1)
    sys.exit(Bench(args).run())


if __name__ == "__main__":
    main()
