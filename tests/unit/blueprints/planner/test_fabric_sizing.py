"""Fabric sizing against the DGX SuperPOD reference counts (field-numbers 10.2, RA-11333-001 tables 3 and 4)."""

from __future__ import annotations

import pytest

from blueprints.planner.fabric import balanced_tree, ib_scalable_units
from tests.unit.blueprints.planner.test_rules import planned, spec


def ib(gpus: int) -> dict[str, object]:
    return spec(compute__gpus=gpus, compute__accelerator="H100-SXM", target__fabric="infiniband",
                performance__storage__read_throughput=">=10GB/s")


# SUs, DGX nodes, GPUs, leaf, spine, core, UFM positions in the SUs: every published row (field-numbers 10.2, DGX
# SuperPOD RA-11333-001 tables 3 and 4). Up to 4 SU (two tiers) the UFM takes one node position (32 x SU - 1 DGX);
# at 16, 32 and 64 SU (three tiers) every position is a DGX and the UFM attaches outside the SUs.
SUPERPOD = [
    (1, 31, 248, 8, 4, 0, 1),
    (2, 63, 504, 16, 8, 0, 1),
    (3, 95, 760, 24, 16, 0, 1),
    (4, 127, 1016, 32, 16, 0, 1),
    (16, 512, 4096, 128, 128, 64, 0),
    (32, 1024, 8192, 256, 256, 128, 0),
    (64, 2048, 16384, 512, 512, 256, 0),
]


@pytest.mark.parametrize(("sus", "nodes", "gpus", "leaf", "spine", "core", "ufm"), SUPERPOD)
def test_infiniband_reproduces_the_superpod_tables(sus: int, nodes: int, gpus: int, leaf: int, spine: int,
                                                   core: int, ufm: int) -> None:
    f = planned(ib(gpus)).fabric
    assert f.switch == "QM9700" and gpus == nodes * 8
    assert f.scalable_units is not None and f.scalable_units.value == sus
    assert (f.leaf_switches.value, f.spine_switches.value, f.core_switches.value) == (leaf, spine, core)
    assert f.fabric_manager_positions is not None and f.fabric_manager_positions.value == ufm
    assert nodes + ufm == sus * 32, "the published rows fill every position"


@pytest.mark.parametrize(("gpus", "sus", "tiers", "leaf", "spine", "core", "ufm"), [
    (255 * 8, 8, 2, 64, 32, 0, 1),    # 8 SU of 8 rails: 64 leaves, the most two tiers hold; 255 DGX + the UFM
    (256 * 8, 8, 3, 64, 64, 32, 0),   # one more DGX leaves the UFM no port on two tiers: three, UFM outside
    (257 * 8, 9, 3, 72, 72, 36, 0),   # 9 SU: three tiers, every position a DGX
    (511 * 8, 16, 3, 128, 128, 64, 0),
])
def test_the_fabric_manager_rule_between_the_published_rows(gpus: int, sus: int, tiers: int, leaf: int, spine: int,
                                                             core: int, ufm: int) -> None:
    f = planned(ib(gpus)).fabric
    assert f.scalable_units is not None and f.scalable_units.value == sus
    assert (f.tiers.value, f.leaf_switches.value, f.spine_switches.value, f.core_switches.value) == (
        tiers, leaf, spine, core)
    assert f.fabric_manager_positions is not None and f.fabric_manager_positions.value == ufm
    if ufm == 0:
        assert "outside the SUs" in f.fabric_manager_positions.derived_from.formula
    if (tiers, leaf) == (3, 64):
        assert "UFM no port" in f.tiers.derived_from.formula


@pytest.mark.parametrize(("gpus", "sus", "leaf", "spine"), [
    (600, 3, 24, 16),     # 75 DGX + UFM -> 3 SU, not 19 leaves
    (1104, 5, 40, 32),    # 138 DGX + UFM -> 5 SU, 40 leaves, 32 uplinks over 32 spines
    (8, 1, 8, 4),         # one DGX still gets the full SU
    (256, 2, 16, 8),      # 32 DGX + UFM = 33 positions: rounds up to 2 SU
])
def test_partial_systems_round_up_to_whole_sus(gpus: int, sus: int, leaf: int, spine: int) -> None:
    f = planned(ib(gpus)).fabric
    assert f.scalable_units is not None and f.scalable_units.value == sus
    assert (f.leaf_switches.value, f.spine_switches.value) == (leaf, spine)
    assert f.leaf_switches.value % 8 == 0
    assert "SU" in f.scalable_units.derived_from.formula and "spare" in f.scalable_units.derived_from.formula


@pytest.mark.parametrize(("leaves", "radix", "expected"), [
    (1, 64, (1, 0, 0, 0)),
    (8, 64, (2, 4, 0, 8)),
    (24, 64, (2, 16, 0, 2)),   # 3 SU: 2 cables from each leaf to each of 16 spines (field-numbers 10.2)
    (40, 64, (2, 32, 0, 1)),
    (64, 64, (2, 32, 0, 1)),   # k leaves = the 2-tier limit k^2/2 endpoints
    (65, 64, (3, 65, 33, 1)),
    (2048, 64, (3, 2048, 1024, 1)),  # k^3/4 endpoints
    (2049, 64, None),
])
def test_balanced_tree(leaves: int, radix: int, expected: tuple[int, int, int, int] | None) -> None:
    shape = balanced_tree(leaves, radix)
    assert shape == expected
    if shape is not None and shape[0] == 2:
        assert (radix // 2) % shape[1] == 0  # each leaf's uplinks divide evenly over the spines


def test_scalable_units_count_the_fabric_manager_position() -> None:
    assert ib_scalable_units(31, 64, 8) == (1, 32, 1)
    assert ib_scalable_units(32, 64, 8) == (2, 32, 1)
    assert ib_scalable_units(512, 64, 8) == (16, 32, 0)
    assert ib_scalable_units(511, 64, 4) == (16, 32, 1), "4 rails: 16 SU are 64 leaves, still two tiers"
    assert balanced_tree(64, 64, tiers=3) == (3, 64, 32, 1), "three tiers asked for where two would do"


@pytest.mark.parametrize("gpus", [600, 1104, 4096])
def test_roce_leaves_are_a_multiple_of_the_rails(gpus: int) -> None:
    f = planned(spec(compute__gpus=gpus, performance__storage__read_throughput=">=10GB/s")).fabric
    assert f.kind.value == "roce" and f.rail_optimized.value
    assert f.leaf_switches.value % 8 == 0
    assert f.scalable_units is None and f.fabric_manager_positions is None
    assert f.designed_endpoints is not None and f.designed_endpoints.value >= f.endpoints.value
    if f.tiers.value == 2:
        assert (f.radix or 0) // 2 % f.spine_switches.value == 0


def test_storage_fabric_is_counted_on_its_own() -> None:
    bp = planned(spec())
    sf = bp.storage_fabric
    storage_ports = sum(t.nodes.value * 2 for t in bp.storage.tiers if t.nodes.value and t.name != "local_cache")
    assert sf.endpoints.value == bp.compute.nodes.value * bp.compute.storage_nics + storage_ports
    assert sf.switch is not None and sf.leaf_switches.value >= 1
    assert sf.leaf_switches.value * (sf.radix or 0) // 2 >= sf.endpoints.value
    assert sf.switch not in ("", None) and bp.fabric.switch is not None  # two fabrics, two counts


def test_cloud_storage_fabric_is_the_providers() -> None:
    sf = planned(spec("llm-training-16k.yaml")).storage_fabric
    assert sf.provider_managed and sf.switch is None and sf.leaf_switches.value == 0
