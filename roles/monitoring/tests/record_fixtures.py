"""Record the exporter's test fixtures from a real lab: NVMe-oF over Soft-RoCE and a dm-cache volume.

Boots a two-VM lab (storage-1, client-1, two rails) from the cached lab image, exports a null_blk
namespace from storage-1 over both rails, connects client-1 to it twice (one path per rail), builds an
lvmcache on client-1's fast and slow disks, reads through it, and saves the raw output of the tools
the exporter parses into fixtures/. Cuts rail 0 of client-1 to record a path that is not live.
Always tears the lab down.

    .venv/bin/python roles/monitoring/tests/record_fixtures.py /tmp/record-lab
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from blueprints.cli import plan_file
from blueprints.lab_plan import LabPlan
from stacks.lab import Lab, LabInputError

HERE = Path(__file__).resolve().parent / "fixtures"
REPO = Path(__file__).resolve().parents[3]
NQN = "nqn.2026-11.io.clustersmith:record:hot-1"
SYSFS_DUMP = (
    "for f in /sys/class/nvme-subsystem/nvme-subsys*/subsysnqn /sys/class/nvme-subsystem/nvme-subsys*/iopolicy "
    "/sys/class/nvme-subsystem/nvme-subsys*/nvme*/state /sys/class/nvme-subsystem/nvme-subsys*/nvme*/transport "
    "/sys/class/nvme-subsystem/nvme-subsys*/nvme*/address "
    "/sys/class/infiniband/*/ports/*/state /sys/class/infiniband/*/ports/*/phys_state "
    "/sys/class/infiniband/*/ports/*/gid_attrs/ndevs/0 /sys/class/infiniband/*/ports/*/hw_counters/*; "
    "do [ -f \"$f\" ] && printf '%s\\t%s\\n' \"$f\" \"$(cat \"$f\" 2>/dev/null | head -1)\"; done; "
    "ls -d /sys/class/nvme-subsystem/nvme-subsys*/nvme*n* 2>/dev/null | sed 's/$/\\t<dir>/'"
)
TARGET_SETUP = f"""set -e
modprobe null_blk nr_devices=1 gb=1
modprobe -a rdma_rxe nvmet nvmet_rdma rdma_ucm ib_uverbs
cd /sys/kernel/config/nvmet
mkdir -p subsystems/{NQN}/namespaces/1
echo 1 > subsystems/{NQN}/attr_allow_any_host
echo /dev/nullb0 > subsystems/{NQN}/namespaces/1/device_path
echo 1 > subsystems/{NQN}/namespaces/1/enable
for i in 0 1; do
  mkdir -p ports/$((i+1))
  echo rdma > ports/$((i+1))/addr_trtype; echo ipv4 > ports/$((i+1))/addr_adrfam
  echo 10.77.$i.1 > ports/$((i+1))/addr_traddr; echo 4420 > ports/$((i+1))/addr_trsvcid
  ln -sf /sys/kernel/config/nvmet/subsystems/{NQN} ports/$((i+1))/subsystems/{NQN}
done
"""
CLIENT_SETUP = f"""set -e
nvme connect -t rdma -a 10.77.0.1 -s 4420 -n {NQN} -k 5
nvme connect -t rdma -a 10.77.1.1 -s 4420 -n {NQN} -k 5
"""
CACHE_SETUP = """set -e
pvcreate -q /dev/disk/by-id/virtio-slow /dev/disk/by-id/virtio-fast
vgcreate -q cs /dev/disk/by-id/virtio-slow /dev/disk/by-id/virtio-fast
lvcreate -q -n data -L 512M cs /dev/disk/by-id/virtio-slow
lvcreate -q --type cache-pool -n fast -L 128M cs /dev/disk/by-id/virtio-fast
lvconvert -q -y --type cache --cachepool cs/fast --cachemode writethrough cs/data
dd if=/dev/cs/data of=/dev/null bs=4k count=4096 iflag=direct status=none
dd if=/dev/cs/data of=/dev/null bs=4k count=4096 iflag=direct status=none
"""


def run(lab: Lab, host: str, command: str) -> str:
    done = lab.ssh(host, command, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"{host}: {command[:60]}... failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def lab_plan() -> LabPlan:
    """examples/lab.yaml's lab (its image carries crc32_generic, which rdma_rxe needs), storage-1 and client-1 only."""
    full = plan_file(REPO / "examples" / "lab.yaml").lab
    assert full is not None
    hosts = tuple(h.model_copy(update={"cpus": 1}) for h in full.hosts if h.name in ("storage-1", "client-1"))
    return full.model_copy(update={"hosts": hosts})


def rxe(lab: Lab, host: str) -> None:
    """Soft-RoCE on both rails; ``rdma link add`` fails now and then right after modprobe, so retry."""
    run(lab, host, "modprobe -a rdma_rxe nvme_rdma nvmet nvmet_rdma rdma_ucm ib_uverbs")
    for rail in (0, 1):
        for _ in range(10):
            if lab.ssh(host, f"rdma link add rxe{rail} type rxe netdev rail{rail}").returncode == 0:
                break
            time.sleep(3)
        else:
            raise SystemExit(f"{host}: rdma link add rxe{rail} kept failing")


def save(name: str, text: str) -> None:
    (HERE / name).write_text(text)
    print(f"recorded {name} ({len(text)} bytes)")


def main(workdir: str) -> None:
    """Boot the lab in ``workdir``, or use the one already running there (its hosts as freshly booted)."""
    try:
        lab = Lab.attach(Path(workdir))
    except LabInputError:
        plan = lab_plan()
        lab = Lab(plan, "record", Path(workdir))
        lab.up()
    try:
        rxe(lab, "storage-1")
        rxe(lab, "client-1")
        run(lab, "storage-1", TARGET_SETUP)
        run(lab, "client-1", CLIENT_SETUP)
        time.sleep(3)
        save("nvme-list-subsys.json", run(lab, "client-1", "nvme list-subsys -o json"))
        save("sysfs-client-live.tsv", run(lab, "client-1", SYSFS_DUMP))
        save("ping-rail0.txt", run(lab, "client-1", "ping -n -c 5 -i 0.2 -W 1 -I rail0 10.77.0.1"))
        save("ip-addr-lab-client.json", run(lab, "client-1", "ip -j -4 addr show"))
        save("ip-route-default-lab-client.json", run(lab, "client-1", "ip -j -4 route show default"))
        lab.set_link("client-1", 0, up=False)
        time.sleep(20)  # keep-alive 5 s, then the path goes to connecting
        save("nvme-list-subsys-rail0-cut.json", run(lab, "client-1", "nvme list-subsys -o json"))
        save("sysfs-client-rail0-cut.tsv", run(lab, "client-1", SYSFS_DUMP))
        lab.set_link("client-1", 0, up=True)
        run(lab, "client-1", CACHE_SETUP)
        save("dmsetup-status-cache.txt", run(lab, "client-1", "dmsetup status --target cache"))
        save("dmsetup-status.txt", run(lab, "client-1", "dmsetup status"))
        save("uname.txt", run(lab, "client-1", "uname -r; nvme version; dmsetup version; ping -V"))
    finally:
        lab.down()


if __name__ == "__main__":
    main(sys.argv[1])
