"""Role variables of rdma, nvmeof and storage_tiering are exactly the Blueprint's values."""

from __future__ import annotations

import pytest

from blueprints.rolevars import builders
from blueprints.rolevars.nvmeof import NvmeofVars
from blueprints.rolevars.rdma import RdmaVars
from blueprints.rolevars.storage_tiering import StorageTieringVars
from tests.roles.blueprints import example


def test_the_three_roles_are_discovered() -> None:
    assert {"rdma", "nvmeof", "storage_tiering"} <= set(builders())


def test_rdma_takes_fabric_mtu_and_finds_the_gid_index_itself() -> None:
    bp = example("cv-training-500tb")
    rdma = builders()["rdma"](bp)["all"]
    assert isinstance(rdma, RdmaVars)
    assert rdma.rdma_mtu == bp.fabric.mtu.value == 9000
    assert rdma.rdma_fabric == "roce" and rdma.rdma_soft_roce is False
    assert rdma.rdma_gid_index == -1  # not taken from NCCL: the role finds and records it per device
    assert "NCCL_IB_GID_INDEX" not in {e.name for e in bp.nccl_environment()}


def test_rdma_in_the_lab_uses_soft_roce() -> None:
    rdma = builders()["rdma"](example("lab"))["all"]
    assert isinstance(rdma, RdmaVars)
    assert rdma.rdma_soft_roce is True and rdma.rdma_gid_index == 1 and rdma.rdma_mtu == 1500


def test_no_rdma_role_where_the_provider_owns_rdma() -> None:
    bp = example("llm-training-16k")
    assert bp.fabric.kind.value == "efa"
    assert builders()["rdma"](bp) == {}


def test_nvmeof_sides_carry_the_same_blueprint_values() -> None:
    bp = example("cv-training-500tb")
    by_group = builders()["nvmeof"](bp)
    target, host = by_group["storage_targets"], by_group["gpu_clients"]
    assert isinstance(target, NvmeofVars) and isinstance(host, NvmeofVars)
    assert (target.nvmeof_side, host.nvmeof_side) == ("target", "host")
    plan = bp.storage.nvmeof
    assert plan is not None
    assert host.nvmeof_iopolicy == plan.iopolicy.value
    assert host.nvmeof_ctrl_loss_tmo == plan.ctrl_loss_tmo.value
    assert host.nvmeof_reconnect_delay == plan.reconnect_delay.value
    assert host.nvmeof_fast_io_fail_tmo == plan.fast_io_fail_tmo.value
    assert host.nvmeof_keep_alive_tmo == plan.keep_alive_tmo.value
    assert host.nvmeof_tos == bp.qos.traffic_class.value == 106
    assert host.nvmeof_paths_per_subsystem == plan.paths_per_subsystem.value
    assert [s.nqn for s in host.nvmeof_subsystems] == [s.nqn for s in plan.subsystems]
    assert target.model_dump(exclude={"nvmeof_side"}) == host.model_dump(exclude={"nvmeof_side"})


@pytest.mark.parametrize(("name", "expected"), [("cv-training-500tb", "hot-"), ("lab", "storage-")])
def test_each_subsystem_is_served_by_a_planned_storage_target(name: str, expected: str) -> None:
    bp = example(name)
    assert bp.storage.nvmeof is not None
    targets = set(bp.hosts_by_role()["storage_target"])
    served = {group.name_prefix: group.names() for group in bp.groups_of("storage_target")}
    for sub in bp.storage.nvmeof.subsystems:
        assert sub.served_by in targets and sub.served_by.startswith(expected)
        assert sub.served_by in served[expected]  # a host of the tier's own group
    # the owners are shared out between the tier's targets in turn: no target serves two more than another
    load = [sum(s.served_by == t for s in bp.storage.nvmeof.subsystems) for t in served[expected]]
    assert max(load) - min(load) <= 1 and sum(load) == len(bp.storage.nvmeof.subsystems)
    by_group = builders()["nvmeof"](bp)["gpu_clients"]
    assert isinstance(by_group, NvmeofVars)
    assert [s.target_host for s in by_group.nvmeof_subsystems] == [s.served_by for s in bp.storage.nvmeof.subsystems]


def test_no_nvmeof_role_where_a_managed_service_stores_the_data() -> None:
    assert builders()["nvmeof"](example("recsys-inference")) == {}


def test_storage_tiering_takes_the_cache_plan_and_the_scratch_mount() -> None:
    bp = example("lab")
    tiering = builders()["storage_tiering"](bp)["gpu_clients"]
    assert isinstance(tiering, StorageTieringVars)
    cache = bp.storage.cache
    assert tiering.storage_tiering_cache_mode == cache.mode.value
    assert tiering.storage_tiering_cache_policy == cache.policy
    assert tiering.storage_tiering_cache_size_bytes == int(cache.size.value.value)
    assert tiering.storage_tiering_read_ahead_kb == cache.read_ahead_kb.value
    assert tiering.storage_tiering_dirty_background_ratio == cache.dirty_background_ratio
    assert tiering.storage_tiering_dirty_ratio == cache.dirty_ratio
    assert tiering.storage_tiering_mount_point == bp.acceptance.scratch_dir("tier").mount
