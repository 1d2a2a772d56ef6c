"""Packing a root file system as a gzip'd ``newc`` cpio archive, the kernel's initramfs format."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from stacks.lab.errors import LabError


def file_list(root: Path) -> bytes:
    """Every path under ``root``, relative, NUL-separated, parents before children, sorted."""
    names: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel != ".":
            names.append(rel)
        # os.walk lists links to folders (merged-/usr's /lib, /bin, /sbin) with the folders: keep
        # them as links, and do not descend.
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = sorted(d for d in dirnames if d not in links)
        names.extend(os.path.normpath(os.path.join(rel, f)) for f in sorted([*filenames, *links]))
    return b"".join(n.encode() + b"\0" for n in names)


def pack(root: Path, target: Path, level: int = 6) -> None:
    """``cpio -o -H newc | gzip`` of ``root`` into ``target`` (written in place; callers rename)."""
    with target.open("wb") as out:
        gzip = subprocess.Popen(["gzip", f"-{level}", "-n"], stdin=subprocess.PIPE, stdout=out)
        assert gzip.stdin is not None
        cpio = subprocess.run(
            ["cpio", "--create", "--format=newc", "--null", "--quiet", "--reproducible"],
            input=file_list(root),
            cwd=root,
            stdout=gzip.stdin,
            stderr=subprocess.PIPE,
            check=False,
        )
        gzip.stdin.close()
        gzip_rc = gzip.wait()
    if cpio.returncode != 0 or gzip_rc != 0:
        raise LabError(f"packing {root} failed: cpio {cpio.returncode}, gzip {gzip_rc}: {cpio.stderr!r}")
