"""Which RoleVars model feeds which role, and the role's one-line description (for meta/argument_specs.yml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from blueprints.rolevars import RoleVars, argument_spec
from blueprints.rolevars.ceph import CephVars
from blueprints.rolevars.nvmeof import NvmeofVars
from blueprints.rolevars.rdma import RdmaVars
from blueprints.rolevars.shared_fs import SharedFsVars
from blueprints.rolevars.storage_tiering import StorageTieringVars

REPO = Path(__file__).resolve().parent.parent.parent
ROLES = REPO / "roles"

MODELS: dict[str, tuple[type[RoleVars], str]] = {
    "rdma": (RdmaVars, "RDMA on every rail NIC: MTU, Soft-RoCE in the lab, RoCE mode and GID, across reboots"),
    "nvmeof": (NvmeofVars, "NVMe-oF: nvmet subsystems on the targets, native multipath over every rail on the hosts"),
    "ceph": (CephVars, "Ceph from Debian's packages: monitors, managers, OSDs, MDS, pools, CephFS and its layouts"),
    "shared_fs": (SharedFsVars, "The shared file system on every GPU node (CephFS, Lustre, NFS, WEKA, Storage Scale) "
                                "through a systemd mount unit, with FS-Cache on the local NVMe"),
    "storage_tiering": (StorageTieringVars,
                        "dm-cache tier of the fast device in front of the slow one, tunables and warm-up"),
}
HEADER = ("# Generated from blueprints.rolevars.{module} ({model}); do not edit.\n"
          "# Regenerate: .venv/bin/pytest tests/unit/roles/test_argspecs.py --update-golden\n")


class _IndentedLists(yaml.SafeDumper):
    """Indents list items under their key, as yamllint (and so ansible-lint) wants."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def argument_specs_text(role: str) -> str:
    model, short = MODELS[role]
    body: dict[str, Any] = argument_spec(model, short)
    header = HEADER.format(module=role, model=model.__name__)
    return header + "---\n" + yaml.dump(body, Dumper=_IndentedLists, sort_keys=False, width=110)


def argument_specs_path(role: str) -> Path:
    return ROLES / role / "meta" / "argument_specs.yml"
