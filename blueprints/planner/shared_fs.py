"""The shared file system every GPU node mounts: which engine serves it, how the client mounts it, and its cache.

The engine is decided here, once: the spec's ``storage.external`` (the user's own NFS, Lustre, WEKA, VAST or Storage
Scale), else the target's own (Ceph on bare metal and the lab, the provider's managed Lustre on the clouds). The mount
(client, source, options, the rail it waits for), each provider's documented Lustre client tuning, and FS-Cache
(cachefilesd on the node's local NVMe, the ``fsc`` option) for the clients that use it (NFS and CephFS) are decided
here too; the shared_fs role, the monitoring plan and acceptance read them from the Blueprint.
"""

from __future__ import annotations

from blueprints.blueprint import (
    CachePlan,
    CephPlan,
    ClientFs,
    ClientSetting,
    ComputePlan,
    FsCacheCounters,
    FsCachePlan,
    SharedCapability,
    SharedFsPlan,
    Traced,
    traced,
)
from blueprints.planner.context import PlanContext, ceil_div
from blueprints.planner.storage_fabric import client_rails
from blueprints.spec import ExternalStorage
from blueprints.units import Ratio, Size

LUSTRE_MOUNT = "/mnt/lustre"
SCRATCH_NAME = ".clustersmith-accept"
# systemd's own DefaultTimeoutStartSec (systemd-system.conf(5): 90 s); the unit's TimeoutSec is mount_timeout + 30.
MOUNT_TIMEOUT = 60
# NFS over RDMA listens on 20049 (nfs(5): "port=n ... If the proto option is rdma, the default is 20049"; RFC 8267).
NFS_RDMA_PORT = 20049
# FS-Cache's backing store: an LVM volume on the node's local NVMe (disks.fast), in the volume group the storage_tiering
# role makes there for dm-cache (roles/storage_tiering: `clustersmith`), so one disk holds both caches.
VOLUME_GROUP = "clustersmith"
FSCACHE_LV = "fscache"
FSCACHE_DIR = "/var/cache/fscache"
FSCACHE_TAG = "clustersmith"
# The culling limits of the /etc/cachefilesd.conf cachefilesd ships (and the example in cachefilesd.c's header): culling
# starts below bcull 7 % free, stops above brun 10 %, no new data below bstop 3 % (cachefilesd.conf(5) names 7, 5
# and 1 % as the values without a line; the role writes every line).
CULL = (10, 7, 3)
# What one disk keeps for LVM (label and metadata in its first MiB, pe_start; vgcreate's 4 MiB extents) and dm-cache's
# pool metadata beside its data: 64 MiB, a whole number of extents.
EXTENT = 4 << 20
DISK_RESERVE = 64 << 20
# The counters of /proc/fs/fscache/stats that define the hit ratio, per kernel range, newest first (a host is judged by
# the first set whose every counter its file prints). From the kernel's own source: between the FS-Cache rewrite of
# 5.17 and 6.7 fscache_stats_show printed "FS-Cache statistics" and then netfs_stats_show's lines, labelled "RdHelp"
# (fs/fscache/stats.c, fs/netfs/stats.c); 6.8 moved FS-Cache into netfs (fs/netfs/fscache_*.c) and /proc/fs/fscache
# became a link to /proc/fs/netfs, whose stats print netfs's lines first, labelled "Netfs", then FS-Cache's; 6.11
# renamed those labels ("netfs: Adjust labels in /proc/fs/netfs/stats", D. Howells, 2024-06-20: "DownOps: DL=",
# "CaRdOps: RD="). NFS read the cache page by page through FS-Cache's fallback API until it moved onto netfs in 6.9.
# Checked against real files of the lab: 6.1's NFS file (tests/fixtures/fscache/stats-6.1-nfs-lab.txt: IO rd/wr
# counted, every RdHelp 0), 6.1's CephFS cache_read step (tests/fixtures/fscache/cephfs-6.1-lab: first pass RdHelp DL
# +16 and RD +0, second pass RD +6 and DL +0), and 6.12's (tests/fixtures/fscache/README.md; test_fscache.py).
_NETFS_WHY = ("each read subrequest goes to the cache (netfs_n_rh_read, '{label} RD=') or to the server "
              "(netfs_n_rh_download, '{down} DL='), so RD / (RD + DL) is the share of read subrequests the cache "
              "served")
CEPH_COUNTERS = (
    FsCacheCounters(kernels="6.11 and later", hits=(("CaRdOps", "RD"),), misses=(("DownOps", "DL"),),
                    why="CephFS reads through the netfs library: "
                        + _NETFS_WHY.format(label="CaRdOps :", down="DownOps :")),
    FsCacheCounters(kernels="6.8-6.10", hits=(("Netfs", "RD"),), misses=(("Netfs", "DL"),),
                    why="CephFS reads through the netfs library: "
                        + _NETFS_WHY.format(label="Netfs :", down="Netfs :")),
    FsCacheCounters(kernels="5.17-6.7", hits=(("RdHelp", "RD"),), misses=(("RdHelp", "DL"),),
                    why="CephFS reads through the netfs library: "
                        + _NETFS_WHY.format(label="RdHelp :", down="RdHelp :")),
)
NFS_COUNTERS = (
    FsCacheCounters(kernels="6.11 and later", hits=(("CaRdOps", "RD"),), misses=(("DownOps", "DL"),),
                    why="NFS reads through the netfs library from 6.9: "
                        + _NETFS_WHY.format(label="CaRdOps :", down="DownOps :")),
    FsCacheCounters(kernels="5.17-6.10", hits=(("IO", "rd"),), misses=(("IO", "wr"), ("NoSpace", "nwr")),
                    why="NFS up to 6.8 does not use the netfs library: it reads the cache page by page "
                        "(fscache_fallback_read_page, counted by cachefiles as fscache_n_read, 'IO : rd=') and writes "
                        "each page it read from the server into the cache (fscache_fallback_write_page, "
                        "fscache_n_write, 'IO : wr='; refused for space: 'NoSpace: nwr='); a file opened for writing "
                        "disables its cookie (FSCACHE_INVAL_DIO_WRITE), so on a read pass wr counts misses only. On "
                        "6.9 and 6.10 NFS reads through netfs, whose lines are labelled 'Netfs' as on 6.8, where NFS "
                        "leaves them at 0; cachefiles still counts every cache read and write on the IO line, so these "
                        "kernels are judged by it too, by operations rather than subrequests"),
)
# Lustre client settings each provider documents. AWS: "Performance tips", Amazon FSx for Lustre User Guide
# (https://docs.aws.amazon.com/fsx/latest/LustreGuide/performance-tips.html), "Recommended client instance tuning for
# optimal performance": the first two for clients with more than 64 GiB of memory, the rest for more than 64 vCPUs.
FSX_TIPS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/performance-tips.html"
FSX_MOUNT = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/mounting-ec2-instance.html"
AZURE_MOUNT = "https://learn.microsoft.com/en-us/azure/aks/azure-managed-lustre-static-provisioning"
GCP_MOUNT = "https://cloud.google.com/managed-lustre/docs/connect-from-compute-engine"
GCP_PERFORMANCE = "https://docs.cloud.google.com/managed-lustre/docs/performance"


def _fsx(name: str, value: str, why: str, kind: str = "lctl", **when: int) -> ClientSetting:
    return ClientSetting.model_validate({"kind": kind, "name": name, "value": value, "why": why, "source": FSX_TIPS,
                                         **when})


LUSTRE_TUNING: dict[str, tuple[ClientSetting, ...]] = {
    "aws": (
        _fsx("ldlm.namespaces.*.lru_max_age", "600000", "clients with more than 64 GiB of memory: keep DLM locks "
             "10 minutes", min_memory_gib=64),
        _fsx("ldlm.namespaces.*.lru_size", "100", "clients with more than 64 GiB of memory: 100 locks per CPU",
             min_memory_gib=64, per_cpu=1),
        _fsx("ptlrpc ptlrpcd_per_cpt_max", "32", "clients with more than 64 vCPUs", kind="modprobe", min_cpus=64),
        _fsx("ksocklnd credits", "2560", "clients with more than 64 vCPUs", kind="modprobe", min_cpus=64),
        _fsx("osc.*OST*.max_rpcs_in_flight", "32", "clients with more than 64 vCPUs, after the mount", min_cpus=64),
        _fsx("mdc.*.max_rpcs_in_flight", "64", "clients with more than 64 vCPUs, after the mount", min_cpus=64),
        _fsx("mdc.*.max_mod_rpcs_in_flight", "50", "clients with more than 64 vCPUs, after the mount", min_cpus=64),
    ),
    # Google Cloud documents no client setting beyond the VPC MTU (8896, which the stack sets on its networks:
    # GCP_PERFORMANCE, "VPC network maximum transmission unit"); Azure none beyond its mount options.
    "gcp": (),
    "azure": (),
}
# The mount options each provider's procedure uses: FSx `mount -t lustre -o relatime,flock` (FSX_MOUNT); Azure Managed
# Lustre `noatime, flock` (AZURE_MOUNT, the CSI StorageClass mountOptions); Google Cloud the plain
# `mount -t lustre IP@tcp:/fsname` (GCP_MOUNT).
LUSTRE_OPTIONS = {"aws": ("relatime", "flock"), "gcp": (), "azure": ("noatime", "flock")}
LUSTRE_SOURCE = {"aws": FSX_MOUNT, "gcp": GCP_MOUNT, "azure": AZURE_MOUNT}


def _timeout() -> Traced[int]:
    return traced(MOUNT_TIMEOUT, ["target.provider"], "shared_fs.mount_timeout",
                  f"{MOUNT_TIMEOUT} s + 30 s = systemd's default 90 s start timeout (systemd-system.conf(5))")


def _fscache(ctx: PlanContext, compute: ComputePlan, client: ClientFs, dm_cache: CachePlan | None,
             min_hit: Traced[Ratio]) -> FsCachePlan | None:
    """FS-Cache on the node's local NVMe for the clients that use it (NFS and CephFS), where the plan names that disk
    (bare metal and the lab: disks.fast; the clouds' instance stores are not in their stacks' outputs)."""
    if client not in ("cephfs", "nfs") or ctx.is_cloud:
        return None
    req = ctx.req
    hot_total = req.data.training_set.value * req.data.hot_fraction.value
    shard = hot_total / max(compute.nodes.value, 1)
    local = compute.local_nvme.value
    taken = dm_cache.size.value.value if dm_cache is not None else 0.0
    room = max(local - taken - DISK_RESERVE, 0.0)
    want = shard / (1 - CULL[0] / 100)
    size = min(ceil_div(want, EXTENT), int(room // EXTENT)) * EXTENT
    if size < EXTENT:
        return None
    spec = ["data.training_set", "data.hot_fraction", "compute.gpus"]
    formula = (f"min(hot shard {Size.of(hot_total)} / {compute.nodes.value} nodes = {Size.of(shard)} / (1 - brun "
               f"{CULL[0]} %) = {Size.of(want)}, local NVMe {compute.local_nvme}"
               + (f" - dm-cache {dm_cache.size.value}" if dm_cache is not None else "")
               + f" - 64 MiB LVM reserve = {Size.of(room)}), whole 4 MiB extents = {Size.of(size)}")
    return FsCachePlan(
        size=traced(Size.of(size), spec, "shared_fs.fscache_holds_the_hot_shard", formula),
        volume_group=VOLUME_GROUP, logical_volume=FSCACHE_LV, cache_dir=FSCACHE_DIR, tag=FSCACHE_TAG,
        cull_percent=CULL, counters=CEPH_COUNTERS if client == "cephfs" else NFS_COUNTERS, min_hit_ratio=min_hit)


def min_hit_ratio() -> Traced[Ratio]:
    return traced(Ratio.parse("95%"), ["data.hot_fraction"], "cache.min_hit_ratio",
                  "hot set cached: hits below 95 % mean it does not fit or is not warmed")


def _with_fsc(options: tuple[str, ...], fscache: FsCachePlan | None) -> tuple[str, ...]:
    return (*options, "fsc") if fscache is not None else options


def plan_ceph_mount(ctx: PlanContext, compute: ComputePlan, ceph: CephPlan, dm_cache: CachePlan | None) -> SharedFsPlan:
    fscache = _fscache(ctx, compute, "cephfs", dm_cache, min_hit_ratio())
    hot = next(p for p in ceph.pools if p.tier == "hot")
    return SharedFsPlan(
        engine=traced("ceph", ["target.provider"], "storage.engine_by_target",
                      f"{ctx.provider}: Ceph, built by the ceph role"),
        client="cephfs", owner="clustersmith", described=f"Ceph ({ceph.fs_name}), built by clustersmith",
        source_from="ceph_monitors", transport="tcp", options=_with_fsc(("noatime",), fscache),
        mount_point=ceph.mount.mount_point, mount_timeout=ceph.mount.mount_timeout,
        client_rail=ceph.network.client_rail, fscache=fscache,
        scratch_dir=f"{ceph.mount.mount_point}{hot.directory}/{SCRATCH_NAME}")


def plan_managed_mount(ctx: PlanContext, service: str) -> SharedFsPlan:
    provider = ctx.provider
    return SharedFsPlan(
        engine=traced("managed-lustre", ["target.provider"], "storage.engine_by_target",
                      f"{provider}: the provider's managed Lustre ({service}), created by the stack"),
        client="lustre", owner="provider", described=f"{service}, the provider's managed Lustre",
        source_from="stack_outputs", transport="tcp", options=LUSTRE_OPTIONS[provider], mount_point=LUSTRE_MOUNT,
        mount_timeout=_timeout(), tuning=LUSTRE_TUNING[provider],
        scratch_dir=f"{LUSTRE_MOUNT}/{SCRATCH_NAME}")


EXTERNAL_CLIENT: dict[str, ClientFs] = {"nfs": "nfs", "vast": "nfs", "lustre": "lustre", "weka": "wekafs",
                                        "gpfs": "gpfs"}


def _external_options(ext: ExternalStorage) -> tuple[str, str, tuple[str, ...]]:
    """(transport, how, mount options) of an external system."""
    if ext.type in ("nfs", "vast"):
        if ext.transport == "rdma":
            return "rdma", f"NFS over RDMA (proto=rdma, port {NFS_RDMA_PORT})", \
                ("proto=rdma", f"port={NFS_RDMA_PORT}", *ext.options)
        nconnect = (f"nconnect={ext.nconnect}",) if ext.nconnect else ()
        return "tcp", "NFS over TCP" + (f", {ext.nconnect} connections" if ext.nconnect else ""), \
            ("proto=tcp", *nconnect, *ext.options)
    if ext.type == "lustre":
        rdma = "@o2ib" in ext.source
        return ("rdma" if rdma else "tcp"), f"Lustre over {'o2ib (RDMA)' if rdma else 'TCP'}", ext.options
    return "tcp", f"{ext.type} through its vendor's client", ext.options


def _capability(ext: ExternalStorage) -> SharedCapability:
    cap = ext.capability

    def why(path: str) -> tuple[list[str], str, str]:
        return [f"storage.external.capability.{path}"], "storage.external_capability_as_stated", \
            "as the spec states it; acceptance measures it"

    return SharedCapability(
        read_throughput=traced(cap.read_throughput, *why("read_throughput")) if cap.read_throughput else None,
        write_throughput=traced(cap.write_throughput, *why("write_throughput")) if cap.write_throughput else None,
        capacity=traced(cap.capacity, *why("capacity")) if cap.capacity else None)


def plan_external_mount(ctx: PlanContext, compute: ComputePlan, ext: ExternalStorage) -> SharedFsPlan:
    client = EXTERNAL_CLIENT[ext.type]
    transport, how, options = _external_options(ext)
    fscache = _fscache(ctx, compute, client, None, min_hit_ratio())
    rails = client_rails(ctx, compute).value
    rail = rails[0] if rails and not ctx.is_cloud else None
    return SharedFsPlan(
        engine=traced("external", ["storage.external.type"], "storage.engine_from_the_spec",
                      f"storage.external: the user's own {ext.type} at {ext.source}; clustersmith builds none"),
        client=client, owner="user", described=f"the user's own {ext.type} at {ext.source} ({how})",
        source=ext.source, source_from="plan", transport=transport, options=_with_fsc(options, fscache),
        mount_point=ext.where, mount_timeout=_timeout(), client_rail=rail, fscache=fscache,
        capability=_capability(ext), scratch_dir=f"{ext.where}/{SCRATCH_NAME}")
