"""Variables of the ``ceph`` role: the Blueprint's Ceph cluster (``storage.ceph``) on its storage hosts.

Daemon placement, the OSD devices of every tier with its CRUSH device class, EC profiles, pools, the file system and
its directory layouts, the ceph.conf settings with their reasons, manager modules and the CephFS clients whose keys
the role imports. Keys and the fsid are not role variables: the role reads them from the cluster's secrets file
(``clustersmith_secrets_file``, blueprints.secrets ``ceph``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from blueprints.blueprint import Blueprint, CephPool
from blueprints.rolevars import Group, RoleVars


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SettingVars(_Item):
    name: str = Field(description="ceph.conf [global] setting, as ceph.conf spells it")
    value: str
    why: str = Field(description="Why the design changes it (written beside it in ceph.conf)")


class TierVars(_Item):
    tier: str
    device_class: str = Field(description="CRUSH device class of every OSD on the tier's hosts")
    hosts: tuple[str, ...] = Field(description="Inventory names of the tier's Ceph hosts")
    osd_disks: tuple[str, ...] = Field(description="Names in each host's inventory `disks` that become OSDs")
    osds_per_device: int = Field(ge=1, description="OSDs ceph-volume makes on each device")


class EcProfileVars(_Item):
    name: str
    k: int = Field(ge=1)
    m: int = Field(ge=1)
    crush_failure_domain: Literal["host", "osd"]
    crush_device_class: str
    plugin: str
    technique: str


class PoolVars(_Item):
    name: str
    purpose: Literal["metadata", "default_data", "tier_data"]
    type: Literal["replicated", "erasure"]
    size: int = Field(ge=1, description="Copies, or k+m")
    min_size: int = Field(ge=1)
    pg_num: int = Field(ge=1, description="pg_num = pgp_num")
    pg_autoscale_mode: Literal["on", "off", "warn"]
    crush_rule: str
    crush_device_class: str
    crush_failure_domain: Literal["host", "osd"]
    erasure_code_profile: str | None = None
    allow_ec_overwrites: bool = False
    application: Literal["cephfs"] = "cephfs"
    directory: str | None = Field(default=None, description="CephFS directory laid out on this pool")


class CephVars(RoleVars):
    ROLE = "ceph"

    ceph_fs_name: str = Field(description="The CephFS file system (storage.ceph.fs_name)")
    ceph_monitor_hosts: tuple[str, ...] = Field(description="Hosts that run a monitor (the first one runs the "
                                                            "cluster-wide steps)")
    ceph_manager_hosts: tuple[str, ...] = Field(description="Hosts that run a manager")
    ceph_mds_hosts: tuple[str, ...] = Field(description="Hosts that run an MDS")
    ceph_max_mds: int = Field(ge=1, description="Active MDS ranks (max_mds)")
    ceph_standby_count_wanted: int = Field(ge=0, description="Standby MDS the file system wants")
    ceph_public_nic: int = Field(ge=0, description="Rail index (inventory `rails`) of the public network")
    ceph_cluster_nic: int = Field(ge=0, description="Rail index of the cluster network")
    ceph_public_network: str | None = Field(
        default=None, description="Public network CIDR; unset: the public rail's `cidr` of the first monitor")
    ceph_cluster_network: str | None = Field(
        default=None, description="Cluster network CIDR; unset: the cluster rail's `cidr` of the first monitor")
    ceph_settings: tuple[SettingVars, ...] = Field(description="ceph.conf settings changed from Ceph's defaults")
    ceph_tiers: tuple[TierVars, ...] = Field(description="OSD hosts, devices and CRUSH device class per tier")
    ceph_osds: int = Field(ge=1, description="OSDs the cluster must have up and in")
    ceph_ec_profiles: tuple[EcProfileVars, ...]
    ceph_pools: tuple[PoolVars, ...] = Field(description="Every pool, metadata and default data pool first")
    ceph_mgr_modules: tuple[str, ...] = Field(description="Manager modules to enable")
    ceph_fs_clients: tuple[str, ...] = Field(
        description="GPU nodes that mount CephFS: each gets client.fs-<host> with the secrets file's key")
    ceph_wait_seconds: int = Field(default=900, ge=1, description=(
        "Bound on each wait of the cluster step (OSDs up and in, a manager, an active MDS, HEALTH_OK), seconds; "
        "the lab measured 220 s for its manager (stacks/lab/CEPH_MEASURED.md)"))


def _pool(p: CephPool) -> PoolVars:
    return PoolVars(name=p.name, purpose=p.purpose, type=p.type, size=p.size.value, min_size=p.min_size.value,
                    pg_num=p.pg_num.value, pg_autoscale_mode=p.pg_autoscale_mode.value, crush_rule=p.crush_rule,
                    crush_device_class=p.crush_device_class, crush_failure_domain=p.crush_failure_domain,
                    erasure_code_profile=p.erasure_code_profile, allow_ec_overwrites=p.allow_ec_overwrites,
                    application=p.application, directory=p.directory)


def role_vars(bp: Blueprint) -> dict[Group, RoleVars]:
    plan = bp.storage.ceph
    if plan is None:
        return {}
    tiers = []
    for group in plan.osd_groups:
        hosts = [h for h in bp.hosts if h.role == "storage_target" and h.tier == group.tier]
        osd_disks = tuple(d.name for d in hosts[0].disks if d.name.startswith("osd")) if hosts else ()
        per_device = max(group.osds_per_host.value // max(len(osd_disks), 1), 1)
        tiers.append(TierVars(tier=group.tier, device_class=group.device_class,
                              hosts=tuple(n for h in hosts for n in h.names())[: group.hosts],
                              osd_disks=osd_disks, osds_per_device=per_device))
    net = plan.network
    return {"storage_targets": CephVars(
        ceph_fs_name=plan.fs_name,
        ceph_monitor_hosts=plan.daemons.monitor_hosts,
        ceph_manager_hosts=plan.daemons.manager_hosts,
        ceph_mds_hosts=plan.daemons.mds_hosts,
        ceph_max_mds=plan.daemons.mds_active.value,
        ceph_standby_count_wanted=plan.daemons.mds_standby.value,
        ceph_public_nic=net.public_nic.value,
        ceph_cluster_nic=net.cluster_nic.value,
        ceph_public_network=net.public_subnet,
        ceph_cluster_network=net.cluster_subnet,
        ceph_settings=tuple(SettingVars(name=s.name, value=s.value, why=s.why) for s in plan.settings),
        ceph_tiers=tuple(tiers),
        ceph_osds=plan.osds.value,
        ceph_ec_profiles=tuple(EcProfileVars(name=e.name, k=e.k, m=e.m, crush_failure_domain=e.crush_failure_domain,
                                             crush_device_class=e.crush_device_class, plugin=e.plugin,
                                             technique=e.technique) for e in plan.ec_profiles),
        ceph_pools=tuple(_pool(p) for p in plan.pools),
        ceph_mgr_modules=plan.mgr_modules,
        ceph_fs_clients=tuple(bp.hosts_by_role().get("gpu_client", [])),
    )}
