"""The ``clustersmith`` command line.

Exit codes: 0 success, 1 a check failed (accept), 2 bad input (spec, Blueprint, arguments, an output folder that
build did not write), 130 Ctrl-C, 143 SIGTERM (blueprints.signals).
Bad input prints every problem with file, line, path, value and what was expected, and writes nothing.
``--json`` (validate, plan, explain) prints one JSON document on stdout instead of the text, and for bad input the
problems as one too (blueprints.commands.json_errors); ``build --quiet`` prints the folder alone. A slow step shows
a spinner on stderr when that is a terminal (blueprints.progress). Shell completion: README.md, Commands.
The commands defined here plan and build; the ones that drive a later stage (lab, deploy, inventory, accept, parse)
live with that stage and are registered in pyproject.toml's ``clustersmith.commands`` entry points
(blueprints.commands).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from blueprints.blueprint import Blueprint, blueprint_data, load_blueprint
from blueprints.commands import RegistryGroup, json_errors, output_console, print_json, run
from blueprints.errors import ClusterSmithError
from blueprints.explain import explain, explanation_json, render_explanation
from blueprints.loader import load_requirements, requirement_lines
from blueprints.planner import plan
from blueprints.progress import Step, progress, silent
from blueprints.render import build as render_build
from blueprints.render import writable as build_writable
from blueprints.render.editable import KEPT
from blueprints.secrets import ensure as ensure_secrets
from blueprints.secrets import locate as locate_secrets
from blueprints.spec import json_schema
from blueprints.summary import print_summary

out = output_console()
err = Console(stderr=True, soft_wrap=True)


def plan_file(spec: Path, step: Step = silent) -> Blueprint:
    """Load, validate and plan a spec file: the shared front half of validate, plan and build."""
    step(f"reading {spec}")
    req = load_requirements(spec)
    lines = requirement_lines(spec)
    step(f"planning {req.compute.gpus:,} GPUs")
    try:
        return plan(req, spec_file=str(spec), spec_lines=lines)
    except ClusterSmithError as exc:
        exc.problems = [p if p.line else replace(p, line=lines.get(p.path)) for p in exc.problems]
        exc.filename = str(spec)
        raise


_SPEC = click.argument("spec", type=click.Path(path_type=Path, dir_okay=False))
_JSON = click.option("--json", "as_json", is_flag=True,
                     help='One JSON document on stdout instead of text; bad input: {"valid": false, "error", '
                          '"problems"} there, the message on stderr, exit 2')


@click.group(cls=RegistryGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="clustersmith")
def cli() -> None:
    """Plan, build and accept GPU clusters from a short requirement spec."""


@cli.command()
@_SPEC
@_JSON
def validate(spec: Path, as_json: bool) -> None:
    """Check a spec: structure, units, rules, and that its targets can be met.

    --json: {"valid": true, "spec", "gpus", "nodes", "node_type", "provider"}.
    """
    with json_errors(as_json), progress() as step:
        bp = plan_file(spec, step)
    if as_json:
        print_json({"valid": True, "spec": str(spec), "gpus": bp.compute.gpus, "nodes": bp.compute.nodes.value,
                    "node_type": bp.compute.node_type.value, "provider": bp.target.provider})
        return
    out.print(f"[green]ok[/]: {spec} is valid ({bp.compute.gpus} GPUs on {bp.compute.nodes.value} "
              f"{bp.compute.node_type.value} nodes, target {bp.target.provider})")


@cli.command("plan")
@_SPEC
@_JSON
def plan_cmd(spec: Path, as_json: bool) -> None:
    """Print the design: compute, fabric, QoS, storage tiers and acceptance checks, with the arithmetic.

    --json: the Blueprint itself, as build writes it to blueprint.yaml (every derived value with its derived_from).
    """
    with json_errors(as_json), progress() as step:
        bp = plan_file(spec, step)
    if as_json:
        print_json(blueprint_data(bp))
    else:
        print_summary(bp, out)


@cli.command()
@_SPEC
@click.option("-o", "--output", "output", type=click.Path(path_type=Path, file_okay=False), default=Path("out"),
              show_default=True, help="Folder the build folder <name>/ is written into")
@click.option("--secrets", "secrets_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="The cluster's secrets file (0600 YAML; default: the one the build folder names, else "
                   "<name>-<key>.yml, one per build folder, in $CLUSTERSMITH_SECRETS_DIR, else "
                   "$XDG_CONFIG_HOME/clustersmith/secrets/); created or completed when clustersmith wrote it")
@click.option("--prune-secrets", "prune_secrets", is_flag=True,
              help="Remove the secrets file's entries for hosts this plan no longer has (kept and counted otherwise)")
@click.option("-q", "--quiet", is_flag=True,
              help="Print only the build folder's path (stdout), errors and the 'kept' lines (stderr: paths build "
                   "left as they were, because a file of yours is there); no file list, next steps or progress")
def build(spec: Path, output: Path, secrets_file: Path | None, prune_secrets: bool, quiet: bool) -> None:
    """Write out/<name>/: blueprint.yaml and everything rendered from it.

    Only into a folder build wrote (its .clustersmith-build marker names the Blueprint) or an empty or absent
    one; a rebuild swaps the generated tree at once and keeps what users and later steps wrote there.
    """
    told: list[str] = []  # what build did with the secrets file
    placed: list[str] = []  # the build folder's notices: each path kept as it was, or an editable file written
    try:
        with progress(show=not quiet) as step:
            bp = plan_file(spec, step)
            build_writable(bp, output)
            secrets_path = locate_secrets(bp, output / bp.name, secrets_file, prune_secrets)  # reads only
            # The secrets file is made or completed only once the tree is rendered and linked, just before the swap:
            # a build refused for any reason (a folder it may not write, a full disk, a bad secrets file) leaves none.
            folder, files = render_build(
                bp, output, notice=placed.append, secrets_file=secrets_path, step=step,
                before_swap=lambda: ensure_secrets(bp, output / bp.name, secrets_path, notice=told.append,
                                                   prune=prune_secrets))
    finally:  # once the progress line is gone; what was said before an error too
        _notices(told, placed, quiet)
    if quiet:
        click.echo(folder)
        return
    out.print(f"[green]built[/] {escape(str(folder))} ({len(files)} files)")
    for f in files:
        out.print(f"  {f}", markup=False)
    for line in next_steps(bp, folder):
        out.print(line, markup=False, highlight=False)


def _notices(told: list[str], placed: list[str], quiet: bool) -> None:
    """Build's notices: the secrets file's, then the build folder's (blueprints.render), on stdout; with --quiet
    only those a user must not miss, on stderr: the secrets file made (once; it must be kept) or pruned, and each
    path kept, since it tells that a file stayed the user's and not the generated one."""
    for line in told:
        if not quiet:
            out.print(line, markup=False, highlight=False)
        elif line.startswith(("secrets: created", "secrets: pruned")):
            err.print(line, markup=False, highlight=False)
    for line in placed:
        if not quiet:
            out.print(line, style="yellow", markup=False, highlight=False)
        elif line.startswith(KEPT):  # a path build did not write over
            err.print(line, style="yellow", markup=False, highlight=False)


def next_steps(bp: Blueprint, folder: Path) -> list[str]:
    """What a user does after ``build``, by target: the files to fill in, then the command that comes next."""
    if bp.target.provider == "lab":
        return ["next: boot the lab and write its inventory:", f"  clustersmith lab up {folder}"]
    steps = ["next:"]
    if bp.target.provider == "baremetal" and bp.target.machines == "static":
        steps.append(f"  fill in every CHANGE_ME of {folder / 'pulumi' / 'machines.yaml'} (your racks' addresses "
                     "and NIC names)")
    steps.append(f"  clustersmith deploy {folder} --ssh-public-key ~/.ssh/id_ed25519.pub   (pulumi up, the inventory, "
                 "site.yml, then accept)")
    return steps


@cli.command("explain")
@click.argument("build_dir", type=click.Path(path_type=Path))
@click.argument("path")
@_JSON
def explain_cmd(build_dir: Path, path: str, as_json: bool) -> None:
    """Show where a Blueprint value came from, e.g. acceptance.checks.storage.read_throughput.

    --json: {"path", "value", "rule", "formula", "sources": [{"path", "line", "value"}], "within", "section",
    "spec_file"}.
    """
    with json_errors(as_json):
        bp = load_blueprint(build_dir)
        explained = explain(bp, path)
    if as_json:
        print_json(explanation_json(bp, explained))
    else:
        click.echo(render_explanation(bp, explained))


@cli.command()
def schema() -> None:
    """Print the JSON Schema (draft 2020-12) of the requirement spec, for editors and validators."""
    print_json(json_schema())


def main() -> None:
    # One name however it is started (the `clustersmith` script, `python -m blueprints`): the usage lines say it,
    # and shell completion reads its variable, _CLUSTERSMITH_COMPLETE, by it.
    run(cli, prog_name="clustersmith")
