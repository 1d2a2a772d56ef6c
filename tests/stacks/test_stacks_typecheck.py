"""The mocks check resource inputs against the provider SDKs' declared types: a wrong type is caught here,
not at `pulumi up`."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp
import pulumi_maas  # noqa: F401  (registers the maas resource modules)
import pytest
from pulumi_azure_native import storagecache

from tests.stacks.mocks import CheckingMocks, InputTypeError, check_inputs


@pytest.mark.parametrize(
    ("typ", "inputs", "message"),
    [
        # pulumi-gcp declares Managed Lustre's capacity as a string (an int64 on the wire)
        ("gcp:lustre/instance:Instance", {"capacityGib": 9000.0, "filesystem": "x", "instanceId": "y",
                                          "location": "z", "network": "n"}, "capacityGib: 9000.0 is not"),
        # FSx subnet_ids is one string in pulumi-aws 7, not a list
        ("aws:fsx/lustreFileSystem:LustreFileSystem", {"subnetIds": ["subnet-1"]}, "subnetIds"),
        # an integer field given a fraction
        ("aws:fsx/lustreFileSystem:LustreFileSystem", {"subnetIds": "s", "storageCapacity": 1200.5},
         "storageCapacity: 1200.5 is not"),
        # a misspelt key inside a nested input type
        ("aws:ec2/launchTemplate:LaunchTemplate", {"networkInterfaces": [{"networkCard": 1.0}]},
         "networkInterfaces[0].networkCard: not an input of LaunchTemplateNetworkInterfaceArgs"),
        # a bool where the provider takes a number
        ("azure-native:storagecache:AmlFilesystem", {"filesystemSubnet": "s", "maintenanceWindow": {},
                                                     "resourceGroupName": "rg", "storageCapacityTiB": True},
         "storageCapacityTiB: True is not"),
        # an unknown top-level argument
        ("aws:ec2/instance:Instance", {"instanceTypo": "p5.48xlarge"}, "instanceTypo: not an input of InstanceArgs"),
    ],
)
def test_wrong_input_types_are_reported(typ: str, inputs: dict[str, object], message: str) -> None:
    with pytest.raises(InputTypeError) as err:
        check_inputs(typ, inputs)
    assert message in str(err.value)
    assert typ in str(err.value)


@pytest.mark.parametrize(
    ("typ", "inputs"),
    [
        ("gcp:lustre/instance:Instance", {"capacityGib": "9000", "filesystem": "x", "instanceId": "y",
                                          "location": "z", "network": "n", "labels": {"a": "b"}}),
        ("aws:fsx/lustreFileSystem:LustreFileSystem", {"subnetIds": "s", "storageCapacity": 1200.0,
                                                       "perUnitStorageThroughput": 1000.0}),
        ("aws:ec2/launchTemplate:LaunchTemplate", {"networkInterfaces": [{"networkCardIndex": 1.0,
                                                                          "interfaceType": "efa-only"}]}),
        ("azure-native:storagecache:AmlFilesystem", {"filesystemSubnet": "s", "resourceGroupName": "rg",
                                                     "maintenanceWindow": {"dayOfWeek": "Sunday"},
                                                     "storageCapacityTiB": 8.0}),
    ],
)
def test_correct_inputs_pass(typ: str, inputs: dict[str, object]) -> None:
    assert check_inputs(typ, inputs) is not None


def test_a_mistyped_resource_fails_its_construction_under_the_mocks() -> None:
    pulumi.runtime.set_mocks(CheckingMocks(), project="t", stack="t", preview=False)

    @pulumi.runtime.test
    def build() -> pulumi.Output[object]:
        fs = gcp.lustre.Instance("l", capacity_gib=9000,  # type: ignore[arg-type]
                                 filesystem="x", instance_id="y", location="z", network="n")
        return fs.id

    with pytest.raises(InputTypeError, match="capacityGib"):
        build()


def test_sdk_classes_resolve_for_every_target() -> None:
    assert check_inputs("aws:ec2/vpc:Vpc", {"cidrBlock": "10.0.0.0/16"}) is aws.ec2.VpcArgs
    assert check_inputs("azure-native:storagecache:AmlFilesystem", {}) is storagecache.AmlFilesystemArgs
    assert check_inputs("maas:index/tag:Tag", {"name": "t", "machines": ["a"]}).__name__ == "TagArgs"
    assert check_inputs("pulumi:providers:maas", {"apiUrl": "u"}).__name__ == "ProviderArgs"


def test_importing_the_stacks_creates_no_resource() -> None:
    import importlib

    mocks = CheckingMocks()
    pulumi.runtime.set_mocks(mocks, project="t", stack="t", preview=False)
    for name in ("stacks.aws", "stacks.gcp", "stacks.azure", "stacks.baremetal", "stacks.program"):
        importlib.reload(importlib.import_module(name))
    assert mocks.resources == []
