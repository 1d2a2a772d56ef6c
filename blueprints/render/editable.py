"""The generated files a user is told to edit: the user's own files, never links into the generated tree.

``ansible/inventory.yml`` and ``pulumi/machines.yaml`` ask the user to replace every CHANGE_ME, and
``pulumi config set`` writes ``pulumi/Pulumi.<stack>.yaml``. As links into ``.generated/current/`` (the layout
before), an edit landed in the generated tree and the next build replaced it without a word (issue 43). Each is
now copied out as a real file. A rebuild replaces it only while it still holds exactly what build wrote last
(its sha256 in ``.generated/editable.json``); otherwise the user's file is kept, and build says so and where this
build's version is (``.generated/current/<path>``) to compare. A link of the old layout is replaced by a real
file holding what it showed, edits made through it included; where that differs from this build's version it is
kept and reported the same way.

Steps after build that write one of these files (``clustersmith inventory``, deploy's inventory step, ``lab up``)
call :func:`claim` first: they replace only what clustersmith wrote (build's unedited version, a link of build's,
or a file that starts with a step's own :data:`STEP_MARK` header), and refuse a user's file, exit 2, naming it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from blueprints import atomic
from blueprints.errors import ClusterSmithError, Problem

# Relative to the build folder; fnmatch patterns.
INVENTORY = "ansible/inventory.yml"  # build's template, then what the inventory step or `lab up` writes there
EDITABLE = (INVENTORY, "pulumi/machines.yaml", "pulumi/Pulumi.*.yaml")
RECORD = "editable.json"  # under .generated/: each editable file's sha256 as build last wrote it
STEP_MARK = "# Written by `clustersmith "  # the first line of a file a step after build wrote (and rewrites)
GENERATED = ".generated"  # the build folder's generated trees (blueprints.render reads it from here)
# How every build notice begins that names a path build left as it was (here and in blueprints.render): `build
# --quiet` still shows those.
KEPT = "kept "


@dataclass(frozen=True)
class Placed:
    """What ``place`` did with one editable file: ``kept`` the user's where this build's version differs."""

    path: Path
    kept: bool
    notice: str


def is_editable(rel: str) -> bool:
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in EDITABLE)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_record(gen: Path) -> dict[str, str]:
    try:
        data = json.loads((gen / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write(path: Path, data: bytes) -> None:
    atomic.write(path, data)


def place(final: Path, gen: Path, staging: Path, old_tree: Path | None, ours: str) -> list[Placed]:
    """Put each editable file of the new tree ``staging`` at its path in ``final`` (the rules: module doc).
    ``old_tree`` is the tree ``current`` named before this build (what an old-layout link showed), ``ours`` the
    prefix of build's own links. Returns what it did that the user should hear of."""
    record = _read_record(gen)
    placed: dict[str, str] = {}
    notices: list[Placed] = []
    generated = {p.relative_to(staging).as_posix() for pattern in EDITABLE for p in staging.glob(pattern)
                 if p.is_file() and not p.is_symlink()}
    linked = {p.relative_to(final).as_posix() for pattern in EDITABLE for p in final.glob(pattern)
              if p.is_symlink() and ours in os.readlink(p)}
    for rel in sorted(generated | linked):
        here = final / rel
        shown = old_tree / rel if old_tree is not None and (old_tree / rel).is_file() else None  # what a link showed
        beside = f"this build's version is {gen.name}/current/{rel}: compare the two, e.g. with diff"

        def kept(why: str, path: Path = here) -> Placed:
            return Placed(path, True, f"{KEPT}{path}: {why}")

        if rel not in generated:  # an old-layout link to a file this build no longer writes: keep what it showed
            if shown is not None:
                _write(here, shown.read_bytes())
                notices.append(kept("it was a link into the generated tree, now your own file; this build no "
                                    "longer writes it"))
            continue
        fresh = (staging / rel).read_bytes()
        fresh_sha = _sha(fresh)
        if here.is_symlink():
            if ours not in os.readlink(here):
                notices.append(kept(f"a link of someone else's where build writes your copy to edit; {beside}"))
                continue
            before = shown.read_bytes() if shown is not None else fresh
            _write(here, before)  # replaces the link: what it showed, edits made through it included
            if before != fresh:
                notices.append(kept(f"it was a link into the generated tree, and what it showed (your edits, if you "
                                    f"made any through it) is now your own file; {beside}"))
                continue
            placed[rel] = fresh_sha
        elif here.is_file():
            now = _sha(here.read_bytes())
            if now == fresh_sha:
                placed[rel] = now
            elif record.get(rel) == now:
                _write(here, fresh)
                placed[rel] = fresh_sha
                notices.append(Placed(here, False, f"updated {here}: you had not edited it since the last build"))
            else:
                notices.append(kept(f"yours (edited since build wrote it, or written by another step); {beside}"))
                if rel in record:
                    placed[rel] = record[rel]
        elif here.exists():
            notices.append(kept(f"not a file; {beside}"))
        else:
            here.parent.mkdir(parents=True, exist_ok=True)
            _write(here, fresh)
            placed[rel] = fresh_sha
            notices.append(Placed(here, False, f"wrote {here}: yours to edit; a rebuild keeps your edits"))
    _write(gen / RECORD, (json.dumps(placed, indent=1, sort_keys=True) + "\n").encode())
    return notices


def claim(folder: Path, rel: str, step: str) -> Path:
    """``folder/rel`` for ``step`` to write, once it holds nothing a user wrote (module doc); a ClusterSmithError
    naming the file otherwise. Reads only."""
    path = folder / rel
    if path.is_symlink():
        if GENERATED in os.readlink(path):
            return path
    elif not path.exists():
        return path
    elif path.is_file():
        data = path.read_bytes()
        if data.startswith(STEP_MARK.encode()) or _read_record(folder / GENERATED).get(rel) == _sha(data):
            return path
    raise ClusterSmithError([Problem(rel, f"is yours (edited since clustersmith wrote it, or written by you), which "
                                          f"{step} would replace; expected a file clustersmith wrote. Move it aside "
                                          f"(e.g. to {Path(rel).stem}.mine{Path(rel).suffix}) and run again, then "
                                          "compare the two")],
                            str(path), "will not replace your file")
