"""``python -m validators accept|parse ...``: the acceptance commands alone, with the clustersmith CLI's exit codes
(``clustersmith accept`` is the same command, registered in pyproject.toml)."""

import click

from blueprints.commands import run
from validators.cli import accept, parse

run(click.Group(commands=[accept, parse]), prog_name="python -m validators")
