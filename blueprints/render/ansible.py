"""Renderer: ``ansible/`` — ``group_vars/<group>/<role>.yml``, ``site.yml`` and, off the lab, ``inventory.yml``.

- group_vars hold exactly what each role's ``blueprints.rolevars`` module derives from the Blueprint
  (only the values it sets; role defaults and per-host facts stay out).
- site.yml applies the roles in the order of ``PLAYS`` (rdma, pfc_dcqcn, nvmeof, ceph, shared_fs,
  storage_tiering, nccl, monitoring); a role gets a play when ``roles/<name>`` exists in the repository and the
  Blueprint gives it variables (no ``nvmeof`` play where the cloud provider serves storage). Add a role by adding a row.
- inventory.yml: on non-lab targets, one host per planned machine with placeholders to fill in
  (format: ``blueprints/templates/ansible/README.md``). On the lab, ``clustersmith lab up`` writes it
  with the real ports. Build writes it as the user's own file, not a link, and a rebuild keeps it once edited or
  rewritten by ``lab up``, ``deploy`` or ``inventory --from-stack`` (``blueprints/render/editable.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
import yaml
from pydantic import BaseModel, ConfigDict

from blueprints import secrets, yamltext
from blueprints.blueprint import Blueprint
from blueprints.hosts import INVENTORY_GROUPS, InventoryGroup
from blueprints.rolevars import Group, RoleVars, builders
from blueprints.textsafe import one_line

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "ansible"
ROLES = Path(__file__).resolve().parent.parent.parent / "roles"

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: 100k-GPU builds dump MBs of YAML


class Play(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str
    hosts: str
    title: str


PLAYS: tuple[Play, ...] = (
    Play(role="rdma", hosts="storage_targets:gpu_clients", title="RDMA on every rail"),
    Play(role="pfc_dcqcn", hosts="storage_targets:gpu_clients", title="Lossless RoCE: PFC and DCQCN"),
    Play(role="nvmeof", hosts="storage_targets:gpu_clients", title="NVMe-oF targets and multipath hosts"),
    Play(role="ceph", hosts="storage_targets", title="Ceph: monitors, managers, OSDs, MDS, pools and CephFS"),
    Play(role="shared_fs", hosts="gpu_clients", title="The shared file system on every GPU node"),
    Play(role="storage_tiering", hosts="gpu_clients", title="Storage tiering on the GPU clients"),
    Play(role="nccl", hosts="gpu_clients", title="NCCL environment on the GPU clients"),
    Play(role="monitoring", hosts="all", title="Monitoring"),
)


class PlaceholderRail(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int
    name: str
    netdev: str
    address: str | None = None
    prefix: int | None = None


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)


def group_vars(bp: Blueprint) -> dict[str, dict[Group, RoleVars]]:
    """role -> group -> variables, for every role module that has something for this Blueprint."""
    found: dict[str, dict[Group, RoleVars]] = {}
    for role, build in builders().items():
        by_group = build(bp)
        if by_group:
            found[role] = by_group
    return found


def plays(bp: Blueprint, roles_dir: Path = ROLES,
          with_vars: dict[str, dict[Group, RoleVars]] | None = None) -> list[Play]:
    """The plays of site.yml: roles present in the repository that the Blueprint gives variables to
    (``with_vars``: ``group_vars(bp)`` where the caller has it; a 1M-GPU design's take seconds to build)."""
    with_vars = group_vars(bp) if with_vars is None else with_vars
    known = builders()
    return [p for p in PLAYS
            if (roles_dir / p.role).is_dir() and (p.role in with_vars or p.role not in known)]


def placeholder_rails(count: int) -> list[PlaceholderRail]:
    return [PlaceholderRail(index=i, name=f"rail{i}", netdev=f"CHANGE_ME_rail{i}_nic") for i in range(count)]


def inventory(bp: Blueprint) -> str:
    """The inventory of a non-lab target: every planned host, with placeholders the user fills in.

    Rails and disks are written once per inventory group, from its first host group (the groups of one role
    share their NIC and disk layout: ``blueprints.planner.hosts``)."""
    groups: dict[InventoryGroup, list[str]] = {g: [] for g in INVENTORY_GROUPS.values()}
    rails: dict[InventoryGroup, list[dict[str, Any]]] = {}
    disks: dict[InventoryGroup, dict[str, str]] = {g: {} for g in INVENTORY_GROUPS.values()}
    planned: dict[InventoryGroup, bool] = {g: False for g in INVENTORY_GROUPS.values()}
    for host_group in bp.hosts:
        groups[host_group.group] += host_group.names()
        rails.setdefault(host_group.group, [r.model_dump(exclude_none=True)
                                            for r in placeholder_rails(host_group.rail_nics)])
        if not disks[host_group.group]:
            disks[host_group.group] = {d.name: placeholder(d.purpose) for d in host_group.disks if not d.planned}
            planned[host_group.group] = any(d.planned for d in host_group.disks)
    # A host's own namespace is its disks.slow, named by the Blueprint: a group with one lists its disks per host
    # (a host's `disks` replaces the group's whole), the placeholders beside it.
    owned = {owner: subs[0].device for owner, subs in bp.nvmeof_owned().items()}
    host_disks = {name: {**disks[group], "slow": owned[name]} for group, names in groups.items() if planned[group]
                  for name in names if name in owned}
    return _env().get_template("inventory.yml.j2").render(
        bp=bp, groups=groups, rails=rails, disks={g: {} if planned[g] else d for g, d in disks.items()},
        host_disks=host_disks, flow=_flow, to_yaml=lambda data, indent: _indented_yaml(data, indent),
    )


def _flow(data: dict[str, str]) -> str:
    """``{fast: CHANGE_ME_..., slow: /dev/disk/by-id/...}`` on one line."""
    return "{" + ", ".join(f"{k}: {v}" for k, v in data.items()) + "}"


def placeholder(purpose: str) -> str:
    """``CHANGE_ME_local_nvme_block_device`` for a disk's purpose."""
    words = "".join(c if c.isalnum() else " " for c in purpose.lower()).split()
    return "CHANGE_ME_" + "_".join(words)


def _indented_yaml(data: Any, indent: int) -> str:
    text = yaml.dump(data, Dumper=_DUMPER, sort_keys=False, default_flow_style=False, width=110)
    pad = " " * indent
    return "\n".join(pad + line if line else line for line in text.rstrip("\n").split("\n"))


def render(bp: Blueprint, folder: Path) -> list[Path]:
    out = folder / "ansible"
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    header = f"# Generated by clustersmith from {one_line(bp.spec_file)} (Blueprint {bp.name}). Do not edit: rebuild.\n"
    by_role = group_vars(bp)
    for role, by_group in sorted(by_role.items()):
        for group, values in sorted(by_group.items()):
            path = out / "group_vars" / group / f"{role}.yml"
            path.parent.mkdir(parents=True, exist_ok=True)
            data = values.model_dump(mode="json", exclude_unset=True)
            path.write_text(header + "---\n" + yamltext.dump(data, width=110), encoding="utf-8")
            written.append(path)
    site = out / "site.yml"
    site.write_text(_env().get_template("site.yml.j2").render(bp=bp, plays=plays(bp, with_vars=by_role)),
                    encoding="utf-8")
    written.append(site)
    if bp.lab is None:
        path = out / "inventory.yml"
        path.write_text(inventory(bp), encoding="utf-8")
        written.append(path)
    return written


def render_secrets_ref(bp: Blueprint, folder: Path, secrets_file: Path) -> list[Path]:
    """``ansible/group_vars/all/secrets.yml``: only the secrets file's absolute path, which the roles read on the
    controller (``lookup('ansible.builtin.file', clustersmith_secrets_file) | from_yaml``, with no_log). It sits in
    the ``all/`` folder with the roles' files: Ansible reads the first of ``group_vars/all`` and ``all.yml`` it
    finds, never both, so an ``all.yml`` beside the folder would be ignored."""
    path = folder / secrets.REFERENCE
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Generated by clustersmith from {one_line(bp.spec_file)} (Blueprint {bp.name}). Do not edit: rebuild"
              f" (--secrets FILE names another file).\n# The cluster's secrets stay in that 0600 file, never here.\n")
    text = yaml.dump({secrets.REFERENCE_KEY: str(secrets_file)}, Dumper=_DUMPER, width=1000)
    path.write_text(header + "---\n" + text, encoding="utf-8")
    return [path]
