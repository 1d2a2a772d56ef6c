"""The Ceph cluster (bare metal and the lab): daemons, OSD groups, EC profiles, pools, networks, settings."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from blueprints.model import Frozen
from blueprints.traced import Traced
from blueprints.units import Rate, Size


class CephOsdGroup(Frozen):
    """The OSD hosts of one tier: one CRUSH device class, set explicitly on each of their OSDs."""

    tier: str
    device_class: str = Field(description="CRUSH device class every OSD of the tier gets (never auto-detected)")
    hosts: int = Field(description="Hosts of the tier (its storage servers)")
    osds_per_host: Traced[int] = Field(description="OSDs on each host: drives x OSDs per drive (catalog)")
    per_node_read: Traced[Rate] = Field(description="Client reads one host serves under the tier's protection")
    per_node_write: Traced[Rate] = Field(description="Client writes one host absorbs, after the protection's "
                                                     "amplification")


class CephEcProfile(Frozen):
    """An erasure-code profile as `ceph osd erasure-code-profile set` takes it."""

    name: str
    k: int
    m: int
    crush_failure_domain: Literal["host", "osd"] = Field(alias="crush-failure-domain")
    crush_device_class: str = Field(alias="crush-device-class")
    plugin: Literal["jerasure"] = "jerasure"
    technique: Literal["reed_sol_van"] = "reed_sol_van"

    model_config = ConfigDict(populate_by_name=True)  # Frozen's, and the field aliases accepted by name too


class CephPool(Frozen):
    """One pool, named and set as Ceph names its settings."""

    name: str
    application: Literal["cephfs"] = "cephfs"
    purpose: Literal["metadata", "default_data", "tier_data"]
    tier: str | None = Field(default=None, description="Tier whose data it holds (tier_data pools)")
    type: Literal["replicated", "erasure"]
    size: Traced[int] = Field(description="Copies (replicated) or k+m (erasure)")
    min_size: Traced[int]
    erasure_code_profile: str | None = Field(default=None, description="CephEcProfile name (erasure pools)")
    crush_rule: str = Field(description="CRUSH rule: replicated_<class> or, for erasure pools, the pool's own")
    crush_device_class: str
    crush_failure_domain: Literal["host", "osd"]
    pg_num: Traced[int] = Field(description="pg_num = pgp_num, a power of two")
    pg_autoscale_mode: Traced[Literal["on", "off", "warn"]]
    allow_ec_overwrites: bool = Field(default=False, description="Required for CephFS data on an erasure pool")
    directory: str | None = Field(default=None, description="CephFS directory whose ceph.dir.layout.pool is this pool")


class CephDaemons(Frozen):
    monitors: Traced[int]
    managers: Traced[int]
    mds_active: Traced[int] = Field(description="max_mds")
    mds_standby: Traced[int] = Field(description="standby_count_wanted")
    monitor_hosts: tuple[str, ...]
    manager_hosts: tuple[str, ...]
    mds_hosts: tuple[str, ...]


class CephNetwork(Frozen):
    public_nic: Traced[int] = Field(description="Storage NIC (rail index) of every Ceph host on the public network")
    cluster_nic: Traced[int] = Field(description="Storage NIC of every Ceph host on the cluster network")
    client_rail: int = Field(description="GPU nodes' rail that reaches the public network")
    public_subnet: str | None = Field(default=None, description="The lab's rail subnet; None: the site's addressing")
    cluster_subnet: str | None = None
    dscp: Traced[int] = Field(description="DSCP of Ceph's TCP traffic")
    lossless: bool = Field(description="True only if the QoS plan puts that DSCP on a PFC priority")


class CephSetting(Frozen):
    """One ceph.conf [global] setting the design changes from Ceph's default, and why."""

    name: str = Field(description="As ceph.conf spells it, e.g. osd class update on start")
    value: str
    why: str


class CephMount(Frozen):
    """How every GPU node mounts the file system (the shared_fs role): the kernel client over client_rail."""

    mount_point: str = Field(description="Where CephFS's root is mounted on every GPU node")
    mount_timeout: Traced[int] = Field(description="mount.ceph mount_timeout, seconds")


class CephLabException(Frozen):
    """A rule the real design keeps that the lab breaks, and why."""

    rule: str
    real: str
    lab: str


class CephPlan(Frozen):
    """The Ceph cluster: daemons, OSD hosts per tier, EC profiles, pools, networks (bare metal and the lab)."""

    fs_name: str
    failure_domain: Traced[Literal["host", "osd"]]
    daemons: CephDaemons
    osd_groups: tuple[CephOsdGroup, ...]
    osds: Traced[int] = Field(description="OSDs in the cluster")
    ec_profiles: tuple[CephEcProfile, ...]
    pools: tuple[CephPool, ...]
    network: CephNetwork
    target_pgs_per_osd: int = Field(description="PG calculator target (mon_target_pg_per_osd)")
    osd_device_min_size: Size | None = Field(default=None, description="Lab: smallest virtual disk an OSD may get")
    settings: tuple[CephSetting, ...] = Field(description="ceph.conf settings changed from Ceph's defaults")
    mgr_modules: tuple[str, ...] = Field(description="Manager modules enabled beyond Ceph's always-on ones")
    mount: CephMount
    lab_exceptions: tuple[CephLabException, ...] = Field(default=(), description="Lab departures from the rules")
