"""The shared guest image: kernel + initramfs, cached under the user's cache dir by its inputs.

The cache key hashes everything the image is built from (suite, packages, modules, the kernel's apt suite and
exact package version, the guest files and ``BUILD_VERSION``), so a change to any of them
builds a new image and nothing else does. A build happens in a temp dir that is renamed into
place only once complete, under a lock, so an interrupted build never looks finished.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from blueprints.lab_plan import LabImage
from stacks.lab import initramfs, kernel, rootfs
from stacks.lab.apt_index import MACHINE_INDEX, AptIndex, private_index
from stacks.lab.errors import LabError
from stacks.lab.mirror import find_mirror
from stacks.lab.progress import Progress, ProgressEvent, log_progress

BUILD_VERSION = 6  # bump when the build steps change in a way the inputs do not show
MANIFEST = "manifest.json"


class ImageInputs(BaseModel):
    """Everything an image is built from; its hash names the cache entry."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    build_version: int
    suite: str
    packages: tuple[str, ...]
    kernel_modules: tuple[str, ...]
    kernel_suite: str
    kernel_package: str
    kernel_version: str
    guest_files_sha256: str

    def key(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


class BuiltImage(BaseModel):
    """A complete cache entry: what the VMs boot."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    inputs: ImageInputs
    directory: Path
    kernel_release: str
    modules: tuple[str, ...]
    build_seconds: float

    @property
    def vmlinuz(self) -> Path:
        return self.directory / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.directory / "initrd.gz"


def cache_root() -> Path:
    """``$CLUSTERSMITH_LAB_CACHE``, else ``$XDG_CACHE_HOME/clustersmith/lab``, else ``~/.cache/...``."""
    explicit = os.environ.get("CLUSTERSMITH_LAB_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "clustersmith" / "lab"


def kernel_index(image: LabImage, root: Path) -> AptIndex:
    """The apt index the image's kernel comes from: the machine's own, or a private one under ``root``."""
    chosen = image.kernel.value
    if chosen.machine_index:
        return MACHINE_INDEX
    return private_index(root / "apt" / chosen.apt_suite, find_mirror(image.suite), chosen.apt_suite)


def inputs_for(image: LabImage, package: kernel.KernelPackage) -> ImageInputs:
    return ImageInputs(
        build_version=BUILD_VERSION,
        suite=image.suite,
        packages=tuple(rootfs.packages(image.packages)),
        kernel_modules=tuple(sorted({kernel.module_name(m) for m in (*kernel.BOOT_MODULES, *image.kernel_modules)})),
        kernel_suite=image.kernel.value.apt_suite,
        kernel_package=package.name,
        kernel_version=package.version,
        guest_files_sha256=hashlib.sha256(rootfs.guest_files_digest_input()).hexdigest(),
    )


@contextmanager
def _locked(root: Path, progress: Progress) -> Iterator[None]:
    """One image build at a time per cache (two debootstraps on two cores gain nothing)."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(ProgressEvent("image", f"waiting for another image build in {root}"))
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def load(directory: Path) -> BuiltImage | None:
    """The cache entry in ``directory`` if it is complete, else None."""
    manifest = directory / MANIFEST
    if not manifest.is_file():
        return None
    built = BuiltImage.model_validate_json(manifest.read_text()).model_copy(update={"directory": directory})
    if not (built.vmlinuz.is_file() and built.initrd.is_file()):
        return None
    return built


def ensure(image: LabImage, progress: Progress = log_progress, root: Path | None = None) -> BuiltImage:
    """The cached image for ``image``, built first if missing."""
    root = root or cache_root()
    index = kernel_index(image, root)
    package = kernel.resolve_package(index)
    inputs = inputs_for(image, package)
    final = root / inputs.key()
    cached = load(final)
    if cached:
        progress(ProgressEvent("image", f"cached {final}", done=True))
        return cached
    with _locked(root, progress):
        cached = load(final)  # another process may have built it while we waited
        if cached:
            progress(ProgressEvent("image", f"cached {final}", done=True))
            return cached
        for stale in root.glob(".build-*"):  # left by a killed build; we hold the lock
            remove_build(stale)
        work = Path(tempfile.mkdtemp(prefix=f".build-{inputs.key()}-", dir=root))
        try:
            built = _build(inputs, package, index, image, work, progress)
            if final.exists():
                shutil.rmtree(final)
            os.rename(work / "out", final)
            progress(ProgressEvent("image", f"built {final} in {built.build_seconds:.0f} s", done=True))
            return built.model_copy(update={"directory": final})
        finally:
            remove_build(work)


def mounts_below(folder: Path, mountinfo: str) -> list[Path]:
    """The mount points at or under ``folder`` in ``/proc/self/mountinfo`` text (its 5th field, octal escapes
    undone), deepest first."""
    base = os.path.realpath(folder)
    found = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
        if point == base or point.startswith(base + os.sep):
            found.append(Path(point))
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def remove_build(work: Path) -> None:
    """Remove a build folder, after unmounting what a killed debootstrap left mounted in it (its /proc; where mknod
    is refused, a bind mount of the machine's own /dev, which a plain rmtree would empty). A mount that stays is an
    error, and nothing is removed."""
    for point in mounts_below(work, Path("/proc/self/mountinfo").read_text()):
        subprocess.run(["umount", "--lazy", str(point)], capture_output=True, check=False)
    left = mounts_below(work, Path("/proc/self/mountinfo").read_text())
    if left:
        raise LabError(f"{work} still has {', '.join(map(str, left))} mounted: unmount it (umount -l), then run "
                       "again; nothing was removed")
    shutil.rmtree(work, ignore_errors=True)


def _build(
    inputs: ImageInputs, package: kernel.KernelPackage, index: AptIndex, image: LabImage, work: Path,
    progress: Progress,
) -> BuiltImage:
    start = time.monotonic()
    out = work / "out"
    out.mkdir()
    progress(ProgressEvent("image", f"fetching {package.name} {package.version} ({inputs.kernel_suite})"))
    tree = kernel.fetch(package, work / "kernel", index)
    mirror = find_mirror(image.suite)
    root = work / "root"
    progress(ProgressEvent("image", f"debootstrap {image.suite} from {mirror}"))
    rootfs.bootstrap(image.suite, list(inputs.packages), root, mirror, progress,
                     keep_log=work.parent / f"{inputs.key()}.debootstrap-failed.log")
    progress(ProgressEvent("image", f"installing kernel modules for {tree.release}"))
    modules = kernel.install_modules(tree, list(inputs.kernel_modules), root)
    rootfs.customize(root)
    progress(ProgressEvent("image", "packing initramfs"))
    initramfs.pack(root, out / "initrd.gz")
    shutil.copy2(tree.vmlinuz, out / "vmlinuz")
    built = BuiltImage(
        inputs=inputs,
        directory=out,
        kernel_release=tree.release,
        modules=tuple(modules),
        build_seconds=round(time.monotonic() - start, 1),
    )
    (out / MANIFEST).write_text(built.model_dump_json(indent=2))
    shutil.rmtree(root)
    shutil.rmtree(work / "kernel")
    if not built.initrd.stat().st_size:
        raise LabError("the packed initramfs is empty")
    return built
