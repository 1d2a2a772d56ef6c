"""``clustersmith accept`` and ``clustersmith parse``.

accept OUT_DIR                 run the Blueprint's acceptance checks over the inventory, then judge them
accept OUT_DIR --results DIR   judge tool output gathered by hand (or by an earlier run) against the Blueprint
parse TOOL FILE                print one tool's output as its typed result (JSON)

Exit codes: 0 every check passed (informational, warning and not-applicable ones included); 1 any check failed,
whatever else happened (setup errors too); 2 bad input, or setup errors (a tool that could not run, a result that
does not cover the plan) when nothing failed.

Every folder and file argument is made absolute once, here, where it is read: the runner hands them to
ansible-runner, whose working directory is not the user's.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from blueprints.blueprint import load_blueprint
from blueprints.commands import output_console
from blueprints.figures import plain
from validators.evaluate import evaluate, select
from validators.parse import PARSERS, write_parsed
from validators.report import RunReport, refuse_foreign, write_all
from validators.results import Results

out = output_console()  # messages and report paths stay whole lines; no table cell cut when piped
STYLE = {"pass": "green", "fail": "red", "warn": "yellow", "info": "blue", "not_applicable": "dim",
         "setup_error": "magenta"}


def _only(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _absolute(path: Path | None) -> Path | None:
    """``path`` made absolute against the working directory the user typed it in (symlinks kept)."""
    return None if path is None else Path(os.path.abspath(path.expanduser()))


def _summary(report: RunReport) -> None:
    table = Table(title=f"acceptance of {report.blueprint}")
    for col in ("check", "status", "measured", "expected", "unit", "coverage", "spec"):
        table.add_column(col)
    for c in report.checks:
        measured = "-" if c.measured is None else plain(c.measured, 4)
        table.add_row(c.id, f"[{STYLE[c.status]}]{c.status}[/]", measured, f"{c.op} {plain(c.threshold)}", c.unit,
                      c.coverage_shown, ", ".join(c.spec))
    # In a log (no terminal) Rich assumes 80 columns and would cut the check ids: print at the table's own width.
    if not out.is_terminal:
        out.width = max(out.width, out.measure(table, options=out.options.update_width(1000)).maximum)
    out.print(table)
    for c in report.checks:
        if c.status in ("fail", "setup_error", "not_applicable", "warn"):
            out.print(f"[{STYLE[c.status]}]{c.id}[/]: {c.message}", highlight=False)


ACCEPT_EPILOG = ("Exit codes: 0 every check passed (informational, warning and not-applicable ones included); "
                 "1 any check failed, whatever else happened (setup errors too); 2 bad input, or setup errors "
                 "(a tool that could not run, a result that does not cover the Blueprint's hosts, ranks or paths) "
                 "when nothing failed.")


@click.command("accept", epilog=ACCEPT_EPILOG)
@click.argument("build_dir", type=click.Path(file_okay=False, path_type=Path), metavar="OUT_DIR")
@click.option("--results", "results_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Judge this folder of tool output instead of running the tools (layout: validators/results.py)")
@click.option("--destructive", is_flag=True, help="Allow fio to write to --fio-target outside the plan's scratch")
@click.option("--only", multiple=True, metavar="ID", help="Run only these check ids (repeat, or comma-separate)")
@click.option("--inventory", type=click.Path(dir_okay=False, path_type=Path),
              help="Ansible inventory [default: OUT_DIR/ansible/inventory.yml]")
@click.option("--fio-target", metavar="PATH", help="Directory or /dev/ device for fio instead of the plan's scratch")
@click.option("--keep-scratch", is_flag=True,
              help="Leave fio's scratch files for the next run, which reuses them instead of laying them out again; "
                   "a run without it removes them")
@click.option("--report-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where junit.xml, report.json and report.html go [default: beside the results]")
@click.option("--timeout-scale", type=click.FloatRange(min=0.1), default=1.0, show_default=True,
              help="Multiply every per-check timeout (slow emulated labs)")
def accept(build_dir: Path, results_dir: Path | None, destructive: bool, only: tuple[str, ...],
           inventory: Path | None, fio_target: str | None, keep_scratch: bool, report_dir: Path | None,
           timeout_scale: float) -> None:
    """Run and judge the acceptance checks of a build folder (out/<name>)."""
    build_dir = Path(os.path.abspath(build_dir.expanduser()))
    results_dir, inventory, report_dir = _absolute(results_dir), _absolute(inventory), _absolute(report_dir)
    bp = load_blueprint(build_dir)
    checks = select(bp, _only(only))
    if report_dir is not None:
        refuse_foreign(report_dir)  # before any tool runs: a refused run costs nothing
    started = datetime.now(UTC)
    clock = time.monotonic()
    hosts: tuple[str, ...] = ()
    if results_dir is not None:
        judged = evaluate(bp, Results(results_dir), [c.id for c in checks], strict=True)
        report_dir = report_dir or build_dir / "acceptance" / "report"
    else:
        from validators.accept import run_tools
        from validators.inventory import load_inventory
        from validators.safety import plan_writes

        inv = load_inventory(inventory or build_dir / "ansible" / "inventory.yml")
        hosts = tuple(sorted(inv.hosts))
        write = plan_writes(bp, checks, fio_target, destructive, inv.group("gpu_clients"), keep_scratch)
        out.print(f"[bold]writes[/]: {write.summary}", highlight=False)
        results_dir = build_dir / "acceptance" / "runs" / started.strftime("%Y%m%dT%H%M%SZ")
        results_dir.mkdir(parents=True, exist_ok=True)
        with Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), TextColumn("{task.fields[msg]}"),
                      TimeElapsedColumn(), console=out, transient=True) as bar:
            tasks: dict[str, object] = {}

            def progress(step: str, message: str) -> None:
                if step not in tasks:
                    tasks[step] = bar.add_task(step, msg="")
                bar.update(tasks[step], msg=message)  # type: ignore[arg-type]

            run_tools(bp, build_dir, inv, results_dir, checks, write, progress, timeout_scale)
        judged = evaluate(bp, Results(results_dir), [c.id for c in checks], strict=False)
        report_dir = report_dir or results_dir
    report = RunReport(blueprint=bp.name, spec_file=bp.spec_file, spec_lines=bp.spec_lines,
                       started=started.isoformat(timespec="seconds"), duration_s=round(time.monotonic() - clock, 1),
                       results_dir=str(results_dir), hosts=hosts, checks=tuple(judged))
    written = write_all(report, report_dir)
    _summary(report)
    out.print("reports: " + ", ".join(str(p) for p in written), highlight=False)
    sys.exit(report.exit_code)


@click.command("parse")
@click.argument("tool", type=click.Choice(sorted(PARSERS)))
@click.argument("file", type=click.Path(path_type=Path))  # validators.source refuses what is not a regular file
def parse(tool: str, file: Path) -> None:
    """Print a tool's output file as its typed result, in JSON."""
    write_parsed(tool, file, lambda text: click.echo(text, nl=False))
    click.echo()
