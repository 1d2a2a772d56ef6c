"""The shared file system every GPU node mounts, its client tuning and its FS-Cache."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.blueprint.check_args import ratio_formula
from blueprints.model import Frozen
from blueprints.traced import Traced
from blueprints.units import Rate, Ratio, Size

StorageEngine = Literal["ceph", "managed-lustre", "external"]


ClientFs = Literal["cephfs", "lustre", "nfs", "wekafs", "gpfs"]


class ClientSetting(Frozen):
    """One client tuning a provider documents for its file system, applied by the shared_fs role."""

    kind: Literal["modprobe", "lctl"] = Field(description="modprobe: a module option (/etc/modprobe.d), before the "
                                                          "module loads; lctl: `lctl set_param` after the mount")
    name: str = Field(description="module and option (ksocklnd credits) or the lctl parameter "
                                  "(osc.*OST*.max_rpcs_in_flight)")
    value: str
    why: str
    source: str = Field(description="The provider's document that gives it")
    min_cpus: int | None = Field(default=None, description="Applied only on hosts with more CPUs than this")
    min_memory_gib: int | None = Field(default=None, description="Applied only on hosts with more memory (GiB)")
    per_cpu: int | None = Field(default=None, description="The value is this many times the host's CPUs")


class FsCacheCounters(Frozen):
    """Which counters of the kernel's /proc/fs/fscache/stats count a read served by the cache and one that was not, on
    the kernels that print them: the hit ratio is hits / (hits + misses) over a window. Each counter is named by its
    line's label and its key, as the file prints them (``IO``, ``rd``). The kernel moved and renamed these lines
    (netfs printed under FS-Cache as ``RdHelp`` until 6.7, before it as ``Netfs`` from 6.8, as ``DownOps``/``CaRdOps``
    from 6.11), so a plan names one set per kernel range, newest first."""

    kernels: str = Field(description="The upstream kernels that print these counters and count this client's reads by "
                                     "them, e.g. '5.17-6.7'")
    hits: tuple[tuple[str, str], ...] = Field(description="(line, key) of the counters of reads the cache served")
    misses: tuple[tuple[str, str], ...] = Field(description="(line, key) of the counters of reads it did not")
    why: str = Field(description="Why these counters, for this client on these kernels")

    @property
    def formula(self) -> str:
        return ratio_formula(self.hits, self.misses)


class FsCachePlan(Frozen):
    """FS-Cache on each GPU node's local NVMe (cachefilesd), in front of the shared file system (the ``fsc`` mount
    option): a logical volume of ``size`` in ``volume_group`` on disks.fast, ext4, mounted at ``cache_dir``."""

    size: Traced[Size]
    volume_group: str = Field(description="LVM volume group on the node's disks.fast (storage_tiering's, where it "
                                          "also plans dm-cache)")
    logical_volume: str
    cache_dir: str = Field(description="cachefilesd's `dir`")
    tag: str = Field(description="cachefilesd's `tag`")
    cull_percent: tuple[int, int, int] = Field(description="cachefilesd brun, bcull, bstop: free-space percentages "
                                                           "(its defaults 10, 7, 3)")
    counters: tuple[FsCacheCounters, ...] = Field(
        min_length=1, description="One set per kernel range, newest first: a host's reading is judged by the first set "
                                  "whose every counter its file prints (validators/fscache.py `choose`, and the "
                                  "monitoring rule's `or` in the same order)")
    min_hit_ratio: Traced[Ratio]


class SharedCapability(Frozen):
    """What an external system can give the cluster: the spec's statement, or nothing stated."""

    read_throughput: Traced[Rate] | None = None
    write_throughput: Traced[Rate] | None = None
    capacity: Traced[Size] | None = None


class SharedFsPlan(Frozen):
    """The shared file system every GPU node mounts (the shared_fs role), whoever builds it."""

    engine: Traced[StorageEngine]
    client: ClientFs = Field(description="The kernel client (and mount type) every GPU node uses")
    owner: Literal["clustersmith", "provider", "user"] = Field(
        description="Who builds and runs the storage system: clustersmith (Ceph), the cloud provider (its managed "
                    "Lustre, from the stack), the user (external)")
    described: str = Field(description="The system in words, as reports name it")
    source: str | None = Field(default=None, description="What every node mounts, where the plan knows it (external); "
                                                         "None: from the Ceph monitors or the stack's outputs")
    source_from: Literal["plan", "ceph_monitors", "stack_outputs"]
    transport: Literal["rdma", "tcp"] = Field(description="How the client reaches the servers")
    options: tuple[str, ...] = Field(description="Mount options the plan sets (the client's own, the spec's, fsc)")
    mount_point: str
    mount_timeout: Traced[int] = Field(description="Seconds the mount may take before systemd gives up (less 30 s)")
    client_rail: int | None = Field(default=None, description="The rail the mount uses, whose bring-up it waits for; "
                                                              "None: the host's management network")
    tuning: tuple[ClientSetting, ...] = Field(default=(), description="Client settings the provider documents")
    fscache: FsCachePlan | None = Field(default=None, description="FS-Cache where the client and the node have one")
    capability: SharedCapability | None = Field(default=None, description="external: what the spec states")
    scratch_dir: str = Field(description="Directory acceptance writes its own files in (under mount_point)")
