"""Reports of one acceptance run: JUnit XML for CI systems, JSON for tools, a self-contained HTML page for people."""

from __future__ import annotations

from pathlib import Path

from blueprints.errors import ClusterSmithError, Problem
from validators.report.html import write_html
from validators.report.json_report import write_json
from validators.report.junit import write_junit
from validators.report.run import RunReport

__all__ = ["RunReport", "refuse_foreign", "write_all"]

NAMES = ("junit.xml", "report.json", "report.html")
# Written beside the reports: a folder holding one of NAMES without it holds someone else's files.
MARKER = ".clustersmith-report"


def refuse_foreign(folder: Path, option: str = "--report-dir") -> None:
    """Refuse (bad input, exit 2) a report folder that holds a junit.xml, report.json or report.html clustersmith
    did not write there, or that is not a folder: the reports would replace the user's own. Asked before the
    tools run, so a refused run costs nothing."""
    if folder.exists() and not folder.is_dir():
        raise ClusterSmithError([Problem(option, "is not a folder; expected a folder for junit.xml, report.json and "
                                         "report.html", value=str(folder))], title="refusing to write the reports")
    if (folder / MARKER).is_file():
        return
    theirs = [name for name in NAMES if (folder / name).exists() or (folder / name).is_symlink()]
    if theirs:
        raise ClusterSmithError([Problem(option, f"holds {', '.join(theirs)} that clustersmith did not write there "
                                         f"(no {MARKER}); expected a new or empty folder, or one an earlier run "
                                         f"wrote: choose another, or move those files away", value=str(folder))],
                                title="refusing to write the reports")


def write_all(report: RunReport, folder: Path) -> list[Path]:
    """Write the three reports into ``folder`` (a user's own folder was refused by ``refuse_foreign`` first)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text("# clustersmith accept writes junit.xml, report.json and report.html here and "
                                 "replaces them on the next run.\n", encoding="utf-8")
    return [write_junit(report, folder / "junit.xml"), write_json(report, folder / "report.json"),
            write_html(report, folder / "report.html")]
