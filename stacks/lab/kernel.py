"""The guest kernel: Debian's own ``linux-image-*-amd64`` package, unpacked with ``dpkg -x``.

Only the modules the plan names (plus what they depend on, hard or soft) are copied into the image;
``depmod -b`` then indexes that subset so ``modprobe`` works inside the guest. A name the kernel builds in
(``modules.builtin``) needs nothing copied; a soft dependency may name an alias (``crypto-crc32c``), resolved
through ``modules.alias``; a name that is none of these is an error, never skipped.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from stacks.lab.apt_index import MACHINE_INDEX, AptIndex, prepare
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


def resolve_package(index: AptIndex = MACHINE_INDEX) -> KernelPackage:
    """The kernel apt would install today from ``index``, e.g. ``linux-image-6.1.0-57-amd64`` ``6.1.192-3``.

    A private index is brought up to date first (``apt-get update`` verifies its InRelease with the system keyring).
    """
    if index.private:
        prepare(index)
        _run(["apt-get", *index.options, "update"])
    name = parse_depends(_run(["apt-cache", *index.options, "depends", META_PACKAGE]))
    return KernelPackage(name=name, version=parse_candidate(_run(["apt-cache", *index.options, "policy", name])))


def fetch(package: KernelPackage, workdir: Path, index: AptIndex = MACHINE_INDEX) -> KernelTree:
    """Download the package with ``apt-get download`` and unpack it with ``dpkg -x`` under workdir."""
    workdir.mkdir(parents=True, exist_ok=True)
    workdir.chmod(0o755)  # apt's sandbox user must be able to write the .deb here
    _run(["apt-get", *index.options, "download", f"{package.name}={package.version}"], cwd=workdir)
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


def parse_builtin(text: str) -> set[str]:
    """``modules.builtin``: the names of what the kernel image holds itself."""
    return {module_name(line.strip()) for line in text.splitlines() if line.strip()}


def parse_builtin_aliases(raw: bytes) -> set[str]:
    """``modules.builtin.modinfo`` (NUL-separated ``module.key=value`` records): the aliases of the modules the kernel
    holds itself, dashes read as underscores. 6.1 builds md5 in, so nfsd's ``softdep pre: crypto-md5`` names it only
    here: depmod writes built-in aliases to the binary modules.builtin.alias.bin alone."""
    aliases: set[str] = set()
    for record in raw.decode(errors="replace").split("\0"):
        module, dot, rest = record.partition(".")
        key, eq, value = rest.partition("=")
        if dot and eq and key == "alias" and module:
            aliases.add(value.replace("-", "_"))
    return aliases


def parse_aliases(text: str) -> dict[str, list[str]]:
    """``modules.alias`` as ``alias -> [module names]`` (dashes read as underscores, as modprobe reads them)."""
    table: dict[str, list[str]] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == "alias":
            table.setdefault(words[1].replace("-", "_"), []).append(module_name(words[2]))
    return table


@dataclass(frozen=True)
class ModuleIndex:
    """What a kernel tree's module files say: dependencies, soft dependencies, built-ins and aliases."""

    deps: dict[str, tuple[str, list[str]]]
    softdeps: dict[str, list[str]] = field(default_factory=dict)
    builtin: set[str] = field(default_factory=set)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    builtin_aliases: set[str] = field(default_factory=set)

    def resolve(self, name: str) -> list[str] | None:
        """The loadable modules ``name`` stands for ([] when built in), or None when the kernel has nothing by it."""
        key = module_name(name)
        if key in self.deps:
            return [key]
        if key in self.builtin:
            return []
        alias = name.replace("-", "_")
        loadable = [t for t in self.aliases.get(alias, []) if t in self.deps]
        if not loadable and alias in self.builtin_aliases:
            return []
        return loadable or None


def closure(wanted: list[str], index: ModuleIndex) -> list[str]:
    """Every module needed to load ``wanted``, as relative paths, sorted; a name the kernel lacks is an error.

    Built-in names need nothing copied. Soft dependencies are followed, by module name or alias (every module an
    alias names is copied, so modprobe can pick); one the kernel has nothing by is an error naming who wants it.
    """
    missing = [m for m in wanted if index.resolve(m) is None]
    if missing:
        raise LabError(f"the kernel package has no module(s) {', '.join(missing)}, neither as a module file nor "
                       "built in (modules.dep, modules.builtin)")
    seen: set[str] = set()
    todo = [name for m in wanted for name in index.resolve(m) or []]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(index.deps[name][1])
        for soft in index.softdeps.get(name, []):
            found = index.resolve(soft)
            if found is None:
                raise LabError(f"module {name} has soft dependency {soft}, which the kernel package has neither as a "
                               "module, an alias nor built in")
            todo.extend(found)
    return sorted(index.deps[name][0] for name in seen)


def read_index(modules_dir: Path) -> ModuleIndex:
    """The module index of an unpacked tree after ``depmod -b`` (softdep, builtin and alias files when present)."""

    def text(name: str) -> str:
        path = modules_dir / name
        return path.read_text() if path.exists() else ""

    modinfo = modules_dir / "modules.builtin.modinfo"
    return ModuleIndex(deps=parse_modules_dep(text("modules.dep")), softdeps=parse_softdeps(text("modules.softdep")),
                       builtin=parse_builtin(text("modules.builtin")), aliases=parse_aliases(text("modules.alias")),
                       builtin_aliases=parse_builtin_aliases(modinfo.read_bytes()) if modinfo.exists() else set())


def install_modules(tree: KernelTree, wanted: list[str], rootfs: Path) -> list[str]:
    """Copy the closure of ``wanted`` into ``rootfs`` and index it there; returns the copied paths."""
    base = tree.modules_dir.parents[2]
    _run(["depmod", "-b", str(base), tree.release])
    paths = closure([*BOOT_MODULES, *wanted], read_index(tree.modules_dir))
    target = rootfs / "usr" / "lib" / "modules" / tree.release
    for rel in paths:
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree.modules_dir / rel, target / rel)
    for name in ("modules.builtin", "modules.builtin.modinfo", "modules.order"):
        if (tree.modules_dir / name).exists():
            shutil.copy2(tree.modules_dir / name, target / name)
    _run(["depmod", "-b", str(rootfs), tree.release])
    return paths
