"""The Ceph cluster in its own words, against the Blueprint's CephPlan: ``ceph status -f json`` must say HEALTH_OK
with no check muted, every PG active+clean and every planned OSD up and in; ``ceph osd tree -f json`` names each
OSD that is down or out with its CRUSH host, and each planned OSD host must hold its tier's OSDs, of its class, and
no other host any; ``ceph osd pool ls detail -f json`` must hold every planned pool with its type, size, min_size,
pg_num, autoscale mode, EC profile and, on an EC data pool, ec_overwrites. Pools Ceph makes for itself are noted,
others the plan does not name too. All three are read on one monitor host (the check's ``args.monitor``, the
planner's ``daemons.monitor_hosts[0]``): the result covers one cluster of one."""

from __future__ import annotations

from dataclasses import dataclass, field

from blueprints.blueprint import CephPlan, CephPool, Check
from blueprints.blueprint.check_args import CephArgs, args_as
from validators.ceph import CEPH_OWN_POOLS, CephStatus, OsdState, PoolState, parse_osd_tree, parse_pools, parse_status
from validators.checks import missing, rule, setup_failure
from validators.coverage import Planned, count
from validators.errors import ParseError
from validators.outcome import Coverage, Detail, Measurement
from validators.results import Results

# What the rule reads, in the results folder: (the runner's name for the output, its file); validators/run/ceph.py
# writes each one from the command of the same name.
OUTPUTS = (("status", "status.json"), ("osd-pool-ls-detail", "osd-pool-ls-detail.json"),
           ("osd-tree", "osd-tree.json"))
FOLDER = "ceph"


def cluster_coverage(check: Check, seen: int) -> Coverage:
    """One cluster per Blueprint, read on the monitor host the plan names (``args.monitor``)."""
    return count(f"clusters (read on monitor {args_as(check.args, CephArgs).monitor})", seen, 1)


def judge_osds(planned: Planned, osds: tuple[OsdState, ...]) -> list[str]:
    """Each OSD down or out, named with its CRUSH host; each on a host the plan does not give OSDs, or of another
    device class than its host's tier; each planned OSD host with another number of OSDs than planned."""
    out = [f"{o.where} is {' and '.join(w for w, bad in (('down', not o.up), ('out', not o.in_)) if bad)}"
           for o in osds if not (o.up and o.in_)]
    on: dict[str | None, list[OsdState]] = {}
    for o in osds:
        on.setdefault(o.host, []).append(o)
    for host, here in on.items():
        plan = planned.osd_hosts.get(host) if host else None
        if plan is None:
            out.append(f"{', '.join(o.where for o in here)}: the plan gives {host or 'such an OSD'} no OSDs")
            continue
        out += [f"{o.where} has device class {o.device_class or '(none)'!r}, planned {plan.device_class!r}"
                for o in here if o.device_class != plan.device_class]
    out += [f"host {host} has {len(on.get(host, []))} OSD(s) in the OSD tree, planned {plan.osds}"
            for host, plan in planned.osd_hosts.items() if len(on.get(host, [])) != plan.osds]
    return out


def pool_departures(plan: CephPool, got: PoolState) -> list[str]:
    """How pool ``got`` differs from the plan's, each in Ceph's own setting names."""
    wanted = {"type": plan.type, "size": plan.size.value, "min_size": plan.min_size.value,
              "pg_num": plan.pg_num.value, "pg_autoscale_mode": plan.pg_autoscale_mode.value,
              "erasure_code_profile": plan.erasure_code_profile or ""}
    out = [f"{key} {getattr(got, key)!r}, planned {value!r}" for key, value in wanted.items()
           if getattr(got, key) != value]
    if plan.allow_ec_overwrites and "ec_overwrites" not in got.flags:
        out.append("allow_ec_overwrites is off (flags: " + ",".join(got.flags) + "), planned true")
    return [f"pool {plan.name}: {d}" for d in out]


def judge_pools(ceph: CephPlan, pools: tuple[PoolState, ...]) -> tuple[list[str], list[str]]:
    """Violations (a planned pool missing or set otherwise) and notes (pools the plan does not name)."""
    found = {p.name: p for p in pools}
    violations: list[str] = []
    for plan in ceph.pools:
        got = found.get(plan.name)
        violations += [f"pool {plan.name} is planned and does not exist"] if got is None else \
            pool_departures(plan, got)
    planned = {p.name for p in ceph.pools}
    own = sorted(n for n in found if n not in planned and n in CEPH_OWN_POOLS)
    other = sorted(n for n in found if n not in planned and n not in CEPH_OWN_POOLS)
    notes = ([f"Ceph's own pool(s): {', '.join(own)}"] if own else []) + \
        ([f"pool(s) the plan does not name: {', '.join(other)}"] if other else [])
    return violations, notes


@rule("storage.ceph_health",
      measures="the Ceph cluster in its own words against the Blueprint's Ceph plan: `ceph status`, `ceph osd tree` "
               "and `ceph osd pool ls detail` (`-f json`), read on the first monitor host (`args.monitor`); 1 when "
               "every condition holds; coverage: 1 of 1 clusters",
      passes="1, given HEALTH_OK with no health check muted, every PG active+clean, the planned OSD count all up "
             "and in (each OSD down or out named with its CRUSH host), each planned OSD host holding its tier's "
             "OSDs of its device class and no other CRUSH host any, every planned pool with its type, size, "
             "min_size, pg_num, autoscale mode, EC profile and (EC data pools) `ec_overwrites`; any departure is a "
             "violation. Not applicable where the Blueprint plans no Ceph",
      setup_error="a ceph call that did not run, exited non-zero, timed out or printed what its parser refuses (the "
                  "runner names the host, the command and the CLI's last stderr line), or a monitor host missing "
                  "from the inventory; no `ceph/status.json`, `ceph/osd-pool-ls-detail.json` or `ceph/osd-tree.json`. "
                  "What the outputs that could be read show is judged all the same: a failure there fails the check, "
                  "with the unread output named beside it")
def ceph_health(check: Check, results: Results, planned: Planned) -> Measurement:
    ceph = planned.ceph
    if ceph is None:
        return Measurement(not_applicable="the Blueprint plans no Ceph cluster")
    read = _read(check, results)
    if read.status is None and read.pools is None and read.osds is None:  # nothing to judge: what stood in the way
        return Measurement(setup_error="; ".join(read.unread), coverage=(cluster_coverage(check, 0),))
    status, pools, osds, unread = read.status, read.pools, read.osds, read.unread
    violations: list[str] = []
    notes: list[str] = []
    details: list[Detail] = []
    wanted = ceph.osds.value
    if status is not None:
        if status.health != "HEALTH_OK":
            violations.append(f"health {status.health}: " + "; ".join(f"{c.code}: {c.summary}"
                                                                       for c in status.checks))
        if status.mutes:
            violations.append(f"muted health check(s): {', '.join(status.mutes)}; a muted check is never a pass")
        if bad := status.not_clean():
            violations.append("PGs not active+clean: " + ", ".join(f"{p.count} {p.state}" for p in bad))
        if status.num_osds != wanted or status.num_up_osds != wanted or status.num_in_osds != wanted:
            violations.append(f"OSDs: {status.num_osds} exist, {status.num_up_osds} up, {status.num_in_osds} in; "
                              f"planned {wanted}, all up and in")
        details.append(Detail(where="cluster", value=1.0 if status.health == "HEALTH_OK" else 0.0, unit="bool",
                              note=f"{status.health}; {status.num_pgs} PGs; {status.num_up_osds}/{status.num_osds} "
                                   "OSDs up"))
    if osds is not None:
        violations += judge_osds(planned, osds)
        details.append(Detail(where="osds", value=float(sum(o.up and o.in_ for o in osds)), unit="osds",
                              note=f"up and in of {wanted} planned, on CRUSH host(s) "
                                   + ", ".join(sorted({o.host or "(none)" for o in osds}))))
    if pools is not None:
        pool_violations, notes = judge_pools(ceph, pools)
        violations += pool_violations
        details.append(Detail(where="pools", value=0.0 if pool_violations else 1.0, unit="bool",
                              note=f"{len(ceph.pools)} planned, {len(pools)} in the cluster"))
    # what the files that could be read show is reported whatever the others: a failure they show fails the check,
    # and the unread ones stand beside it as a setup error (judge: failures are never hidden by one)
    return Measurement(value=None if unread else (0.0 if violations else 1.0), details=tuple(details),
                       notes=tuple(notes), failures=tuple(violations),
                       setup_error="; ".join(unread) if unread else None,
                       coverage=(cluster_coverage(check, 0 if status is None else 1),))


@dataclass
class _Read:
    """The outputs the rule could read, each None where it could not, and what stood in the way of those."""

    status: CephStatus | None = None
    pools: tuple[PoolState, ...] | None = None
    osds: tuple[OsdState, ...] | None = None
    unread: list[str] = field(default_factory=list)


def _read(check: Check, results: Results) -> _Read:
    """Each output that is there and parses; for the others, the runner's record of a call that did not run, a
    missing file, or what its parser refused."""
    got = _Read()
    runner = setup_failure(results.setup_errors(check.id))
    if runner is not None and runner.setup_error:
        got.unread.append(runner.setup_error)
    for name, file in OUTPUTS:
        text = results.text(FOLDER, file)
        source = str(results.root / FOLDER / file)
        if text is None:
            if runner is None:
                got.unread.append(missing(f"ceph {name.replace('-', ' ')} output", f"{FOLDER}/{file}").setup_error
                                  or "")
            continue
        try:
            if name == "status":
                got.status = parse_status(text, source)
            elif name == "osd-pool-ls-detail":
                got.pools = parse_pools(text, source)
            else:
                got.osds = parse_osd_tree(text, source)
        except ParseError as exc:
            got.unread.append(str(exc))
    return got
