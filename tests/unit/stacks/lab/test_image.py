"""The image cache key and the completeness rule of a cache entry."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from blueprints.lab_plan import LabImage
from blueprints.planner.lab import lab_kernel
from blueprints.spec import LabTarget
from stacks.lab import image, rootfs
from stacks.lab.kernel import KernelPackage

KERNEL = KernelPackage(name="linux-image-6.1.0-57-amd64", version="6.1.192-3")
BOOKWORM = lab_kernel(LabTarget(provider="lab"))
BASE = LabImage(suite="bookworm", packages=("fio", "nvme-cli"), kernel_modules=("rdma_rxe", "nvmet-rdma"),
                kernel=BOOKWORM)


def key(img: LabImage, kernel: KernelPackage = KERNEL) -> str:
    return image.inputs_for(img, kernel).key()


def test_key_is_stable_and_ignores_order_and_spelling() -> None:
    same = LabImage(suite="bookworm", packages=("nvme-cli", "fio", "fio"), kernel_modules=("nvmet_rdma", "rdma_rxe"),
                    kernel=BOOKWORM)
    assert key(BASE) == key(same)


@pytest.mark.parametrize(
    "changed",
    [
        BASE.model_copy(update={"suite": "trixie"}),
        BASE.model_copy(update={"packages": ("fio", "nvme-cli", "lvm2")}),
        BASE.model_copy(update={"kernel_modules": ("rdma_rxe",)}),
        BASE.model_copy(update={"kernel": lab_kernel(LabTarget(provider="lab", kernel="bookworm-backports"))}),
    ],
)
def test_key_changes_with_each_input(changed: LabImage) -> None:
    assert key(changed) != key(BASE)


def test_key_changes_with_the_kernel_and_the_build_version(monkeypatch: pytest.MonkeyPatch) -> None:
    assert key(BASE, KernelPackage(name=KERNEL.name, version="6.1.192-4")) != key(BASE)
    before = key(BASE)
    monkeypatch.setattr(image, "BUILD_VERSION", image.BUILD_VERSION + 1)
    assert key(BASE) != before


def test_lab_packages_are_always_in(monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = image.inputs_for(BASE, KERNEL)
    assert {"openssh-server", "systemd-sysv", "iproute2"} <= set(inputs.packages)
    assert {"virtio_net", "virtio_blk"} <= set(inputs.kernel_modules)


def test_cache_root_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CLUSTERSMITH_LAB_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert image.cache_root() == tmp_path / "clustersmith" / "lab"


def test_an_entry_without_manifest_is_not_an_image(tmp_path: Path) -> None:
    (tmp_path / "vmlinuz").write_bytes(b"k")
    (tmp_path / "initrd.gz").write_bytes(b"i")
    assert image.load(tmp_path) is None
    built = image.BuiltImage(
        inputs=image.inputs_for(BASE, KERNEL), directory=Path("/elsewhere"), kernel_release="6.1.0-57-amd64",
        modules=(), build_seconds=1.0,
    )  # fmt: skip
    (tmp_path / image.MANIFEST).write_text(built.model_dump_json())
    loaded = image.load(tmp_path)
    assert loaded is not None and loaded.directory == tmp_path
    (tmp_path / "initrd.gz").unlink()
    assert image.load(tmp_path) is None


def test_a_failed_debootstrap_keeps_its_log_outside_the_build_folder(tmp_path: Path) -> None:
    # debootstrap writes dpkg's configure errors only to <target>/debootstrap/debootstrap.log (the first Ceph
    # image build failed there on python3-bcrypt); the build folder is removed after a failure, so the log is
    # copied out and its tail is in the error
    target = tmp_path / ".build-key-x" / "root"
    (target / "debootstrap").mkdir(parents=True)
    lines = [f"line {i}\n" for i in range(30)] + ["dpkg: error processing package python3-bcrypt (--configure)\n"]
    (target / "debootstrap" / "debootstrap.log").write_text("".join(lines))
    kept = tmp_path / "key.debootstrap-failed.log"
    message = rootfs.failure_log(target, "W: Failure while configuring required packages.\n", kept)
    assert kept.read_text() == "".join(lines)
    assert "python3-bcrypt" in message and "Failure while configuring" in message
    assert str(kept) in message
    assert "line 5\n" not in message  # only the tail


def test_a_failed_debootstrap_without_its_log_reports_its_output(tmp_path: Path) -> None:
    assert rootfs.failure_log(tmp_path, "E: no mirror\n", tmp_path / "kept.log") == "E: no mirror\n"
    assert not (tmp_path / "kept.log").exists()


def test_mount_points_are_read_from_mountinfo_deepest_first() -> None:
    """Two lines of a real /proc/self/mountinfo (this machine, a debootstrap target's /proc), plus one with a space,
    which mountinfo writes as \\040."""
    info = ("25 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
            "412 25 0:63 / /w/.build-1/root/proc rw,relatime shared:233 - proc proc rw\n"
            "413 412 0:64 / /w/.build-1/root/proc/a\\040b rw - tmpfs tmpfs rw\n"
            "414 25 0:65 / /w/.build-10 rw - tmpfs tmpfs rw\n")
    assert image.mounts_below(Path("/w/.build-1"), info) == [Path("/w/.build-1/root/proc/a b"),
                                                             Path("/w/.build-1/root/proc")]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_removing_a_build_unmounts_first_and_never_empties_what_was_bound_into_it(tmp_path: Path) -> None:
    """A killed debootstrap can leave the machine's /dev bound into its target: removing the build folder must not
    delete what that bind mount shows. Here a folder with a file stands for /dev, bound in for real."""
    machine_dev = tmp_path / "machine-dev"
    machine_dev.mkdir()
    (machine_dev / "null").write_text("keep me")
    work = tmp_path / ".build-x"
    (work / "root" / "dev").mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(machine_dev), str(work / "root" / "dev")], check=True)
    try:
        image.remove_build(work)
    finally:
        subprocess.run(["umount", "--lazy", str(work / "root" / "dev")], capture_output=True, check=False)
    assert not work.exists()
    assert (machine_dev / "null").read_text() == "keep me"
