"""The lab tier: boots real Linux VMs under QEMU.

Missing tools skip the tier with a clear message on a developer's machine; under CI (``CI`` set)
they fail it, since CI must prove the lab. One lab per session, torn down whatever happened:

- ``example_lab``: ``clustersmith build examples/lab.yaml`` then ``clustersmith lab up``, shared by the lab's
  own tests (``lab``: boot, rails, faults; test_lab_e2e, first, leaves the guests as they booted), every role's
  molecule scenario, the storage data path, Ceph, acceptance and the monitoring alerts; ``deployed`` runs the
  generated site.yml on it once; test_lab_teardown, last, stops a VM hard and brings the lab down. Under TCG on
  two cores a boot or a fresh converge costs minutes (the lab's own tests once booted a lab of their own: 5.3 min
  of a CI run), so one lab serves them all, in the order of ``MODULE_ORDER`` (the lab's own tests, the roles,
  then what needs them converged, the teardown).
- test_lab_cleanup boots a one-host lab of its own to interrupt (tests/default_lab.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from blueprints.blueprint import Blueprint, load_blueprint
from stacks.lab import Lab
from tests.conftest import BIN

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/lab.yaml"
# Which kernel the example lab boots: unset, what examples/lab.yaml plans (bookworm, 6.1: decision 0010); set
# (bookworm or bookworm-backports), a copy of the example with that target.kernel, to run the tier on another kernel
# (CLUSTERSMITH_LAB_KERNEL=bookworm-backports make test-lab: 6.12, with DH-CHAP).
LAB_KERNEL_ENV = "CLUSTERSMITH_LAB_KERNEL"
# Lab test modules run in this order: the interrupted one-VM lab, then on the example lab its own tests (the guests
# as they booted), the role scenarios (they converge it role by role), site.yml and what needs the whole lab
# converged, and last its teardown.
MODULE_ORDER = ("test_lab_cleanup", "test_lab_e2e", "test_role_scenarios", "test_storage_path_e2e",
                "test_ceph_lab", "test_external_nfs_lab", "test_accept_lab",
                "test_monitoring_alerts", "test_lab_teardown")

TOOLS = {
    "qemu-system-x86_64": "qemu-system-x86",
    "vde_switch": "vde2",
    "debootstrap": "debootstrap",
    "cpio": "cpio",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "depmod": "kmod",
    "apt-get": "apt",
}
TIMINGS: dict[str, float] = {}
# guests whose kernel panicked during the session (their QEMU exits: every later SSH to them is refused), by name
PANICS: dict[str, str] = {}
# What a bound measured in the lab may exceed its planned value by: TCG guests on a loaded 2-core machine fire
# timers late, and a check that polls over SSH sees a change seconds after it happened.
TCG_MARGIN_S = 20


def require_lab_tools() -> None:
    missing = sorted({pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None})
    problems = [f"missing Debian packages: {' '.join(missing)}"] if missing else []
    if os.geteuid() != 0:
        problems.append("the image build (debootstrap) needs root")
    if not problems:
        return
    message = "lab tier needs QEMU and friends: " + "; ".join(problems) + f" (apt-get install {' '.join(missing)})"
    if os.environ.get("CI"):
        pytest.fail("CI must run the lab tier, but " + message, pytrace=False)
    pytest.skip(message)


@dataclass(frozen=True)
class ExampleLab:
    """The running lab of examples/lab.yaml: its Blueprint, its build folder (``<out>/lab``) and the lab; once
    site.yml ran (``deployed``), how many tasks it changed per host, and which."""

    blueprint: Blueprint
    folder: Path
    lab: Lab
    site_changed: dict[str, int] | None = None
    site_changed_tasks: tuple[str, ...] = ()


def ansible_strategy_env() -> dict[str, str]:
    """Ansible's execution strategy for the lab tier: Mitogen's ``mitogen_linear`` unless
    ``CLUSTERSMITH_LAB_STRATEGY=linear``.

    Under TCG every task of the stock strategy starts a fresh Python in each guest and imports
    ``ansible.module_utils.basic`` (1.7 s of a 2.1 s ``command`` run, measured with ``-X importtime``): about 6 s
    per task over three VMs on two cores. Mitogen keeps one interpreter per host over the same SSH connection:
    0.3-1 s per task after a 10 s start. Same roles, same modules, same order; one scenario (``LINEAR_ROLES`` in
    test_role_scenarios.py) still runs with the stock strategy, as users run the roles."""
    if os.environ.get("CLUSTERSMITH_LAB_STRATEGY", "mitogen") == "linear":
        return {}
    import ansible_mitogen  # only the lab tier needs it

    plugins = Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"
    return {"ANSIBLE_STRATEGY_PLUGINS": str(plugins), "ANSIBLE_STRATEGY": "mitogen_linear"}


def run(argv: list[str | Path], timeout: float, env: dict[str, str] | None = None,
        cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """Run a command as a user would, with Ansible's and molecule's colours off so the output reads in a log,
    and the lab tier's Ansible strategy (``ansible_strategy_env``) unless ``env`` says otherwise."""
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "ANSIBLE_NOCOLOR": "1", "PY_COLORS": "0", **ansible_strategy_env(),
                               "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                               "CLUSTERSMITH_PYTHON": sys.executable, **(env or {})},
                          check=False)


def tail(done: subprocess.CompletedProcess[str], size: int = 6000) -> str:
    return (done.stdout + done.stderr)[-size:]


def example_spec(out: Path) -> Path:
    """examples/lab.yaml, or with ``CLUSTERSMITH_LAB_KERNEL`` set a copy of it with that ``target.kernel``."""
    kernel = os.environ.get(LAB_KERNEL_ENV)
    if not kernel:
        return REPO / EXAMPLE
    spec = yaml.safe_load((REPO / EXAMPLE).read_text())
    spec["target"]["kernel"] = kernel
    copy = out / "lab-spec.yaml"
    copy.write_text(yaml.safe_dump(spec, sort_keys=False))
    return copy


@pytest.fixture(scope="session")
def example_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExampleLab]:
    """`clustersmith build examples/lab.yaml` then `clustersmith lab up`; `lab down` at the end of the session.

    With ``CLUSTERSMITH_EXAMPLE_LAB`` set to the build folder of an example lab already up (``<out>/lab``), the
    session attaches to it and leaves it running, and takes it as converged by site.yml (``deployed``): for
    re-running one lab module while working on it."""
    require_lab_tools()
    if reuse := os.environ.get("CLUSTERSMITH_EXAMPLE_LAB"):
        folder = Path(reuse)
        yield ExampleLab(load_blueprint(folder), folder, Lab.attach(folder))
        return
    out = tmp_path_factory.mktemp("example-lab")
    built = run([sys.executable, "-m", "blueprints", "build", example_spec(out), "-o", out], timeout=300)
    assert built.returncode == 0, tail(built)
    folder = out / "lab"
    started = time.monotonic()
    up = run([sys.executable, "-m", "blueprints", "lab", "up", folder], timeout=3600)
    try:
        assert up.returncode == 0, tail(up)
        TIMINGS[f"{EXAMPLE}: lab up (image + boot + SSH)"] = time.monotonic() - started
        the_lab = Lab.attach(folder)
        for host in the_lab.saved_state().hosts:
            TIMINGS[f"boot to SSH: {host.name}"] = host.boot_seconds or 0.0
        yield ExampleLab(load_blueprint(folder), folder, the_lab)
    finally:
        with contextlib.suppress(Exception):  # a lab that never came up has no status to read
            PANICS.update({h.name: h.panic for h in Lab.attach(folder).status().hosts if h.panic})
        run([sys.executable, "-m", "blueprints", "lab", "down", folder], timeout=600)


@pytest.fixture(scope="session")
def lab(example_lab: ExampleLab) -> Lab:
    """The running example lab, for the lab's own tests (test_lab_e2e, test_lab_teardown)."""
    return example_lab.lab


def attached() -> bool:
    """True when the session attached to a lab someone else brought up (``CLUSTERSMITH_EXAMPLE_LAB``)."""
    return bool(os.environ.get("CLUSTERSMITH_EXAMPLE_LAB"))


def live_paths(lab: Lab, host: str) -> int | None:
    """The host's NVMe-oF controllers in state live, from sysfs; None when the host did not answer in time. (`nvme
    list-subsys` can block while a controller's keep-alive waits out the admin timeout: seen in this test.)"""
    try:
        states = lab.ssh(host, "cat /sys/class/nvme-subsystem/nvme-subsys*/nvme*/state 2>/dev/null; true", timeout=60)
    except subprocess.TimeoutExpired:
        return None
    return states.stdout.split().count("live") if states.returncode == 0 else None


def wait_for_live_paths(lab: Lab, host: str, paths: int, bound_s: float, what: str) -> None:
    """Until ``host`` has ``paths`` NVMe-oF controllers live again (a test leaving the lab as it found it)."""
    deadline = time.monotonic() + bound_s
    while (live := live_paths(lab, host)) is None or live < paths:
        assert time.monotonic() < deadline, what
        time.sleep(5)


def play_seconds(log: str) -> dict[str, float]:
    """Seconds per play, from the timestamps of an Ansible log (``ANSIBLE_LOG_PATH``): play start to the next
    play's start, the last to the PLAY RECAP."""
    marks = [(datetime.strptime(when, "%Y-%m-%d %H:%M:%S,%f"), name) for when, name in
             re.findall(r"^(\S+ \S+) p=\d+ u=\S+ n=ansible \w+\| PLAY (?:\[(.*?)\]|RECAP)", log, re.M)]
    return {name: (end - start).total_seconds() for (start, name), (end, _) in itertools.pairwise(marks) if name}


def run_site(example_lab: ExampleLab, timing: str) -> subprocess.CompletedProcess[str]:
    """The generated site.yml over the example lab, as a user runs it (the repository's ansible.cfg); timed as a
    whole and per play (one play per role)."""
    folder = example_lab.folder
    log = folder / "ansible" / "site.log"
    log.unlink(missing_ok=True)
    started = time.monotonic()
    site = run([BIN / "ansible-playbook", "-i", folder / "ansible" / "inventory.yml", folder / "ansible" / "site.yml"],
               timeout=3600, env={"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_LOG_PATH": str(log)})
    TIMINGS[timing] = time.monotonic() - started
    for play, seconds in play_seconds(log.read_text() if log.is_file() else "").items():
        TIMINGS[f"{timing}: play {play}"] = seconds
    assert site.returncode == 0, tail(site, 12000)
    return site


def recap_changed(playbook_output: str) -> dict[str, int]:
    """host -> changed, from the PLAY RECAP of ansible-playbook's output."""
    return {host: int(changed) for host, changed in
            re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0", playbook_output, re.M)}


def changed_tasks(playbook_output: str) -> list[str]:
    """The tasks that reported changed in ansible-playbook's output, with their hosts."""
    task = ""
    found = []
    for line in playbook_output.splitlines():
        if line.startswith(("TASK [", "RUNNING HANDLER [")):
            task = line.split("[", 1)[1].rsplit("]", 1)[0]
        elif line.startswith("changed: "):
            found.append(f"{task}: {line.split(None, 1)[1]}")
    return found


@pytest.fixture(scope="session")
def deployed(example_lab: ExampleLab) -> ExampleLab:
    """The example lab after the generated site.yml ran over it once. After the role scenarios (the usual order)
    this is site.yml's re-run on converged hosts; alone (``-k accept``, say), a fresh converge. An attached lab
    (``CLUSTERSMITH_EXAMPLE_LAB``) is taken as converged by its owner.

    Before it runs, the build folder is built again as a user re-running after a change does (issue 43 item 7):
    over the existing secrets store (read, not made again) and the inventory ``lab up`` wrote (build writes none
    for the lab, and leaves that one as it was)."""
    if attached():
        return example_lab
    out = example_lab.folder.parent
    inventory = example_lab.folder / "ansible" / "inventory.yml"
    before = inventory.read_bytes()
    rebuilt = run([sys.executable, "-m", "blueprints", "build", example_spec(out), "-o", out], timeout=300)
    assert rebuilt.returncode == 0, tail(rebuilt)
    said = " ".join(rebuilt.stdout.split())
    assert "secrets: read " in said and "secrets: created" not in said, said
    assert inventory.read_bytes() == before and before.startswith(b"# Written by `clustersmith lab up`"), said
    site = run_site(example_lab, "site.yml over the example lab")
    changed = recap_changed(site.stdout)
    assert set(changed) == {h.name for h in example_lab.lab.saved_state().hosts}, tail(site)
    return dataclasses.replace(example_lab, site_changed=changed, site_changed_tasks=tuple(changed_tasks(site.stdout)))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        return MODULE_ORDER.index(name) if name in MODULE_ORDER else -1

    items.sort(key=rank)  # stable: tests outside the lab tier, and tests within a module, keep their order


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if PANICS:
        terminalreporter.section("guest kernel panics (the failures after one are its consequence)", red=True)
        for name, panic in PANICS.items():
            terminalreporter.write_line(f"{name}:\n{panic}")
    if TIMINGS:
        terminalreporter.section("lab timings")
        for name, value in TIMINGS.items():  # seconds, or a count (an int: what the lab's kernel logged)
            terminalreporter.write_line(f"{name}: {value}" if isinstance(value, int) else f"{name}: {value:.1f} s")
