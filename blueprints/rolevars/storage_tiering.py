"""Variables of the ``storage_tiering`` role: each GPU client's dm-cache (lvmcache) tier, from the cache plan.

The local fast device caches the slow one in the Blueprint's mode and policy; read-ahead and dirty-page
(write coalescing) tunables, the tiered file system's mount point (where acceptance writes its scratch
files) and the hot-set warm-up all come from the Blueprint.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from blueprints.blueprint import Blueprint
from blueprints.rolevars import Group, RoleVars

DEFAULT_MOUNT_POINT = "/mnt/clustersmith"


class StorageTieringVars(RoleVars):
    ROLE = "storage_tiering"

    storage_tiering_cache_mode: Literal["writethrough", "writeback"] = Field(description="dm-cache mode")
    storage_tiering_cache_policy: Literal["smq"] = Field(description="dm-cache replacement policy")
    storage_tiering_cache_size_bytes: int = Field(
        gt=0, description="Cache pool on the fast device: the node's hot shard, capped by its local NVMe; "
                          "the warm-up job reads this much of the hot set through the cache")
    storage_tiering_read_ahead_kb: int = Field(gt=0, description="Read-ahead of the cached volume in KiB")
    storage_tiering_dirty_background_ratio: int = Field(
        ge=1, le=100, description="vm.dirty_background_ratio: % of memory dirty before background writeback")
    storage_tiering_dirty_ratio: int = Field(
        ge=1, le=100, description="vm.dirty_ratio: % of memory dirty before writers are throttled")
    storage_tiering_mount_point: str = Field(
        default=DEFAULT_MOUNT_POINT, description="Where the tiered file system is mounted")
    storage_tiering_volume_group: str = Field(default="clustersmith", description="LVM volume group of the tier")
    storage_tiering_fast_device: str | None = Field(
        default=None, description="Cache device (local NVMe); unset: the inventory's disks.fast")
    storage_tiering_slow_device: str | None = Field(
        default=None, description="Origin device behind the cache; unset: the inventory's disks.slow")


def role_vars(bp: Blueprint) -> dict[Group, RoleVars]:
    cache = bp.storage.cache
    if cache is None:  # dm-cache only in front of a block device the node owns (its own NVMe-oF namespace)
        return {}
    return {
        "gpu_clients": StorageTieringVars(
            storage_tiering_cache_mode=cache.mode.value,
            storage_tiering_cache_policy=cache.policy,
            storage_tiering_cache_size_bytes=int(cache.size.value.value),
            storage_tiering_read_ahead_kb=cache.read_ahead_kb.value,
            storage_tiering_dirty_background_ratio=cache.dirty_background_ratio,
            storage_tiering_dirty_ratio=cache.dirty_ratio,
            storage_tiering_mount_point=cache.mount_point,
        )
    }
