"""``clustersmith lab``: bring a Blueprint's lab up, look at it, break it, tear it down.

Every command takes the build folder ``out/<name>``; ``up`` reads the plan from its
``blueprint.yaml`` (or from ``--plan-file`` for scenarios without one).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import yaml
from rich.console import Console
from rich.progress import Progress as RichProgress
from rich.progress import SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from blueprints.lab_plan import LabPlan
from stacks.lab import molecule, state
from stacks.lab.errors import LabError, LabInputError
from stacks.lab.lab import Lab
from stacks.lab.progress import ProgressEvent

BUILD_DIR = click.argument("build_dir", type=click.Path(file_okay=False, path_type=Path), metavar="OUT_DIR")


class LabClickError(click.ClickException):
    """A lab failure: exit code 1."""


class LabInputClickError(click.ClickException):
    """A bad request (unknown host, lab already running): exit code 2, like a usage error."""

    exit_code = 2


@contextmanager
def _lab_errors() -> Iterator[None]:
    try:
        yield
    except LabInputError as err:
        raise LabInputClickError(str(err)) from err
    except LabError as err:
        raise LabClickError(str(err)) from err


class RichSink:
    """Turns ``ProgressEvent``s into one spinner line per task (image, boot:<host>)."""

    def __init__(self, progress: RichProgress) -> None:
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, event: ProgressEvent) -> None:
        if event.task not in self.tasks:
            self.tasks[event.task] = self.progress.add_task(event.task, total=1, message=event.message)
        task = self.tasks[event.task]
        self.progress.update(task, message=event.message, completed=1 if event.done else 0)


def _plain_sink(console: Console) -> object:
    def sink(event: ProgressEvent) -> None:
        console.print(f"{event.task}: {event.message}", highlight=False)

    return sink


def load_plan(build_dir: Path, plan_file: Path | None) -> tuple[LabPlan, str]:
    """The plan and the lab's name: from a plan file or the Blueprint."""
    if plan_file is not None:
        data = yaml.safe_load(plan_file.read_text())
        try:
            return LabPlan.model_validate(data), build_dir.resolve().name
        except ValueError as err:
            raise LabInputError(f"{plan_file} is not a lab plan: {err}") from err
    blueprint_file = build_dir / "blueprint.yaml"
    if not blueprint_file.is_file():
        raise LabInputError(f"{blueprint_file} does not exist; run `clustersmith build` first")
    from blueprints.blueprint import load_blueprint

    blueprint = load_blueprint(blueprint_file)
    if blueprint.lab is None:
        raise LabInputError(f"{blueprint_file} is not for the lab target (it has no `lab` section)")
    return blueprint.lab, blueprint.name


def print_status(console: Console, status: state.LabStatus) -> None:
    table = Table(title=f"lab {status.name} ({status.accel})")
    for column in ("host", "role", "power", "ssh", "rails"):
        table.add_column(column)
    for host in status.hosts:
        rails = ", ".join(f"{r.netdev} {r.address} {'up' if r.link_up else 'DOWN'}" for r in host.rails)
        power = f"{host.power} (kernel panic)" if host.panic else host.power
        table.add_row(host.name, host.role, power, f"127.0.0.1:{host.ssh_port}", rails)
    console.print(table)
    for host in status.hosts:
        if host.panic:  # its console log names the rest: lab/logs/<host>.console.log
            console.print(f"{host.name}: the guest kernel panicked:\n{host.panic}", markup=False, highlight=False)


@click.group("lab")
def lab() -> None:
    """The local QEMU lab: real Linux VMs with Soft-RoCE rails, for roles and acceptance checks."""


@lab.command()
@BUILD_DIR
@click.option("--plan-file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="A LabPlan YAML file to boot instead of OUT_DIR/blueprint.yaml.")  # fmt: skip
@click.option("--ssh-timeout", type=float, default=900.0, show_default=True, help="Seconds to wait for SSH.")
def up(build_dir: Path, plan_file: Path | None, ssh_timeout: float) -> None:
    """Build or reuse the image, boot the VMs, wait for SSH, write OUT_DIR/ansible/inventory.yml."""
    console = Console(stderr=True)
    with _lab_errors():
        plan, name = load_plan(build_dir, plan_file)
        the_lab = Lab(plan, name, build_dir)
        if console.is_terminal:
            columns = (SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.fields[message]}"),
                       TimeElapsedColumn())  # fmt: skip
            with RichProgress(*columns, console=console) as progress:
                status = the_lab.up(progress=RichSink(progress), ssh_timeout=ssh_timeout)
        else:
            status = the_lab.up(progress=_plain_sink(console), ssh_timeout=ssh_timeout)  # type: ignore[arg-type]
    print_status(Console(), status)


@lab.command()
@BUILD_DIR
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status(build_dir: Path, as_json: bool) -> None:
    """Show each VM's power state, SSH port and rail links."""
    with _lab_errors():
        current = Lab.attach(build_dir).status()
    if as_json:
        click.echo(json.dumps(current.model_dump(mode="json"), indent=2))
    else:
        print_status(Console(), current)


@lab.command()
@BUILD_DIR
@click.option("--host", required=True, help="The VM to act on, e.g. client-1.")
@click.option("--rail", type=int, help="Rail index for --down/--up.")
@click.option("--down", "link_down", is_flag=True, help="Cut the host's link on --rail.")
@click.option("--up", "link_up", is_flag=True, help="Restore the host's link on --rail.")
@click.option("--pause", is_flag=True, help="Freeze the VM (QMP stop).")
@click.option("--resume", is_flag=True, help="Unfreeze the VM (QMP cont).")
@click.option("--stop", is_flag=True, help="Hard-stop the VM (no guest shutdown).")
def fault(
    build_dir: Path, host: str, rail: int | None, link_down: bool, link_up: bool, pause: bool, resume: bool,
    stop: bool,
) -> None:  # fmt: skip
    """Inject one fault: a rail link down/up, a paused/resumed VM, or a hard stop."""
    actions = [name for name, on in (("--down", link_down), ("--up", link_up), ("--pause", pause),
                                     ("--resume", resume), ("--stop", stop)) if on]  # fmt: skip
    if len(actions) != 1:
        raise click.UsageError("give exactly one of --down, --up, --pause, --resume, --stop")
    if (link_down or link_up) != (rail is not None):
        raise click.UsageError("--rail goes with --down/--up, and they need it")
    with _lab_errors():
        the_lab = Lab.attach(build_dir)
        if rail is not None:
            the_lab.set_link(host, rail, up=link_up)
        elif pause:
            the_lab.pause(host)
        elif resume:
            the_lab.resume(host)
        else:
            the_lab.stop(host)
    click.echo(f"{host}: {actions[0].lstrip('-')}" + (f" rail {rail}" if rail is not None else ""))


@lab.command()
@BUILD_DIR
def down(build_dir: Path) -> None:
    """Stop every VM and switch; remove sockets, disks, keys and the state file."""
    try:
        the_lab = Lab.attach(build_dir)
    except LabInputError:
        click.echo(f"no lab running in {build_dir}")
        return
    with _lab_errors():
        the_lab.down()
    click.echo("lab stopped")


@lab.command(hidden=True)
@BUILD_DIR
def instances(build_dir: Path) -> None:
    """Print molecule's instance config for the running lab (YAML)."""
    with _lab_errors():
        saved = Lab.attach(build_dir).saved_state()
    click.echo(yaml.safe_dump(molecule.instances(saved), sort_keys=False), nl=False)


@lab.command("inventory", hidden=True)
@BUILD_DIR
@click.option("--list", "list_all", is_flag=True, help="Ansible inventory-script protocol.")
@click.option("--host", "one_host", help="Ansible inventory-script protocol (vars are in --list).")
def inventory_script(build_dir: Path, list_all: bool, one_host: str | None) -> None:
    """The lab inventory as an Ansible inventory script prints it (JSON); empty when no lab runs."""
    if one_host is not None:
        click.echo("{}")
        return
    click.echo(json.dumps(molecule.script_inventory(state.load(build_dir.resolve())), indent=2))
