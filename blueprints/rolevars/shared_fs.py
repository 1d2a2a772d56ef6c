"""Variables of the ``shared_fs`` role: the shared file system every GPU node mounts, and its client cache.

From ``storage.shared``: the client (CephFS, Lustre, NFS, WEKA, Storage Scale), what it mounts (the plan's source, the
Ceph monitors' addresses on their public rail, or the managed Lustre's mount from the stack's outputs in the
inventory), the options, the rail whose bring-up the mount unit waits for, each provider's documented client tuning,
and FS-Cache (cachefilesd on a volume of the node's local NVMe). CephFS keys come from the secrets file, never from a
role variable.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.blueprint import Blueprint
from blueprints.rolevars import Group, RoleVars


class TuningVars(RoleVars):
    ROLE = "shared_fs"

    kind: Literal["modprobe", "lctl"] = Field(description="modprobe: module option before the module loads; lctl: "
                                                          "set_param after the mount")
    name: str = Field(description="module and option, or the lctl parameter")
    value: str = Field(description="The value (per_cpu: times the host's CPUs)")
    min_cpus: int | None = Field(default=None, description="Only on hosts with more CPUs")
    min_memory_gib: int | None = Field(default=None, description="Only on hosts with more memory (GiB)")
    per_cpu: int | None = Field(default=None, description="The value is value x per_cpu x the host's CPUs")
    source: str = Field(description="The provider's document that gives it")


class FsCacheVars(RoleVars):
    ROLE = "shared_fs"

    size_bytes: int = Field(gt=0, description="Logical volume for the cache on disks.fast")
    volume_group: str = Field(description="LVM volume group on disks.fast (created when missing)")
    logical_volume: str = Field(description="Its logical volume")
    cache_dir: str = Field(pattern=r"^/[A-Za-z0-9_/.-]+$", description="cachefilesd dir: the volume's mount point")
    tag: str = Field(description="cachefilesd tag")
    brun: int = Field(ge=0, le=100, description="cachefilesd brun (% free)")
    bcull: int = Field(ge=0, le=100, description="cachefilesd bcull (% free)")
    bstop: int = Field(ge=0, le=100, description="cachefilesd bstop (% free)")


class SharedFsVars(RoleVars):
    ROLE = "shared_fs"

    shared_fs_type: Literal["cephfs", "lustre", "nfs", "wekafs", "gpfs"] = Field(
        description="The client: the mount type every GPU node uses")
    shared_fs_engine: Literal["ceph", "managed-lustre", "external"] = Field(
        description="Who serves it: ceph (the ceph role), managed-lustre (the stack), external (the user)")
    shared_fs_source_from: Literal["plan", "ceph_monitors", "stack_outputs"] = Field(
        description="Where the mount source comes from: shared_fs_source, the monitors' rail addresses, or the "
                    "inventory's clustersmith_file_system.mount (written by `inventory --from-stack`)")
    shared_fs_source: str = Field(description="The mount source, where the plan knows it (external); empty: from "
                                                "the monitors or the stack")
    shared_fs_options: tuple[str, ...] = Field(description="Mount options the plan sets")
    shared_fs_mount_point: str = Field(pattern=r"^/[A-Za-z0-9_/.+@-]+$",
                                       description="Where the file system's root is mounted (storage.shared)")
    shared_fs_mount_timeout: int = Field(ge=1, description="Seconds the mount may take (mount.ceph mount_timeout for "
                                                           "CephFS); the unit's TimeoutSec adds 30")
    shared_fs_client_rail: int | None = Field(default=None, description="This node's rail the mount uses: the unit "
                                                                        "waits for the rdma role's bring-up; unset: "
                                                                        "the management network")
    shared_fs_name: str = Field(description="CephFS: the file system name (mds_namespace); empty for the others")
    shared_fs_monitor_hosts: tuple[str, ...] = Field(description="CephFS: inventory names of the monitors")
    shared_fs_monitor_nic: int = Field(ge=0, description="CephFS: rail index (inventory `rails`) of the monitors' "
                                                         "public address")
    shared_fs_tuning: tuple[TuningVars, ...] = Field(description="Client settings the provider documents")
    shared_fs_fscache: FsCacheVars | None = Field(default=None, description="FS-Cache on disks.fast; unset: none")


def role_vars(bp: Blueprint) -> dict[Group, RoleVars]:
    if not bp.hosts_by_role().get("gpu_client"):
        return {}
    fs = bp.storage.shared
    ceph = bp.storage.ceph
    cache = fs.fscache
    values: dict[str, object] = {
        "shared_fs_type": fs.client, "shared_fs_engine": fs.engine.value, "shared_fs_source_from": fs.source_from,
        "shared_fs_options": fs.options, "shared_fs_mount_point": fs.mount_point,
        "shared_fs_mount_timeout": fs.mount_timeout.value, "shared_fs_source": fs.source or "",
        "shared_fs_name": "", "shared_fs_monitor_hosts": (), "shared_fs_monitor_nic": 0, "shared_fs_tuning": (),
    }
    if fs.client_rail is not None:
        values["shared_fs_client_rail"] = fs.client_rail
    if ceph is not None and fs.engine.value == "ceph":
        values.update(shared_fs_name=ceph.fs_name, shared_fs_monitor_hosts=ceph.daemons.monitor_hosts,
                      shared_fs_monitor_nic=ceph.network.public_nic.value)
    if fs.tuning:
        values["shared_fs_tuning"] = tuple(
            TuningVars(kind=t.kind, name=t.name, value=t.value, source=t.source,
                       **{k: v for k, v in (("min_cpus", t.min_cpus), ("min_memory_gib", t.min_memory_gib),
                                            ("per_cpu", t.per_cpu)) if v is not None})
            for t in fs.tuning)
    if cache is not None:
        brun, bcull, bstop = cache.cull_percent
        values["shared_fs_fscache"] = FsCacheVars(
            size_bytes=int(cache.size.value.value), volume_group=cache.volume_group,
            logical_volume=cache.logical_volume, cache_dir=cache.cache_dir, tag=cache.tag, brun=brun, bcull=bcull,
            bstop=bstop)
    return {"gpu_clients": SharedFsVars.model_validate(values)}
