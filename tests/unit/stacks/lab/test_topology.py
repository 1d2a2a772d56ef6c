from __future__ import annotations

from pathlib import Path

import pytest

from blueprints.blueprint import load_blueprint
from blueprints.errors import ClusterSmithError
from blueprints.lab_plan import LabHost, LabPlan, LabRail
from stacks.lab.errors import LabInputError
from stacks.lab.topology import check_plan, mac, rail_address
from tests.default_lab import default_lab_plan

REPO = Path(__file__).resolve().parents[4]


def test_default_lab_plan_is_bootable() -> None:
    check_plan(default_lab_plan())


def test_default_lab_is_the_lab_that_building_the_example_writes() -> None:
    """One lab planner: the lab tier boots what `clustersmith build examples/lab.yaml`
    puts into blueprint.yaml (pinned in tests/golden/lab)."""
    built = load_blueprint(REPO / "tests" / "golden" / "lab" / "blueprint.yaml")
    assert default_lab_plan() == built.lab


def test_a_default_lab_spec_for_another_target_is_bad_input() -> None:
    with pytest.raises(ClusterSmithError, match="the default lab's spec must be for the lab target"):
        default_lab_plan(REPO / "examples" / "cv-training-500tb.yaml")


def test_every_problem_is_reported_at_once() -> None:
    plan = default_lab_plan()
    bad = plan.model_copy(
        update={
            "hosts": (*plan.hosts, LabHost(name="client-1", role="gpu_client", memory_mib=1024, cpus=1)),
            "rails": (
                LabRail(index=0, name="rail0", subnet="10.0.2.0/24", mtu=1500),
                LabRail(index=2, name="rail2", subnet="not-a-net", mtu=100),
            ),
        }
    )
    with pytest.raises(LabInputError) as caught:
        check_plan(bad)
    message = str(caught.value)
    assert "'client-1' appears twice" in message
    assert "rail indexes must be 0..1" in message
    assert "overlaps the management net" in message
    assert "'not-a-net' is not an IPv4 network" in message


def test_tiny_subnet_is_rejected() -> None:
    plan = LabPlan(
        hosts=default_lab_plan().hosts,
        rails=(LabRail(index=0, name="rail0", subnet="10.77.0.0/30", mtu=1500),),
        image=default_lab_plan().image,
    )
    with pytest.raises(LabInputError, match="room for fewer than 3 hosts"):
        check_plan(plan)


def test_addresses_follow_plan_order() -> None:
    assert rail_address("10.77.1.0/24", 0) == ("10.77.1.1", 24)
    assert rail_address("10.77.1.0/24", 2) == ("10.77.1.3", 24)


def test_macs_are_locally_administered_and_distinct() -> None:
    macs = {mac("lab", h, n) for h in range(3) for n in range(3)}
    assert len(macs) == 9
    assert all(m.startswith("52:54:") for m in macs)
