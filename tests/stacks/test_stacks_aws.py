"""The AWS stack of the 16k-GPU example under mocks: counts, instance type, placement, EFA, FSx, tags."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint
from blueprints.loader import load_requirements
from stacks.model import StackError
from tests.stacks.conftest import REPO, SSH_KEY, Constructed, blueprint_of, construct, example, run_program
from tests.stacks.mocks import plain
from tests.stacks.tagging import assert_every_resource_labelled, assert_no_plaintext_secret


@pytest.fixture(scope="module")
def built(llm16k_stack: Constructed) -> Constructed:
    return llm16k_stack


def test_gpu_nodes_are_one_auto_scaling_group_of_the_planned_size(built: Constructed, llm16k: Blueprint) -> None:
    assert llm16k.fleets is not None
    (fleet,) = llm16k.fleets.fleets
    (group,) = built.mocks.of_type("aws:autoscaling/group:Group")
    inputs = plain(group.inputs)
    assert inputs["minSize"] == inputs["maxSize"] == inputs["desiredCapacity"] == fleet.size == 2048
    assert inputs["name"] == "llm-training-16k-gpu-fleet-1"
    tags = {t["key"]: t["value"] for t in inputs["tags"]}
    assert tags["clustersmith:fleet"] == "gpu-fleet-1" and tags["clustersmith:role"] == "gpu_client"
    assert tags["clustersmith:design"] == "llm-training-16k"
    assert all(t["propagateAtLaunch"] for t in inputs["tags"]), "instances must carry the tags inventory lists by"
    (subnet,) = [s for s in built.mocks.of_type("aws:ec2/subnet:Subnet") if s.name.endswith("-compute")]
    assert inputs["vpcZoneIdentifiers"] == [f"{subnet.name}-id"]
    # only the monitoring host is an instance of its own: no resource per GPU node
    instances = built.mocks.of_type("aws:ec2/instance:Instance")
    assert [r.name for r in instances] == ["mon-1"]
    assert len(built.mocks.resources) < 30


def test_gpu_instances_use_the_planned_type_in_the_cluster_placement_group(built: Constructed,
                                                                           llm16k: Blueprint) -> None:
    (lt,) = built.mocks.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    inputs = plain(lt.inputs)
    assert inputs["instanceType"] == llm16k.compute.node_type.value == "p5.48xlarge"
    (pg,) = built.mocks.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert plain(pg.inputs)["strategy"] == "cluster"
    (group,) = built.mocks.of_type("aws:autoscaling/group:Group")
    assert plain(group.inputs)["placementGroup"] == f"{pg.name}-0000001"  # the group's (auto-)name
    assert plain(group.inputs)["launchTemplate"]["id"] == f"{lt.name}-id"
    assert "capacityReservationSpecification" not in inputs and "instanceMarketOptions" not in inputs
    # an Auto Scaling group puts its instances in its own subnets: the template's interfaces name none
    assert not any("subnetId" in n for n in inputs["networkInterfaces"])


def test_one_efa_per_rail_and_one_ena(built: Constructed, llm16k: Blueprint) -> None:
    (lt,) = built.mocks.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    nics = plain(lt.inputs)["networkInterfaces"]
    kinds = Counter(n.get("interfaceType", "interface") for n in nics)
    assert kinds["efa-only"] == llm16k.compute.rails.value == 32
    assert kinds["interface"] == 1
    primary = [n for n in nics if n.get("interfaceType") is None]
    assert primary[0]["networkCardIndex"] == 0 and primary[0]["deviceIndex"] == 0
    cards = sorted(int(n["networkCardIndex"]) for n in nics if n.get("interfaceType") == "efa-only")
    assert cards == list(range(32))
    card0 = [n for n in nics if n.get("interfaceType") == "efa-only" and n["networkCardIndex"] == 0]
    assert card0[0]["deviceIndex"] == 1


def test_security_group_lets_efa_traffic_between_members(built: Constructed) -> None:
    (sg,) = built.mocks.of_type("aws:ec2/securityGroup:SecurityGroup")
    inputs = plain(sg.inputs)
    assert any(r.get("self") and r["protocol"] == "-1" for r in inputs["ingress"])
    assert any(r.get("self") and r["protocol"] == "-1" for r in inputs["egress"])
    assert any(r.get("cidrBlocks") == ["192.0.2.0/24"] and r["fromPort"] == 22 for r in inputs["ingress"])


def test_fsx_capacity_and_throughput_come_from_the_blueprint(built: Constructed, llm16k: Blueprint) -> None:
    (fsx,) = built.mocks.of_type("aws:fsx/lustreFileSystem:LustreFileSystem")
    m = llm16k.storage.managed
    assert m is not None
    inputs = plain(fsx.inputs)
    assert inputs["storageCapacity"] == m.capacity_gib == 1920000
    assert inputs["perUnitStorageThroughput"] == m.per_unit_throughput == 1000
    assert inputs["deploymentType"] == "PERSISTENT_2"
    # the file system's throughput is capacity x per-unit throughput and meets the spec's read target
    target = load_requirements(REPO / "examples" / "llm-training-16k.yaml").performance.storage.read_throughput.value
    assert m.capacity_gib / 1024 * m.per_unit_throughput * 1e6 >= target
    fs = built.outputs["file_system"]
    assert fs["capacity_gib"] == 1920000 and fs["mount"].endswith("@tcp:/abcdef")


def test_tags_and_secrets(built: Constructed, llm16k: Blueprint) -> None:
    assert_every_resource_labelled(built.mocks, llm16k.name, "llm-training-16k.yaml")
    assert_no_plaintext_secret(built.mocks, built.outputs, secrets=[])


def test_outputs_name_the_fleet_and_its_efa_rails(built: Constructed) -> None:
    assert [h["name"] for h in built.outputs["hosts"]] == ["mon-1"]
    (fleet,) = built.outputs["fleets"]
    assert fleet["ref"] == {"provider": "aws", "region": "us-east-1", "group": "llm-training-16k-gpu-fleet-1"}
    assert (fleet["name_prefix"], fleet["first"], fleet["size"], fleet["host_tag"]) == (
        "gpu-", 1, 2048, "clustersmith:host")
    assert fleet["user"] == "ubuntu"
    assert [r["network_card"] for r in fleet["rails"]] == list(range(32))


def _small(**target: object) -> dict[str, object]:
    doc = example("llm-training-16k.yaml", compute__gpus=64, performance__storage__read_throughput=">=50GB/s",
                  performance__storage__write_throughput=">=10GB/s", data__training_set="50TB",
                  data__validation_set="1TB", data__checkpoint_size="1TB")
    doc["target"].update(target)
    return doc


@pytest.mark.parametrize(("target", "market"), [({"capacity_reservation": "cr-0123456789abcdef0"}, None),
                                                 ({"capacity_reservation": "cr-0123456789abcdef0",
                                                   "capacity_block": True}, "capacity-block")])
def test_a_capacity_reservation_or_block_the_spec_names_is_targeted(target: dict[str, object],
                                                                    market: str | None) -> None:
    bp = blueprint_of(_small(**target))
    assert bp.fleets is not None and bp.fleets.capacity.reservation == "cr-0123456789abcdef0"
    (lt,) = construct(bp).mocks.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    inputs = plain(lt.inputs)
    assert inputs["capacityReservationSpecification"]["capacityReservationTarget"] == {
        "capacityReservationId": "cr-0123456789abcdef0"}
    assert inputs.get("instanceMarketOptions", {}).get("marketType") == market


def test_missing_zone_is_a_clear_error() -> None:
    doc = example("llm-training-16k.yaml", compute__gpus=64, performance__storage__read_throughput=">=100GB/s",
                  performance__storage__write_throughput=">=50GB/s", data__training_set="50TB")
    doc["target"].pop("availability_zone")
    with pytest.raises(StackError, match=r"no availability zone: set target\.availability_zone"):
        construct(blueprint_of(doc))


def test_every_instance_has_encrypted_ebs_and_imdsv2(built: Constructed) -> None:
    """Issue 16: EBS encryption is not left to the account default, and every instance needs IMDSv2 tokens."""
    (template,) = built.mocks.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    lt = plain(template.inputs)
    assert [m["ebs"]["encrypted"] for m in lt["blockDeviceMappings"]] == ["true"]
    assert lt["metadataOptions"]["httpTokens"] == "required"
    standalone = [plain(i.inputs) for i in built.mocks.of_type("aws:ec2/instance:Instance")]
    assert standalone, "the monitoring host is an instance of its own"
    for inst in standalone:
        assert inst["rootBlockDevice"]["encrypted"] is True
        assert inst["metadataOptions"]["httpTokens"] == "required"


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "::/0", "10.0.0.0/0"])
def test_ssh_from_anywhere_is_refused_unless_the_stack_says_so(cidr: str) -> None:
    from stacks.config import StackConfig, check_admin_cidr

    with pytest.raises(StackError, match=r"opens SSH to the whole internet.*allowAdminFromAnywhere true"):
        check_admin_cidr(StackConfig(admin_cidr=cidr))
    check_admin_cidr(StackConfig(admin_cidr=cidr, allow_admin_from_anywhere=True))
    check_admin_cidr(StackConfig(admin_cidr="203.0.113.0/24"))
    with pytest.raises(StackError, match="is not a CIDR"):
        check_admin_cidr(StackConfig(admin_cidr="anywhere"))


def test_the_generated_program_refuses_an_open_admin_cidr(built_examples: Path) -> None:
    with pytest.raises(Exception, match="opens SSH to the whole internet") as info:
        run_program(built_examples / "llm-training-16k" / "pulumi",
                    {"clustersmith:sshPublicKey": SSH_KEY, "clustersmith:adminCidr": "0.0.0.0/0"})
    assert "allowAdminFromAnywhere" in str(info.value)


MONITORING_PORTS = {9090, 9093, 9100, 9400}


def _monitoring_ingress(sg_inputs: dict[str, object]) -> list[dict[str, object]]:
    rules = sg_inputs["ingress"]
    assert isinstance(rules, list)
    return [r for r in rules if not r.get("self") and r["protocol"] == "tcp"
            and any(r["fromPort"] <= p <= r["toPort"] for p in MONITORING_PORTS)]


def test_monitoring_ports_are_open_to_the_management_network_only(built: Constructed, llm16k: Blueprint) -> None:
    assert llm16k.target.management_network is not None
    network = llm16k.target.management_network.value
    (vpc,) = built.mocks.of_type("aws:ec2/vpc:Vpc")
    assert plain(vpc.inputs)["cidrBlock"] == network == llm16k.monitoring.listen_cidr.value
    (sg,) = built.mocks.of_type("aws:ec2/securityGroup:SecurityGroup")
    rules = _monitoring_ingress(plain(sg.inputs))
    assert {r["fromPort"] for r in rules} == {j.port for j in llm16k.monitoring.scrape} == MONITORING_PORTS
    assert all(r["cidrBlocks"] == [network] and r["fromPort"] == r["toPort"] for r in rules)


def test_the_spec_management_network_is_the_vpc() -> None:
    doc = example("llm-training-16k.yaml", compute__gpus=64, target__management_network="10.40.0.0/16",
                  performance__storage__read_throughput=">=50GB/s", performance__storage__write_throughput=">=10GB/s",
                  data__training_set="50TB", data__validation_set="1TB", data__checkpoint_size="1TB")
    bp = blueprint_of(doc)
    built = construct(bp)
    (vpc,) = built.mocks.of_type("aws:ec2/vpc:Vpc")
    assert plain(vpc.inputs)["cidrBlock"] == "10.40.0.0/16"
    subnets = [plain(s.inputs)["cidrBlock"] for s in built.mocks.of_type("aws:ec2/subnet:Subnet")]
    assert subnets and all(s.startswith("10.40.") for s in subnets)
    (sg,) = built.mocks.of_type("aws:ec2/securityGroup:SecurityGroup")
    assert {tuple(r["cidrBlocks"]) for r in _monitoring_ingress(plain(sg.inputs))} == {("10.40.0.0/16",)}
