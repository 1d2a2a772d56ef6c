"""nvmet_target: the steps from a configfs tree to the wanted target, and that applying them converges.

The tree is a folder laid out like ``/sys/kernel/config/nvmet`` (subsystems/, ports/, hosts/, attribute files,
port -> subsystem and allowed_hosts -> host links); the real configfs is exercised by the nvmeof molecule scenario on
the lab, whose kernel has no DH-CHAP (so the dhchap steps are proven here only, on a tree with the attribute files a
CONFIG_NVME_TARGET_AUTH kernel gives each host entry).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.roles.library import load

nvmet = load("nvmeof", "nvmet_target.py")
NQN = "nqn.2026-11.io.clustersmith:lab:hot-1"
RAILS = [{"index": 0, "name": "rail0", "netdev": "rail0", "address": "10.77.0.1"},
         {"index": 1, "name": "rail1", "netdev": "rail1", "address": "10.77.1.1"}]


def configfs(tmp_path: Path) -> Path:
    root = tmp_path / "nvmet"
    (root / "subsystems").mkdir(parents=True)
    (root / "ports").mkdir()
    (root / "hosts").mkdir()
    return root


DEFAULT_GROUPS = {"subsystems": ("namespaces", "allowed_hosts"), "ports": ("subsystems", "referrals"), "hosts": ()}
AUTH_ATTRS = ("dhchap_key", "dhchap_ctrl_key", "dhchap_hash")  # a host entry's files on a kernel with target auth


def apply_like_configfs(root: Path, steps: list[object], auth_kernel: bool = False) -> None:
    """Apply step by step, doing what configfs does on its own: a new subsystem or port comes with its
    default child groups, a new host entry with its auth attributes (``auth_kernel``), and removing a group
    removes them and its attribute files."""
    for step in steps:
        path = root / step.path
        parts = Path(step.path).parts
        if step.op == "rmdir":
            for attribute in (p for p in path.iterdir() if p.is_file()):
                attribute.unlink()
            for child in DEFAULT_GROUPS[parts[0]] if len(parts) == 2 else ():
                (path / child).rmdir()
        nvmet.apply(root, [step])
        if step.op == "mkdir" and len(parts) == 2:
            for child in DEFAULT_GROUPS[parts[0]]:
                (path / child).mkdir()
            if parts[0] == "hosts" and auth_kernel:
                for attribute in AUTH_ATTRS:
                    (path / attribute).write_text("hmac(sha256)\n" if attribute == "dhchap_hash" else "\n")


def wanted(device: str = "/dev/vdb", rails: list[dict[str, object]] = RAILS, transport: str = "rdma") -> object:
    return nvmet.parse_wanted([{"nqn": NQN}], rails, transport, 4420, device)


def converge(root: Path, target: object) -> list[object]:
    have = nvmet.read_state(root, list(target.subsystems), list(target.ports))
    steps = nvmet.decide(target, have)
    apply_like_configfs(root, steps)
    return steps


def test_an_empty_target_gets_subsystem_namespace_and_one_port_per_rail(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    steps = [s.describe() for s in converge(root, wanted())]
    assert f"mkdir subsystems/{NQN}/namespaces/1" in steps
    assert f"subsystems/{NQN}/namespaces/1/device_path = /dev/vdb" in steps
    assert "ports/1/addr_traddr = 10.77.0.1" in steps and "ports/2/addr_traddr = 10.77.1.1" in steps
    assert "ports/2/addr_trtype = rdma" in steps
    assert (root / "ports" / "1" / "subsystems" / NQN).resolve() == (root / "subsystems" / NQN).resolve()
    assert (root / "subsystems" / NQN / "namespaces" / "1" / "enable").read_text() == "1"


def test_a_converged_target_needs_no_step(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge(root, wanted())
    assert converge(root, wanted()) == []


def test_a_moved_port_is_unlinked_before_its_address_changes(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge(root, wanted())
    moved = [dict(RAILS[0], address="10.77.0.9"), RAILS[1]]
    steps = [s.describe() for s in converge(root, wanted(rails=moved))]
    assert steps == [f"unlink ports/1/subsystems/{NQN} -> subsystems/{NQN}", "ports/1/addr_traddr = 10.77.0.9",
                     f"link ports/1/subsystems/{NQN} -> subsystems/{NQN}"]


def test_a_new_backing_device_disables_the_namespace_first(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge(root, wanted())
    steps = [s.describe() for s in converge(root, wanted(device="/dev/vdc"))]
    base = f"subsystems/{NQN}/namespaces/1"
    assert steps == [f"{base}/enable = 0", f"{base}/device_path = /dev/vdc", f"{base}/enable = 1"]


def test_transport_tcp_is_a_blueprint_option(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge(root, wanted())
    steps = [s.describe() for s in converge(root, wanted(transport="tcp"))]
    assert "ports/1/addr_trtype = tcp" in steps and "ports/2/addr_trtype = tcp" in steps


def test_absent_removes_only_what_it_made(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge(root, wanted())
    other = "nqn.2014-08.org.example:other"
    apply_like_configfs(root, [nvmet.Step("mkdir", f"subsystems/{other}")])
    (root / "ports" / "2" / "subsystems" / other).symlink_to(root / "subsystems" / other)
    target = wanted()
    have = nvmet.read_state(root, list(target.subsystems), list(target.ports))
    apply_like_configfs(root, nvmet.decide_absent(target, have))
    assert not (root / "subsystems" / NQN).exists() and not (root / "ports" / "1").exists()
    assert (root / "ports" / "2" / "subsystems" / other).is_symlink(), "a port another subsystem uses stays"


@pytest.mark.parametrize(("rails", "device", "message"), [
    ([dict(RAILS[0], address=None)], "/dev/vdb", "rail rail0 (rail0): address None is not an IPv4 address"),
    ([dict(RAILS[0], address="CHANGE_ME")], "/dev/vdb", "address 'CHANGE_ME' is not an IPv4 address"),
    (RAILS, "vdb", "device 'vdb' is not a /dev path"),
    (RAILS, "", "device '' is not a /dev path"),
])
def test_bad_inputs_name_the_field_and_what_was_expected(rails: list[dict[str, object]], device: str,
                                                         message: str) -> None:
    with pytest.raises(nvmet.TargetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        nvmet.parse_wanted([{"nqn": NQN}], rails, "rdma", 4420, device)


def test_a_missing_namespace_device_is_refused_before_any_change(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    params = {"subsystems": [{"nqn": NQN}], "rails": RAILS, "transport": "rdma", "trsvcid": 4420,
              "namespace_device": "/dev/clustersmith-no-such-disk"}
    with pytest.raises(nvmet.TargetError, match="namespace device /dev/clustersmith-no-such-disk does not exist"):
        nvmet.converge(params, check_mode=False, root=root)
    assert list((root / "subsystems").iterdir()) == []


def test_check_mode_reports_without_touching_the_tree(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    params = {"subsystems": [{"nqn": NQN}], "rails": RAILS, "transport": "rdma", "trsvcid": 4420,
              "namespace_device": "/dev/null"}
    result = nvmet.converge(params, check_mode=True, root=root)
    assert result["changed"] and f"port 1 rdma 10.77.0.1:4420 -> {NQN}" in result["diff"]["after"]
    assert list((root / "subsystems").iterdir()) == []


CLIENTS = [{"name": "client-1", "nqn": "nqn.2026-11.io.clustersmith:lab:host:client-1"},
           {"name": "client-2", "nqn": "nqn.2026-11.io.clustersmith:lab:host:client-2"}]
KEYS = {"client-1": "DHHC-1:00:" + "A" * 48 + ":", "client-2": "DHHC-1:00:" + "B" * 48 + ":"}
CTRL = "DHHC-1:00:" + "C" * 48 + ":"


def allowing(names: list[str], auth: str = "none") -> object:
    return nvmet.parse_wanted([{"nqn": NQN, "allowed_hosts": names}], RAILS, "rdma", 4420, "/dev/vdb", CLIENTS,
                              auth, KEYS if auth == "dhchap" else {}, CTRL if auth == "dhchap" else None)


def converge_auth(root: Path, target: object, auth_kernel: bool = True) -> list[object]:
    have = nvmet.read_state(root, list(target.subsystems), list(target.ports), list(target.hosts))
    steps = nvmet.decide(target, have)
    apply_like_configfs(root, steps, auth_kernel)
    return steps


def test_a_subsystem_allows_exactly_its_hosts_and_stops_allowing_any_before_the_first_link(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    steps = [s.describe() for s in converge_auth(root, allowing(["client-1", "client-2"]), auth_kernel=False)]
    first_link = next(i for i, s in enumerate(steps) if "/allowed_hosts/" in s)
    assert steps.index(f"subsystems/{NQN}/attr_allow_any_host = 0") < first_link
    assert steps.index(f"mkdir hosts/{CLIENTS[0]['nqn']}") < first_link
    assert (root / "subsystems" / NQN / "attr_allow_any_host").read_text() == "0"
    linked = sorted(p.name for p in (root / "subsystems" / NQN / "allowed_hosts").iterdir())
    assert linked == [c["nqn"] for c in CLIENTS]
    assert (root / "subsystems" / NQN / "allowed_hosts" / CLIENTS[0]["nqn"]).resolve() == \
        (root / "hosts" / CLIENTS[0]["nqn"]).resolve()
    assert not any("dhchap" in s for s in steps), "auth none leaves the auth attributes alone"
    assert converge_auth(root, allowing(["client-1", "client-2"]), auth_kernel=False) == []


def test_an_administrators_allow_any_host_is_set_back_to_0(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge_auth(root, allowing(["client-1"]))
    (root / "subsystems" / NQN / "attr_allow_any_host").write_text("1")
    steps = [s.describe() for s in converge_auth(root, allowing(["client-1"]))]
    assert steps == [f"subsystems/{NQN}/attr_allow_any_host = 0"]


def test_a_host_no_longer_allowed_is_unlinked_and_its_entry_removed(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge_auth(root, allowing(["client-1", "client-2"]))
    gone = CLIENTS[1]["nqn"]
    steps = [s.describe() for s in converge_auth(root, allowing(["client-1"]))]
    assert steps == [f"unlink subsystems/{NQN}/allowed_hosts/{gone} -> hosts/{gone}", f"rmdir hosts/{gone}"]
    assert not (root / "hosts" / gone).exists()
    assert (root / "hosts" / CLIENTS[0]["nqn"]).is_dir()


def test_a_host_entry_another_subsystem_links_stays(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge_auth(root, allowing(["client-1", "client-2"]))
    other, gone = "nqn.2014-08.org.example:other", CLIENTS[1]["nqn"]
    apply_like_configfs(root, [nvmet.Step("mkdir", f"subsystems/{other}"),
                               nvmet.Step("link", f"subsystems/{other}/allowed_hosts/{gone}", f"hosts/{gone}")])
    steps = [s.describe() for s in converge_auth(root, allowing(["client-1"]))]
    assert steps == [f"unlink subsystems/{NQN}/allowed_hosts/{gone} -> hosts/{gone}"]
    assert (root / "hosts" / gone).is_dir()


def test_dhchap_sets_each_hosts_secret_the_controller_secret_and_the_hash_and_never_describes_them(
        tmp_path: Path) -> None:
    root = configfs(tmp_path)
    target = allowing(["client-1", "client-2"], auth="dhchap")
    steps = converge_auth(root, target)
    host = root / "hosts" / CLIENTS[0]["nqn"]
    assert (host / "dhchap_key").read_text() == KEYS["client-1"]
    assert (host / "dhchap_ctrl_key").read_text() == CTRL
    assert (host / "dhchap_hash").read_text().strip() == "hmac(sha256)"
    assert (root / "hosts" / CLIENTS[1]["nqn"] / "dhchap_key").read_text() == KEYS["client-2"]
    described = " ".join(s.describe() for s in steps)
    assert f"hosts/{CLIENTS[0]['nqn']}/dhchap_key = (secret)" in described
    assert not any(k in described for k in [*KEYS.values(), CTRL])
    have = nvmet.read_state(root, list(target.subsystems), list(target.ports), list(target.hosts))
    assert nvmet.decide(target, have) == []
    diff = nvmet.render(have) + nvmet.render(target)
    assert "dhchap_key=set" in diff and not any(k in diff for k in [*KEYS.values(), CTRL])


def test_a_rotated_host_secret_is_rewritten_alone(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    converge_auth(root, allowing(["client-1", "client-2"], auth="dhchap"))
    KEYS_BEFORE = dict(KEYS)
    try:
        KEYS["client-2"] = "DHHC-1:00:" + "D" * 48 + ":"
        steps = [s.describe() for s in converge_auth(root, allowing(["client-1", "client-2"], auth="dhchap"))]
    finally:
        KEYS.update(KEYS_BEFORE)
    assert steps == [f"hosts/{CLIENTS[1]['nqn']}/dhchap_key = (secret)"]


def test_dhchap_on_a_kernel_without_target_auth_says_so(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    params = {"subsystems": [{"nqn": NQN, "allowed_hosts": ["client-1"]}], "rails": RAILS, "transport": "rdma",
              "trsvcid": 4420, "namespace_device": "/dev/null", "hosts": CLIENTS, "auth": "dhchap",
              "dhchap_secrets": KEYS, "dhchap_ctrl_secret": CTRL}
    with pytest.raises(nvmet.TargetError, match="built without CONFIG_NVME_TARGET_AUTH"):
        nvmet.converge(params, check_mode=False, root=root)


@pytest.mark.parametrize(("hosts", "secrets", "ctrl", "message"), [
    ([], KEYS, CTRL, "allowed host client-1 has no host NQN in hosts"),
    (CLIENTS, {}, CTRL, "no DH-CHAP secret for host client-1"),
    (CLIENTS, KEYS, None, "no DH-CHAP secret for this target's controller"),
])
def test_missing_identities_and_secrets_name_what_is_missing(hosts: list[dict[str, str]], secrets: dict[str, str],
                                                             ctrl: str | None, message: str) -> None:
    with pytest.raises(nvmet.TargetError, match=message):
        nvmet.parse_wanted([{"nqn": NQN, "allowed_hosts": ["client-1"]}], RAILS, "rdma", 4420, "/dev/vdb", hosts,
                           "dhchap", secrets, ctrl)


def test_absent_unlinks_the_allowed_hosts_and_removes_their_entries(tmp_path: Path) -> None:
    root = configfs(tmp_path)
    target = allowing(["client-1", "client-2"])
    converge_auth(root, target)
    have = nvmet.read_state(root, list(target.subsystems), list(target.ports), list(target.hosts))
    apply_like_configfs(root, nvmet.decide_absent(target, have))
    assert list((root / "subsystems").iterdir()) == [] and list((root / "hosts").iterdir()) == []


def test_the_owner_alone_is_let_in() -> None:
    hosts = [*CLIENTS, {"name": "storage-1", "nqn": "nqn.2026-11.io.clustersmith:lab:host:storage-1"}]
    target = nvmet.parse_wanted([{"nqn": NQN, "owner": "client-2"}], RAILS, "rdma", 4420, "/dev/vdb", hosts)
    assert target.subsystems[NQN].allowed_hosts == (CLIENTS[1]["nqn"],)
    assert set(target.hosts) == {CLIENTS[1]["nqn"]}


UUID = "c84b87ee-4b05-5385-a981-4d887d98d921"


def test_a_volume_namespace_gets_its_lvm_device_and_the_planned_uuid() -> None:
    target = nvmet.parse_wanted([{"nqn": NQN, "owner": "client-1", "volume": "ns-client-1", "uuid": UUID.upper()}],
                                RAILS, "rdma", 4420, None, CLIENTS, volume_group="clustersmith-nvmeof")
    assert target.subsystems[NQN].namespaces == (
        nvmet.Namespace(nsid=1, device="/dev/clustersmith-nvmeof/ns-client-1", uuid=UUID),)
    steps = [s.describe() for s in nvmet.decide(target, nvmet.Target({}, {}))]
    at = steps.index(f"subsystems/{NQN}/namespaces/1/device_uuid = {UUID}")
    assert steps[at + 1] == f"subsystems/{NQN}/namespaces/1/enable = 1"  # set while the namespace is disabled
    with pytest.raises(nvmet.TargetError, match="volume ns-client-1 but no volume_group"):
        nvmet.parse_wanted([{"nqn": NQN, "owner": "client-1", "volume": "ns-client-1"}], RAILS, "rdma", 4420,
                           None, CLIENTS)


def test_a_drifted_uuid_is_rewritten_with_the_namespace_disabled_around_it() -> None:
    wanted = nvmet.parse_wanted([{"nqn": NQN, "owner": "client-1", "volume": "v", "uuid": UUID}], RAILS, "rdma",
                                4420, None, CLIENTS, volume_group="vg")
    have = nvmet.Target({NQN: nvmet.Subsystem(nqn=NQN, namespaces=(nvmet.Namespace(1, "/dev/vg/v", True, "0" * 8),),
                                              allowed_hosts=(CLIENTS[0]["nqn"],))}, {})
    steps = [s.describe() for s in nvmet.decide(wanted, have) if "/namespaces/" in s.path]
    assert steps == [f"subsystems/{NQN}/namespaces/1/enable = 0", f"subsystems/{NQN}/namespaces/1/device_uuid = {UUID}",
                     f"subsystems/{NQN}/namespaces/1/enable = 1"]
