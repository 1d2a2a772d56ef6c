"""The shared_fs role's mount units, Lustre tuning and FS-Cache volume, rendered with Ansible's own templating from
the variables `build` writes. The Lustre client cannot run on these machines (the one stated exception to lab proof):
each cloud's unit is checked against the provider's documented mount procedure, cited beside each case."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.loader import parse_requirements
from blueprints.planner import plan
from blueprints.rolevars.shared_fs import role_vars
from tests.roles import templates
from tests.roles.library import load
from tests.stacks.test_stacks_every_pair import PROVIDERS

REPO = Path(__file__).resolve().parents[4]
ROLE = REPO / "roles" / "shared_fs"
fscache_volume = load("shared_fs", "fscache_volume.py")

# Each provider's documented mount, as its own page writes it (What, Type, Options), with the stack's output in the
# form the same page names the file system by:
# - AWS: `sudo mount -t lustre -o relatime,flock file_system_dns_name@tcp:/mountname /fsx`
#   (https://docs.aws.amazon.com/fsx/latest/LustreGuide/mounting-ec2-instance.html;
#   stacks/aws.py: dns_name@tcp:/mount_name)
# - Google Cloud: `sudo mount -t lustre IP_ADDRESS@tcp:/FILESYSTEM_NAME MOUNT_POINT`
#   (https://cloud.google.com/managed-lustre/docs/connect-from-compute-engine;
#   stacks/gcp.py: the instance's mount_point)
# - Azure: `mount -t lustre -o noatime,flock MGS_IP@tcp:/lustrefs MOUNT_POINT` (Azure Managed Lustre's client
#   connection page; its CSI StorageClass mountOptions noatime, flock; stacks/azure.py: mgs_address@tcp:/lustrefs)
DOCUMENTED = {
    "aws": ("fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh", "relatime,flock"),
    "gcp": ("10.90.1.4@tcp:/pairgcph", ""),
    "azure": ("10.0.1.5@tcp:/lustrefs", "noatime,flock"),
}


def render(template: str, role: dict[str, Any], host: dict[str, Any]) -> str:
    """``templates/<template>`` as Ansible renders it on ``host`` with the role's group_vars ``role``."""
    return templates.render("shared_fs", template, role, host)


def unit(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def _vars(doc: dict[str, Any]) -> dict[str, Any]:
    bp = plan(parse_requirements(yaml.safe_dump(doc)))
    return role_vars(bp)["gpu_clients"].model_dump(mode="json", exclude_unset=True)


def _cloud(provider: str) -> dict[str, Any]:
    return {"apiVersion": "clustersmith/v1alpha1", "kind": "Requirements", "metadata": {"name": f"pair-{provider}-h"},
            "business": {"type": "training", "domain": "llm"}, "compute": {"accelerator": "H200", "gpus": 16},
            "data": {"training_set": "20TB", "validation_set": "1TB", "hot_fraction": "20%"},
            "performance": {"storage": {"read_throughput": ">=20GB/s", "write_throughput": ">=5GB/s",
                                        "latency_p99": "<1ms", "jitter": "<10%"}},
            "target": PROVIDERS[provider]}


@pytest.mark.parametrize("provider", sorted(DOCUMENTED))
def test_each_cloud_mounts_its_managed_lustre_as_its_provider_documents(provider: str) -> None:
    role = _vars(_cloud(provider))
    mount, options = DOCUMENTED[provider]
    text = render("shared-fs.mount.j2", role, {"inventory_hostname": "gpu-1",
                                                "clustersmith_file_system": {"mount": mount}})
    got = unit(text)
    assert got["What"] == mount and got["Type"] == "lustre" and got["Where"] == "/mnt/lustre"
    assert got["Options"] == ",".join(filter(None, [options, "_netdev"]))
    # no rail of its own (the provider's network reaches the file system) and no FS-Cache (Lustre does not use it)
    assert got["After"] == "network-online.target"
    assert role["shared_fs_source_from"] == "stack_outputs" and "shared_fs_fscache" not in role


def test_the_stack_mount_output_passes_the_role_check() -> None:
    """The role's check of clustersmith_file_system.mount accepts what each stack writes (and nothing looser)."""
    import re

    task = yaml.safe_load((ROLE / "tasks/validate.yml").read_text())
    check = next(t for t in task if "stack's mount" in t["name"])
    pattern = re.search(r"is match\('(.+)'\)", check["ansible.builtin.assert"]["that"][2]).group(1)  # type: ignore[union-attr]
    for mount, _ in DOCUMENTED.values():
        assert re.match(pattern, mount), mount
    for bad in ("", "10.0.0.5:/lustrefs", "10.0.0.5@tcp:/a b"):
        assert not re.match(pattern, bad), bad


@pytest.mark.parametrize(("cpus", "memory_gib", "applied"), [(192, 2048, True), (8, 32, False)])
def test_fsx_module_options_apply_above_the_documented_host_size(cpus: int, memory_gib: int, applied: bool) -> None:
    """FSx "Performance tips": ptlrpcd_per_cpt_max=32 and ksocklnd credits=2560 for clients with more than 64 vCPUs."""
    role = _vars(_cloud("aws"))
    text = render("lustre-modprobe.conf.j2", role, {
        "__shared_fs_size": {"stdout_lines": [str(cpus), str(memory_gib * 1048576)]}})
    lines = [line for line in text.splitlines() if line.startswith("options ")]
    expected = ["options ptlrpc ptlrpcd_per_cpt_max=32", "options ksocklnd credits=2560"]
    assert lines == (expected if applied else [])
    assert "performance-tips.html" in text


def test_fsx_lctl_parameters_are_the_documented_ones() -> None:
    role = _vars(_cloud("aws"))
    lctl = {t["name"]: t for t in role["shared_fs_tuning"] if t["kind"] == "lctl"}
    assert {n: t["value"] for n, t in lctl.items()} == {
        "ldlm.namespaces.*.lru_max_age": "600000", "ldlm.namespaces.*.lru_size": "100",
        "osc.*OST*.max_rpcs_in_flight": "32", "mdc.*.max_rpcs_in_flight": "64", "mdc.*.max_mod_rpcs_in_flight": "50"}
    assert lctl["ldlm.namespaces.*.lru_size"]["per_cpu"] == 1  # "<100 * number_of_CPUs>"
    assert all(t["source"].endswith("performance-tips.html") for t in lctl.values())
    assert not _vars(_cloud("gcp"))["shared_fs_tuning"] and not _vars(_cloud("azure"))["shared_fs_tuning"]


def test_fsx_lctl_parameters_are_set_again_at_every_mount() -> None:
    """`lctl set_param` without -P lasts until the client's next mount, and FSx's page applies them after mounting:
    the role's oneshot unit, wanted by and part of the mount unit, runs the page's commands (lru_size at 100 per CPU)
    each time the file system mounts: at boot and on a remount, not only when the role last ran."""
    role = _vars(_cloud("aws"))
    chosen = [{"name": t["name"], "value": str(int(t["value"]) * 96) if t.get("per_cpu") else t["value"]}
              for t in role["shared_fs_tuning"] if t["kind"] == "lctl"]
    text = render("lustre-tuning.service.j2", role, {"__shared_fs_lctl": chosen})
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("ExecStart=")] == [
        "ExecStart=lctl set_param ldlm.namespaces.*.lru_max_age=600000",
        "ExecStart=lctl set_param ldlm.namespaces.*.lru_size=9600",
        "ExecStart=lctl set_param osc.*OST*.max_rpcs_in_flight=32",
        "ExecStart=lctl set_param mdc.*.max_rpcs_in_flight=64",
        "ExecStart=lctl set_param mdc.*.max_mod_rpcs_in_flight=50"]
    for key in ("After", "Requires", "PartOf", "WantedBy"):
        assert f"{key}=mnt-lustre.mount" in lines, (key, text)
    assert "Type=oneshot" in lines and "RemainAfterExit=yes" in lines
    assert not any("%" in line for line in lines if not line.startswith("#")), "systemd would expand a % specifier"


def test_external_nfs_over_rdma_waits_for_its_rail_and_the_cache() -> None:
    doc = yaml.safe_load((REPO / "examples" / "cv-training-500tb.yaml").read_text())
    doc["storage"] = {"external": {"type": "nfs", "source": "10.0.0.5:/export/train", "transport": "rdma"}}
    role = _vars(doc)
    got = unit(render("shared-fs.mount.j2", role, {"inventory_hostname": "gpu-1"}))
    assert got["What"] == "10.0.0.5:/export/train" and got["Type"] == "nfs" and got["Where"] == "/mnt/nfs"
    # nfs(5): proto=rdma, and 20049 the NFS/RDMA port
    assert got["Options"] == "proto=rdma,port=20049,fsc,_netdev"
    assert got["After"] == "network-online.target clustersmith-rdma.service cachefilesd.service"
    cache = unit(render("cachefilesd.conf.j2", role, {}).replace(" ", "="))
    assert cache["dir"] == "/var/cache/fscache" and cache["brun"] == "10%" and cache["bcull"] == "7%"
    # the daemon binds the cache before it forks: started (Type=forking) means the cache is live for the mount
    daemon = unit(render("cachefilesd.service.j2", role, {}))
    assert daemon["Type"] == "forking" and daemon["PIDFile"] == "/run/cachefilesd.pid"
    assert daemon["ExecStart"] == "/sbin/cachefilesd -f /etc/cachefilesd.conf"
    assert daemon["RequiresMountsFor"] == "/var/cache/fscache"


@pytest.mark.parametrize(("external", "what", "mount_type", "daemon"), [
    # docs.weka.io "Mount a filesystem using fstab": wekafs, x-systemd.after=weka-agent.service
    ({"type": "weka", "source": "backend-0,backend-1/my_fs"}, "backend-0,backend-1/my_fs", "wekafs",
     "weka-agent.service"),
    # IBM Storage Scale "Planning for systemd": gpfs.service starts and stops mmfsd
    ({"type": "gpfs", "source": "gpfs0"}, "/dev/gpfs0", "gpfs", "gpfs.service"),
])
def test_a_vendor_client_mounts_after_its_daemon_without_pulling_it_in(
        external: dict[str, Any], what: str, mount_type: str, daemon: str) -> None:
    doc = yaml.safe_load((REPO / "examples" / "cv-training-500tb.yaml").read_text())
    doc["storage"] = {"external": external}
    got = unit(render("shared-fs.mount.j2", _vars(doc), {"inventory_hostname": "gpu-1"}))
    assert got["What"] == what and got["Type"] == mount_type
    assert got["After"].split()[-1] == daemon
    # the vendor's own start policy stays theirs: ordered after, not wanted
    assert daemon not in got["Wants"] and got["Wants"].split() == got["After"].split()[:-1]


def test_external_nfs_over_tcp_takes_nconnect() -> None:
    doc = yaml.safe_load((REPO / "examples" / "cv-training-500tb.yaml").read_text())
    doc["storage"] = {"external": {"type": "vast", "source": "vip.example.com:/train", "nconnect": 8,
                                   "options": ["vers=3"], "mount_point": "/mnt/data"}}
    got = unit(render("shared-fs.mount.j2", _vars(doc), {"inventory_hostname": "gpu-1"}))
    assert got["Type"] == "nfs" and got["Options"] == "proto=tcp,nconnect=8,vers=3,fsc,_netdev"
    assert got["Where"] == "/mnt/data"


def test_the_lab_mounts_cephfs_from_its_monitor_with_fscache() -> None:
    role = _vars(yaml.safe_load((REPO / "examples" / "lab.yaml").read_text()))
    host = {"inventory_hostname": "client-1",
            "hostvars": {"storage-1": {"rails": [{"index": 0, "address": "10.77.0.10"}]}}}
    got = unit(render("shared-fs.mount.j2", role, host))
    assert got["What"] == "10.77.0.10:6789:/" and got["Type"] == "ceph"
    assert got["Options"] == ("name=fs-client-1,secretfile=/etc/ceph/fs-client-1.secret,mds_namespace=cephfs,"
                              "mount_timeout=300,noatime,fsc,_netdev")
    assert "cachefilesd.service" in got["After"] and "clustersmith-rdma.service" in got["After"]


def role_value(expression: str, role: dict[str, Any], folder: Path = ROLE) -> str:
    """``expression`` as the role's variables evaluate it (the role in ``folder``), with the group_vars ``role``."""
    return templates.evaluate(folder, expression, role)


# `systemd-escape --path --suffix=mount PATH` (systemd 252, Debian bookworm) for each path, as it printed them
ESCAPED = {"/mnt/cephfs": "mnt-cephfs.mount", "/mnt/a-b": r"mnt-a\x2db.mount",
           "/mnt/data+1@x": r"mnt-data\x2b1\x40x.mount", "/.hidden/fs": r"\x2ehidden-fs.mount",
           "/var/cache/fscache": "var-cache-fscache.mount", "/mnt/x_y:z": "mnt-x_y:z.mount",
           "/mnt/a.b/c": "mnt-a.b-c.mount"}


@pytest.mark.parametrize("path", sorted(ESCAPED))
def test_mount_units_are_named_as_systemd_names_them(path: str) -> None:
    """systemd only runs a mount unit whose name is its Where= escaped (systemd.mount(5)); a wrong name is a unit
    that never mounts. Every character the plan allows in a mount point (letters, digits, . _ + @ / -) is here."""
    role = {"shared_fs_mount_point": path, "shared_fs_fscache": {"cache_dir": path}}
    assert role_value("{{ __shared_fs_unit }}", role) == ESCAPED[path]
    assert role_value("{{ __shared_fs_fscache_unit }}", role) == ESCAPED[path]
    # storage_tiering names its tiered file system's unit by the same rule (its main.yml had '\\x2d': two backslashes)
    tiering = {"storage_tiering_mount_point": path, "storage_tiering_volume_group": "clustersmith"}
    tiering_unit = role_value("{{ __storage_tiering_mount_unit }}", tiering, REPO / "roles" / "storage_tiering")
    assert tiering_unit == ESCAPED[path]
    if shutil.which("systemd-escape"):
        done = subprocess.run(["systemd-escape", "--path", "--suffix=mount", path], capture_output=True, text=True,
                              check=True)
        assert done.stdout.strip() == ESCAPED[path]


W = fscache_volume.Wanted(vg="clustersmith", lv="fscache", device="/dev/vdb", size=300 << 20)
BLANK = fscache_volume.State(device_vg=None, signature="", extent_size=None, free_on_device=0, lv_size=None,
                             lv_filesystem="")


@pytest.mark.parametrize(("state", "commands"), [
    (BLANK, [["pvcreate", "--yes", "/dev/vdb"], ["vgcreate", "--yes", "clustersmith", "/dev/vdb"],
             ["lvcreate", "--yes", "--name", "fscache", "--size", f"{300 << 20}b", "clustersmith", "/dev/vdb"],
             ["mkfs.ext4", "-q", "-m", "0", "-E", "nodiscard", "-L", "fscache", "/dev/clustersmith/fscache"]]),
    # storage_tiering's volume group already holds the disk: only the volume is added
    (fscache_volume.State(device_vg="clustersmith", signature="", extent_size=4 << 20, free_on_device=700 << 20,
                          lv_size=None, lv_filesystem=""),
     [["lvcreate", "--yes", "--name", "fscache", "--size", f"{300 << 20}b", "clustersmith", "/dev/vdb"],
      ["mkfs.ext4", "-q", "-m", "0", "-E", "nodiscard", "-L", "fscache", "/dev/clustersmith/fscache"]]),
    (fscache_volume.State(device_vg="clustersmith", signature="", extent_size=4 << 20, free_on_device=0,
                          lv_size=300 << 20, lv_filesystem="ext4"), []),
    (fscache_volume.State(device_vg="clustersmith", signature="", extent_size=4 << 20, free_on_device=100 << 20,
                          lv_size=200 << 20, lv_filesystem="ext4"),
     [["lvextend", "--yes", "--resizefs", "--size", f"{300 << 20}b", "clustersmith/fscache", "/dev/vdb"]]),
])
def test_fscache_volume_commands(state: Any, commands: list[list[str]]) -> None:
    assert fscache_volume.decide(W, state) == commands


@pytest.mark.parametrize(("state", "message"), [
    (fscache_volume.State(device_vg=None, signature="xfs", extent_size=None, free_on_device=0, lv_size=None,
                          lv_filesystem=""), "/dev/vdb holds a xfs signature; shared_fs never overwrites data"),
    (fscache_volume.State(device_vg="other", signature="", extent_size=None, free_on_device=0, lv_size=None,
                          lv_filesystem=""), "/dev/vdb belongs to volume group other; expected a free device"),
    (fscache_volume.State(device_vg="clustersmith", signature="", extent_size=4 << 20, free_on_device=100 << 20,
                          lv_size=None, lv_filesystem=""), "clustersmith/fscache needs 314572800 bytes on /dev/vdb"),
    (fscache_volume.State(device_vg="clustersmith", signature="", extent_size=4 << 20, free_on_device=0,
                          lv_size=300 << 20, lv_filesystem="xfs"), "holds a xfs file system; expected ext4"),
])
def test_fscache_volume_refuses(state: Any, message: str) -> None:
    with pytest.raises(fscache_volume.VolumeError, match=message.replace("(", r"\(")):
        fscache_volume.decide(W, state)


def test_fscache_volume_without_lvm2_is_a_change_under_check_and_a_named_error_otherwise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under --check the role's lvm2 install only pretends, so the module must not trace back on a host without pvs."""
    monkeypatch.setattr(fscache_volume.shutil, "which", lambda _: None)
    params = {"device": "/dev/null", "volume_group": "clustersmith", "logical_volume": "fscache", "size_bytes": 1 << 30}
    assert fscache_volume.converge(params, check_mode=True)["changed"] is True
    with pytest.raises(fscache_volume.VolumeError, match="pvs is not on this host: expected lvm2 installed"):
        fscache_volume.converge(params, check_mode=False)
