"""roles/nccl/meta/argument_specs.yml is generated from NcclVars; they must not drift.

Regenerate with ``pytest tests/unit/blueprints/rolevars/test_nccl_argspec.py --update-golden``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.rolevars import argument_spec
from blueprints.rolevars.nccl import NcclVars, role_vars
from tests.unit.blueprints.rolevars.test_pfc_argspec import dump_spec

REPO = Path(__file__).resolve().parents[4]
SPEC_FILE = REPO / "roles" / "nccl" / "meta" / "argument_specs.yml"
SHORT = "NCCL configuration, job-level degraded profile, GPUDirect RDMA and nccl-tests from the Blueprint"
HEADER = ("---\n# Generated from blueprints/rolevars/nccl.py (NcclVars); "
          "tests/unit/blueprints/rolevars/test_nccl_argspec.py\n")


def test_argument_specs_match_the_model(update_golden: bool) -> None:
    want = argument_spec(NcclVars, SHORT)
    if update_golden:
        SPEC_FILE.write_text(dump_spec(HEADER, want))
    assert yaml.safe_load(SPEC_FILE.read_text()) == want


def test_every_option_is_prefixed_and_described() -> None:
    options = argument_spec(NcclVars, SHORT)["argument_specs"]["main"]["options"]
    assert all(name.startswith("nccl_") for name in options)
    assert all(opt.get("description") for opt in options.values())
    assert "nccl_profile" not in options  # the degraded profile is job-level, not a node switch
    assert options["nccl_ib_hca_rails"] == {"type": "list", "elements": "int", "required": True,
                                            "description": options["nccl_ib_hca_rails"]["description"]}


def _bp(name: str):  # type: ignore[no-untyped-def]
    spec = REPO / "examples" / f"{name}.yaml"
    return plan(load_requirements(spec), spec_file=str(spec))


def test_vars_carry_the_blueprint_env_and_switches() -> None:
    for name in ("lab", "cv-training-500tb", "llm-training-16k"):
        bp = _bp(name)
        rv = role_vars(bp)["gpu_clients"]
        assert isinstance(rv, NcclVars)
        assert [(e.name, e.value) for e in rv.nccl_env] == [(v.name, v.value) for v in bp.nccl_environment()]
        assert rv.nccl_gpudirect_rdma is bp.nccl.gpudirect_rdma.value
        assert rv.nccl_in_network_reduction == bp.nccl.in_network_reduction.value
        assert "NCCL_IB_HCA" not in {e.name for e in rv.nccl_env}  # per host, from the rdma role's record
    lab = role_vars(_bp("lab"))["gpu_clients"]
    assert isinstance(lab, NcclVars) and lab.nccl_ib_hca_rails == [0, 1]  # both lab rails carry compute
