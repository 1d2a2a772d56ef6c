"""The boot-time connect unit (templates/clustersmith-nvmf-connect.service.j2) as Ansible renders it: with DH-CHAP it
connects each planned path with the very arguments the role's nvme_paths module connects it with (both secrets, the
timers, the identity), so a reboot leaves the paths the role's next run finds in place; without, `nvme connect-all`.

Found on the lab's 6.12 kernel (2026-12-07, the first lab tier with `nvmeof.auth: dhchap`): connect-all, which takes no
controller secret, brought the paths back after the scenario's boot replay without the target's authentication, and
site.yml's next run reconnected every path ("changed" where the run must change nothing)."""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

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


def unit(auth: str) -> str:
    host = {"inventory_hostname": "client-1", "__nvmeof_identity": IDENTITY,
            "nvmeof_paths_result": {"planned": [dataclasses.asdict(p) for p in planned()]},
            "__nvmeof_dhchap": {"hosts": {"client-1": HOST_KEY}, "controllers": {"storage-1": CTRL_KEY}}}
    return render("nvmeof", "clustersmith-nvmf-connect.service.j2", {**GROUP, "nvmeof_auth": auth}, host)


def exec_starts(text: str) -> list[str]:
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith("ExecStart=")]


def test_with_dhchap_each_path_is_connected_as_the_module_connects_it() -> None:
    timers = paths.Timers(ctrl_loss_tmo=-1, reconnect_delay=10, fast_io_fail_tmo=-1, keep_alive_tmo=5, tos=106)
    identity = paths.Identity(hostnqn=IDENTITY["nqn"], hostid=IDENTITY["hostid"], dhchap_secret=HOST_KEY,
                              dhchap_ctrl_secrets=(("storage-1", CTRL_KEY),))
    lines = exec_starts(unit("dhchap"))
    assert len(lines) == 2 and all(line.startswith("-/usr/sbin/nvme connect ") for line in lines)
    for line, path in zip(lines, planned(), strict=True):
        module = paths.connect_argv(path, "rdma", 4420, timers, identity)
        assert shlex.split(line.removeprefix("-/usr/sbin/")) == module  # the same arguments, in the same order
        assert f"--dhchap-ctrl-secret={CTRL_KEY}" in module


def test_without_dhchap_connect_all_reads_discovery_conf_and_no_secret_is_written() -> None:
    text = unit("none")
    assert exec_starts(text) == ["/usr/sbin/nvme connect-all"]
    assert "dhchap" not in text and "DHHC-1" not in text
