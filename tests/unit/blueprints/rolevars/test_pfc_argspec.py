"""roles/pfc_dcqcn/meta/argument_specs.yml is generated from PfcDcqcnVars; they must not drift.

Regenerate with ``pytest tests/unit/blueprints/rolevars/test_pfc_argspec.py --update-golden``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.rolevars import argument_spec
from blueprints.rolevars.pfc_dcqcn import PfcDcqcnVars, role_vars

REPO = Path(__file__).resolve().parents[4]
SPEC_FILE = REPO / "roles" / "pfc_dcqcn" / "meta" / "argument_specs.yml"
SHORT = "Lossless RoCE on the rail NICs: DSCP trust, DSCP map, PFC, ETS and DCQCN from the Blueprint's QoS plan"
HEADER = ("---\n# Generated from blueprints/rolevars/pfc_dcqcn.py (PfcDcqcnVars); "
          "tests/unit/blueprints/rolevars/test_pfc_argspec.py\n")


class _IndentedDumper(yaml.SafeDumper):
    """Indents list items under their key, as ansible-lint's yaml rule wants."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def dump_spec(header: str, spec: dict[str, Any]) -> str:
    """meta/argument_specs.yml text (shared with the nccl role's test)."""
    return header + yaml.dump(spec, Dumper=_IndentedDumper, sort_keys=False, width=110)


def test_argument_specs_match_the_model(update_golden: bool) -> None:
    want = argument_spec(PfcDcqcnVars, SHORT)
    if update_golden:
        SPEC_FILE.write_text(dump_spec(HEADER, want))
    assert yaml.safe_load(SPEC_FILE.read_text()) == want


def test_every_option_is_prefixed_and_described() -> None:
    options = argument_spec(PfcDcqcnVars, SHORT)["argument_specs"]["main"]["options"]
    assert all(name.startswith("pfc_dcqcn_") for name in options)
    assert all(opt.get("description") for opt in options.values())


def _bp(name: str):  # type: ignore[no-untyped-def]
    spec = REPO / "examples" / f"{name}.yaml"
    return plan(load_requirements(spec), spec_file=str(spec))


def test_lab_and_baremetal_roce_get_the_plan_clouds_without_qos_get_nothing() -> None:
    lab = role_vars(_bp("lab"))["all"]
    assert isinstance(lab, PfcDcqcnVars) and lab.pfc_dcqcn_lab is True
    metal = role_vars(_bp("cv-training-500tb"))["all"]
    assert isinstance(metal, PfcDcqcnVars) and metal.pfc_dcqcn_lab is False
    bp = _bp("cv-training-500tb")
    assert metal.pfc_dcqcn_pfc_priorities == [bp.qos.roce_priority.value]
    assert {(m.dscp, m.priority) for m in metal.pfc_dcqcn_dscp_map} == set(bp.qos.switch_dscp_to_priority.items())
    assert role_vars(_bp("llm-training-16k")) == {}  # aws: EFA, the provider owns QoS
