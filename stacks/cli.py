"""Click commands ``deploy`` and ``inventory``, registered as ``clustersmith deploy|inventory`` in pyproject.toml's
``clustersmith.commands`` entry points (``python -m stacks deploy|inventory`` runs the same commands)."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from blueprints.blueprint import load_blueprint
from blueprints.errors import ClusterSmithError, Problem
from stacks import inventory as inv
from stacks.deploy import PULUMI_MISSING, STEPS, DeployOptions
from stacks.deploy import deploy as run_deploy
from stacks.outputs import OUTPUT_NAME

_FOLDER = click.argument("build_dir", type=click.Path(file_okay=False, path_type=Path), metavar="OUT_DIR")


@click.command("deploy")
@_FOLDER
@click.option("--stack", help="Pulumi stack name [default: the design name]")
@click.option("--skip", multiple=True, type=click.Choice(STEPS), help="Leave this step out (repeatable)")
@click.option("--redo", multiple=True, type=click.Choice(STEPS), help="Run this step even if it finished before")
@click.option("--outputs", type=click.Path(dir_okay=False, path_type=Path),
              help="Stack outputs JSON for the inventory step instead of the 'up' step's")
@click.option("--ssh-public-key", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Public key put on every machine (sets clustersmith:sshPublicKey)")
@click.option("--no-credential-check", is_flag=True,
              help="Do not look for cloud credentials before pulumi up (instance roles, workload identity)")
def deploy(build_dir: Path, stack: str | None, skip: tuple[str, ...], redo: tuple[str, ...], outputs: Path | None,
           ssh_public_key: Path | None, no_credential_check: bool) -> None:
    """Provision (pulumi up), write the inventory, run site.yml, then accept; resumes where it stopped."""
    state = run_deploy(build_dir, DeployOptions(stack=stack, skip=skip, redo=redo, outputs=outputs,
                                                ssh_public_key=ssh_public_key,
                                                credential_check=not no_credential_check), click.echo)
    click.echo("deploy: " + ", ".join(f"{k} {v.status}" for k, v in state.steps.items()))


@click.command("inventory")
@_FOLDER
@click.option("--from-stack", "from_stack", is_flag=True, help="Read the outputs of the deployed Pulumi stack")
@click.option("--stack", help="Pulumi stack name [default: the design name]")
@click.option("--outputs", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Read outputs from this JSON file (`pulumi stack output --json`) instead")
def inventory(build_dir: Path, from_stack: bool, stack: str | None, outputs: Path | None) -> None:
    """Write OUT_DIR/ansible/inventory.yml from the stack's outputs (hosts, addresses per rail, roles)."""
    if outputs is None and not from_stack:
        raise ClusterSmithError([Problem("--from-stack", "say where the outputs come from: --from-stack "
                                         "(the deployed stack) or --outputs FILE")], str(build_dir),
                                "invalid arguments")
    if outputs is not None:
        data, source = inv.read_outputs_file(outputs), str(outputs)
    else:
        bp = load_blueprint(build_dir)
        if shutil.which("pulumi") is None:  # inventory has no --skip: deploy's hint would name an option it lacks
            raise ClusterSmithError([Problem("--from-stack", f"{PULUMI_MISSING}, or read the outputs from a file "
                                             "with --outputs FILE (`pulumi stack output --json` on a machine that "
                                             "has the CLI)")],
                                    str(build_dir), "cannot read the stack's outputs")
        from pulumi import automation as auto

        work_dir = str(build_dir / "pulumi")
        s = auto.select_stack(stack_name=stack or bp.name, work_dir=work_dir)
        values = s.outputs()
        if OUTPUT_NAME not in values:
            raise ClusterSmithError([Problem(OUTPUT_NAME, "the stack has no such output; was it deployed?")],
                                    work_dir, "not clustersmith stack outputs")
        data, source = inv.parse_outputs(values[OUTPUT_NAME].value, work_dir), work_dir
    data = inv.with_fleet_hosts(data, source)
    path = inv.write(data, build_dir)
    click.echo(f"wrote {path} ({len(data.hosts)} hosts)")
