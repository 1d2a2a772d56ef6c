"""The guest kernel: Debian's own ``linux-image-*-amd64`` package, unpacked with ``dpkg -x``.

Only the modules the plan names (plus what they depend on, hard or soft) are copied into the image;
``depmod -b`` then indexes that subset so ``modprobe`` works inside the guest.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from stacks.lab.errors import LabError

META_PACKAGE = "linux-image-amd64"
# Modules every lab guest needs whatever the plan says: its NICs, disks, entropy and configfs.
BOOT_MODULES = ("virtio_pci", "virtio_net", "virtio_blk", "virtio_rng", "configfs", "crc32c_generic")


@dataclass(frozen=True)
class KernelPackage:
    name: str
    version: str


@dataclass(frozen=True)
class KernelTree:
    """An unpacked kernel package: the boot image and its full module tree."""

    release: str
    vmlinuz: Path
    modules_dir: Path


def module_name(path_or_name: str) -> str:
    """``kernel/drivers/nvme/target/nvmet-rdma.ko`` and ``nvmet-rdma`` both name ``nvmet_rdma``."""
    base = path_or_name.rsplit("/", 1)[-1]
    base = re.sub(r"\.ko(\.(xz|zst|gz))?$", "", base)
    return base.replace("-", "_")


def parse_depends(apt_cache_depends: str) -> str:
    """The versioned image package that ``linux-image-amd64`` points at, from ``apt-cache depends``."""
    for line in apt_cache_depends.splitlines():
        match = re.match(r"\s*\|?Depends:\s*(linux-image-\S+-amd64)\s*$", line)
        if match:
            return match.group(1)
    raise LabError(
        f"cannot find the kernel package {META_PACKAGE} depends on; is the apt index current? (run `apt-get update`)"
    )


def parse_candidate(apt_cache_policy: str) -> str:
    match = re.search(r"^\s*Candidate:\s*(\S+)", apt_cache_policy, re.MULTILINE)
    if not match or match.group(1) == "(none)":
        raise LabError("apt has no candidate version for the kernel package (run `apt-get update`)")
    return match.group(1)


def _run(argv: list[str], cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as err:
        raise LabError(f"{argv[0]} is not installed: {err}") from err
    if done.returncode != 0:
        raise LabError(f"`{' '.join(argv)}` failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout


def resolve_package() -> KernelPackage:
    """The kernel apt would install today, e.g. ``linux-image-6.1.0-57-amd64`` ``6.1.192-3``."""
    name = parse_depends(_run(["apt-cache", "depends", META_PACKAGE]))
    return KernelPackage(name=name, version=parse_candidate(_run(["apt-cache", "policy", name])))


def fetch(package: KernelPackage, workdir: Path) -> KernelTree:
    """Download the package with ``apt-get download`` and unpack it with ``dpkg -x`` under workdir."""
    workdir.mkdir(parents=True, exist_ok=True)
    workdir.chmod(0o755)  # apt's sandbox user must be able to write the .deb here
    _run(["apt-get", "download", f"{package.name}={package.version}"], cwd=workdir)
    debs = sorted(workdir.glob(f"{package.name}_*.deb"))
    if not debs:
        raise LabError(f"apt-get download left no {package.name} .deb in {workdir}")
    tree = workdir / "x"
    _run(["dpkg", "-x", str(debs[0]), str(tree)])
    debs[0].unlink()
    vmlinuz = sorted((tree / "boot").glob("vmlinuz-*"))
    if not vmlinuz:
        raise LabError(f"{debs[0].name} holds no /boot/vmlinuz-*")
    release = vmlinuz[0].name.removeprefix("vmlinuz-")
    modules = tree / "lib" / "modules" / release
    if not modules.is_dir():
        modules = tree / "usr" / "lib" / "modules" / release
    return KernelTree(release=release, vmlinuz=vmlinuz[0], modules_dir=modules)


def parse_modules_dep(text: str) -> dict[str, tuple[str, list[str]]]:
    """``modules.dep`` as ``name -> (relative path, [dependency names])``."""
    table: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        path, deps = line.split(":", 1)
        table[module_name(path)] = (path.strip(), [module_name(d) for d in deps.split()])
    return table


def parse_softdeps(text: str) -> dict[str, list[str]]:
    """``modules.softdep`` as ``name -> [names loaded before or after it]``."""
    table: dict[str, list[str]] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) < 3 or words[0] != "softdep":
            continue
        table[module_name(words[1])] = [module_name(w) for w in words[2:] if w not in ("pre:", "post:")]
    return table


def closure(wanted: list[str], deps: dict[str, tuple[str, list[str]]], softdeps: dict[str, list[str]]) -> list[str]:
    """Every module needed to load ``wanted``, as relative paths, sorted; unknown names are an error.

    Soft dependencies are followed when the kernel ships them, and skipped when it does not
    (they are often built in).
    """
    missing = [m for m in wanted if module_name(m) not in deps]
    if missing:
        raise LabError(f"the kernel package has no module(s) {', '.join(missing)}")
    seen: set[str] = set()
    todo = [module_name(m) for m in wanted]
    while todo:
        name = todo.pop()
        if name in seen or name not in deps:
            continue
        seen.add(name)
        todo.extend(deps[name][1])
        todo.extend(softdeps.get(name, []))
    return sorted(deps[name][0] for name in seen)


def install_modules(tree: KernelTree, wanted: list[str], rootfs: Path) -> list[str]:
    """Copy the closure of ``wanted`` into ``rootfs`` and index it there; returns the copied paths."""
    base = tree.modules_dir.parents[2]
    _run(["depmod", "-b", str(base), tree.release])
    deps = parse_modules_dep((tree.modules_dir / "modules.dep").read_text())
    softdep_file = tree.modules_dir / "modules.softdep"
    softdeps = parse_softdeps(softdep_file.read_text()) if softdep_file.exists() else {}
    paths = closure([*BOOT_MODULES, *wanted], deps, softdeps)
    target = rootfs / "usr" / "lib" / "modules" / tree.release
    for rel in paths:
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree.modules_dir / rel, target / rel)
    for name in ("modules.builtin", "modules.builtin.modinfo", "modules.order"):
        if (tree.modules_dir / name).exists():
            shutil.copy2(tree.modules_dir / name, target / name)
    _run(["depmod", "-b", str(rootfs), tree.release])
    return paths
