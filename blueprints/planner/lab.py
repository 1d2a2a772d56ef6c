"""The lab's VMs, rails and image, from the spec's ``target: {provider: lab}`` block."""

from __future__ import annotations

from blueprints.blueprint import FabricPlan, NvmeofPlan
from blueprints.lab_plan import LabDisk, LabHost, LabImage, LabKernel, LabKernelName, LabPlan, LabRail
from blueprints.spec import LabTarget
from blueprints.traced import Traced, traced

LAB_SUITE = "bookworm"
LAB_PACKAGES = (
    "systemd-sysv", "udev", "kmod", "iproute2", "iputils-ping", "rdma-core", "ibverbs-utils", "ibverbs-providers",
    "perftest", "nvme-cli", "fio", "lvm2", "thin-provisioning-tools", "openssh-server", "python3", "procps",
    "ethtool",  # the monitoring exporter reads PFC pause counters with ethtool -S
    "prometheus", "prometheus-node-exporter", "prometheus-alertmanager",
    "openmpi-bin",  # acceptance proves its NCCL launch (mpirun, hostfile, rank placement) with an MPI program
    # FS-Cache in front of the shared file system (the shared_fs role), and the external-NFS lab proof: the clients'
    # NFS client, the storage VM's kernel nfsd (a test fixture, tests/lab/test_external_nfs_lab.py). They change the
    # image's cache key: the first lab run after them builds the image cold.
    "cachefilesd", "nfs-common", "nfs-kernel-server",
)
LAB_MODULES = (
    "rdma_rxe", "ib_core", "ib_uverbs", "rdma_cm", "ib_cm", "iw_cm", "rdma_ucm",
    "nvme", "nvme_core", "nvme_fabrics", "nvme_rdma", "nvme_tcp", "nvmet", "nvmet_rdma", "nvmet_tcp",
    "null_blk", "dm_mod", "dm_cache", "dm_cache_smq", "dm_persistent_data", "dm_bio_prison", "dm_bufio",
    "virtio_net", "virtio_blk", "virtio_pci", "veth",
    "ext4",  # the tiered file system storage_tiering mounts on the dm-cache volume
    "crc32_generic",  # rdma_rxe computes the RoCE ICRC with the "crc32" crypto algorithm, a module in Debian
    # FS-Cache's cache backend, the NFS client (v3, v4) and server, and their RDMA transport (rpcrdma: client and
    # server side in one module); kernel.closure adds what modules.dep says they need (fscache, netfs, sunrpc, ...)
    "cachefiles", "nfs", "nfsv3", "nfsv4", "nfsd", "rpcrdma",
)
# What each kernel the lab can boot is, read from the packages' own /boot/config-* (dpkg -x of the .deb apt fetched):
# - bookworm: linux-image-6.1.0-57-amd64 6.1.192-3 (bookworm-security, the machine's own apt index):
#   "# CONFIG_NVME_AUTH is not set", "# CONFIG_NVME_TARGET_AUTH is not set".
# - bookworm-backports: linux-image-6.12.95+deb12-amd64 6.12.95-1~bpo12+1 (http://deb.debian.org/debian
#   dists/bookworm-backports, which the machine's apt sources do not list): CONFIG_NVME_AUTH=m,
#   CONFIG_NVME_HOST_AUTH=y, CONFIG_NVME_TARGET_AUTH=y (CONFIG_CRYPTO_DH/HMAC/SHA256/SHA512=y).
LAB_KERNELS: dict[LabKernelName, LabKernel] = {
    "bookworm": LabKernel(name="bookworm", apt_suite="bookworm", machine_index=True, release_series="6.1",
                          nvme_auth=False),
    "bookworm-backports": LabKernel(name="bookworm-backports", apt_suite="bookworm-backports", machine_index=False,
                                    release_series="6.12", nvme_auth=True),
}
FAST_DISK = 1 << 30
NVMEOF_DISK = 4 << 30  # the storage VM's disks.nvmeof, carved into one namespace per client (catalog: lab-virtio)
# One vCPU per guest. With two, a TCG guest's kernel locked up for good under load, twice in two lab tiers (stop 12's
# CI run: client-1 during accept; this session: client-2 during the monitoring scenario): "rcu_preempt kthread timer
# wakeup didn't happen ... Possible timer handling issue on cpu=0", then soft lockups of swapper/0 and ksoftirqd/1
# that never ended. Every such hang was on a 2-vCPU guest; the 1-vCPU guests of the lab's own tests never hung. One
# vCPU runs TCG single-threaded (no MTTCG, no cross-CPU timer IPIs), and 3 vCPU threads on the 2 host cores
# oversubscribe them less than 6 did: Ansible's tasks are single-threaded in the guest anyway.
LAB_VCPUS = 1
# Ceph from Debian's packages (issue 18), baked into the one image every lab VM boots (the storage VM runs the
# daemons, the clients mount CephFS with the kernel client and run the ceph CLI for checks): one image is one cache
# entry and one build. Its cost, measured by tests/bench_ceph_lab.py (stacks/lab/CEPH_MEASURED.md): +93 MiB of
# initrd.gz and +253 MiB unpacked, i.e. +253 MiB of guest RAM per VM (the root file system lives in RAM).
# bookworm has no ceph-volume package: ceph-volume ships in ceph-osd.
# attr gives setfattr for CephFS directory layouts (ceph.dir.layout.pool). debootstrap does not resolve virtual
# packages: ceph-mgr's python3-bcrypt depends on python3-cffi-backend-api-min, which only python3-cffi-backend
# provides; without it named, debootstrap failed configuring python3-bcrypt.
CEPH_PACKAGES = ("ceph-mon", "ceph-mgr", "ceph-mds", "ceph-osd", "ceph-common", "attr", "python3-cffi-backend")
# The CephFS kernel client; kernel.closure adds what modules.dep says they need (netfs, fscache, libcrc32c, ...).
CEPH_MODULES = ("ceph", "libceph")
# The storage VM runs every Ceph daemon and the lab's 4 OSDs (issue 18: k+m+1 = 4 for EC 2+1, failure domain osd).
LAB_OSDS = 4
LAB_OSD_DISK = 6 << 30  # ceph-volume refuses devices under 5 GiB (shared/DESIGN.md); the bench ran on 6 GiB
# Its RAM: 4 OSDs x osd_memory_target 896 MiB (the floor Ceph accepts, the lab's ceph.conf) = 3584 MiB under I/O, plus
# mon/mgr/mds 370 MiB RSS and the 772 MiB root file system measured at HEALTH_OK (stacks/lab/CEPH_MEASURED.md) =
# 4726 MiB; the bench ran at 6144 MiB (5923 MiB seen by the guest, 4497 MiB available when idle).
CEPH_STORAGE_MEMORY_MIB = 6144


def rail_subnet(index: int) -> str:
    """The private /24 of lab rail ``index``: only the lab's VMs are on it."""
    return f"10.77.{index}.0/24"


def lab_kernel(target: LabTarget) -> Traced[LabKernel]:
    chosen = LAB_KERNELS[target.kernel]
    auth = "with" if chosen.nvme_auth else "without"
    index = "the machine's own apt index" if chosen.machine_index else "a private apt index of the machine's mirror"
    return traced(chosen, ["target.kernel"], "lab.kernel_from_the_spec",
                  f"{chosen.name}: Debian's {chosen.release_series} kernel, linux-image-amd64 of {chosen.apt_suite} "
                  f"through {index}, {auth} NVMe DH-CHAP (CONFIG_NVME_TARGET_AUTH)")


def storage_memory(target: LabTarget) -> Traced[int]:
    """A storage VM's RAM: the spec's target.memory, or more where the Ceph daemons need it."""
    asked = int(target.memory.value // (1 << 20))
    mib = max(asked, CEPH_STORAGE_MEMORY_MIB)
    return traced(mib, ["target.memory"], "lab.storage_memory_for_ceph",
                  f"max(target.memory {asked} MiB, Ceph's {CEPH_STORAGE_MEMORY_MIB} MiB: {LAB_OSDS} OSDs x "
                  f"osd_memory_target 896 MiB + mon/mgr/mds 370 MiB + root file system 772 MiB = 4726 MiB, run at "
                  f"{CEPH_STORAGE_MEMORY_MIB} MiB in stacks/lab/CEPH_MEASURED.md) = {mib} MiB")


def plan_lab(target: LabTarget, fabric: FabricPlan) -> LabPlan:
    memory_mib = int(target.memory.value // (1 << 20))
    storage_mib = storage_memory(target)
    osd_disks = tuple(LabDisk(name=f"osd{i}", size_bytes=LAB_OSD_DISK) for i in range(LAB_OSDS))
    hosts = [LabHost(name=f"storage-{i + 1}", role="storage_target", memory_mib=storage_mib.value, cpus=LAB_VCPUS,
                     disks=(LabDisk(name="nvmeof", size_bytes=NVMEOF_DISK), *osd_disks))
             for i in range(target.storage_targets)]
    hosts += [LabHost(name=f"client-{i + 1}", role="gpu_client", memory_mib=memory_mib, cpus=LAB_VCPUS,
                      disks=(LabDisk(name="fast", size_bytes=FAST_DISK),))  # disks.slow: its own namespace
              for i in range(target.clients)]
    rails = [LabRail(index=i, name=f"rail{i}", subnet=rail_subnet(i), mtu=fabric.mtu.value)
             for i in range(target.rails)]
    return LabPlan(hosts=tuple(hosts), rails=tuple(rails), storage_memory_mib=storage_mib,
                   image=lab_image(lab_kernel(target), CEPH_PACKAGES, CEPH_MODULES))


def with_own_namespaces(lab: LabPlan, nvmeof: NvmeofPlan) -> LabPlan:
    """Each client's disks.slow: the NVMe-oF namespace it owns (no virtual disk of its own: the storage VM's
    disks.nvmeof holds it)."""
    device = {s.owner: s.device for s in nvmeof.subsystems}
    hosts = tuple(h.model_copy(update={"named_disks": {"slow": device[h.name]}}) if h.name in device else h
                  for h in lab.hosts)
    return lab.model_copy(update={"hosts": hosts})


def lab_image(kernel: Traced[LabKernel], extra_packages: tuple[str, ...] = (),
              extra_modules: tuple[str, ...] = ()) -> LabImage:
    """The lab's guest image: the default one, or a variant with more packages and kernel modules baked in."""
    return LabImage(suite=LAB_SUITE, packages=(*LAB_PACKAGES, *extra_packages),
                    kernel_modules=(*LAB_MODULES, *extra_modules), kernel=kernel)
