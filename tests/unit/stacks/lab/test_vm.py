"""QEMU command lines, kernel command lines and inventories, built from a planned lab state."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from blueprints.loader import load_requirements
from blueprints.planner import plan
from stacks.lab import image, inventory, vm
from stacks.lab.errors import LabError
from stacks.lab.kernel import KernelPackage
from stacks.lab.lab import Lab
from stacks.lab.state import LabState
from tests.default_lab import SPEC, default_lab_plan


@pytest.fixture
def planned(tmp_path: Path) -> LabState:
    lab = Lab(default_lab_plan(), "unit", tmp_path / "out" / "unit")
    inputs = image.inputs_for(default_lab_plan().image, KernelPackage(name="linux-image-6.1.0-57-amd64", version="1"))
    built = image.BuiltImage(
        inputs=inputs, directory=tmp_path / "img", kernel_release="6.1", modules=(), build_seconds=0
    )
    return lab._plan_state(built, "tcg", tmp_path / "key", Path("/tmp/clustersmith-lab-x"))


def test_management_nic_forwards_ssh_on_loopback_only_and_is_restricted(planned: LabState) -> None:
    host = planned.hosts[0]
    argv = vm.qemu_argv(planned, host, "S0VZ")
    netdev = argv[argv.index("-netdev") + 1]
    assert netdev == f"user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:{host.ssh_port}-:22"
    assert argv[argv.index("-accel") + 1] == "tcg"
    assert "-daemonize" in argv


def test_tcg_guests_get_a_cpu_without_avx_and_kvm_guests_the_host_cpu(planned: LabState) -> None:
    """glibc picks AVX2 routines when the CPU offers them, and TCG emulates AVX slowly: mask it under TCG."""
    host = planned.hosts[0]
    argv = vm.qemu_argv(planned, host, "S0VZ")
    cpu = argv[argv.index("-cpu") + 1]
    assert cpu.startswith("max,") and {"avx=off", "avx2=off"} <= set(cpu.split(","))
    kvm = planned.model_copy(update={"accel": "kvm"})
    argv = vm.qemu_argv(kvm, host, "S0VZ")
    assert argv[argv.index("-cpu") + 1] == "host"


def test_tcg_translation_cache_is_lowered_only_when_asked(planned: LabState, monkeypatch: pytest.MonkeyPatch) -> None:
    """tb-size is QEMU's default unless CLUSTERSMITH_LAB_TCG_TB_MIB names one; KVM has no translation cache."""
    host = planned.hosts[0]
    monkeypatch.delenv(vm.TB_SIZE_ENV, raising=False)
    assert vm.qemu_argv(planned, host, "S0VZ")[vm.qemu_argv(planned, host, "S0VZ").index("-accel") + 1] == "tcg"
    monkeypatch.setenv(vm.TB_SIZE_ENV, "256")
    argv = vm.qemu_argv(planned, host, "S0VZ")
    assert argv[argv.index("-accel") + 1] == "tcg,tb-size=256"
    kvm = vm.qemu_argv(planned.model_copy(update={"accel": "kvm"}), host, "S0VZ")
    assert kvm[kvm.index("-accel") + 1] == "kvm"
    monkeypatch.setenv(vm.TB_SIZE_ENV, "lots")
    with pytest.raises(LabError, match="CLUSTERSMITH_LAB_TCG_TB_MIB='lots'"):
        vm.qemu_argv(planned, host, "S0VZ")


def test_one_vde_nic_per_rail_and_disks_by_serial(planned: LabState) -> None:
    storage, client = planned.hosts[0], planned.hosts[1]
    argv = vm.qemu_argv(planned, client, "S0VZ")
    assert "vde,id=rail0,sock=/tmp/clustersmith-lab-x/rail0.vde" in argv
    assert "vde,id=rail1,sock=/tmp/clustersmith-lab-x/rail1.vde" in argv
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]
    assert any(d.startswith("virtio-net-pci,netdev=rail1,id=rail1-nic,") for d in devices)
    assert "virtio-blk-pci,drive=disk-fast,serial=fast" in devices
    assert not [d for d in devices if d.startswith("virtio-blk") and "fast" not in d]  # disks.slow: its namespace
    argv = vm.qemu_argv(planned, storage, "S0VZ")
    disks = [argv[i + 1] for i, a in enumerate(argv) if a == "-device" and argv[i + 1].startswith("virtio-blk")]
    assert disks == ["virtio-blk-pci,drive=disk-nvmeof,serial=nvmeof",
                     *(f"virtio-blk-pci,drive=disk-osd{i},serial=osd{i}" for i in range(4))]  # Ceph's OSD disks


def test_kernel_command_line_carries_key_nics_and_hostname(planned: LabState) -> None:
    client = planned.hosts[2]
    append = vm.kernel_append(client, "S0VZ")
    assert "systemd.hostname=client-2" in append.split()
    assert "cs.key=S0VZ" in append.split()
    assert f"cs.rail=rail0,{client.rails[0].mac},10.77.0.3/24,1500" in append.split()
    assert f"cs.rail=rail1,{client.rails[1].mac},10.77.1.3/24,1500" in append.split()


def test_an_oversized_command_line_is_refused(planned: LabState) -> None:
    with pytest.raises(LabError, match="2048"):
        vm.kernel_append(planned.hosts[0], "A" * 3000)


def test_inventory_groups_hosts_by_role_with_rails(planned: LabState, tmp_path: Path) -> None:
    path = inventory.write(planned, tmp_path)
    data = yaml.safe_load(path.read_text())
    groups = data["all"]["children"]
    assert list(groups["storage_targets"]["hosts"]) == ["storage-1"]
    assert list(groups["gpu_clients"]["hosts"]) == ["client-1", "client-2"]
    client = groups["gpu_clients"]["hosts"]["client-1"]
    assert client["ansible_host"] == "127.0.0.1"
    assert client["ansible_user"] == "root"
    assert client["ansible_python_interpreter"] == "/usr/bin/python3"
    assert client["ansible_port"] == planned.hosts[1].ssh_port
    assert client["rails"][1] == {
        "index": 1, "name": "rail1", "netdev": "rail1", "address": "10.77.1.2", "prefix": 24,
        "cidr": "10.77.1.2/24", "mtu": 1500, "mac": planned.hosts[1].rails[1].mac,
    }  # fmt: skip
    nvmeof = plan(load_requirements(SPEC)).storage.nvmeof
    assert nvmeof is not None
    own = next(s for s in nvmeof.subsystems if s.owner == "client-1")
    assert client["disks"] == {"fast": "/dev/disk/by-id/virtio-fast",
                               "slow": f"/dev/disk/by-id/nvme-uuid.{own.uuid}"}  # its own namespace, no virtual disk
    assert groups["storage_targets"]["hosts"]["storage-1"]["disks"] == {
        "nvmeof": "/dev/disk/by-id/virtio-nvmeof", **{f"osd{i}": f"/dev/disk/by-id/virtio-osd{i}" for i in range(4)}}


def test_molecule_sees_the_same_hosts_groups_and_rails(planned: LabState) -> None:
    from stacks.lab import molecule

    listed = molecule.script_inventory(planned)
    assert listed["storage_targets"]["hosts"] == ["storage-1"]
    assert listed["gpu_clients"]["hosts"] == ["client-1", "client-2"]
    assert listed["_meta"]["hostvars"]["client-2"]["rails"][0]["address"] == "10.77.0.3"
    config = molecule.instances(planned)
    assert [i["instance"] for i in config] == ["storage-1", "client-1", "client-2"]
    assert {i["address"] for i in config} == {"127.0.0.1"}
