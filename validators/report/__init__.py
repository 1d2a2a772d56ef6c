"""Reports of one acceptance run: JUnit XML for CI systems, JSON for tools, a self-contained HTML page for people."""

from __future__ import annotations

from pathlib import Path

from validators.report.html import write_html
from validators.report.json_report import write_json
from validators.report.junit import write_junit
from validators.report.run import RunReport

__all__ = ["RunReport", "write_all"]


def write_all(report: RunReport, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [write_junit(report, folder / "junit.xml"), write_json(report, folder / "report.json"),
            write_html(report, folder / "report.html")]
