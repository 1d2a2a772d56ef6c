"""JSON report: the run and every check with measured, expected, unit, spec path, coverage and details."""

from __future__ import annotations

import json
from pathlib import Path

from validators.report.run import RunReport


def write_json(report: RunReport, path: Path) -> Path:
    data = report.model_dump(mode="json")
    data["exit_code"] = report.exit_code
    data["counts"] = report.counts
    for entry, check in zip(data["checks"], report.checks, strict=True):
        entry["coverage_shown"] = check.coverage_shown
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path
