"""The boot-time connect unit (templates/clustersmith-nvmf-connect.service.j2) and, with DH-CHAP, the script it runs
(templates/clustersmith-nvmf-connect.sh.j2) as Ansible renders them: with DH-CHAP the script connects each planned
path with the very arguments the role's nvme_paths module connects it with (both secrets, the timers, the identity),
so a reboot leaves the paths the role's next run finds in place, and the unit names no secret (any local user reads
a unit's ExecStart with `systemctl show`); without DH-CHAP, `nvme connect-all`.

Found on the lab's 6.12 kernel (2026-12-07, the first lab tier with `nvmeof.auth: dhchap`): connect-all, which takes no
controller secret, brought the paths back after the scenario's boot replay without the target's authentication, and
site.yml's next run reconnected every path ("changed" where the run must change nothing)."""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.roles.library import load
from tests.roles.templates import render
from tests.unit.roles.nvmeof.test_nvme_paths import CLIENT, TARGET  # the lab's two rails

paths = load("nvmeof", "nvme_paths.py")
NQN = "nqn.2026-11.io.clustersmith:lab:ns:client-1"
# made-up DHHC-1 keys of the secrets file's shape (blueprints/secrets.py), for this test only
HOST_KEY = "DHHC-1:00:c2VjcmV0LWZvci1jbGllbnQtMS1vbmx5LWluLXRlc3Rz0Q7n2g==:"
CTRL_KEY = "DHHC-1:00:c2VjcmV0LWZvci1zdG9yYWdlLTEtb25seS1pbi10ZXN0cw1x2w==:"
GROUP = {"nvmeof_transport": "rdma", "nvmeof_port": 4420, "nvmeof_ctrl_loss_tmo": -1, "nvmeof_reconnect_delay": 10,
         "nvmeof_keep_alive_tmo": 5, "nvmeof_tos": 106, "nvmeof_fast_io_fail_tmo": -1}
IDENTITY = {"nqn": "nqn.2014-08.org.nvmexpress:uuid:0b1f6c34-0000-4000-8000-000000000001",
            "hostid": "0b1f6c34-0000-4000-8000-000000000001"}


def planned() -> list[Any]:
    return paths.plan_paths(CLIENT, {"storage-1": TARGET},
                            [{"nqn": NQN, "tier": "hot", "target_host": "storage-1"}], 2, "client-1")


HOST = {"inventory_hostname": "client-1", "__nvmeof_identity": IDENTITY,
        "nvmeof_paths_result": {"planned": [dataclasses.asdict(p) for p in planned()]},
        "__nvmeof_dhchap": {"hosts": {"client-1": HOST_KEY}, "controllers": {"storage-1": CTRL_KEY}}}
SCRIPT = "/usr/local/libexec/clustersmith/nvmf-connect"
TASKS = Path(__file__).resolve().parents[4] / "roles" / "nvmeof" / "tasks" / "host.yml"


def unit(auth: str) -> str:
    return render("nvmeof", "clustersmith-nvmf-connect.service.j2", {**GROUP, "nvmeof_auth": auth}, HOST)


def script() -> str:
    return render("nvmeof", "clustersmith-nvmf-connect.sh.j2", {**GROUP, "nvmeof_auth": "dhchap"}, HOST)


def connects(text: str) -> list[list[str]]:
    """The script's `nvme connect` commands as the shell reads them (a line continued with \\, then its || echo)."""
    joined = text.replace("\\\n", " ")
    return [shlex.split(line.split(" || ", 1)[0].removeprefix("/usr/sbin/")) for line in joined.splitlines()
            if line.startswith("/usr/sbin/nvme connect ")]


def task(name: str) -> dict[str, Any]:
    return next(t for t in yaml.safe_load(TASKS.read_text()) if t["name"].startswith(name))


def exec_starts(text: str) -> list[str]:
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith("ExecStart=")]


def test_with_dhchap_each_path_is_connected_as_the_module_connects_it() -> None:
    timers = paths.Timers(ctrl_loss_tmo=-1, reconnect_delay=10, fast_io_fail_tmo=-1, keep_alive_tmo=5, tos=106)
    identity = paths.Identity(hostnqn=IDENTITY["nqn"], hostid=IDENTITY["hostid"], dhchap_secret=HOST_KEY,
                              dhchap_ctrl_secrets=(("storage-1", CTRL_KEY),))
    commands = connects(script())
    assert len(commands) == 2
    for command, path in zip(commands, planned(), strict=True):
        module = paths.connect_argv(path, "rdma", 4420, timers, identity)
        assert command == module  # the same arguments, in the same order
        assert f"--dhchap-ctrl-secret={CTRL_KEY}" in module


def test_with_dhchap_the_unit_runs_the_root_only_script_and_names_no_secret() -> None:
    text = unit("dhchap")
    assert exec_starts(text) == [SCRIPT]
    assert "DHHC-1" not in text and "dhchap-secret" not in text
    written = task("Write the boot-time connect script")
    template = written["ansible.builtin.template"]
    assert (template["mode"], template["owner"], template["dest"]) == ("0700", "root", "{{ __nvmeof_connect_script }}")
    assert written["no_log"] is True and written["when"] == "nvmeof_auth == 'dhchap'"
    assert task("Install the boot-time connect unit")["ansible.builtin.template"]["mode"] == "0644"
    assert task("Remove a connect script")["when"] == "nvmeof_auth != 'dhchap'"  # none left when auth goes away


def test_the_script_is_valid_sh_and_a_failed_path_does_not_stop_the_others(tmp_path: Path) -> None:
    """The script under dash with `nvme` replaced by one that fails on the first path: the second path is still
    tried, the failure is named on stderr, and the script (so the unit) succeeds."""
    calls = tmp_path / "calls"
    fake = tmp_path / "nvme"
    fake.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\ncase \"$*\" in *{planned()[0].traddr}*) exit 1;; esac\n")
    fake.chmod(0o755)
    body = script().replace("/usr/sbin/nvme ", f"{fake} ")
    done = subprocess.run(["sh", "-c", body], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert len(calls.read_text().splitlines()) == 2
    assert f"over {planned()[0].traddr} did not connect" in done.stderr and planned()[1].traddr not in done.stderr


def test_without_dhchap_connect_all_reads_discovery_conf_and_no_secret_is_written() -> None:
    text = unit("none")
    assert exec_starts(text) == ["/usr/sbin/nvme connect-all"]
    assert "dhchap" not in text and "DHHC-1" not in text
