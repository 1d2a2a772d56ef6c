from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

from stacks.lab.initramfs import file_list, pack
from tests.conftest import require_tool


def make_tree(root: Path) -> None:
    (root / "usr/lib/systemd").mkdir(parents=True)
    (root / "usr/lib/systemd/systemd").write_text("#!/bin/sh\n")
    (root / "lib").symlink_to("usr/lib")  # merged /usr: a link to a folder
    (root / "init").symlink_to("/lib/systemd/systemd")
    (root / "etc").mkdir()
    (root / "etc/hostname").write_text("lab\n")


def test_file_list_keeps_links_to_folders_and_puts_parents_first(tmp_path: Path) -> None:
    make_tree(tmp_path)
    names = file_list(tmp_path).decode().split("\0")[:-1]
    assert "lib" in names and "init" in names
    assert not any(n.startswith("lib/") for n in names), "must not descend into a folder link"
    assert names.index("usr") < names.index("usr/lib") < names.index("usr/lib/systemd/systemd")


def test_pack_writes_a_gzip_newc_archive(tmp_path: Path) -> None:
    cpio = require_tool("cpio")  # pack's own tool, and the one that lists the archive
    root = tmp_path / "root"
    root.mkdir()
    make_tree(root)
    target = tmp_path / "initrd.gz"
    pack(root, target)
    listing = subprocess.run(
        [cpio, "-t", "--quiet"], input=gzip.decompress(target.read_bytes()), capture_output=True, check=True
    ).stdout.decode()
    assert {"init", "lib", "usr/lib/systemd/systemd", "etc/hostname"} <= set(listing.split())
