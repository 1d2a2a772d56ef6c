"""Variables of the ``shared_fs`` role: the shared file system every GPU node mounts (CephFS today).

The kernel CephFS client over the storage rail (storage.ceph.network.client_rail) to the monitors' public address,
through a systemd mount unit, as client.fs-<host> with its key from the secrets file (never a role variable).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.blueprint import Blueprint
from blueprints.rolevars import Group, RoleVars


class SharedFsVars(RoleVars):
    ROLE = "shared_fs"

    shared_fs_type: Literal["cephfs"] = Field(description="The shared file system's kind")
    shared_fs_name: str = Field(description="CephFS file system name (mds_namespace)")
    shared_fs_mount_point: str = Field(pattern=r"^/[A-Za-z0-9_/.]+$",
                                       description="Where the file system's root is mounted (storage.ceph.mount)")
    shared_fs_mount_timeout: int = Field(ge=1, description="mount.ceph mount_timeout, seconds")
    shared_fs_monitor_hosts: tuple[str, ...] = Field(description="Inventory names of the monitors")
    shared_fs_monitor_nic: int = Field(ge=0, description="Rail index (inventory `rails`) of the monitors' public "
                                                         "address")
    shared_fs_client_rail: int = Field(ge=0, description="This node's rail that reaches the public network")


def role_vars(bp: Blueprint) -> dict[Group, RoleVars]:
    plan = bp.storage.ceph
    if plan is None or not bp.hosts_by_role().get("gpu_client"):
        return {}
    return {"gpu_clients": SharedFsVars(
        shared_fs_type="cephfs",
        shared_fs_name=plan.fs_name,
        shared_fs_mount_point=plan.mount.mount_point,
        shared_fs_mount_timeout=plan.mount.mount_timeout.value,
        shared_fs_monitor_hosts=plan.daemons.monitor_hosts,
        shared_fs_monitor_nic=plan.network.public_nic.value,
        shared_fs_client_rail=plan.network.client_rail,
    )}
