"""The Azure stack under mocks: ND H100 v5 VMs in one InfiniBand availability set, Azure Managed Lustre."""

from __future__ import annotations

import pytest

from blueprints.blueprint import Blueprint
from stacks.config import StackConfig
from stacks.model import StackError
from tests.stacks.conftest import SSH_KEY, Constructed, blueprint_of, construct, example
from tests.stacks.mocks import plain
from tests.stacks.tagging import assert_every_resource_labelled, assert_no_plaintext_secret


@pytest.fixture(scope="module")
def nd() -> Blueprint:
    doc = example("llm-training-16k.yaml", compute__gpus=256, compute__instance_type="Standard_ND96isr_H100_v5",
                  target={"provider": "azure", "region": "eastus"},
                  performance__storage__read_throughput=">=50GB/s", performance__storage__write_throughput=">=10GB/s",
                  data__training_set="50TB", data__validation_set="1TB", data__checkpoint_size="1TB")
    return blueprint_of(doc, "examples/llm-on-azure.yaml")


@pytest.fixture(scope="module")
def built(nd: Blueprint) -> Constructed:
    return construct(nd, StackConfig(ssh_public_key=SSH_KEY, admin_cidr="192.0.2.0/24"))


def test_gpu_nodes_are_one_flexible_scale_set(built: Constructed, nd: Blueprint) -> None:
    (vmss,) = built.mocks.of_type("azure-native:compute:VirtualMachineScaleSet")
    inputs = plain(vmss.inputs)
    assert inputs["orchestrationMode"] == "Flexible" and inputs["platformFaultDomainCount"] == 1
    assert inputs["sku"] == {"name": "Standard_ND96isr_H100_v5", "tier": "Standard", "capacity": 32}
    profile = inputs["virtualMachineProfile"]
    assert profile["osProfile"]["linuxConfiguration"]["disablePasswordAuthentication"] is True
    (nic,) = profile["networkProfile"]["networkInterfaceConfigurations"]
    assert nic["enableAcceleratedNetworking"] is True and profile["networkProfile"]["networkApiVersion"]
    (ppg,) = built.mocks.of_type("azure-native:compute:ProximityPlacementGroup")
    assert inputs["proximityPlacementGroup"]["id"] == f"{ppg.name}-id"
    assert inputs["tags"]["clustersmith:fleet"] == "gpu-fleet-1"
    assert [v.name for v in built.mocks.of_type("azure-native:compute:VirtualMachine")] == ["mon-1"]
    (fleet,) = built.outputs["fleets"]
    assert fleet["ref"] == {"provider": "azure", "scale_set_id": f"{vmss.name}-id"}
    assert [r["netdev"] for r in fleet["rails"]] == [f"ib{i}" for i in range(8)]


def test_scale_sets_hold_at_most_a_thousand_vms_one_infiniband_partition_each() -> None:
    doc = example("llm-training-16k.yaml", compute__gpus=8 * 2500, compute__instance_type="Standard_ND96isr_H100_v5",
                  target={"provider": "azure", "region": "eastus"},
                  performance__storage__read_throughput=">=50GB/s", performance__storage__write_throughput=">=10GB/s",
                  data__training_set="50TB", data__validation_set="1TB", data__checkpoint_size="1TB")
    bp = blueprint_of(doc)
    assert bp.fleets is not None
    assert [(f.first, f.size, f.ib_partition) for f in bp.fleets.fleets] == [(1, 834, 0), (835, 833, 1),
                                                                            (1668, 833, 2)]
    assert bp.fleets.count.derived_from.formula.startswith("ceil(2500 / 1000) = 3 fleets")
    assert any("3 InfiniBand partitions" in n for n in bp.notes)
    built = construct(bp, StackConfig(ssh_public_key=SSH_KEY))
    # the mocks see resources in the order their inputs resolve, not the order the stack made them: by name
    sets = sorted((plain(v.inputs) for v in built.mocks.of_type("azure-native:compute:VirtualMachineScaleSet")),
                  key=lambda s: str(s["tags"]["clustersmith:fleet"]))
    assert [(s["tags"]["clustersmith:fleet"], s["sku"]["capacity"]) for s in sets] == [
        (f.name, f.size) for f in bp.fleets.fleets] and [f.size for f in bp.fleets.fleets] == [834, 833, 833]
    assert len(built.mocks.of_type("azure-native:compute:ProximityPlacementGroup")) == 3


def test_managed_lustre_is_sized_by_the_planner(built: Constructed, nd: Blueprint) -> None:
    (fs,) = built.mocks.of_type("azure-native:storagecache:AmlFilesystem")
    m = nd.storage.managed
    assert m is not None
    inputs = plain(fs.inputs)
    assert inputs["sku"]["name"] == m.sku == "AMLFS-Durable-Premium-500"
    assert inputs["storageCapacityTiB"] == m.capacity_gib / 1024 == 100
    assert inputs["maintenanceWindow"]["dayOfWeek"] == "Sunday"
    assert m.max_capacity is not None and inputs["storageCapacityTiB"] * 2**40 <= m.max_capacity.value


def test_tags_and_secrets(built: Constructed) -> None:
    assert_every_resource_labelled(built.mocks, "llm-training-16k", "llm-on-azure.yaml")
    assert_no_plaintext_secret(built.mocks, built.outputs, secrets=[])


def test_ssh_key_is_required(nd: Blueprint) -> None:
    with pytest.raises(StackError, match="Azure Linux VMs need an SSH key"):
        construct(nd, StackConfig())


def test_monitoring_ports_are_allowed_from_the_management_network_and_denied_elsewhere(
        built: Constructed, nd: Blueprint) -> None:
    assert nd.target.management_network is not None
    network = nd.target.management_network.value
    (vnet,) = built.mocks.of_type("azure-native:network:VirtualNetwork")
    assert plain(vnet.inputs)["addressSpace"]["addressPrefixes"] == [network]
    (nsg,) = built.mocks.of_type("azure-native:network:NetworkSecurityGroup")
    rules = {r["name"]: r for r in plain(nsg.inputs)["securityRules"]}
    ports = sorted(str(j.port) for j in {j.port: j for j in nd.monitoring.scrape}.values())
    allow, deny = rules["monitoring"], rules["monitoring-elsewhere"]
    assert (allow["access"], allow["sourceAddressPrefix"], sorted(allow["destinationPortRanges"])) == (
        "Allow", network, ports)
    assert (deny["access"], deny["sourceAddressPrefix"], sorted(deny["destinationPortRanges"])) == ("Deny", "*", ports)
    assert allow["priority"] < deny["priority"], "the allow must be evaluated first"
    assert {r["name"] for r in rules.values() if r["access"] == "Allow"} <= {"ssh", "monitoring"}
