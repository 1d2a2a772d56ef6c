"""Kernel package resolution and module selection, on recorded tool output."""

from __future__ import annotations

import pytest

from stacks.lab.errors import LabError
from stacks.lab.kernel import (
    ModuleIndex,
    closure,
    module_name,
    parse_aliases,
    parse_builtin,
    parse_builtin_aliases,
    parse_candidate,
    parse_depends,
    parse_modules_dep,
    parse_softdeps,
)

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
    index = ModuleIndex(deps=parse_modules_dep(MODULES_DEP), softdeps=parse_softdeps(SOFTDEP))
    paths = closure(["rdma_rxe", "dm-cache"], index)
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
        closure(["null_blk", "no_such_mod"], ModuleIndex(deps=parse_modules_dep(MODULES_DEP)))


# Lines of linux-image-6.12.95+deb12-amd64 6.12.95-1~bpo12+1 (bookworm-backports), from the .deb apt-get download
# fetched, unpacked with dpkg -x and indexed with depmod -b (2026-12-01): lib/modules/6.12.95+deb12-amd64/.
DEP_6_12 = """kernel/fs/ext4/ext4.ko.xz: kernel/fs/jbd2/jbd2.ko.xz kernel/fs/mbcache.ko.xz kernel/lib/crc16.ko.xz
kernel/fs/jbd2/jbd2.ko.xz:
kernel/fs/mbcache.ko.xz:
kernel/lib/crc16.ko.xz:
kernel/crypto/crc32c_generic.ko.xz:
kernel/arch/x86/crypto/crc32c-intel.ko.xz:
kernel/drivers/nvme/common/nvme-auth.ko.xz:
kernel/drivers/nvme/common/nvme-keyring.ko.xz:
kernel/drivers/nvme/host/nvme-core.ko.xz: kernel/drivers/nvme/common/nvme-auth.ko.xz
kernel/fs/configfs/configfs.ko.xz:
kernel/drivers/nvme/target/nvmet.ko.xz: kernel/drivers/nvme/common/nvme-keyring.ko.xz \
kernel/drivers/nvme/host/nvme-core.ko.xz kernel/drivers/nvme/common/nvme-auth.ko.xz kernel/fs/configfs/configfs.ko.xz
"""  # a backslash-newline in the literal joins the nvmet line, as in the file
BUILTIN_6_12 = """kernel/lib/crc32.ko
kernel/drivers/virtio/virtio.ko
kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci.ko
"""
SOFTDEP_6_12 = """softdep ext4 pre: crypto-crc32c
softdep jbd2 pre: crypto-crc32c
"""
ALIAS_6_12 = """alias crypto-crc32c crc32c_intel
alias crc32c crc32c_intel
alias crypto-crc32c crc32c_generic
alias crc32c crc32c_generic
"""
INDEX_6_12 = ModuleIndex(deps=parse_modules_dep(DEP_6_12), softdeps=parse_softdeps(SOFTDEP_6_12),
                         builtin=parse_builtin(BUILTIN_6_12), aliases=parse_aliases(ALIAS_6_12))


def test_a_built_in_module_needs_nothing_copied_and_is_no_error() -> None:
    """6.12 builds virtio_pci in (6.1 shipped it as a module): asking for it copies nothing."""
    assert closure(["virtio_pci", "configfs"], INDEX_6_12) == ["kernel/fs/configfs/configfs.ko.xz"]


def test_a_soft_dependency_on_an_alias_copies_every_module_behind_it() -> None:
    paths = closure(["ext4"], INDEX_6_12)
    assert "kernel/crypto/crc32c_generic.ko.xz" in paths and "kernel/arch/x86/crypto/crc32c-intel.ko.xz" in paths
    assert "kernel/fs/jbd2/jbd2.ko.xz" in paths


def test_nvmet_on_6_12_brings_the_dh_chap_modules() -> None:
    paths = closure(["nvmet"], INDEX_6_12)
    assert {"kernel/drivers/nvme/common/nvme-auth.ko.xz", "kernel/drivers/nvme/common/nvme-keyring.ko.xz"} <= set(paths)


def test_a_soft_dependency_the_kernel_lacks_is_an_error_naming_both() -> None:
    index = ModuleIndex(deps=parse_modules_dep(DEP_6_12), softdeps=parse_softdeps("softdep ext4 pre: crypto-crc32c\n"))
    with pytest.raises(LabError, match="ext4 has soft dependency crypto_crc32c"):
        closure(["ext4"], index)


def test_a_module_neither_shipped_nor_built_in_is_an_error() -> None:
    with pytest.raises(LabError, match=r"virtio_rng.*neither as a module file nor built in"):
        closure(["virtio_pci", "virtio_rng"], INDEX_6_12)


# Debian's linux-image-6.1.0-57-amd64 (6.1.192-3), after `depmod -b`: the lines of modules.dep for nfsd and what it
# needs (nfsd's own line folded here), nfsd's line of modules.softdep, and md5's records of
# modules.builtin.modinfo (NUL-separated), as the package holds them.
DEP_6_1_NFSD = """kernel/fs/nfsd/nfsd.ko: kernel/net/sunrpc/auth_gss/auth_rpcgss.ko kernel/fs/nfs_common/nfs_acl.ko \
kernel/fs/lockd/lockd.ko kernel/fs/nfs_common/grace.ko kernel/net/sunrpc/sunrpc.ko
kernel/net/sunrpc/auth_gss/auth_rpcgss.ko: kernel/net/sunrpc/sunrpc.ko
kernel/fs/nfs_common/nfs_acl.ko: kernel/net/sunrpc/sunrpc.ko
kernel/fs/lockd/lockd.ko: kernel/fs/nfs_common/grace.ko kernel/net/sunrpc/sunrpc.ko
kernel/fs/nfs_common/grace.ko:
kernel/net/sunrpc/sunrpc.ko:
"""
SOFTDEP_6_1_NFSD = "softdep nfsd pre: crypto-md5\n"
MODINFO_6_1_MD5 = (b"md5.alias=crypto-md5\0md5.alias=md5\0md5.description=MD5 Message Digest Algorithm\0"
                   b"md5.license=GPL\0md5.file=crypto/md5\0")


def test_a_soft_dependency_on_a_built_in_alias_needs_nothing_copied() -> None:
    """6.1 builds md5 in; nfsd's soft dependency names it by its alias crypto-md5, found only in
    modules.builtin.modinfo (the lab image build failed on it before)."""
    assert parse_builtin_aliases(MODINFO_6_1_MD5) == {"crypto_md5", "md5"}
    index = ModuleIndex(deps=parse_modules_dep(DEP_6_1_NFSD), softdeps=parse_softdeps(SOFTDEP_6_1_NFSD),
                        builtin={"md5"}, builtin_aliases=parse_builtin_aliases(MODINFO_6_1_MD5))
    assert closure(["nfsd"], index) == sorted(line.split(":")[0] for line in DEP_6_1_NFSD.splitlines())
    without = ModuleIndex(deps=parse_modules_dep(DEP_6_1_NFSD), softdeps=parse_softdeps(SOFTDEP_6_1_NFSD))
    with pytest.raises(LabError, match="nfsd has soft dependency crypto_md5"):
        closure(["nfsd"], without)
