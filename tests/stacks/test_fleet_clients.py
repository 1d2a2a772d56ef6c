"""The provider clients of the fleet inventory: AWS against moto's EC2 and Auto Scaling, GCP and Azure against
their APIs' documented response shapes (tests/fixtures/fleets/README.md names each source)."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from stacks.fleet_clients import AwsFleets, AzureFleets, GcpFleets
from stacks.fleet_inventory import FleetSizeError, resolve
from stacks.outputs import AwsFleetRef, AzureFleetRef, GcpFleetRef, StackFleet, StackOutputs, StackRail

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "fleets"
VMSS = ("/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/llm-on-azure-rg0a1b2c3d/providers/"
        "Microsoft.Compute/virtualMachineScaleSets/llm-training-16k-gpu-fleet-1")


def fleet(ref: AwsFleetRef | GcpFleetRef | AzureFleetRef, first: int, size: int, host_tag: str,
          rails: tuple[StackRail, ...] = ()) -> StackFleet:
    return StackFleet(name="gpu-fleet-2" if isinstance(ref, GcpFleetRef) else "gpu-fleet-1", ref=ref,
                      role="gpu_client", group="gpu_clients", node_type="x", name_prefix="gpu-", first=first,
                      size=size, host_tag=host_tag, user="u", rails=rails)


class Recorded:
    """A transport answering GETs from fixture files by URL, recording every call."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str, dict[str, Any] | None]] = []

    def __call__(self, method: str, url: str, body: dict[str, Any] | None) -> dict[str, Any]:
        self.calls.append((method, url, body))
        if method != "GET":
            return {}
        for needle, name in self.answers.items():
            if needle in url:
                loaded: dict[str, Any] = json.loads((FIXTURES / name).read_text())
                return loaded
        raise AssertionError(f"unexpected call {url}")


def test_gcp_lists_live_instances_by_label_page_by_page_and_names_with_set_labels() -> None:
    transport = Recorded({"pageToken=": "gcp-instances-page2.json", "/instances?": "gcp-instances-page1.json"})
    rails = tuple(StackRail(index=i, name=f"rail{i}", kind="mrdma", prefix=18) for i in range(8))
    f = fleet(GcpFleetRef(project="clustersmith-test", zone="us-central1-a", group="recsys-inference-gpu-fleet-2"),
              5, 3, "clustersmith-host", rails)
    client = GcpFleets(transport)
    found = client.instances(f, "recsys-inference")
    # the TERMINATED instance (which still carries gpu-5) is not live; the second page is read
    assert [i.id for i in found] == ["recsys-inference-gpu-fleet-2-7k2d", "recsys-inference-gpu-fleet-2-q9xz",
                                     "recsys-inference-gpu-fleet-2-m3ew"]
    first_url = transport.calls[0][1]
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(first_url).query)
    assert first_url.startswith("https://compute.googleapis.com/compute/v1/projects/clustersmith-test/zones/"
                                "us-central1-a/instances?")
    assert query["filter"] == ['labels.clustersmith-fleet="gpu-fleet-2" AND '
                               'labels.clustersmith-design="recsys-inference"']
    assert "pageToken=CkAKPnJlY3N5cy1pbmZlcmVuY2UtZ3B1LWZsZWV0LTItcTl4eg%3D%3D" in transport.calls[1][1]
    assert found[0].host == "gpu-6" and found[0].address == "10.0.0.11"
    assert found[0].rail_addresses == tuple(f"10.{128 + r}.0.11" for r in range(8))

    outputs = StackOutputs(design="recsys-inference", provider="gcp", hosts=(), fleets=(f,))
    resolved = resolve(outputs, GcpFleets(transport), "test")
    assert [(h.name, h.address) for h in resolved.hosts] == [
        ("gpu-5", "10.0.0.14"), ("gpu-6", "10.0.0.11"), ("gpu-7", "10.0.0.12")]  # m3ew launched before q9xz
    assert resolved.hosts[0].rails[7].address == "10.135.0.14"
    writes = [(url, body) for method, url, body in transport.calls if method == "POST"]
    assert [url.rsplit("/", 2)[1] for url, _ in writes] == ["recsys-inference-gpu-fleet-2-m3ew",
                                                            "recsys-inference-gpu-fleet-2-q9xz"]
    url, body = writes[0]
    assert url.endswith("/zones/us-central1-a/instances/recsys-inference-gpu-fleet-2-m3ew/setLabels")
    assert body == {"labels": {"clustersmith-design": "recsys-inference", "clustersmith-spec": "recsys-inference-yaml",
                               "clustersmith-role": "gpu-client", "clustersmith-fleet": "gpu-fleet-2",
                               "clustersmith-host": "gpu-5"}, "labelFingerprint": "fp14AAAAAA="}


def test_azure_lists_the_scale_sets_vms_with_their_addresses_and_merges_the_host_tag() -> None:
    transport = Recorded({"skiptoken": "azure-vms-page2.json", "virtualMachines?": "azure-vms.json",
                          "networkInterfaces?": "azure-nics.json"})
    f = fleet(AzureFleetRef(scale_set_id=VMSS), 1, 3, "clustersmith:host")
    outputs = StackOutputs(design="llm-training-16k", provider="azure", hosts=(), fleets=(f,))
    resolved = resolve(outputs, AzureFleets(transport), "test")
    # the Deleting VM (which held gpu-1) is gone: gpu-1 goes to the oldest untagged VM, gpu-3 to the next
    assert [(h.name, h.address) for h in resolved.hosts] == [("gpu-1", "10.0.0.4"), ("gpu-2", "10.0.0.5"),
                                                             ("gpu-3", "10.0.0.6")]
    vm_list = next(url for method, url, _ in transport.calls if "virtualMachines?" in url)
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(vm_list).query)
    assert query["$filter"] == [f"'virtualMachineScaleSet/id' eq '{VMSS}'"]
    assert query["api-version"] == ["2022-08-01"]
    assert vm_list.startswith("https://management.azure.com/subscriptions/00000000-0000-0000-0000-000000000001/"
                              "resourceGroups/llm-on-azure-rg0a1b2c3d/providers/Microsoft.Compute/virtualMachines?")
    patches = [(url, body) for method, url, body in transport.calls if method == "PATCH"]
    assert patches[0] == (
        "https://management.azure.com/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/"
        "llm-on-azure-rg0a1b2c3d/providers/Microsoft.Compute/virtualMachines/gpu-fleet-1_77aa0c21/providers/"
        "Microsoft.Resources/tags/default?api-version=2021-04-01",
        {"operation": "Merge", "properties": {"tags": {"clustersmith:host": "gpu-1"}}})
    assert len(patches) == 2


@pytest.fixture
def aws_account(monkeypatch: pytest.MonkeyPatch) -> Any:
    moto = pytest.importorskip("moto")
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    with moto.mock_aws():
        yield


def _auto_scaling_group(size: int) -> Any:
    """An Auto Scaling group as the AWS stack makes it: a launch template, the compute subnet, tags propagated."""
    import boto3

    ec2 = boto3.client("ec2", region_name="us-east-1")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24", AvailabilityZone="us-east-1a")["Subnet"]["SubnetId"]
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ec2.create_launch_template(LaunchTemplateName="gpu", LaunchTemplateData={"ImageId": image,
                                                                            "InstanceType": "p5.48xlarge"})
    tags = {"clustersmith:design": "llm-training-16k", "clustersmith:spec": "llm-training-16k.yaml",
            "clustersmith:role": "gpu_client", "clustersmith:fleet": "gpu-fleet-1"}
    autoscaling = boto3.client("autoscaling", region_name="us-east-1")
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="llm-training-16k-gpu-fleet-1", MinSize=size, MaxSize=size, DesiredCapacity=size,
        LaunchTemplate={"LaunchTemplateName": "gpu", "Version": "$Latest"}, VPCZoneIdentifier=subnet,
        Tags=[{"Key": k, "Value": v, "PropagateAtLaunch": True} for k, v in tags.items()])
    return ec2


def test_aws_names_the_auto_scaling_groups_instances_stably(aws_account: Any) -> None:
    import boto3

    ec2 = _auto_scaling_group(4)
    ec2.run_instances(ImageId=ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"], MinCount=1, MaxCount=1,
                      TagSpecifications=[{"ResourceType": "instance", "Tags": [
                          {"Key": "clustersmith:fleet", "Value": "gpu-fleet-1"},
                          {"Key": "clustersmith:design", "Value": "another-design"}]}])  # not this design's
    f = fleet(AwsFleetRef(region="us-east-1", group="llm-training-16k-gpu-fleet-1"), 1, 4, "clustersmith:host")
    outputs = StackOutputs(design="llm-training-16k", provider="aws", hosts=(), fleets=(f,))
    client = AwsFleets(boto3.session.Session())
    first = resolve(outputs, client, "test")
    assert [h.name for h in first.hosts] == ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]
    described = ec2.describe_instances(Filters=[{"Name": "tag:clustersmith:fleet", "Values": ["gpu-fleet-1"]},
                                                {"Name": "tag:clustersmith:design", "Values": ["llm-training-16k"]}])
    tagged = {t["Value"]: i["PrivateIpAddress"] for r in described["Reservations"] for i in r["Instances"]
              for t in i["Tags"] if t["Key"] == "clustersmith:host"}
    assert tagged == {h.name: h.address for h in first.hosts}, "the host tag is written on each instance"
    assert resolve(outputs, AwsFleets(boto3.session.Session()), "test") == first  # stable: read from the tags

    # the group replaces a terminated instance (moto as EC2 Auto Scaling does): the replacement takes its name
    gone_host, gone_address = next(iter(tagged.items()))
    victim = next(i["InstanceId"] for r in described["Reservations"] for i in r["Instances"]
                  if i["PrivateIpAddress"] == gone_address)
    autoscaling = boto3.client("autoscaling", region_name="us-east-1")
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=False)
    again = resolve(outputs, AwsFleets(boto3.session.Session()), "test")
    moved = {h.name: h.address for h in again.hosts}
    assert sorted(moved) == ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]
    assert moved[gone_host] != gone_address
    assert {k: v for k, v in moved.items() if k != gone_host} == {k: v for k, v in tagged.items() if k != gone_host}

    # a group short of its size (scaled in behind the stack's back) is refused by name
    autoscaling.update_auto_scaling_group(AutoScalingGroupName="llm-training-16k-gpu-fleet-1", MinSize=3,
                                          DesiredCapacity=3)
    with pytest.raises(FleetSizeError, match=r"fleet gpu-fleet-1 \(Auto Scaling group llm-training-16k-gpu-fleet-1 "
                                             r"in us-east-1\) has 3 live instances; the Blueprint plans 4"):
        resolve(outputs, AwsFleets(boto3.session.Session()), "test")
