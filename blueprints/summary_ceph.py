"""``clustersmith plan``: the Ceph part of the summary (daemons, OSD hosts and their rates, pools, lab exceptions)."""

from __future__ import annotations

from rich.table import Table

from blueprints.blueprint import CephPlan


def _table(title: str, *cols: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in cols:
        table.add_column(col)
    return table


def ceph_tables(ceph: CephPlan) -> list[Table]:
    d, n = ceph.daemons, ceph.network
    cluster = _table(f"Ceph cluster ({ceph.fs_name})", "what", "value", "because")
    cluster.add_row("failure domain", ceph.failure_domain.value, ceph.failure_domain.derived_from.formula)
    cluster.add_row("monitors", f"{d.monitors.value} on {', '.join(d.monitor_hosts)}", d.monitors.derived_from.formula)
    cluster.add_row("managers", f"{d.managers.value} on {', '.join(d.manager_hosts)}", d.managers.derived_from.formula)
    cluster.add_row("MDS active + standby", f"{d.mds_active.value} + {d.mds_standby.value} on {', '.join(d.mds_hosts)}",
                    d.mds_active.derived_from.formula)
    cluster.add_row("OSDs", str(ceph.osds.value), ceph.osds.derived_from.formula)
    for g in ceph.osd_groups:
        cluster.add_row(f"{g.tier} OSD hosts (class {g.device_class})", f"{g.hosts} x {g.osds_per_host.value} OSDs",
                        g.osds_per_host.derived_from.formula)
        cluster.add_row(f"{g.tier} read per host", str(g.per_node_read.value), g.per_node_read.derived_from.formula)
        cluster.add_row(f"{g.tier} write per host", str(g.per_node_write.value), g.per_node_write.derived_from.formula)
    public = n.public_subnet or "site addressing"
    cluster.add_row("public network", f"storage NIC {n.public_nic.value} ({public}); clients on rail {n.client_rail}",
                    n.public_nic.derived_from.formula)
    cluster.add_row("cluster network", f"storage NIC {n.cluster_nic.value} ({n.cluster_subnet or 'site addressing'})",
                    n.cluster_nic.derived_from.formula)
    cluster.add_row("traffic class", f"DSCP {n.dscp.value}, {'lossless' if n.lossless else 'lossy (no PFC)'}",
                    n.dscp.derived_from.formula)
    cluster.add_row("CephFS on GPU nodes", f"{ceph.mount.mount_point} (kernel client, mount_timeout "
                    f"{ceph.mount.mount_timeout.value} s)", ceph.mount.mount_timeout.derived_from.formula)
    cluster.add_row("manager modules", ", ".join(ceph.mgr_modules), "the monitoring plan scrapes the prometheus module")
    pools = _table("Ceph pools", "pool", "type", "size / min_size", "profile", "pg_num", "autoscale", "directory")
    profiles = {p.name: p for p in ceph.ec_profiles}
    for pool in ceph.pools:
        prof = profiles.get(pool.erasure_code_profile or "")
        what = (f"{prof.name}: k={prof.k} m={prof.m} {prof.crush_failure_domain}/{prof.crush_device_class}"
                if prof else f"{pool.crush_rule}: {pool.crush_failure_domain}/{pool.crush_device_class}")
        pools.add_row(pool.name, pool.type, f"{pool.size.value} / {pool.min_size.value}", what,
                      f"{pool.pg_num.value}  [{pool.pg_num.derived_from.formula.split(';')[0]}]",
                      pool.pg_autoscale_mode.value, pool.directory or "")
    settings = _table("ceph.conf settings changed from Ceph's defaults", "setting", "value", "why")
    for setting in ceph.settings:
        settings.add_row(setting.name, setting.value, setting.why)
    tables = [cluster, pools, settings]
    if ceph.lab_exceptions:
        lab = _table("lab exceptions to the real-design rules", "rule", "real design", "lab")
        for e in ceph.lab_exceptions:
            lab.add_row(e.rule, e.real, e.lab)
        tables.append(lab)
    return tables
