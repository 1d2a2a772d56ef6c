"""nccl's decision module: profile, switches, HCA check and the two files it writes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.rolevars.nccl import nccl_vars
from tests.roles.library import load

REPO = Path(__file__).resolve().parents[4]


def _load_module() -> ModuleType:
    path = REPO / "roles" / "nccl" / "library" / "nccl_config.py"
    spec = importlib.util.spec_from_file_location("nccl_config", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["nccl_config"] = module
    spec.loader.exec_module(module)
    return module


M = _load_module()


RDMA_FIXTURES = REPO / "tests" / "roles" / "fixtures"


def params(example: str, **override: Any) -> dict[str, Any]:
    spec = REPO / "examples" / f"{example}.yaml"
    rv = nccl_vars(plan(load_requirements(spec), spec_file=str(spec))).model_dump(mode="json")
    p = {"env": rv["nccl_env"], "degraded_env": rv["nccl_degraded_env"], "ib_hca_rails": rv["nccl_ib_hca_rails"]}
    p.update(override)
    return p


def lab_record() -> str:
    """The rails record rdma_links writes, from the recorded ``rdma -j link show`` of lab host client-2."""
    rl = load("rdma", "rdma_links.py")
    links = rl.parse_links((RDMA_FIXTURES / "rdma-link-show.json").read_text())
    found = [rl.RailDevice(i, f"rail{i}", f"rail{i}", *rl.device_of(f"rail{i}", [], links), gid_index=1)
             for i in (0, 1)]
    return str(rl.facts_text(found))


def run(tmp_path: Path, p: dict[str, Any], *hcas: str, record: str | None = None, check_mode: bool = False) -> Any:
    root = tmp_path / "sys"
    for hca in hcas:
        (root / "class" / "infiniband" / hca).mkdir(parents=True, exist_ok=True)
    root.mkdir(exist_ok=True)
    facts = tmp_path / "facts.d" / "rdma.fact"
    if record is not None:
        facts.parent.mkdir(exist_ok=True)
        facts.write_text(record)
    paths = {"conf": tmp_path / "etc" / "nccl.conf", "env": tmp_path / "etc" / "nccl.env",
             "degraded": tmp_path / "etc" / "clustersmith" / "nccl" / "degraded.env", "rdma_facts": facts}
    return M.run(M.Inputs.from_params(p), paths, root, check_mode, "client-1")


def test_lab_writes_the_files_with_nccl_ib_hca_from_the_rdma_record_then_is_idempotent(tmp_path: Path) -> None:
    p = params("lab")
    changed, diffs, env = run(tmp_path, p, "rxe0", "rxe1", record=lab_record())
    assert changed is True and len(diffs) == 3
    conf = (tmp_path / "etc" / "nccl.conf").read_text().splitlines()
    assert "NCCL_IB_HCA==rxe0:1,rxe1:1" in conf  # exact match, names as the host reports them
    for e in p["env"]:
        assert f"{e['name']}={e['value']}" in conf
    assert f'NCCL_IB_TC="{env["NCCL_IB_TC"]}"' in (tmp_path / "etc" / "nccl.env").read_text()
    assert run(tmp_path, p)[:2] == (False, [])


def test_the_degraded_profile_is_a_job_level_file_with_an_algorithm_for_every_collective(tmp_path: Path) -> None:
    run(tmp_path, params("cv-training-500tb", ib_hca_rails=[]))
    degraded = (tmp_path / "etc" / "clustersmith" / "nccl" / "degraded.env").read_text()
    assert 'NCCL_ALGO="tree,ring,collnetdirect,collnetchain,nvls,nvlstree,pat;allreduce:ring"' in degraded
    assert "NCCL_PROTO" not in degraded
    assert "NCCL_ALGO" not in (tmp_path / "etc" / "nccl.conf").read_text()


@pytest.mark.parametrize(("field", "entry", "needle"), [
    ("env", {"name": "NCCL_ALGO", "value": "Tree"}, "nccl_env sets NCCL_ALGO=Tree: NCCL chooses it itself"),
    ("env", {"name": "NCCL_IB_GID_INDEX", "value": "3"}, "nccl_env sets NCCL_IB_GID_INDEX=3"),
    ("env", {"name": "NCCL_IB_HCA", "value": "mlx5_0"}, "the role writes it per host from the rdma role's record"),
    ("degraded_env", {"name": "NCCL_PROTO", "value": "Simple"}, "a list without a collective prefix"),
    ("degraded_env", {"name": "NCCL_ALGO", "value": "Ring"}, "expected a default list for every collective"),
    ("degraded_env", {"name": "NCCL_ALGO", "value": "allreduce:ring"}, "expected a default list"),
])
def test_forced_or_trap_variables_are_refused(tmp_path: Path, field: str, entry: dict[str, str],
                                              needle: str) -> None:
    p = params("lab")
    p[field] = [*p[field], entry]
    with pytest.raises(M.NcclError) as info:
        run(tmp_path, p, "rxe0", "rxe1", record=lab_record())
    assert needle in str(info.value)
    assert not (tmp_path / "etc").exists()


def test_a_compute_rail_the_rdma_role_did_not_record_stops_the_play(tmp_path: Path) -> None:
    with pytest.raises(M.NcclError) as info:
        run(tmp_path, params("lab", ib_hca_rails=[0, 7]), "rxe0", "rxe1", record=lab_record())
    assert "compute rail 7 has no RDMA device" in str(info.value)
    assert "the rdma role found: rail 0 rxe0:1, rail 1 rxe1:1" in str(info.value)


def test_without_the_rdma_record_the_play_says_to_run_the_rdma_role(tmp_path: Path) -> None:
    with pytest.raises(M.NcclError, match="run the rdma role first"):
        run(tmp_path, params("lab"), "rxe0", "rxe1")


def test_a_recorded_device_the_host_no_longer_has_is_named(tmp_path: Path) -> None:
    with pytest.raises(M.NcclError) as info:
        run(tmp_path, params("lab"), "rxe0", record=lab_record())
    assert "NCCL_IB_HCA names rxe1, which client-1 does not have" in str(info.value)
    assert "infiniband holds: rxe0" in str(info.value)


def test_check_mode_writes_nothing(tmp_path: Path) -> None:
    changed, diffs, _ = run(tmp_path, params("lab"), "rxe0", "rxe1", record=lab_record(), check_mode=True)
    assert changed is True and diffs and not (tmp_path / "etc").exists()


def test_efa_sets_no_nccl_ib_hca(tmp_path: Path) -> None:
    p = params("llm-training-16k")
    _, _, env = run(tmp_path, p)
    assert "NCCL_IB_HCA" not in env
