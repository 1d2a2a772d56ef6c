"""``clustersmith`` and ``python -m blueprints``: signals first (blueprints.signals), then the command line.

Importing the command line loads pydantic, jinja2 and the planner; a Ctrl-C or SIGTERM during that import still
exits 130 or 143 with one line and no traceback.
"""

import sys

from blueprints.signals import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated, install


def main() -> None:
    install()
    try:
        from blueprints.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except Terminated:
        sys.stderr.write("terminated\n")
        sys.exit(EXIT_TERMINATED)
    cli_main()


if __name__ == "__main__":
    main()
