#!/usr/bin/python3
"""The tier volume: an LVM origin on the slow device, cached by a dm-cache pool on the fast device (lvmcache).

Ansible module (``lvm_cache``). Builds volume group ``<vg>`` from both devices, origin LV ``data`` on the
slow one, a cache pool of the wanted size on the fast one attached in the wanted mode and policy, the
LV's read-ahead, and an ext4 file system on it. Devices holding anything else are refused, never wiped.
``read_state`` reads LVM's JSON reports, ``decide`` (pure) lists the commands, ``apply`` runs them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from typing import Any

DOCUMENTATION = r"""
module: lvm_cache
short_description: dm-cache (lvmcache) of a fast device in front of a slow one, with read-ahead and a file system
options:
  volume_group: {type: str, required: true, description: Volume group holding both devices}
  fast_device: {type: str, required: true, description: Cache device}
  slow_device: {type: str, required: true, description: Origin device}
  cache_size_bytes: {type: int, required: true, description: Cache pool size (rounded down to whole extents)}
  cache_mode: {type: str, required: true, choices: [writethrough, writeback], description: dm-cache mode}
  cache_policy: {type: str, required: true, choices: [smq], description: dm-cache policy}
  read_ahead_kb: {type: int, required: true, description: Read-ahead of the cached LV in KiB}
  filesystem: {type: str, default: ext4, choices: [ext4], description: File system made on a blank volume}
  state: {type: str, default: present, choices: [present, absent], description: absent removes LV, VG and PVs}
author: clustersmith
"""

ORIGIN = "data"
POOL = "data_cache"


class CacheError(Exception):
    """Input or device state the tier cannot be built on; the message says what and what was expected."""


@dataclasses.dataclass(frozen=True)
class Wanted:
    vg: str
    fast: str  # resolved device paths
    slow: str
    cache_size: int
    mode: str
    policy: str
    read_ahead_kb: int
    filesystem: str = "ext4"

    @property
    def lv(self) -> str:
        return f"{self.vg}/{ORIGIN}"


@dataclasses.dataclass(frozen=True)
class Pv:
    name: str
    vg: str
    size: int


@dataclasses.dataclass(frozen=True)
class Lv:
    name: str
    vg: str
    segtype: str
    size: int
    cache_mode: str
    cache_policy: str
    read_ahead: str  # bytes, or "auto"


@dataclasses.dataclass(frozen=True)
class State:
    pvs: dict[str, Pv]  # by device path
    extent_size: int | None  # of the volume group, None if it does not exist
    lvs: dict[str, Lv]  # by name (hidden ones without brackets), our volume group only
    signatures: dict[str, str]  # device path -> signature TYPE (blkid), for devices that are not PVs
    device_sizes: dict[str, int]
    filesystem: str | None  # TYPE on the origin LV, if it exists


def report(text: str, kind: str) -> list[dict[str, str]]:
    """Rows of an LVM JSON report (``--reportformat json``)."""
    data = json.loads(text or "{}")
    rows: list[dict[str, str]] = []
    for part in data.get("report", []):
        rows += part.get(kind, [])
    return rows


def parse_pvs(text: str) -> dict[str, Pv]:
    return {r["pv_name"]: Pv(name=r["pv_name"], vg=r.get("vg_name", ""), size=int(float(r.get("pv_size") or 0)))
            for r in report(text, "pv")}


def parse_lvs(text: str, vg: str) -> dict[str, Lv]:
    lvs = {}
    for r in report(text, "lv"):
        if r.get("vg_name") != vg:
            continue
        name = r["lv_name"].strip("[]")
        lvs[name] = Lv(name=name, vg=vg, segtype=r.get("segtype", ""), size=int(float(r.get("lv_size") or 0)),
                       cache_mode=r.get("cache_mode", ""), cache_policy=r.get("cache_policy", ""),
                       read_ahead=r.get("lv_read_ahead", ""))
    return lvs


def parse_blkid(text: str) -> str | None:
    """``blkid -p -o export``: the TYPE= line, if any."""
    for line in text.splitlines():
        if line.startswith("TYPE="):
            return line.split("=", 1)[1]
    return None


def pool_lv(state: State) -> Lv | None:
    return next((lv for lv in state.lvs.values() if lv.segtype == "cache-pool"), None)


def decide(w: Wanted, s: State) -> list[list[str]]:
    """Commands from ``s`` to ``w``. Pure; raises CacheError for anything it must not touch."""
    if w.fast == w.slow:
        raise CacheError(f"fast and slow device are the same ({w.fast}); the cache needs its own device")
    cmds: list[list[str]] = []
    new_pvs = []
    for role, dev in (("fast", w.fast), ("slow", w.slow)):
        pv = s.pvs.get(dev)
        if pv is not None and pv.vg not in ("", w.vg):
            raise CacheError(f"{role} device {dev} belongs to volume group {pv.vg}; expected a free device or one "
                             f"already in {w.vg}")
        if pv is None:
            sig = s.signatures.get(dev)
            if sig:
                raise CacheError(f"{role} device {dev} holds a {sig} signature; storage_tiering never overwrites "
                                 f"data (release it with `wipefs -a {dev}` if it is expendable)")
            cmds.append(["pvcreate", "--yes", dev])
        if pv is None or pv.vg == "":
            new_pvs.append(dev)
    fast_size = s.pvs[w.fast].size if w.fast in s.pvs else s.device_sizes.get(w.fast, 0)
    if fast_size and w.cache_size >= fast_size:
        raise CacheError(f"cache size {w.cache_size} bytes does not fit the fast device {w.fast} "
                         f"({fast_size} bytes, with room for the pool's metadata)")
    if s.extent_size is None:
        cmds.append(["vgcreate", "--yes", w.vg, *new_pvs])
    elif new_pvs:
        cmds.append(["vgextend", "--yes", w.vg, *new_pvs])
    extent = s.extent_size or 4 << 20
    pool_size = w.cache_size // extent * extent
    if pool_size == 0:
        raise CacheError(f"cache size {w.cache_size} bytes is below one extent ({extent} bytes)")
    origin = s.lvs.get(ORIGIN)
    if origin is None:
        cmds.append(["lvcreate", "--yes", "--name", ORIGIN, "--extents", "100%PVS", w.vg, w.slow])
    attach = ["lvcreate", "--yes", "--type", "cache", "--cachemode", w.mode, "--cachepolicy", w.policy,
              "--size", f"{pool_size}b", "--name", POOL, w.lv, w.fast]
    pool = pool_lv(s)
    if origin is None or origin.segtype != "cache":
        cmds.append(attach)
    elif pool is not None and pool.size != pool_size:
        cmds += [["lvconvert", "--yes", "--uncache", w.lv], attach]
    else:
        if origin.cache_mode != w.mode:
            cmds.append(["lvchange", "--yes", "--cachemode", w.mode, w.lv])
        if origin.cache_policy != w.policy:
            cmds.append(["lvchange", "--yes", "--cachepolicy", w.policy, w.lv])
    if origin is None or origin.read_ahead != str(w.read_ahead_kb * 1024):
        cmds.append(["lvchange", "--yes", "--readahead", str(w.read_ahead_kb * 2), w.lv])
    if origin is None or s.filesystem is None:
        cmds.append([f"mkfs.{w.filesystem}", "-q", "-E", "nodiscard", "-L", "clustersmith", f"/dev/{w.lv}"])
    elif s.filesystem != w.filesystem:
        raise CacheError(f"/dev/{w.lv} holds a {s.filesystem} file system; expected {w.filesystem} (or a blank volume)")
    return cmds


def decide_absent(w: Wanted, s: State) -> list[list[str]]:
    cmds: list[list[str]] = []
    if s.lvs:
        cmds.append(["lvremove", "--yes", w.vg])
    if s.extent_size is not None:
        cmds.append(["vgremove", "--yes", w.vg])
    cmds += [["pvremove", "--yes", dev] for dev in (w.fast, w.slow) if dev in s.pvs and s.pvs[dev].vg in ("", w.vg)]
    return cmds


def run(argv: list[str], ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        raise CacheError(f"`{' '.join(argv)}` failed ({done.returncode}): {(done.stderr or done.stdout).strip()}")
    return done


def read_state(w: Wanted) -> State:
    common = ["--reportformat", "json", "--units", "b", "--nosuffix"]
    pvs = parse_pvs(run(["pvs", *common, "-o", "pv_name,vg_name,pv_size"]).stdout)
    vgs = report(run(["vgs", *common, "-o", "vg_name,vg_extent_size"]).stdout, "vg")
    extent = next((int(float(v["vg_extent_size"])) for v in vgs if v["vg_name"] == w.vg), None)
    lvs = parse_lvs(run(["lvs", "-a", *common, "-o",
                         "lv_name,vg_name,segtype,lv_size,cache_mode,cache_policy,lv_read_ahead"]).stdout, w.vg)
    signatures, sizes = {}, {}
    for dev in (w.fast, w.slow):
        if dev not in pvs:
            signatures[dev] = parse_blkid(run(["blkid", "-p", "-o", "export", dev], ok=(0, 2)).stdout) or ""
        sizes[dev] = int(run(["blockdev", "--getsize64", dev]).stdout.strip())
    filesystem = None
    if ORIGIN in lvs:
        filesystem = parse_blkid(run(["blkid", "-p", "-o", "export", f"/dev/{w.lv}"], ok=(0, 2)).stdout)
    return State(pvs=pvs, extent_size=extent, lvs=lvs, signatures=signatures, device_sizes=sizes,
                 filesystem=filesystem)


def resolve(device: str, role: str) -> str:
    if not device.startswith("/dev/"):
        raise CacheError(f"{role} device {device!r} is not a /dev path; expected a block device")
    if not os.path.exists(device):
        raise CacheError(f"{role} device {device} does not exist on this host")
    return os.path.realpath(device)


def converge(params: dict[str, Any], check_mode: bool) -> dict[str, Any]:
    w = Wanted(vg=str(params["volume_group"]), fast=resolve(str(params["fast_device"]), "fast"),
               slow=resolve(str(params["slow_device"]), "slow"), cache_size=int(params["cache_size_bytes"]),
               mode=str(params["cache_mode"]), policy=str(params["cache_policy"]),
               read_ahead_kb=int(params["read_ahead_kb"]), filesystem=str(params.get("filesystem") or "ext4"))
    s = read_state(w)
    cmds = decide_absent(w, s) if params.get("state") == "absent" else decide(w, s)
    if not check_mode:
        for argv in cmds:
            run(argv)
    origin = s.lvs.get(ORIGIN)
    before = (f"{w.lv}: {origin.segtype} mode={origin.cache_mode} policy={origin.cache_policy} "
              f"read_ahead={origin.read_ahead} fs={s.filesystem}\n" if origin else f"{w.lv}: absent\n")
    return {"changed": bool(cmds), "commands": [" ".join(c) for c in cmds], "device": f"/dev/{w.lv}",
            "diff": {"before": before, "after": "".join(" ".join(c) + "\n" for c in cmds)}}


ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "volume_group": {"type": "str", "required": True},
    "fast_device": {"type": "str", "required": True},
    "slow_device": {"type": "str", "required": True},
    "cache_size_bytes": {"type": "int", "required": True},
    "cache_mode": {"type": "str", "required": True, "choices": ["writethrough", "writeback"]},
    "cache_policy": {"type": "str", "required": True, "choices": ["smq"]},
    "read_ahead_kb": {"type": "int", "required": True},
    "filesystem": {"type": "str", "default": "ext4", "choices": ["ext4"]},
    "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
}


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        module.exit_json(**converge(module.params, module.check_mode))
    except CacheError as err:
        module.fail_json(msg=str(err))


if __name__ == "__main__":
    main()
