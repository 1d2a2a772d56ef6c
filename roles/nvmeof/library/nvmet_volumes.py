#!/usr/bin/python3
"""The namespaces' volumes on a storage target: one LVM volume per namespace it serves, carved from its pool device.

Ansible module (``nvmet_volumes``). Makes volume group ``<vg>`` on the pool device (``disks.nvmeof``) and a volume
of the planned size for every namespace the target serves; ``nvmet_target`` then exports each. ``read_state`` reads
LVM's JSON reports and the pool's signature, ``decide`` (pure) lists the commands, ``converge`` runs them.

It never destroys or shrinks anything: a pool holding another signature or another volume group, a volume of
another size, too little free space are errors that name the device and what was expected. Volumes of the group it
was not asked for (a host no longer planned) are left as they are and reported, for the operator to remove.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
from typing import Any

DOCUMENTATION = r"""
module: nvmet_volumes
short_description: LVM volumes behind the NVMe-oF namespaces a target serves, carved from one pool device
options:
  pool: {type: str, required: true, description: Block device the volume group is made on (disks.nvmeof)}
  volume_group: {type: str, required: true, description: Volume group of the namespaces' volumes}
  volumes: {type: list, elements: str, required: true, description: Volume names, one per namespace served}
  size_bytes: {type: int, required: true, description: Size of every volume (whole extents)}
author: clustersmith
"""

NAME = re.compile(r"^[A-Za-z0-9+_.][A-Za-z0-9+_.-]*$")  # lvm(8): VG and LV names


class VolumeError(Exception):
    """A pool or volume the namespaces cannot be built on; the message says what and what was expected."""


@dataclasses.dataclass(frozen=True)
class Wanted:
    pool: str  # resolved device path
    vg: str
    volumes: tuple[str, ...]
    size: int


@dataclasses.dataclass(frozen=True)
class State:
    pool_vg: str | None  # the volume group the pool is a PV of ("" a PV of none, None not a PV)
    pool_signature: str  # blkid TYPE of the pool when it is no PV, "" for none
    vg_pvs: tuple[str, ...]  # the PVs of our volume group, () if it does not exist
    vg_free: int
    extent: int
    volumes: dict[str, int]  # our volume group's volumes: name -> bytes


def rows(text: str, kind: str) -> list[dict[str, str]]:
    """Rows of an LVM JSON report (``--reportformat json``)."""
    return [r for part in json.loads(text or "{}").get("report", []) for r in part.get(kind, [])]


def decide(w: Wanted, s: State) -> list[list[str]]:
    """Commands from ``s`` to ``w``. Pure; raises VolumeError for anything it must not touch."""
    bad = [n for n in (w.vg, *w.volumes) if not NAME.match(n)]
    if bad:
        raise VolumeError(f"name {bad[0]!r} is not an LVM name; expected letters, digits and + _ . -")
    if w.size <= 0 or w.size % s.extent:
        raise VolumeError(f"size_bytes {w.size}: expected a positive multiple of the {s.extent}-byte extent")
    cmds: list[list[str]] = []
    if not s.vg_pvs:
        if s.pool_vg:
            raise VolumeError(f"pool {w.pool} is in volume group {s.pool_vg}; expected a free device for {w.vg}")
        if s.pool_signature:
            raise VolumeError(f"pool {w.pool} holds a {s.pool_signature} signature; clustersmith builds the "
                              f"namespaces only on an empty device and never wipes one (`wipefs -a {w.pool}` if "
                              f"its data is expendable)")
        cmds.append(["vgcreate", "--yes", w.vg, w.pool])
    elif w.pool not in s.vg_pvs:
        raise VolumeError(f"volume group {w.vg} is on {', '.join(s.vg_pvs)}, not on the pool {w.pool}; expected "
                          f"nvmeof_namespace_pool to name its device")
    missing = [v for v in w.volumes if v not in s.volumes]
    for name in w.volumes:
        if name in s.volumes and s.volumes[name] != w.size:
            raise VolumeError(f"volume {w.vg}/{name} is {s.volumes[name]} bytes; the plan says {w.size}: a namespace "
                              f"in use is never resized or recreated here (lvextend it, or remove it, by hand)")
    need = len(missing) * w.size
    if s.vg_pvs and need > s.vg_free:
        raise VolumeError(f"volume group {w.vg} has {s.vg_free} bytes free; {len(missing)} new volume(s) of "
                          f"{w.size} bytes need {need}")
    cmds += [["lvcreate", "--yes", "--wipesignatures", "y", "--zero", "y", "--size", f"{w.size}b", "--name", name,
              w.vg] for name in missing]
    return cmds


def run(argv: list[str], ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        raise VolumeError(f"`{' '.join(argv)}` failed ({done.returncode}): {(done.stderr or done.stdout).strip()}")
    return done


def read_state(w: Wanted) -> State:
    common = ["--reportformat", "json", "--units", "b", "--nosuffix"]
    pvs = {r["pv_name"]: r.get("vg_name", "") for r in rows(run(["pvs", *common, "-o", "pv_name,vg_name"]).stdout,
                                                           "pv")}
    real = {os.path.realpath(p): vg for p, vg in pvs.items()}
    vg = next((r for r in rows(run(["vgs", *common, "-o", "vg_name,vg_free,vg_extent_size"]).stdout, "vg")
               if r["vg_name"] == w.vg), None)
    volumes = {}
    if vg is not None:
        lvs = rows(run(["lvs", *common, "-o", "lv_name,vg_name,lv_size", w.vg]).stdout, "lv")
        volumes = {r["lv_name"]: int(float(r["lv_size"])) for r in lvs if r.get("vg_name") == w.vg}
    signature = ""
    if w.pool not in real:
        blkid = run(["blkid", "-p", "-o", "export", w.pool], ok=(0, 2)).stdout
        signature = next((line.split("=", 1)[1] for line in blkid.splitlines() if line.startswith("TYPE=")), "")
    return State(pool_vg=real.get(w.pool), pool_signature=signature,
                 vg_pvs=tuple(sorted(p for p, g in real.items() if g == w.vg)),
                 vg_free=int(float(vg["vg_free"])) if vg else 0,
                 extent=int(float(vg["vg_extent_size"])) if vg else 4 << 20, volumes=volumes)


def converge(params: dict[str, Any], check_mode: bool) -> dict[str, Any]:
    pool = str(params["pool"])
    if not pool.startswith("/dev/") or not os.path.exists(pool):
        raise VolumeError(f"pool {pool!r} is not a block device on this host; expected the device the target "
                          f"carves into namespaces (nvmeof_namespace_pool, normally the inventory's disks.nvmeof)")
    w = Wanted(pool=os.path.realpath(pool), vg=str(params["volume_group"]),
               volumes=tuple(str(v) for v in params["volumes"]), size=int(params["size_bytes"]))
    s = read_state(w)
    cmds = decide(w, s)
    if not check_mode:
        for argv in cmds:
            run(argv)
    others = sorted(set(s.volumes) - set(w.volumes))
    return {"changed": bool(cmds), "commands": [" ".join(c) for c in cmds], "unplanned_volumes": others,
            "devices": {v: f"/dev/{w.vg}/{v}" for v in w.volumes},
            "diff": {"before": "".join(f"{w.vg}/{n} {b}\n" for n, b in sorted(s.volumes.items())),
                     "after": "".join(" ".join(c) + "\n" for c in cmds)}}


ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "pool": {"type": "str", "required": True},
    "volume_group": {"type": "str", "required": True},
    "volumes": {"type": "list", "elements": "str", "required": True},
    "size_bytes": {"type": "int", "required": True},
}


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = converge(module.params, module.check_mode)
    except VolumeError as err:
        module.fail_json(msg=str(err))
    if result["unplanned_volumes"]:
        module.warn(f"volume group {module.params['volume_group']} holds volumes no planned namespace uses: "
                    f"{', '.join(result['unplanned_volumes'])}; left as they are")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
