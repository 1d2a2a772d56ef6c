"""The GCP stack of the recsys example under mocks: A3 Ultra VMs on the RoCE network profile, Managed Lustre."""

from __future__ import annotations

import pytest

from blueprints.blueprint import Blueprint
from blueprints.errors import InfeasibleError
from blueprints.loader import load_requirements
from stacks.config import StackConfig
from stacks.model import StackError
from tests.stacks.conftest import REPO, SSH_KEY, Constructed, blueprint_of, construct, example
from tests.stacks.mocks import plain
from tests.stacks.tagging import assert_every_resource_labelled, assert_no_plaintext_secret


@pytest.fixture(scope="module")
def recsys() -> Blueprint:
    return blueprint_of(example("recsys-inference.yaml"), "examples/recsys-inference.yaml")


@pytest.fixture(scope="module")
def built(recsys: Blueprint) -> Constructed:
    return construct(recsys, StackConfig(ssh_public_key=SSH_KEY, project="clustersmith-test"))


def test_gpu_nodes_are_a_managed_instance_group_of_the_planned_type(built: Constructed, recsys: Blueprint) -> None:
    (group,) = built.mocks.of_type("gcp:compute/instanceGroupManager:InstanceGroupManager")
    inputs = plain(group.inputs)
    assert inputs["targetSize"] == recsys.compute.nodes.value == 32
    assert inputs["zone"] == "us-central1-a" and inputs["name"] == "recsys-inference-gpu-fleet-1"
    (template,) = built.mocks.of_type("gcp:compute/instanceTemplate:InstanceTemplate")
    assert inputs["versions"][0]["instanceTemplate"].startswith(f"https://www.googleapis.com/compute/v1/projects/p/"
                                                                 f"{template.name}")
    t = plain(template.inputs)
    assert t["machineType"] == recsys.compute.node_type.value == "a3-ultragpu-8g"
    assert t["labels"]["clustersmith-fleet"] == "gpu-fleet-1" and t["labels"]["clustersmith-role"] == "gpu-client"
    assert "reservationAffinity" not in t
    assert [v.name for v in built.mocks.of_type("gcp:compute/instance:Instance")] == ["mon-1"]


def test_each_rail_is_an_mrdma_nic_on_the_roce_profile(built: Constructed, recsys: Blueprint) -> None:
    nets = {n.name: plain(n.inputs) for n in built.mocks.of_type("gcp:compute/network:Network")}
    rdma = nets["recsys-inference-rdma"]
    assert rdma["networkProfile"] == "projects/clustersmith-test/global/networkProfiles/us-central1-a-vpc-roce"
    assert rdma["mtu"] == 8896
    rails = [s for s in built.mocks.of_type("gcp:compute/subnetwork:Subnetwork") if "rail" in s.name]
    assert len(rails) == recsys.compute.rails.value == 8
    (template,) = built.mocks.of_type("gcp:compute/instanceTemplate:InstanceTemplate")
    t = plain(template.inputs)
    assert [n["nicType"] for n in t["networkInterfaces"]] == ["GVNIC", "GVNIC"] + ["MRDMA"] * 8
    assert t["scheduling"]["onHostMaintenance"] == "TERMINATE"


def test_each_group_has_a_compact_placement_policy(built: Constructed) -> None:
    (policy,) = built.mocks.of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert plain(policy.inputs)["groupPlacementPolicy"]["collocation"] == "COLLOCATED"
    (template,) = built.mocks.of_type("gcp:compute/instanceTemplate:InstanceTemplate")
    assert plain(template.inputs)["resourcePolicies"] == f"https://www.googleapis.com/compute/v1/projects/p/{policy.name}"


def test_more_than_a_thousand_nodes_are_split_into_groups_and_a_reservation_is_consumed() -> None:
    bp = blueprint_of(example("recsys-inference.yaml", compute__gpus=8 * 2001, target__project="p",
                              target__reservation="a3u-block-1"))
    assert bp.fleets is not None
    assert [(f.first, f.size) for f in bp.fleets.fleets] == [(1, 667), (668, 667), (1335, 667)]
    built = construct(bp, StackConfig(ssh_public_key=SSH_KEY))
    groups = [plain(g.inputs) for g in built.mocks.of_type("gcp:compute/instanceGroupManager:InstanceGroupManager")]
    assert [g["targetSize"] for g in groups] == [667, 667, 667]
    assert len(built.mocks.of_type("gcp:compute/resourcePolicy:ResourcePolicy")) == 3
    for template in built.mocks.of_type("gcp:compute/instanceTemplate:InstanceTemplate"):
        assert plain(template.inputs)["reservationAffinity"] == {
            "type": "SPECIFIC_RESERVATION", "specificReservation": {
                "key": "compute.googleapis.com/reservation-name", "values": ["a3u-block-1"]}}
    assert [f["first"] for f in built.outputs["fleets"]] == [1, 668, 1335]


def test_managed_lustre_capacity_and_throughput_come_from_the_blueprint(built: Constructed,
                                                                        recsys: Blueprint) -> None:
    (lustre,) = built.mocks.of_type("gcp:lustre/instance:Instance")
    m = recsys.storage.managed
    assert m is not None
    inputs = plain(lustre.inputs)
    assert inputs["capacityGib"] == str(m.capacity_gib) == "108000"
    assert inputs["perUnitStorageThroughput"] == "1000"
    assert len(inputs["filesystem"]) <= 8 and inputs["filesystem"].isalnum()
    (conn,) = built.mocks.of_type("gcp:servicenetworking/connection:Connection")
    assert plain(conn.inputs)["service"] == "servicenetworking.googleapis.com"
    asked = load_requirements(REPO / "examples" / "recsys-inference.yaml").performance.storage.read_throughput
    assert m.throughput.value.value >= asked.value


def test_labels_rails_and_secrets(built: Constructed) -> None:
    assert_every_resource_labelled(built.mocks, "recsys-inference", "recsys-inference.yaml")
    assert_no_plaintext_secret(built.mocks, built.outputs, secrets=[])
    (fleet,) = built.outputs["fleets"]
    assert len(fleet["rails"]) == 8 and all(r["kind"] == "mrdma" and r["prefix"] for r in fleet["rails"])
    assert fleet["ref"] == {"provider": "gcp", "project": "clustersmith-test", "zone": "us-central1-a",
                            "group": "recsys-inference-gpu-fleet-1"}


def test_missing_project_is_a_clear_error(recsys: Blueprint) -> None:
    with pytest.raises(StackError, match=r"needs target\.project \(or clustersmith:project\)"):
        construct(recsys, StackConfig(ssh_public_key=SSH_KEY))


def test_tcpxo_machine_type_is_refused_at_plan_time_with_the_rdma_alternatives() -> None:
    with pytest.raises(InfeasibleError) as err:
        blueprint_of(example("recsys-inference.yaml", compute__accelerator="H100-SXM",
                             compute__instance_type="a3-megagpu-8g", target__project="p"))
    (problem,) = err.value.problems
    assert problem.path == "compute.instance_type"
    assert problem.message.startswith("'a3-megagpu-8g' on target.provider gcp: a3-megagpu-8g networks its GPUs with "
                                      "GPUDirect-TCPXO, which clustersmith does not build")
    assert "B200 (a4-highgpu-8g), H200 (a3-ultragpu-8g)" in problem.message


def test_the_stack_still_refuses_a_tcpxo_blueprint_written_by_hand(recsys: Blueprint) -> None:
    compute = recsys.compute.model_copy(update={
        "node_type": recsys.compute.node_type.model_copy(update={"value": "a3-megagpu-8g"})})
    with pytest.raises(StackError, match="GPUDirect-TCPXO"):
        construct(recsys.model_copy(update={"compute": compute}),
                  StackConfig(ssh_public_key=SSH_KEY, project="clustersmith-test"))


def test_host_subnets_lie_in_the_management_network_and_only_it_reaches_them(built: Constructed,
                                                                               recsys: Blueprint) -> None:
    import ipaddress

    assert recsys.target.management_network is not None
    network = ipaddress.IPv4Network(recsys.target.management_network.value)
    assert recsys.monitoring.listen_cidr.value == str(network)
    hosts = [plain(s.inputs)["ipCidrRange"] for s in built.mocks.of_type("gcp:compute/subnetwork:Subnetwork")
             if "-net" in s.name]
    assert len(hosts) == 2 and all(ipaddress.IPv4Network(c).subnet_of(network) for c in hosts)
    rails = [plain(s.inputs)["ipCidrRange"] for s in built.mocks.of_type("gcp:compute/subnetwork:Subnetwork")
             if "-rail" in s.name]
    assert rails and not any(ipaddress.IPv4Network(c).overlaps(network) for c in rails)
    for fw in built.mocks.of_type("gcp:compute/firewall:Firewall"):
        inputs = plain(fw.inputs)
        opens_all = any(a["protocol"] == "all" or set(a.get("ports", [])) - {"22"} for a in inputs["allows"])
        if opens_all:  # anything beyond SSH is admitted from inside the management network only
            assert all(ipaddress.IPv4Network(r).subnet_of(network) for r in inputs["sourceRanges"]), fw.name
