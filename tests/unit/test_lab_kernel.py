"""Kernel package resolution and module selection, on recorded tool output."""

from __future__ import annotations

import pytest

from stacks.lab.errors import LabError
from stacks.lab.kernel import closure, module_name, parse_candidate, parse_depends, parse_modules_dep, parse_softdeps

APT_CACHE_DEPENDS = """linux-image-amd64
  Depends: linux-image-6.1.0-57-amd64
"""
APT_CACHE_POLICY = """linux-image-6.1.0-57-amd64:
  Installed: (none)
  Candidate: 6.1.192-3
  Version table:
     6.1.192-3 500
"""
IB = "kernel/drivers/infiniband"
MODULES_DEP = f"""{IB}/core/ib_core.ko:
{IB}/sw/rxe/rdma_rxe.ko: {IB}/core/ib_uverbs.ko {IB}/core/ib_core.ko
kernel/drivers/infiniband/core/ib_uverbs.ko: kernel/drivers/infiniband/core/ib_core.ko
kernel/drivers/md/dm-cache.ko: kernel/drivers/md/dm-mod.ko
kernel/drivers/md/dm-cache-smq.ko: kernel/drivers/md/dm-cache.ko kernel/drivers/md/dm-mod.ko
kernel/drivers/md/dm-mod.ko:
kernel/drivers/block/null_blk/null_blk.ko:
"""
SOFTDEP = """# Soft dependencies extracted from modules themselves.
softdep dm_cache post: dm_cache_smq
softdep libcrc32c pre: crc32c
"""


def test_resolves_the_versioned_package_and_its_candidate() -> None:
    assert parse_depends(APT_CACHE_DEPENDS) == "linux-image-6.1.0-57-amd64"
    assert parse_candidate(APT_CACHE_POLICY) == "6.1.192-3"


def test_empty_apt_index_says_what_to_do() -> None:
    with pytest.raises(LabError, match="apt-get update"):
        parse_depends("linux-image-amd64\n")
    with pytest.raises(LabError, match="apt-get update"):
        parse_candidate("x:\n  Candidate: (none)\n")


@pytest.mark.parametrize(
    ("raw", "name"),
    [("kernel/drivers/md/dm-cache.ko", "dm_cache"), ("nvmet-rdma", "nvmet_rdma"), ("x/y/z.ko.xz", "z")],
)
def test_module_names_ignore_dashes_paths_and_compression(raw: str, name: str) -> None:
    assert module_name(raw) == name


def test_closure_follows_hard_and_soft_dependencies() -> None:
    paths = closure(["rdma_rxe", "dm-cache"], parse_modules_dep(MODULES_DEP), parse_softdeps(SOFTDEP))
    assert paths == sorted(
        [
            "kernel/drivers/infiniband/core/ib_core.ko",
            "kernel/drivers/infiniband/core/ib_uverbs.ko",
            "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko",
            "kernel/drivers/md/dm-cache.ko",
            "kernel/drivers/md/dm-cache-smq.ko",
            "kernel/drivers/md/dm-mod.ko",
        ]
    )


def test_unknown_module_is_named_in_the_error() -> None:
    with pytest.raises(LabError, match="no_such_mod"):
        closure(["null_blk", "no_such_mod"], parse_modules_dep(MODULES_DEP), {})
