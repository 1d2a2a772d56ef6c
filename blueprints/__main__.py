"""``clustersmith`` and ``python -m blueprints``: signals first (blueprints.signals), then the command line.

Importing the command line loads pydantic, jinja2 and the planner; a Ctrl-C or SIGTERM during that import is held
until it ends and then exits 130 or 143 with one line and no traceback.
"""

import sys

from blueprints.signals import exit_if_signalled, held, install


def main() -> None:
    # One try around all of it: a signal is handled at the first bytecode after it arrives, which may be the last
    # line of install() itself or the gap between the import and the command's own handlers (blueprints.commands.run).
    # The imports run with the signals held (blueprints.signals.held): one that arrives meanwhile is raised at the
    # block's end, never inside a library's import code.
    try:
        with held():
            install()
            from blueprints.cli import main as cli_main
        cli_main()
    except BaseException as exc:  # a signal (blueprints.signals.signalled), however it reached here
        exit_if_signalled(exc, lambda line: sys.stderr.write(line + "\n"))
        raise


if __name__ == "__main__":
    main()
