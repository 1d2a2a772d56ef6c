"""The guest's root file system: ``debootstrap --variant=minbase`` plus the lab's boot-time setup.

Host keys are removed (each guest makes its own at boot), services the lab does not want at boot
are disabled, and documentation, apt caches and build-time data are pruned to keep the initramfs
small.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from stacks.lab.errors import LabError
from stacks.lab.progress import Progress, ProgressEvent

# What the lab itself needs in every guest, whatever the plan adds.
BASE_PACKAGES = (
    "systemd-sysv",
    "udev",
    "kmod",
    "iproute2",
    "iputils-ping",
    "openssh-server",
    "python3",
    "procps",
)
# Units that cost boot time in a throw-away guest; the roles enable what they need.
DISABLED_UNITS = (
    "multi-user.target.wants/prometheus.service",
    "multi-user.target.wants/prometheus-node-exporter.service",
    "multi-user.target.wants/prometheus-alertmanager.service",
    "default.target.wants/nvmf-autoconnect.service",
    "default.target.wants/nvmefc-boot-connections.service",
    "getty.target.wants/getty@tty1.service",
    "multi-user.target.wants/e2scrub_reap.service",
    "timers.target.wants/apt-daily-upgrade.timer",
    "timers.target.wants/apt-daily.timer",
    "timers.target.wants/dpkg-db-backup.timer",
    "timers.target.wants/e2scrub_all.timer",
    "timers.target.wants/fstrim.timer",
    # the shared_fs role starts cachefilesd where FS-Cache is planned; the external-NFS lab fixture starts nfsd
    "multi-user.target.wants/cachefilesd.service",
    "multi-user.target.wants/nfs-server.service",
)
# First-boot work a throw-away guest never needs: Debian's packages ship hwdb.bin and ld.so.cache
# already, but /etc/.updated is missing, so these would rebuild them (minutes under TCG).
MASKED_UNITS = (
    "systemd-hwdb-update.service",
    "ldconfig.service",
    "systemd-journal-catalog-update.service",
    "systemd-update-done.service",
)
PRUNED = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/cache/apt",
    "var/lib/apt/lists",
    "var/cache/debconf/templates.dat-old",
    # 210 MB of per-zone source data; Prometheus' UI loads moment-timezone-with-data.min.js only.
    "usr/share/javascript/moment-timezone/data",
)
GUEST_FILES = resources.files("stacks.lab") / "guest"


def guest_file(name: str) -> bytes:
    return (GUEST_FILES / name).read_bytes()


def guest_files_digest_input() -> bytes:
    """Every file the image build copies in, concatenated in name order (part of the cache key)."""
    names = sorted(p.name for p in GUEST_FILES.iterdir() if p.is_file())
    return b"".join(name.encode() + b"\0" + guest_file(name) for name in names)


def packages(plan_packages: Iterable[str]) -> list[str]:
    """The plan's packages plus the lab's own, sorted and without duplicates."""
    return sorted(set(BASE_PACKAGES) | set(plan_packages))


def debootstrap_argv(suite: str, pkgs: list[str], target: Path, mirror: str) -> list[str]:
    return [
        "debootstrap",
        "--variant=minbase",
        f"--include={','.join(pkgs)}",
        suite,
        str(target),
        mirror,
    ]


def bootstrap(suite: str, pkgs: list[str], target: Path, mirror: str, progress: Progress,
              keep_log: Path | None = None) -> None:
    """Run debootstrap, relaying its ``I:`` lines as progress. On failure its own log (where dpkg's errors are) is
    copied to ``keep_log``, since the build folder that holds it is removed, and its tail is in the error."""
    if shutil.which("debootstrap") is None:
        raise LabError("debootstrap is not installed (apt-get install debootstrap)")
    argv = debootstrap_argv(suite, pkgs, target, mirror)
    log_lines: list[str] = []
    # its own session, so an interrupt can end debootstrap and every dpkg it started at once
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            log_lines.append(line)
            if line.startswith("I: "):
                progress(ProgressEvent("image", "debootstrap: " + line[3:].strip()))
        proc.wait()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        proc.stdout.close()
    if proc.returncode != 0:
        raise LabError(f"debootstrap failed ({proc.returncode}) from {mirror}:\n"
                       + failure_log(target, "".join(log_lines[-20:]), keep_log))


def failure_log(target: Path, output_tail: str, keep_log: Path | None) -> str:
    """What a failed debootstrap left: its output's tail, then the tail of ``debootstrap/debootstrap.log`` (dpkg's
    configure errors land only there), copied whole to ``keep_log`` when given."""
    log = target / "debootstrap" / "debootstrap.log"
    if not log.is_file():
        return output_tail
    text = log.read_text(encoding="utf-8", errors="replace")
    kept = ""
    if keep_log is not None:
        keep_log.parent.mkdir(parents=True, exist_ok=True)
        keep_log.write_text(text, encoding="utf-8")
        kept = f"\n(the whole log is kept in {keep_log})"
    return output_tail + f"\n--- {log.name}, last lines ---\n" + "".join(text.splitlines(keepends=True)[-20:]) + kept


def customize(root: Path) -> None:
    """Install the lab's boot-time setup, make /init start systemd, prune what a guest never reads."""
    sbin = root / "usr/local/sbin/clustersmith-lab-init"
    sbin.parent.mkdir(parents=True, exist_ok=True)
    sbin.write_bytes(guest_file("clustersmith-lab-init"))
    sbin.chmod(0o755)
    unit = root / "etc/systemd/system/clustersmith-lab-init.service"
    unit.write_bytes(guest_file("clustersmith-lab-init.service"))
    wants = root / "etc/systemd/system/sysinit.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / "clustersmith-lab-init.service"
    link.unlink(missing_ok=True)
    link.symlink_to("/etc/systemd/system/clustersmith-lab-init.service")
    (root / "etc/modules-load.d/clustersmith-lab.conf").write_bytes(guest_file("modules-load.conf"))
    for stdlib in sorted((root / "usr/lib").glob("python3.*/zipimport.py")):
        # Ansible imports each task's module_utils from a zip; keep their bytecode (clustersmith_lab_pycache.py)
        site = root / "usr/local/lib" / stdlib.parent.name / "dist-packages"
        site.mkdir(parents=True, exist_ok=True)
        for name in ("clustersmith_lab_pycache.py", "clustersmith-lab-pycache.pth"):
            (site / name).write_bytes(guest_file(name))
    (root / "etc/ssh/sshd_config.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/ssh/sshd_config.d/lab.conf").write_bytes(guest_file("sshd-lab.conf"))
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    for rel in DISABLED_UNITS:
        (root / "etc/systemd/system" / rel).unlink(missing_ok=True)
    for name in MASKED_UNITS:
        masked = root / "etc/systemd/system" / name
        masked.unlink(missing_ok=True)
        masked.symlink_to("/dev/null")
    for rel in PRUNED:
        path = root / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
    (root / "var/lib/apt/lists/partial").mkdir(parents=True, exist_ok=True)
    (root / "etc/hostname").write_text("lab\n")
    (root / "etc/fstab").write_text("# the root file system is the initramfs\n")
    machine_id = root / "etc/machine-id"
    machine_id.write_text("")  # systemd makes one per boot
    init = root / "init"
    init.unlink(missing_ok=True)
    init.symlink_to("/lib/systemd/systemd")
