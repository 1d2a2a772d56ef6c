"""The default lab: the lab the planner plans for examples/lab.yaml (1 storage target, 2 GPU clients, 2 rails).

For what boots a lab without a build folder: the lab tier's own tests and the fixture recorders. It is the plan
``clustersmith build examples/lab.yaml`` writes into blueprint.yaml, so there is one lab planner
(blueprints.planner.lab) and the lab's own tests boot the VMs the example lab gets. (Test code: stacks.lab itself
reads only a Blueprint's lab plan, or a LabPlan file, never the planner.)
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from blueprints.errors import ClusterSmithError, Problem
from blueprints.lab_plan import LabPlan
from blueprints.loader import load_requirements
from blueprints.planner import plan

SPEC = Path(__file__).resolve().parents[1] / "examples" / "lab.yaml"


@cache
def default_lab_plan(spec: Path = SPEC) -> LabPlan:
    """The LabPlan the planner makes for ``spec`` (examples/lab.yaml unless told); a spec for another target is
    bad input."""
    blueprint = plan(load_requirements(spec), spec_file=str(spec))
    if blueprint.lab is None:
        raise ClusterSmithError([Problem("target.provider", "the default lab's spec must be for the lab target",
                                         value=blueprint.target.provider)], str(spec), "not a lab spec")
    return blueprint.lab
