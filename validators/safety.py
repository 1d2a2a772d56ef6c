"""What an acceptance run writes, decided before anything runs: clusters under test may already hold data.

By default the fio workloads write only their own files (``clustersmith-accept.<host>.<job>``) in the scratch
directories the plan names (on the shared file system and on the node's tiered one; each workload says which),
whose mounts the hosts check first. A raw device is
written only when it is a namespace the Blueprint reserves as scratch (each host checks the device's
subsystem NQN before fio starts) or with ``--destructive``. Anything else that would be written needs
``--destructive``, and the run says what it will overwrite. Read-only checks (RDMA, NVMe-oF paths, QoS,
monitoring) need no flag.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from blueprints.blueprint import Blueprint, Check, FioWorkload, ScratchFs
from blueprints.blueprint.check_args import FioArgs, args_as
from blueprints.errors import ClusterSmithError, Problem


class WriteArea(BaseModel):
    """Where one workload writes: a directory (on the mount that must hold it) or a device."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    mount: str | None = None


class WritePlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["none", "scratch_dir", "directory", "device"]
    path: str = Field(default="", description="The --fio-target every workload writes (directory, device)")
    scratch: dict[ScratchFs, WriteArea] = Field(default_factory=dict,
                                                description="scratch_dir: the plan's scratch directory per file system")
    scratch_nqns: tuple[str, ...] = ()
    destructive: bool = False
    keep: bool = Field(default=False, description="--keep-scratch: the files stay for the next run, which reuses them")
    cleanup_paths: tuple[str, ...] = Field(default=(), description=(
        "Where the clean-up removes this run's and earlier kept runs' files: every scratch directory of the plan "
        "(scratch_dir), the --fio-target directory (directory)"))
    summary: str = "nothing is written (read-only checks only)"

    def area(self, workload: FioWorkload) -> WriteArea:
        """Where ``workload`` writes: its file system's scratch directory, or the one target of the run."""
        return self.scratch[workload.on] if self.kind == "scratch_dir" else WriteArea(path=self.path)


# What fio and the job file would read as more than one plain path (fio's HOWTO.rst, "Target file/device",
# axboe/fio @002db50): ':' separates files in filename= and directories in directory=, '\\' escapes a ':', the
# name '-' means stdin/stdout, filename_format replaces $jobname, $jobnum, $filenum and $clientuid; a newline or
# '=' would start another job-file option. So one plain absolute path of these characters only:
SAFE_PATH = re.compile(r"/[A-Za-z0-9._+@/-]+")


def check_target(target: str) -> str:
    """``target`` as fio will open it: exactly one absolute, normalised path of plain characters."""
    def bad(why: str) -> ClusterSmithError:
        return ClusterSmithError([Problem("--fio-target", why, value=target)], title="bad --fio-target")

    if not PurePosixPath(target).is_absolute():
        raise bad("expected one absolute directory or /dev/ device path")
    if not SAFE_PATH.fullmatch(target):
        odd = sorted({c for c in target if not re.fullmatch(r"[A-Za-z0-9._+@/-]", c)})
        raise bad(f"expected one plain path: {' '.join(repr(c) for c in odd)} would reach fio as more than a path "
                  "(':' separates files, '\\' escapes, '$' expands, whitespace separates); give a single path of "
                  "letters, digits and . _ + @ / -")
    if str(PurePosixPath(target)) != target or any(p in (".", "..") for p in target.split("/")):
        raise bad(f"expected a normalised path (no '.', '..', '//' or trailing '/'): {PurePosixPath(target)}")
    return target


def _fio_checks(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.tool == "fio"]


def plan_writes(bp: Blueprint, checks: list[Check], target: str | None, destructive: bool,
                hosts: list[str], keep: bool = False) -> WritePlan:
    """Where this run's fio may write, and what the run says it will write. ``keep`` (--keep-scratch): the scratch
    files stay for the next run, whose fio finds them laid out (fio lays a file out only when it is missing or too
    small); a run without it removes them, its own and those an earlier kept run left in any of the plan's scratch
    directories."""
    fio = _fio_checks(checks)
    if not fio:
        return WritePlan(kind="none")
    workloads = {w.name: w for w in bp.acceptance.workloads}
    run = [args_as(c.args, FioArgs).workload for c in fio]
    used = [workloads[name] for name in run if name in workloads]
    per_host = max((w.numjobs.value * w.size.value.value for w in used), default=0.0)
    files = max((w.numjobs.value for w in used), default=0)
    where = ", ".join(hosts) or "every GPU client"
    dirs = {a.fs: a for a in bp.acceptance.scratch if a.kind == "directory" and a.fs is not None}
    nqns = tuple(a.path for a in bp.acceptance.scratch if a.kind == "namespace")
    if target is not None:
        check_target(target)
    named = [a for a in dirs.values() if target is not None and PurePosixPath(target) == PurePosixPath(a.path)]
    if target is None or named:
        need = sorted({w.on for w in used})
        if missing := [fs for fs in need if fs not in dirs]:
            raise ClusterSmithError([Problem("acceptance.scratch", f"the Blueprint names no scratch directory on the "
                                             f"{' or '.join(missing)} file system, so fio has nowhere safe to write; "
                                             "give --fio-target and --destructive")],
                                    title="nowhere to write")
        chosen = {fs: named[0] if named else dirs[fs] for fs in need}
        areas = {fs: WriteArea(path=a.path, mount=a.mount) for fs, a in chosen.items()}
        distinct = {a.path: a for a in chosen.values()}.values()
        places = "; ".join(f"{a.path} (plan scratch on {a.mount})" for a in distinct)
        afterwards = ("keeps them for the next run (--keep-scratch)" if keep else
                      "removes them afterwards (and any an earlier --keep-scratch run left in the plan's scratch)")
        return WritePlan(kind="scratch_dir", scratch=areas, destructive=False, keep=keep,
                         cleanup_paths=tuple(dict.fromkeys(a.path for a in dirs.values())),
                         summary=f"fio writes {files} scratch file(s) per client ({per_host / 1e6:.0f} MB) named "
                                 f"clustersmith-accept.<host>.<job> in {places} on {where}, and {afterwards}")
    is_device = target.startswith("/dev/")
    if is_device and not destructive and nqns:
        return WritePlan(kind="device", path=target, scratch_nqns=nqns,
                         summary=f"fio overwrites {target} on {where}, after each host checks that it is a scratch "
                                 f"namespace of the plan ({', '.join(nqns)})")
    what = (f"overwrite the data on {target}" if is_device else
            f"write {files} file(s) of up to {per_host / 1e6:.0f} MB per client into {target}")
    if not destructive:
        scratch_text = ", ".join(a.path for a in dirs.values()) or "none"
        raise ClusterSmithError([Problem("--fio-target", f"not a scratch area of the plan (scratch directories: "
                                         f"{scratch_text}; scratch namespaces: {', '.join(nqns) or 'none'}); fio "
                                         f"would {what} on {where}; pass --destructive to allow it", value=target)],
                                title="refusing to write outside the plan's scratch areas")
    kept = " and keep them for the next run (--keep-scratch)" if keep and not is_device else ""
    return WritePlan(kind="device" if is_device else "directory", path=target, destructive=True,
                     keep=keep and not is_device, cleanup_paths=() if is_device else (target,),
                     summary=f"--destructive: fio will {what} on {where}{kept}")
