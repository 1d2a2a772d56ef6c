"""``clustersmith`` and ``python -m blueprints``: signals first (blueprints.signals), then the command line.

Importing the command line loads pydantic, jinja2 and the planner; a Ctrl-C or SIGTERM during that import still
exits 130 or 143 with one line and no traceback.
"""

import sys

from blueprints.signals import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated, install


def main() -> None:
    # One try around all of it: a signal is handled at the first bytecode after it arrives, which may be the last
    # line of install() itself or the gap between the import and the command's own handlers (blueprints.commands.run).
    try:
        install()
        from blueprints.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except Terminated:
        sys.stderr.write("terminated\n")
        sys.exit(EXIT_TERMINATED)


if __name__ == "__main__":
    main()
