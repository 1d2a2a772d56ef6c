"""What every planner rule reads: the validated spec and the catalog, plus shared helpers."""

from __future__ import annotations

import math
from dataclasses import dataclass

from blueprints.catalog import Catalog
from blueprints.errors import InfeasibleError, Problem
from blueprints.lab_plan import LabPlan
from blueprints.spec import AwsTarget, AzureTarget, GcpTarget, Requirements


@dataclass(frozen=True)
class PlanContext:
    req: Requirements
    catalog: Catalog
    spec_file: str = "<spec>"
    lab: LabPlan | None = None  # planned right after the fabric, so the rules after it read the lab's kernel

    @property
    def provider(self) -> str:
        return self.req.target.provider

    @property
    def is_cloud(self) -> bool:
        return self.provider in ("aws", "gcp", "azure")

    @property
    def region(self) -> str | None:
        """The cloud region prices are looked up in; None off the clouds."""
        t = self.req.target
        return t.region if isinstance(t, (AwsTarget, GcpTarget, AzureTarget)) else None

    @property
    def is_lab(self) -> bool:
        return self.provider == "lab"

    def infeasible(self, path: str, message: str) -> InfeasibleError:
        return InfeasibleError([Problem(path, message)], self.spec_file, "targets cannot be met")


def ceil_div(a: float, b: float) -> int:
    """Smallest integer n with n * b >= a, robust to float noise in a / b."""
    q = a / b
    n = math.ceil(q - 1e-9)
    return max(n, 0)
