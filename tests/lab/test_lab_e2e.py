"""End to end on the example lab as it booted, before any role: modules, Soft-RoCE on both rails, reachability,
faults, pause and resume.

Tests run in file order against the session's example lab (conftest.example_lab), first of the lab tier. What they
change in the guests (the rxe devices they add, the modules they load) is undone when the module ends, so the role
scenarios after them start from the guests as they booted. The destructive tests (hard stop, down) are in
test_lab_teardown.py, the tier's last module.
"""

from __future__ import annotations

import json
import subprocess
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from stacks.lab import Lab, LabInputError, ssh
from stacks.lab.cli import lab as lab_cli
from stacks.lab.inventory import inventory_path

pytestmark = pytest.mark.lab

MODULES = ("rdma_rxe", "ib_uverbs", "rdma_ucm", "nvmet", "nvmet_rdma", "nvme_rdma", "nvme_tcp", "null_blk", "dm_cache")


# MODULES in an order rmmod can remove them: each before the modules it depends on (modules.dep of the lab's 6.1:
# rdma_rxe and rdma_ucm need ib_uverbs, nvmet_rdma needs nvmet)
REMOVAL_ORDER = ("dm_cache", "null_blk", "nvme_tcp", "nvme_rdma", "nvmet_rdma", "nvmet", "rdma_ucm", "rdma_rxe",
                 "ib_uverbs")


def loaded(lab: Lab, host: str) -> set[str]:
    return {line.split()[0] for line in run(lab, host, "cat /proc/modules").splitlines()} & set(MODULES)


@pytest.fixture(scope="module", autouse=True)
def booted_state_afterwards(lab: Lab) -> Iterator[None]:
    """After this module the guests are as they booted: no rxe device, and of MODULES only those loaded at boot,
    so the rdma, nvmeof and storage_tiering scenarios create and load what they need themselves."""
    hosts = [h.name for h in lab.saved_state().hosts]
    at_boot = {host: loaded(lab, host) for host in hosts}
    yield
    for host in hosts:  # one SSH call a host: each costs 2-3 s under TCG, and this took about 30 of them
        run(lab, host, restore_boot_state(at_boot[host]))
        assert loaded(lab, host) == at_boot[host], f"{host}: modules {loaded(lab, host)}, at boot {at_boot[host]}"


def restore_boot_state(at_boot: set[str]) -> str:
    """A shell script that deletes every rxe link, then removes each of MODULES loaded since boot (in REMOVAL_ORDER)
    that is still loaded; it stops at the first command that fails."""
    links = ("for link in $(rdma link show | awk '{print $2}' | cut -d/ -f1); do "
             "rdma link delete \"$link\" || exit 1; done")
    modules = " ".join(m for m in REMOVAL_ORDER if m not in at_boot)
    return (f"set -e; {links}; for m in {modules}; do "
            "if grep -q \"^$m \" /proc/modules; then rmmod \"$m\"; fi; done")


def run(lab: Lab, host: str, command: str, timeout: float = 120) -> str:
    done = lab.ssh(host, command, timeout=timeout)
    assert done.returncode == 0, f"{host}: `{command}` exited {done.returncode}: {done.stderr or done.stdout}"
    return done.stdout


def rail_address(lab: Lab, host: str, rail: int) -> str:
    return lab.saved_state().host(host).rails[rail].address


def pings(lab: Lab, src: str, dst: str, rail: int, count: int = 2) -> bool:
    command = f"ping -n -q -c {count} -W 2 -I rail{rail} {rail_address(lab, dst, rail)}"
    return lab.ssh(src, command, timeout=60).returncode == 0


def test_second_up_is_a_clear_error(lab: Lab) -> None:
    with pytest.raises(LabInputError, match="already running"):
        Lab(lab.plan, lab.name, lab.workdir).up()


def test_inventory_has_every_host_with_real_ports_and_rails(lab: Lab) -> None:
    data = yaml.safe_load(inventory_path(lab.workdir).read_text())
    groups = data["all"]["children"]
    status = {h.name: h for h in lab.status().hosts}
    assert set(groups["storage_targets"]["hosts"]) == {"storage-1"}
    assert set(groups["gpu_clients"]["hosts"]) == {"client-1", "client-2"}
    for group in ("storage_targets", "gpu_clients"):
        for name, hostvars in groups[group]["hosts"].items():
            assert hostvars["ansible_port"] == status[name].ssh_port
            assert Path(hostvars["ansible_ssh_private_key_file"]).is_file()
            assert [r["netdev"] for r in hostvars["rails"]] == ["rail0", "rail1"]


def test_guests_carry_the_planned_addresses_and_disks(lab: Lab) -> None:
    for host in lab.saved_state().hosts:
        shown = json.loads(run(lab, host.name, "ip -j address show"))
        addresses = {i["ifname"]: {a["local"] for a in i["addr_info"] if a["family"] == "inet"} for i in shown}
        for nic in host.rails:
            assert nic.address in addresses[nic.netdev]
        for disk in host.disks:
            size = int(run(lab, host.name, f"blockdev --getsize64 {disk.guest_path}"))
            assert size == disk.size_bytes
        assert run(lab, host.name, "hostname").strip() == host.name
        assert "default" not in run(lab, host.name, "ip route show"), "guests must have no default route"


def test_each_guest_has_its_own_nvme_host_identity(lab: Lab) -> None:
    """One image boots every guest; the init gives each its own host NQN and ID (NVMe-oF tells hosts apart by them)."""
    names = [h.name for h in lab.saved_state().hosts]
    nqns = {run(lab, n, "cat /etc/nvme/hostnqn").strip() for n in names}
    ids = {run(lab, n, "cat /etc/nvme/hostid").strip() for n in names}
    assert len(nqns) == len(ids) == len(names), (nqns, ids)
    assert all(nqn.startswith("nqn.2014-08.org.nvmexpress:uuid:") for nqn in nqns), nqns
    assert {nqn.rsplit(":", 1)[1] for nqn in nqns} == ids


def test_kernel_modules_load(lab: Lab) -> None:
    for host in ("storage-1", "client-1"):
        run(lab, host, "modprobe -a " + " ".join(MODULES))
        loaded = {line.split()[0] for line in run(lab, host, "cat /proc/modules").splitlines()}
        assert set(MODULES) <= loaded


def test_rxe_is_active_on_both_rails(lab: Lab) -> None:
    for host in lab.saved_state().hosts:
        for nic in host.rails:
            run(lab, host.name, f"rdma link add rxe{nic.rail_index} type rxe netdev {nic.netdev}")
        links = json.loads(run(lab, host.name, "rdma -j link show"))
        states = {link["ifname"]: (link["state"], link.get("netdev")) for link in links}
        assert states == {"rxe0": ("ACTIVE", "rail0"), "rxe1": ("ACTIVE", "rail1")}, states


def test_clients_reach_the_target_over_each_rail(lab: Lab) -> None:
    for client in ("client-1", "client-2"):
        for rail in (0, 1):
            assert pings(lab, client, "storage-1", rail), f"{client} cannot reach storage-1 over rail{rail}"


def lab_ssh_argv(lab: Lab, host: str, command: str) -> list[str]:
    saved = lab.saved_state()
    return ssh.argv(saved.host(host).ssh_port, saved.private_key, command)


def listening(lab: Lab, host: str, port: int = 18515, timeout: float = 90) -> bool:
    """Wait until `host` listens on TCP `port` (perftest's exchange); False if it does not within `timeout`.
    Started over SSH, a server listens ~5 s later on an idle lab, later under load."""
    deadline = time.monotonic() + timeout
    while not lab.ssh(host, f"ss -Hltn 'sport = :{port}'", timeout=60).stdout.strip():
        if time.monotonic() > deadline:
            return False
        time.sleep(1)
    return True


def ib_write_bw_pair(lab: Lab, rail: int) -> str | None:
    """One ib_write_bw server on storage-1 and its client on client-1 over `rail`, the client started once the
    server listens: None when both ended well with a bandwidth line, else what went wrong."""
    args = f"-d rxe{rail} -n 50 -s 4096 -F"
    with subprocess.Popen(
        lab_ssh_argv(lab, "storage-1", f"timeout 90 ib_write_bw {args}"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    ) as server:  # fmt: skip
        if not listening(lab, "storage-1"):
            server.kill()
            return f"server not listening after 90 s: {server.communicate(timeout=60)[0]}"
        client = lab.ssh("client-1", f"timeout 90 ib_write_bw {args} {rail_address(lab, 'storage-1', rail)}")
        if client.returncode != 0:
            server.kill()  # it serves one connection: a client that failed leaves it waiting
        server_out, _ = server.communicate(timeout=120)
    if client.returncode == 0 and "BW average" in client.stdout and server.returncode == 0:
        return None
    return (
        f"client exit {client.returncode}: {client.stderr or client.stdout}; "
        f"server exit {server.returncode}: {server_out}"
    )


def test_rdma_traffic_over_each_rail(lab: Lab) -> None:
    """A short ib_write_bw between client-1 and the target over each rail's rxe device (behaviour, not speed).

    As `accept` runs it: the queue pairs are exchanged over perftest's TCP socket and use the rail's RoCEv2 GID.
    Not rdma_cm (`-R`): in CI, right after the rxe devices were created, rail 1's CM rejected a connect with the
    server listening (RDMA_CM_EVENT_REJECTED, error 8, no IB CM listener) and left the next one unanswered for
    90 s. rdma_cm over both rails is exercised by NVMe-oF's connects (the nvmeof scenario, the rail cut test).
    A pair that failed is run again with a fresh server (three tries), reported as a warning.
    """
    for rail in (0, 1):
        tries: list[str] = []
        while (failed := ib_write_bw_pair(lab, rail)) is not None and len(tries) < 2:
            tries.append(failed)
            time.sleep(5)
        assert failed is None, f"rail {rail}, three tries: {[*tries, failed]}"
        if tries:
            warnings.warn(f"rail {rail}: ib_write_bw passed on try {len(tries) + 1}; first: {tries[0]}", stacklevel=1)


def test_a_rail_fault_cuts_that_rail_only_and_heals(lab: Lab) -> None:
    lab.set_link("client-1", 0, up=False)
    try:
        rails = {r.name: r.link_up for r in next(h for h in lab.status().hosts if h.name == "client-1").rails}
        assert rails == {"rail0": False, "rail1": True}
        assert not pings(lab, "client-1", "storage-1", 0, count=3), "rail0 still carries traffic while cut"
        assert pings(lab, "client-1", "storage-1", 1), "rail1 must keep working while rail0 is cut"
        assert pings(lab, "client-2", "storage-1", 0), "other hosts keep rail0"
        carrier = run(lab, "client-1", "cat /sys/class/net/rail0/carrier || true").strip()
        assert carrier in ("0", ""), "the guest should see the carrier drop"
    finally:
        lab.set_link("client-1", 0, up=True)
    deadline = time.monotonic() + 30
    while not pings(lab, "client-1", "storage-1", 0):
        assert time.monotonic() < deadline, "rail0 did not come back after the link was restored"


def test_the_cli_reports_and_injects_faults(lab: Lab) -> None:
    runner = CliRunner()
    shown = runner.invoke(lab_cli, ["status", str(lab.workdir), "--json"])
    assert shown.exit_code == 0, shown.output
    assert {h["name"] for h in json.loads(shown.output)["hosts"]} == {"storage-1", "client-1", "client-2"}
    cut = runner.invoke(lab_cli, ["fault", str(lab.workdir), "--host", "client-2", "--rail", "1", "--down"])
    assert cut.exit_code == 0, cut.output
    assert not pings(lab, "client-2", "storage-1", 1, count=2)
    healed = runner.invoke(lab_cli, ["fault", str(lab.workdir), "--host", "client-2", "--rail", "1", "--up"])
    assert healed.exit_code == 0, healed.output
    bad = runner.invoke(lab_cli, ["fault", str(lab.workdir), "--host", "nope", "--pause"])
    assert bad.exit_code == 2 and "no host 'nope'" in bad.output


def test_pause_freezes_a_host_and_resume_brings_it_back(lab: Lab) -> None:
    lab.pause("client-2")
    try:
        assert next(h.power for h in lab.status().hosts if h.name == "client-2") == "paused"
        with pytest.raises(subprocess.TimeoutExpired):
            lab.ssh("client-2", "true", timeout=8)
    finally:
        lab.resume("client-2")
    lab.wait_ssh("client-2", timeout=60)
    assert next(h.power for h in lab.status().hosts if h.name == "client-2") == "running"
