"""``python -m validators accept|parse ...``: the clustersmith CLI with the acceptance commands added, for use
before they are registered in ``blueprints.cli`` (then ``clustersmith accept`` is the same command)."""

from blueprints.cli import cli, main
from validators.cli import accept, parse

if "accept" not in cli.commands:
    cli.add_command(accept)
if "parse" not in cli.commands:
    cli.add_command(parse)
main()
