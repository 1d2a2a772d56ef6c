#!/usr/bin/python3
"""FS-Cache's backing volume: an LVM logical volume on the node's local NVMe, with an ext4 file system.

Ansible module (``fscache_volume``). The volume group is the one the storage_tiering role makes on the same disk
for dm-cache where it plans one (``clustersmith``): the device joins it, or the group is made on it when missing.
Devices or groups holding anything else are refused, never wiped; a volume is grown to the wanted size, never
shrunk (cachefilesd's data would go with it). ``read_state`` reads LVM's JSON reports, ``decide`` (pure) lists the
commands, ``converge`` runs them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from typing import Any

DOCUMENTATION = r"""
module: fscache_volume
short_description: An LVM volume on the local NVMe with an ext4 file system, for cachefilesd
options:
  volume_group: {type: str, required: true, description: Volume group on the device (made when missing)}
  logical_volume: {type: str, required: true, description: The cache's logical volume}
  device: {type: str, required: true, description: The local NVMe block device (disks.fast)}
  size_bytes: {type: int, required: true, description: Wanted size (whole extents, rounded down)}
author: clustersmith
"""

LABEL = "fscache"


class VolumeError(Exception):
    """Device or volume state the cache volume cannot be built on; the message says what and what was expected."""


@dataclasses.dataclass(frozen=True)
class Wanted:
    vg: str
    lv: str
    device: str  # resolved path
    size: int


@dataclasses.dataclass(frozen=True)
class State:
    device_vg: str | None  # the device's volume group, "" for a PV in none, None when it is no PV
    signature: str  # blkid TYPE of a device that is no PV ("" when blank)
    extent_size: int | None  # of the wanted group; None when it does not exist
    free_on_device: int  # bytes free on the device's PV in the group
    lv_size: int | None  # the cache volume's size; None when it does not exist
    lv_filesystem: str  # blkid TYPE on the volume ("" when blank)


def report(text: str, kind: str) -> list[dict[str, str]]:
    data = json.loads(text or "{}")
    rows: list[dict[str, str]] = []
    for part in data.get("report", []):
        rows += part.get(kind, [])
    return rows


def decide(w: Wanted, s: State) -> list[list[str]]:
    """Commands from ``s`` to ``w``. Pure; raises VolumeError for anything it must not touch."""
    cmds: list[list[str]] = []
    if s.device_vg is None:
        if s.signature:
            raise VolumeError(f"{w.device} holds a {s.signature} signature; shared_fs never overwrites data (release "
                              f"it with `wipefs -a {w.device}` if it is expendable)")
        cmds.append(["pvcreate", "--yes", w.device])
    elif s.device_vg not in ("", w.vg):
        raise VolumeError(f"{w.device} belongs to volume group {s.device_vg}; expected a free device or one in {w.vg}")
    if s.extent_size is None:
        cmds.append(["vgcreate", "--yes", w.vg, w.device])
    elif s.device_vg != w.vg:
        cmds.append(["vgextend", "--yes", w.vg, w.device])
    extent = s.extent_size or 4 << 20
    size = w.size // extent * extent
    if size == 0:
        raise VolumeError(f"size {w.size} bytes is below one extent ({extent} bytes)")
    if s.lv_size is None:
        free = s.free_on_device if s.device_vg == w.vg else None
        if free is not None and size > free:
            raise VolumeError(f"{w.vg}/{w.lv} needs {size} bytes on {w.device}, which has {free} free; expected the "
                              "local NVMe to hold the planned caches (dm-cache and FS-Cache)")
        cmds.append(["lvcreate", "--yes", "--name", w.lv, "--size", f"{size}b", w.vg, w.device])
    elif s.lv_size < size:
        if size - s.lv_size > s.free_on_device:
            raise VolumeError(f"{w.vg}/{w.lv} is {s.lv_size} bytes; growing it to {size} needs "
                              f"{size - s.lv_size} free on {w.device}, which has {s.free_on_device}")
        cmds.append(["lvextend", "--yes", "--resizefs", "--size", f"{size}b", f"{w.vg}/{w.lv}", w.device])
    if s.lv_size is None or not s.lv_filesystem:
        cmds.append(["mkfs.ext4", "-q", "-m", "0", "-E", "nodiscard", "-L", LABEL, f"/dev/{w.vg}/{w.lv}"])
    elif s.lv_filesystem != "ext4":
        raise VolumeError(f"/dev/{w.vg}/{w.lv} holds a {s.lv_filesystem} file system; expected ext4 (or a blank "
                          "volume)")
    return cmds


def run(argv: list[str], ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        raise VolumeError(f"`{' '.join(argv)}` failed ({done.returncode}): {(done.stderr or done.stdout).strip()}")
    return done


def blkid_type(device: str) -> str:
    for line in run(["blkid", "-p", "-o", "export", device], ok=(0, 2)).stdout.splitlines():
        if line.startswith("TYPE="):
            return line.split("=", 1)[1]
    return ""


def read_state(w: Wanted) -> State:
    common = ["--reportformat", "json", "--units", "b", "--nosuffix"]
    pvs = {r["pv_name"]: r for r in report(run(["pvs", *common, "-o", "pv_name,vg_name,pv_free"]).stdout, "pv")}
    vgs = report(run(["vgs", *common, "-o", "vg_name,vg_extent_size"]).stdout, "vg")
    extent = next((int(float(v["vg_extent_size"])) for v in vgs if v["vg_name"] == w.vg), None)
    lvs = report(run(["lvs", *common, "-o", "lv_name,vg_name,lv_size"]).stdout, "lv")
    lv = next((r for r in lvs if r.get("vg_name") == w.vg and r.get("lv_name") == w.lv), None)
    pv = pvs.get(w.device)
    return State(device_vg=None if pv is None else pv.get("vg_name", ""),
                 signature="" if pv is not None else blkid_type(w.device),
                 extent_size=extent, free_on_device=int(float(pv.get("pv_free") or 0)) if pv else 0,
                 lv_size=int(float(lv["lv_size"])) if lv else None,
                 lv_filesystem=blkid_type(f"/dev/{w.vg}/{w.lv}") if lv else "")


def converge(params: dict[str, Any], check_mode: bool) -> dict[str, Any]:
    device = str(params["device"])
    if not device.startswith("/dev/") or not os.path.exists(device):
        raise VolumeError(f"device {device!r} is not a block device on this host; expected the local NVMe "
                          "(the inventory's disks.fast)")
    w = Wanted(vg=str(params["volume_group"]), lv=str(params["logical_volume"]), device=os.path.realpath(device),
               size=int(params["size_bytes"]))
    if shutil.which("pvs") is None:
        if check_mode:  # the role installs lvm2 just before, which --check only pretends to do
            return {"changed": True, "commands": [], "device": f"/dev/{w.vg}/{w.lv}",
                    "msg": "lvm2 is not installed yet: the volume would be made once it is"}
        raise VolumeError("pvs is not on this host: expected lvm2 installed (the role installs it before this step)")
    s = read_state(w)
    cmds = decide(w, s)
    if not check_mode:
        for argv in cmds:
            run(argv)
    return {"changed": bool(cmds), "commands": [" ".join(c) for c in cmds], "device": f"/dev/{w.vg}/{w.lv}",
            "diff": {"before": f"{w.vg}/{w.lv}: {s.lv_size if s.lv_size is not None else 'absent'}\n",
                     "after": "".join(" ".join(c) + "\n" for c in cmds)}}


ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "volume_group": {"type": "str", "required": True},
    "logical_volume": {"type": "str", "required": True},
    "device": {"type": "str", "required": True},
    "size_bytes": {"type": "int", "required": True},
}


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        module.exit_json(**converge(module.params, module.check_mode))
    except VolumeError as err:
        module.fail_json(msg=str(err))


if __name__ == "__main__":
    main()
