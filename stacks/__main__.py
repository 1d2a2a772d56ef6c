"""``python -m stacks deploy|inventory ...``: the stack commands alone, with the clustersmith CLI's exit codes
(``clustersmith deploy`` is the same command, registered in pyproject.toml)."""

import click

from blueprints.commands import run
from stacks.cli import deploy, inventory

run(click.Group(commands=[deploy, inventory]), prog_name="python -m stacks")
