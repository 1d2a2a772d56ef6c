#!/usr/bin/python3
"""Bring a running Ceph cluster to the Blueprint's plan, cheaply: read its state once, change only what differs.

Ansible module (``ceph_cluster``), run once per cluster on the first monitor host. It talks to the monitors through
librados (python3-rados, which ceph-common depends on) from this one process: under TCG each ``ceph`` CLI call costs
6-11 s (a Python start and a new connection, stacks/lab/CEPH_MEASURED.md), a mon_command on an open connection a
fraction of that. ``read_state`` takes ``ceph report`` (OSD map with pools and EC profiles, CRUSH map with device
classes, OSD metadata, FS map), ``auth ls`` and ``mgr dump``; ``decide`` (pure, tested on recorded 16.2.15 JSON)
lists the mon commands that are missing: CRUSH device classes per tier, EC profiles, CRUSH rules, pools and their
settings, the file system, its data pools and MDS counts, manager modules, cephx entities (imported with the
secrets file's keys, never generated); ``apply`` sends them. Then the directory layouts through libcephfs
(python3-cephfs: getxattr/setxattr ``ceph.dir.layout.pool``, the same call setfattr makes on a mount), and a
bounded wait for HEALTH_OK that names the failing checks when it gives up. It mutes no health check.

A difference it must not repair (a pool of the wrong type or EC profile, a profile in use that differs) fails with
the pool or profile named: Ceph cannot change those in place, and data would have to move.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

DOCUMENTATION = r"""
module: ceph_cluster
short_description: Ceph pools, CRUSH classes, CephFS, layouts, manager modules and cephx entities, as planned
options:
  conf: {type: str, required: true, description: ceph.conf path}
  keyring: {type: str, required: true, description: client.admin keyring path}
  fs_name: {type: str, required: true, description: CephFS file system name}
  osds: {type: int, required: true, description: OSDs that must be up and in before the pools are checked}
  host_classes: {type: dict, required: true, description: Ceph host name -> CRUSH device class of its OSDs}
  ec_profiles: {type: list, elements: dict, required: true, description: Planned EC profiles}
  pools: {type: list, elements: dict, required: true, description: Planned pools (metadata, default data, tiers)}
  max_mds: {type: int, required: true, description: max_mds}
  standby_count_wanted: {type: int, required: true, description: standby_count_wanted}
  mgr_modules: {type: list, elements: str, required: true, description: Manager modules to enable}
  entities: {type: list, elements: dict, required: true, description: "cephx entities {entity, key, caps}"}
  wait_seconds: {type: int, default: 900, description: Bound on each wait (OSDs up, manager, MDS active, health)}
"""

ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "conf": {"type": "str", "required": True},
    "keyring": {"type": "str", "required": True},
    "fs_name": {"type": "str", "required": True},
    "osds": {"type": "int", "required": True},
    "host_classes": {"type": "dict", "required": True},
    "ec_profiles": {"type": "list", "elements": "dict", "required": True},
    "pools": {"type": "list", "elements": "dict", "required": True},
    "max_mds": {"type": "int", "required": True},
    "standby_count_wanted": {"type": "int", "required": True},
    "mgr_modules": {"type": "list", "elements": "str", "required": True},
    "entities": {"type": "list", "elements": "dict", "required": True, "no_log": True},
    "wait_seconds": {"type": "int", "default": 900},
}

POOL_TYPES = {1: "replicated", 3: "erasure"}  # pg_pool_t::TYPE_REPLICATED, TYPE_ERASURE
LAYOUT_XATTR = "ceph.dir.layout.pool"


class CephPlanError(RuntimeError):
    """The cluster differs from the plan in a way the module must not repair."""


@dataclasses.dataclass(frozen=True)
class Action:
    """One mon command: what it fixes (``why``, shown in the result) and the command itself."""

    why: str
    command: dict[str, Any]
    inbuf: str = ""  # for auth import: the keyring text; never shown


@dataclasses.dataclass(frozen=True)
class State:
    report: dict[str, Any]
    auth: list[dict[str, Any]]
    mgr: dict[str, Any]


def _profile_wanted(p: dict[str, Any]) -> dict[str, str]:
    return {"k": str(p["k"]), "m": str(p["m"]), "crush-failure-domain": p["crush_failure_domain"],
            "crush-device-class": p["crush_device_class"], "plugin": p["plugin"], "technique": p["technique"]}


def device_classes(params: dict[str, Any], report: dict[str, Any]) -> list[Action]:
    """Each OSD's CRUSH class is its host's tier class: rm-device-class where another is set, then set it."""
    hosts = {m["id"]: m.get("hostname") for m in report.get("osd_metadata", [])}
    wrong: dict[str, list[str]] = {}
    clear: list[str] = []
    for dev in report["crushmap"].get("devices", []):
        want = params["host_classes"].get(hosts.get(dev["id"]))
        if want is None or dev.get("class") == want:
            continue
        if dev.get("class"):
            clear.append(dev["name"])
        wrong.setdefault(want, []).append(dev["name"])
    actions = [Action(f"{', '.join(clear)}: remove the device class Ceph set", {
        "prefix": "osd crush rm-device-class", "ids": clear})] if clear else []
    actions += [Action(f"{', '.join(ids)}: CRUSH device class {cls}", {
        "prefix": "osd crush set-device-class", "class": cls, "ids": ids}) for cls, ids in sorted(wrong.items())]
    return actions


def ec_profiles(params: dict[str, Any], osdmap: dict[str, Any]) -> list[Action]:
    have = osdmap.get("erasure_code_profiles", {})
    used = {p.get("erasure_code_profile") for p in osdmap.get("pools", [])}
    actions = []
    for profile in params["ec_profiles"]:
        want = _profile_wanted(profile)
        current = have.get(profile["name"])
        if current is not None and all(current.get(k) == v for k, v in want.items()):
            continue
        if current is not None and profile["name"] in used:
            raise CephPlanError(f"EC profile {profile['name']} is {current}, planned {want}, and a pool uses it: Ceph "
                                "cannot change a profile in use (make a new pool and move the data)")
        actions.append(Action(f"EC profile {profile['name']}", {
            "prefix": "osd erasure-code-profile set", "name": profile["name"],
            "profile": [f"{k}={v}" for k, v in want.items()], **({"force": True} if current else {})}))
    return actions


def crush_rules(params: dict[str, Any], report: dict[str, Any]) -> list[Action]:
    """Replicated pools' rules replicated_<class> (EC pools' rules are made from their profile with the pool)."""
    have = {r["rule_name"] for r in report["crushmap"].get("rules", [])}
    wanted: dict[str, dict[str, Any]] = {}
    for pool in params["pools"]:
        if pool["type"] == "replicated" and pool["crush_rule"] not in have:
            wanted[pool["crush_rule"]] = pool
    return [Action(f"CRUSH rule {name}", {
        "prefix": "osd crush rule create-replicated", "name": name, "root": "default",
        "type": pool["crush_failure_domain"], "class": pool["crush_device_class"]}) for name, pool in wanted.items()]


def _pool_set(name: str, var: str, val: object, why: str) -> Action:
    return Action(f"pool {name}: {why}", {"prefix": "osd pool set", "pool": name, "var": var, "val": str(val)})


def pools(params: dict[str, Any], report: dict[str, Any]) -> list[Action]:
    osdmap = report["osdmap"]
    have = {p["pool_name"]: p for p in osdmap.get("pools", [])}
    rules = {r["rule_id"]: r["rule_name"] for r in report["crushmap"].get("rules", [])}
    actions: list[Action] = []
    for pool in params["pools"]:
        name = pool["name"]
        current = have.get(name)
        if current is None:
            create: dict[str, Any] = {"prefix": "osd pool create", "pool": name, "pg_num": pool["pg_num"],
                                      "pgp_num": pool["pg_num"], "pool_type": pool["type"]}
            if pool["type"] == "erasure":  # Ceph makes its rule from the profile, named after the pool
                create["erasure_code_profile"] = pool["erasure_code_profile"]
            else:
                create["rule"] = pool["crush_rule"]
            actions.append(Action(f"pool {name}: create ({pool['type']}, {pool['pg_num']} PGs)", create))
            current = {"pool_name": name, "type": 3 if pool["type"] == "erasure" else 1, "pg_num": pool["pg_num"],
                       "pg_placement_num": pool["pg_num"], "erasure_code_profile": pool.get("erasure_code_profile")
                       or "", "crush_rule": None, "flags_names": "", "application_metadata": {}}
        kind = POOL_TYPES.get(current["type"], str(current["type"]))
        if kind != pool["type"]:
            raise CephPlanError(f"pool {name} is {kind}, planned {pool['type']}: Ceph cannot change a pool's type")
        if pool["type"] == "erasure" and current.get("erasure_code_profile") != pool["erasure_code_profile"]:
            raise CephPlanError(f"pool {name} has EC profile {current.get('erasure_code_profile')}, planned "
                                f"{pool['erasure_code_profile']}: Ceph cannot change a pool's profile")
        rule = rules.get(current["crush_rule"]) if current["crush_rule"] is not None else pool["crush_rule"]
        if rule != pool["crush_rule"]:
            actions.append(_pool_set(name, "crush_rule", pool["crush_rule"], f"CRUSH rule {rule} -> "
                                     f"{pool['crush_rule']}"))
        if pool["type"] == "replicated" and current.get("size") != pool["size"]:
            actions.append(_pool_set(name, "size", pool["size"], f"size {current.get('size')} -> {pool['size']}"))
        if pool["type"] == "erasure" and current.get("size", pool["size"]) != pool["size"]:
            raise CephPlanError(f"pool {name} has size {current.get('size')}, planned k+m = {pool['size']}")
        if current.get("min_size") != pool["min_size"]:
            actions.append(_pool_set(name, "min_size", pool["min_size"],
                                     f"min_size {current.get('min_size')} -> {pool['min_size']}"))
        if current["pg_num"] != pool["pg_num"]:
            actions.append(_pool_set(name, "pg_num", pool["pg_num"], f"pg_num {current['pg_num']} -> {pool['pg_num']}"))
        if current["pg_placement_num"] != pool["pg_num"]:
            actions.append(_pool_set(name, "pgp_num", pool["pg_num"],
                                     f"pgp_num {current['pg_placement_num']} -> {pool['pg_num']}"))
        if current.get("pg_autoscale_mode") != pool["pg_autoscale_mode"]:
            actions.append(_pool_set(name, "pg_autoscale_mode", pool["pg_autoscale_mode"],
                                     f"pg_autoscale_mode {current.get('pg_autoscale_mode')} -> "
                                     f"{pool['pg_autoscale_mode']}"))
        overwrites = "ec_overwrites" in current.get("flags_names", "").split(",")
        if pool["type"] == "erasure" and pool["allow_ec_overwrites"] and not overwrites:
            actions.append(_pool_set(name, "allow_ec_overwrites", "true", "allow_ec_overwrites (CephFS data)"))
    return actions


def applications(params: dict[str, Any], osdmap: dict[str, Any]) -> list[Action]:
    """A pool that exists without its application (``fs new`` and ``fs add_data_pool`` set it on the pools they take,
    so only a pool made or changed by hand lacks it)."""
    have = {p["pool_name"]: p for p in osdmap.get("pools", [])}
    return [Action(f"pool {p['name']}: application {p['application']}", {
        "prefix": "osd pool application enable", "pool": p["name"], "app": p["application"],
        "yes_i_really_mean_it": True})
        for p in params["pools"] if p["name"] in have and p["application"] not in have[p["name"]].get(
            "application_metadata", {})]


def filesystem(params: dict[str, Any], report: dict[str, Any]) -> list[Action]:
    """``fs new`` with the metadata and default data pools, ``fs add_data_pool`` for each tier pool, MDS counts."""
    fs_name = params["fs_name"]
    ids = {p["pool_name"]: p["pool"] for p in report["osdmap"].get("pools", [])}
    by_purpose = {p["purpose"]: p["name"] for p in params["pools"] if p["purpose"] != "tier_data"}
    mdsmap = next((f["mdsmap"] for f in report["fsmap"].get("filesystems", [])
                   if f["mdsmap"]["fs_name"] == fs_name), None)
    actions = []
    if mdsmap is None:
        actions.append(Action(f"file system {fs_name}: create", {
            "prefix": "fs new", "fs_name": fs_name, "metadata": by_purpose["metadata"],
            "data": by_purpose["default_data"]}))
        data_pools: set[int] = set()
        max_mds, standby = 1, None
    else:
        data_pools = set(mdsmap.get("data_pools", []))
        max_mds, standby = mdsmap.get("max_mds"), mdsmap.get("standby_count_wanted")
    for pool in params["pools"]:
        if pool["purpose"] == "tier_data" and ids.get(pool["name"], -1) not in data_pools:
            actions.append(Action(f"file system {fs_name}: data pool {pool['name']}", {
                "prefix": "fs add_data_pool", "fs_name": fs_name, "pool": pool["name"]}))
    if max_mds != params["max_mds"]:
        actions.append(Action(f"file system {fs_name}: max_mds {params['max_mds']}", {
            "prefix": "fs set", "fs_name": fs_name, "var": "max_mds", "val": str(params["max_mds"])}))
    if standby != params["standby_count_wanted"]:
        actions.append(Action(f"file system {fs_name}: standby_count_wanted {params['standby_count_wanted']}", {
            "prefix": "fs set", "fs_name": fs_name, "var": "standby_count_wanted",
            "val": str(params["standby_count_wanted"])}))
    return actions


def mgr_modules(params: dict[str, Any], mgr: dict[str, Any]) -> list[Action]:
    on = set(mgr.get("modules", [])) | set(mgr.get("always_on_modules", {}).get(_release(mgr), []))
    return [Action(f"manager module {m}", {"prefix": "mgr module enable", "module": m})
            for m in params["mgr_modules"] if m not in on]


def _release(mgr: dict[str, Any]) -> str:
    """The release whose always-on modules apply (the mgr map lists them per release; the newest is ours)."""
    releases = list(mgr.get("always_on_modules", {}))
    return releases[-1] if releases else ""


def keyring_text(entity: dict[str, Any]) -> str:
    caps = "".join(f'\tcaps {svc} = "{cap}"\n' for svc, cap in sorted(entity["caps"].items()))
    return f"[{entity['entity']}]\n\tkey = {entity['key']}\n{caps}"


def entities(params: dict[str, Any], auth: list[dict[str, Any]]) -> list[Action]:
    """Every planned entity with the secrets file's key and the planned caps; one ``auth import`` for all that
    differ (the key is never in ``why``)."""
    have = {e["entity"]: e for e in auth}
    wrong = []
    for entity in params["entities"]:
        current = have.get(entity["entity"])
        if current is None or current.get("key") != entity["key"] or current.get("caps", {}) != entity["caps"]:
            wrong.append(entity)
    if not wrong:
        return []
    names = ", ".join(e["entity"] for e in wrong)
    return [Action(f"cephx {names}: import the stored key and planned caps", {"prefix": "auth import"},
                   inbuf="".join(keyring_text(e) for e in wrong))]


def decide(params: dict[str, Any], state: State) -> list[Action]:
    """Every mon command that brings the cluster to the plan, in the order Ceph needs them."""
    report = state.report
    actions = device_classes(params, report) + ec_profiles(params, report["osdmap"]) + crush_rules(params, report)
    return (actions + pools(params, report) + filesystem(params, report) + applications(params, report["osdmap"])
            + mgr_modules(params, state.mgr) + entities(params, state.auth))


def health_problems(health: dict[str, Any]) -> list[str]:
    """``ceph health detail`` JSON -> 'CHECK: summary' for each check raised."""
    return [f"{name}: {check['summary']['message']}" for name, check in sorted(health.get("checks", {}).items())]


def active_mds(report_fsmap: dict[str, Any], fs_name: str) -> bool:
    for fs in report_fsmap.get("filesystems", []):
        if fs["mdsmap"]["fs_name"] == fs_name:
            return any(i.get("state") == "up:active" for i in fs["mdsmap"].get("info", {}).values())
    return False


def osds_ready(osdmap: dict[str, Any], wanted: int) -> bool:
    osds = osdmap.get("osds", [])
    return sum(1 for o in osds if o.get("up") and o.get("in")) >= wanted


class Cluster:
    """The monitors through librados: one connection for every read and command of the run."""

    def __init__(self, conf: str, keyring: str, timeout: int) -> None:
        import rados  # python3-rados, a dependency of ceph-common

        self.rados = rados.Rados(conffile=conf, name="client.admin", conf={"keyring": keyring})
        self.rados.connect(timeout=timeout)

    def command(self, command: dict[str, Any], inbuf: str = "") -> Any:
        ret, out, err = self.rados.mon_command(json.dumps({**command, "format": "json"}), inbuf.encode())
        if ret != 0:
            shown = {k: v for k, v in command.items()}
            raise CephPlanError(f"ceph {shown['prefix']} {json.dumps(shown)} failed ({ret}): {err}")
        return json.loads(out) if out.strip() else None

    def state(self) -> State:
        auth = self.command({"prefix": "auth ls"})
        return State(report=self.command({"prefix": "report"}), auth=auth.get("auth_dump", []),
                     mgr=self.command({"prefix": "mgr dump"}))

    def wait(self, what: str, done: Any, seconds: int, delay: float = 2) -> Any:
        """Poll ``done`` every ``delay`` s until it holds or ``seconds`` pass. A poll is one monitor command through
        this process's librados session (milliseconds, not the CLI's start: stacks/lab/CEPH_MEASURED.md), so a short
        delay costs the monitor little and each wait ends close to when its condition came true."""
        deadline = time.monotonic() + seconds
        while True:
            result = done()
            if result:
                return result
            if time.monotonic() > deadline:
                raise CephPlanError(f"gave up after {seconds} s waiting for {what}")
            time.sleep(delay)

    def close(self) -> None:
        self.rados.shutdown()


def layouts(params: dict[str, Any], conf: str, keyring: str, check: bool) -> list[str]:
    """Each tier directory with ceph.dir.layout.pool on its pool, through libcephfs as client.admin."""
    import cephfs  # python3-cephfs, a dependency of ceph-common

    fs = cephfs.LibCephFS(conffile=conf, auth_id="admin", conf={"keyring": keyring})
    fs.mount(filesystem_name=params["fs_name"].encode())
    changed = []
    try:
        for pool in params["pools"]:
            path = pool.get("directory")
            if not path:
                continue
            try:
                current = fs.getxattr(path.encode(), LAYOUT_XATTR).decode()
            except cephfs.ObjectNotFound:
                current = None
            except cephfs.Error:  # the directory exists but inherits its layout (no xattr of its own)
                current = ""
            if current == pool["name"]:
                continue
            changed.append(f"{path}: layout pool {current or 'inherited'} -> {pool['name']}")
            if check:
                continue
            if current is None:
                fs.mkdirs(path.encode(), 0o755)
            fs.setxattr(path.encode(), LAYOUT_XATTR, pool["name"].encode(), 0)
    finally:
        fs.unmount()
        fs.shutdown()
    return changed


def converge(params: dict[str, Any], check: bool) -> dict[str, Any]:
    bound = params["wait_seconds"]
    cluster = Cluster(params["conf"], params["keyring"], bound)
    try:
        cluster.wait(f"{params['osds']} OSDs up and in",
                     lambda: osds_ready(cluster.command({"prefix": "osd dump"}), params["osds"]), bound)
        state = cluster.state()
        actions = decide(params, state)
        if not check:
            if any(a.command["prefix"] == "mgr module enable" for a in actions):
                cluster.wait("an available manager", lambda: cluster.command({"prefix": "mgr dump"})["available"],
                             bound)
            for action in actions:
                cluster.command(action.command, action.inbuf)
        done = [a.why for a in actions]
        if not check or not any(a.command["prefix"] == "fs new" for a in actions):
            cluster.wait(f"an active MDS of {params['fs_name']}",
                         lambda: active_mds(cluster.command({"prefix": "fs dump"}), params["fs_name"]), bound)
            done += layouts(params, params["conf"], params["keyring"], check)
        health: dict[str, Any] = {}
        if not check:
            def ok() -> bool:
                health.update(cluster.command({"prefix": "health", "detail": "detail"}))
                return health.get("status") == "HEALTH_OK"
            try:
                cluster.wait("HEALTH_OK", ok, bound, delay=3)
            except CephPlanError:
                raise CephPlanError(f"no HEALTH_OK after {bound} s: {health.get('status')}: "
                                    + "; ".join(health_problems(health))) from None
        return {"changed": bool(done), "actions": done, "health": health.get("status", "not checked")}
    finally:
        cluster.close()


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        module.exit_json(**converge(module.params, module.check_mode))
    except CephPlanError as err:
        module.fail_json(msg=str(err))
    except ImportError as err:
        module.fail_json(msg=f"{err}: the ceph role needs python3-rados and python3-cephfs (ceph-common)")


if __name__ == "__main__":
    main()
