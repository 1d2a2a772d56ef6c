"""The fleet plan: how many provider fleets, which hosts each names, the InfiniBand partitions on Azure, the capacity
the spec reserves; and the spec's reservation fields refused by name when wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.errors import SpecError
from blueprints.loader import parse_requirements
from blueprints.planner import plan

REPO = Path(__file__).resolve().parents[4]
AZURE = {"provider": "azure", "region": "eastus"}


def spec(gpus: int, target: dict[str, Any], **compute: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((REPO / "examples" / "llm-training-16k.yaml").read_text())
    doc["compute"].update(gpus=gpus, **compute)
    doc["target"] = target
    doc["performance"]["storage"].update(read_throughput=">=50GB/s", write_throughput=">=10GB/s")
    doc["data"].update(training_set="50TB", validation_set="1TB", checkpoint_size="1TB")
    return doc


def planned(doc: dict[str, Any]) -> Any:
    return plan(parse_requirements(yaml.safe_dump(doc)), spec_file="examples/t.yaml")


CR_DESCRIBED = ("expected EC2 capacity reservation (or Capacity Block) id the GPU nodes launch into, e.g. "
                "cr-0123456789abcdef0")


@pytest.mark.parametrize(("nodes", "sizes"), [(1000, [1000]), (1001, [501, 500]), (12500, [962] * 2 + [961] * 11)])
def test_azure_scale_sets_hold_at_most_1000_vms_split_evenly_one_partition_each(nodes: int, sizes: list[int]) -> None:
    bp = planned(spec(8 * nodes, AZURE, instance_type="Standard_ND96isr_H100_v5"))
    fleets = bp.fleets
    assert fleets.kind == "azure-scale-set-flexible" and fleets.max_size.value == 1000
    assert [f.size for f in fleets.fleets][:2] == sizes[:2] and len(fleets.fleets) == len(sizes)
    assert [f.ib_partition for f in fleets.fleets] == list(range(len(sizes)))
    hosts = [h for f in fleets.fleets for h in f.host_names()]
    assert hosts == [f"gpu-{i}" for i in range(1, nodes + 1)], "the fleets cover the GPU group's names, in order"
    assert fleets.count.value == len(sizes)
    assert fleets.count.derived_from.spec == ("compute.gpus", "target.provider")
    assert fleets.count.derived_from.formula.startswith(f"ceil({nodes} / 1000) = {len(sizes)} fleet")
    assert any("InfiniBand partitions" in n for n in bp.notes) == (len(sizes) > 1)


def test_aws_is_one_auto_scaling_group_and_the_other_targets_have_no_fleets() -> None:
    bp = planned(spec(100000, {"provider": "aws", "region": "us-east-1", "availability_zone": "us-east-1a"}))
    (fleet,) = bp.fleets.fleets
    assert (fleet.name, fleet.first, fleet.size, fleet.ib_partition) == ("gpu-fleet-1", 1, 12500, None)
    assert bp.fleets.max_size is None and bp.fleets.host_tag == "clustersmith:host"
    assert bp.fleets.capacity.source.value == "on-demand"
    cv = plan(parse_requirements((REPO / "examples" / "cv-training-500tb.yaml").read_text()))
    assert cv.fleets is None


@pytest.mark.parametrize(("target", "source", "reservation"), [
    ({"provider": "aws", "region": "us-east-1", "availability_zone": "us-east-1a",
      "capacity_reservation": "cr-0123456789abcdef0"}, "reservation", "cr-0123456789abcdef0"),
    ({"provider": "aws", "region": "us-east-1", "availability_zone": "us-east-1a",
      "capacity_reservation": "cr-1a2b3c4d", "capacity_block": True}, "capacity-block", "cr-1a2b3c4d"),
])
def test_the_capacity_the_spec_reserves_is_traced(target: dict[str, Any], source: str, reservation: str) -> None:
    capacity = planned(spec(64, target)).fleets.capacity
    assert (capacity.source.value, capacity.reservation) == (source, reservation)
    assert "target.capacity_reservation" in capacity.source.derived_from.spec


@pytest.mark.parametrize(("target", "path", "message"), [
    ({"capacity_block": True}, "target.capacity_block",
     "capacity_block is true but no capacity_reservation is named; expected the Capacity Block's reservation id"),
    ({"capacity_reservation": "cr-xyz"}, "target.capacity_reservation", CR_DESCRIBED),
    ({"capacity_reservation": "r-0123456789abcdef0"}, "target.capacity_reservation", CR_DESCRIBED),
])
def test_aws_reservation_fields_are_refused_by_name(target: dict[str, Any], path: str, message: str) -> None:
    doc = spec(64, {"provider": "aws", "region": "us-east-1", "availability_zone": "us-east-1a", **target})
    with pytest.raises(SpecError) as err:
        parse_requirements(yaml.safe_dump(doc))
    (problem,) = err.value.problems
    assert problem.path == path and message in problem.message


def test_a_gcp_reservation_name_is_checked() -> None:
    doc: dict[str, Any] = yaml.safe_load((REPO / "examples" / "recsys-inference.yaml").read_text())
    doc["target"]["reservation"] = "A3U_Block"
    with pytest.raises(SpecError) as err:
        parse_requirements(yaml.safe_dump(doc))
    (problem,) = err.value.problems
    assert problem.path == "target.reservation" and problem.message.startswith("expected Compute Engine reservation")
    doc["target"]["reservation"] = "a3u-block-1"
    capacity = plan(parse_requirements(yaml.safe_dump(doc))).fleets.capacity
    assert (capacity.source.value, capacity.reservation) == ("reservation", "a3u-block-1")


def test_plan_shows_the_fleets_and_their_partitions() -> None:
    from rich.console import Console

    from blueprints.summary import print_summary

    console = Console(record=True, width=200)
    print_summary(planned(spec(8 * 2500, AZURE, instance_type="Standard_ND96isr_H100_v5")), console)
    text = console.export_text()
    assert "fleets (azure-scale-set-flexible): 3, because ceil(2500 / 1000) = 3 fleets" in text
    for row in ("gpu-fleet-1 │ gpu-1 .. gpu-834", "gpu-fleet-3 │ gpu-1668 .. gpu-2500"):
        assert row in text
    assert "InfiniBand partition" in text
