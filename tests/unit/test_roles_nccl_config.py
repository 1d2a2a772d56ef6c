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

REPO = Path(__file__).resolve().parents[2]


def _load_module() -> ModuleType:
    path = REPO / "roles" / "nccl" / "library" / "nccl_config.py"
    spec = importlib.util.spec_from_file_location("nccl_config", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["nccl_config"] = module
    spec.loader.exec_module(module)
    return module


M = _load_module()


def params(example: str, **override: Any) -> dict[str, Any]:
    spec = REPO / "examples" / f"{example}.yaml"
    rv = nccl_vars(plan(load_requirements(spec), spec_file=str(spec))).model_dump(mode="json")
    p = {"env": rv["nccl_env"], "degraded_env": rv["nccl_degraded_env"], "profile": rv["nccl_profile"],
         "hcas": rv["nccl_hcas"], "gpudirect_rdma": rv["nccl_gpudirect_rdma"],
         "in_network_reduction": rv["nccl_in_network_reduction"]}
    p.update(override)
    return p


def sysfs(root: Path, *hcas: str) -> Path:
    """A sysfs with /sys/class/infiniband/<hca> folders, as the rdma role leaves it."""
    for hca in hcas:
        (root / "class" / "infiniband" / hca).mkdir(parents=True)
    return root


def run(tmp_path: Path, p: dict[str, Any], *hcas: str, check_mode: bool = False) -> Any:
    root = sysfs(tmp_path / "sys", *hcas) if not (tmp_path / "sys").exists() else tmp_path / "sys"
    return M.run(M.Inputs.from_params(p), tmp_path / "etc" / "nccl.conf", tmp_path / "etc" / "nccl.env", root,
                 "client-1", check_mode)


def test_lab_writes_both_files_from_the_blueprint_then_is_idempotent(tmp_path: Path) -> None:
    p = params("lab")
    changed, diffs, env = run(tmp_path, p, "rxe0", "rxe1")
    assert changed is True and len(diffs) == 2
    conf = (tmp_path / "etc" / "nccl.conf").read_text().splitlines()
    for e in p["env"]:
        assert f"{e['name']}={e['value']}" in conf
    assert f'NCCL_IB_TC="{env["NCCL_IB_TC"]}"' in (tmp_path / "etc" / "nccl.env").read_text()
    assert run(tmp_path, p)[:2] == (False, [])


def test_degraded_profile_is_one_switch(tmp_path: Path) -> None:
    p = params("cv-training-500tb", profile="degraded")
    hcas = p["hcas"]
    _, _, env = run(tmp_path, p, *hcas)
    for e in p["degraded_env"]:
        assert env[e["name"]] == e["value"]
    assert env["NCCL_ALGO"] == "Ring"
    assert f"NCCL_ALGO={env['NCCL_ALGO']}" in (tmp_path / "etc" / "nccl.conf").read_text()
    # back to the planned profile: the file changes back
    changed, _, env2 = run(tmp_path, dict(p, profile="default"))
    planned = {e["name"]: e["value"] for e in p["env"]}
    assert changed is True and env2["NCCL_ALGO"] == planned["NCCL_ALGO"]


def test_a_missing_hca_stops_the_play_naming_it_and_what_exists(tmp_path: Path) -> None:
    with pytest.raises(M.NcclError) as info:
        run(tmp_path, params("lab"), "rxe0")
    msg = str(info.value)
    assert "NCCL_IB_HCA names rxe1, which client-1 does not have" in msg
    assert "infiniband holds: rxe0" in msg
    assert not (tmp_path / "etc").exists()


def test_no_rdma_devices_at_all(tmp_path: Path) -> None:
    (tmp_path / "sys").mkdir()
    with pytest.raises(M.NcclError, match="holds: nothing"):
        run(tmp_path, params("lab"))


def test_check_mode_writes_nothing(tmp_path: Path) -> None:
    changed, diffs, _ = run(tmp_path, params("lab"), "rxe0", "rxe1", check_mode=True)
    assert changed is True and diffs and not (tmp_path / "etc").exists()


@pytest.mark.parametrize(("override", "needle"), [
    ({"in_network_reduction": "sharp"}, "nccl_in_network_reduction is 'sharp' but the environment has no "
                                        "NCCL_COLLNET_ENABLE=1"),
    ({"gpudirect_rdma": True}, "nccl_gpudirect_rdma is true but the environment has no NCCL_NET_GDR_LEVEL"),
    ({"profile": "fast"}, "nccl_profile is 'fast'; expected 'default' or 'degraded'"),
])
def test_contradictions_are_refused(tmp_path: Path, override: dict[str, Any], needle: str) -> None:
    with pytest.raises(M.NcclError) as info:
        run(tmp_path, params("lab", **override), "rxe0", "rxe1")
    assert needle in str(info.value)


def test_nvls_and_gpudirect_on_an_nvswitch_blueprint_agree(tmp_path: Path) -> None:
    p = params("cv-training-500tb")
    assert p["in_network_reduction"] == "nvls" and p["gpudirect_rdma"] is True
    _, _, env = run(tmp_path, p, *p["hcas"])
    assert env["NCCL_NVLS_ENABLE"] == "1" and "NCCL_NET_GDR_LEVEL" in env
    wrong = dict(p, in_network_reduction="none")
    with pytest.raises(M.NcclError, match="NCCL_NVLS_ENABLE=1 but nccl_in_network_reduction is 'none'"):
        run(tmp_path, wrong)
