"""``python -m stacks deploy|inventory ...``: the clustersmith CLI with the stack commands added, for use
before they are registered in ``blueprints.cli`` (then ``clustersmith deploy`` is the same command)."""

from blueprints.cli import cli, main
from stacks.cli import deploy, inventory

for command in (deploy, inventory):
    if command.name not in cli.commands:
        cli.add_command(command)
main()
