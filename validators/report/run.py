"""The run a report describes: which Blueprint, when, where the results are, and every judged check."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict, Field

from validators.outcome import CheckResult, exit_code


class RunReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    blueprint: str = Field(description="Blueprint name")
    spec_file: str
    spec_lines: dict[str, int] = Field(default_factory=dict, description="Spec path -> line, for links to the spec")
    started: str = Field(description="ISO 8601 time the run started")
    duration_s: float
    results_dir: str
    hosts: tuple[str, ...] = ()
    checks: tuple[CheckResult, ...]

    @property
    def exit_code(self) -> int:
        return exit_code(self.checks)

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(c.status for c in self.checks))

    def spec_ref(self, path: str) -> str:
        line = self.spec_lines.get(path)
        return f"{path} ({self.spec_file}:{line})" if line else path
