"""Fabric sizing against the DGX SuperPOD reference counts (field-numbers 10.2, RA-11333-001 tables 3 and 4)."""

from __future__ import annotations

import pytest

from blueprints.planner.fabric import balanced_tree, ib_scalable_units
from tests.unit.blueprints.planner.test_rules import planned, spec


def ib(gpus: int) -> dict[str, object]:
    return spec(compute__gpus=gpus, compute__accelerator="H100-SXM", target__fabric="infiniband",
                performance__storage__read_throughput=">=10GB/s")


# SUs, the table's nodes column, GPUs planned, leaf, spine, core. Tables 3/4 (field-numbers 10.2).
# Table 4 (1-4 SU) lists DGX with the UFM position taken (32 x SU - 1); table 3 (16-64 SU) lists
# positions (32 x SU; its 4 SU row says 128 where table 4 says 127 for the same 32/16 switches),
# so the DGX planned there are positions - 1.
SUPERPOD = [
    (1, 31, 248, 8, 4, 0),
    (2, 63, 504, 16, 8, 0),
    (3, 95, 760, 24, 16, 0),
    (4, 127, 1016, 32, 16, 0),
    (16, 512, (512 - 1) * 8, 128, 128, 64),
    (32, 1024, (1024 - 1) * 8, 256, 256, 128),
    (64, 2048, (2048 - 1) * 8, 512, 512, 256),
]


@pytest.mark.parametrize(("sus", "table_nodes", "gpus", "leaf", "spine", "core"), SUPERPOD)
def test_infiniband_reproduces_the_superpod_tables(sus: int, table_nodes: int, gpus: int, leaf: int, spine: int,
                                                   core: int) -> None:
    f = planned(ib(gpus)).fabric
    assert f.switch == "QM9700"
    assert f.scalable_units is not None and f.scalable_units.value == sus
    assert (f.leaf_switches.value, f.spine_switches.value, f.core_switches.value) == (leaf, spine, core)
    assert f.fabric_manager_positions is not None and f.fabric_manager_positions.value == 1
    positions = sus * 32
    assert table_nodes in (positions - 1, positions)  # table 4 lists DGX, table 3 lists positions
    assert gpus // 8 + 1 <= positions


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
    assert ib_scalable_units(31, 64) == (1, 32)
    assert ib_scalable_units(32, 64) == (2, 32)


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
