"""The command registry and the way every clustersmith command line runs, below blueprints, stacks and validators.

A package contributes click commands by naming them in the ``clustersmith.commands`` entry-point group of
pyproject.toml; ``RegistryGroup`` loads one only when it is called or listed, so the planner's CLI imports neither
stacks nor validators. ``run`` gives every entry point (``clustersmith``, ``python -m stacks``, ``python -m
validators``) the same exit codes: 0 success, 1 a check failed, 2 bad input, 130 interrupted (Ctrl-C), 143
terminated (SIGTERM), each with one line and no traceback (blueprints.signals). A command given ``--json`` prints
one JSON document on stdout (``print_json``), and for bad input the error's document as well (``json_errors``).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import EntryPoint, entry_points

import click
from rich.console import Console

from blueprints.errors import ClusterSmithError
from blueprints.signals import EXIT_INTERRUPTED, exit_if_signalled, held, install

GROUP = "clustersmith.commands"
INSTALL_HINT = "reinstall clustersmith (`pip install -e .` in the repository) so its entry points are current"


class CommandLoadError(click.ClickException):
    """A registered command that cannot be loaded: a setup problem, exit 2 like bad input."""

    exit_code = 2


def registered() -> dict[str, EntryPoint]:
    """The commands other packages register, by name."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def load_command(ep: EntryPoint) -> click.Command:
    """The click command an entry point names, or a CommandLoadError that says which and why."""
    where = f"command {ep.name!r} (entry point {ep.value!r} in group {GROUP})"
    try:
        with held():  # a Ctrl-C during the plugin's import is raised after it, never as an import error
            command = ep.load()
    except Exception as exc:  # any failure while importing a plugin is the same setup error
        raise CommandLoadError(f"{where} cannot be loaded: {type(exc).__name__}: {exc}; {INSTALL_HINT}") from exc
    if not isinstance(command, click.Command):
        raise CommandLoadError(f"{where} is a {type(command).__name__}, not a click command")
    if command.name != ep.name:
        raise CommandLoadError(f"{where} loads a command named {command.name!r}; the two names must agree")
    return command


class RegistryGroup(click.Group):
    """A click group of its own commands plus those registered under ``GROUP``, each loaded on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *registered()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        own = super().get_command(ctx, cmd_name)
        if own is not None:
            return own
        ep = registered().get(cmd_name)
        return None if ep is None else load_command(ep)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:  # fmt: skip
        if args and not args[0].startswith("-") and not registered() and super().get_command(ctx, args[0]) is None:
            raise click.UsageError(f"No such command {args[0]!r}, and no command is registered in the entry-point "
                                   f"group {GROUP}: {INSTALL_HINT}.", ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The help's command list; a command that cannot be loaded is listed with why, and the rest still show."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names), default=0)
        rows = []
        for name in names:
            try:
                command = self.get_command(ctx, name)
            except CommandLoadError as exc:
                rows.append((name, f"(cannot be loaded: {exc.message})"))
                continue
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def print_json(doc: object) -> None:
    """One JSON document on stdout, as ``--json`` prints it: indented, ASCII only (a control character or any
    other non-ASCII character of the input is written as an escape)."""
    click.echo(json.dumps(doc, indent=2))


@contextmanager
def json_errors(enabled: bool) -> Iterator[None]:
    """Around a ``--json`` command's work: bad input (ClusterSmithError) prints its document
    (``ClusterSmithError.as_json``: ``{"valid": false, "error", "problems"}``) on stdout, then goes on to ``run``,
    which prints the message on stderr and exits 2 as without ``--json``."""
    try:
        yield
    except ClusterSmithError as exc:
        if enabled:
            print_json(exc.as_json())
        raise


PIPED_WIDTH = 1000  # columns a table may take when stdout is a file or a pipe: wide enough that no cell is cut


def output_console() -> Console:
    """The commands' stdout: a terminal's own width; piped or redirected with no COLUMNS set, wide enough that no
    table cell is cut (rich draws 80 columns there and ends cells with '…': check ids, spec paths, pool names)."""
    piped = sys.stdout is not None and not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(soft_wrap=True, width=PIPED_WIDTH if piped else None)


# Errors of a write to standard output: a full device (ENOSPC, EDQUOT), a reader gone (EPIPE), a closed or
# unwritable descriptor (EBADF, EIO).
_OUTPUT_ERRORS = frozenset((errno.ENOSPC, errno.EDQUOT, errno.EPIPE, errno.EBADF, errno.EIO))


def _stdout_broken(exc: OSError) -> bool:
    """Whether ``exc`` is standard output failing: an output error that names no file (every file the commands
    open is named in its error)."""
    return exc.errno in _OUTPUT_ERRORS and exc.filename is None


def _output_error(err: Console, why: str) -> None:
    err.print(f"[red]error[/]: cannot write the output: {why} (standard output); expected a terminal, file or pipe "
              "that takes it")
    sys.exit(2)


def run(group: click.Group, prog_name: str | None = None) -> None:
    """Run a command line with the project's exit codes; bad input and setup errors print a message, never a
    traceback. SIGINT and SIGTERM are handled for the call (blueprints.signals; the caller's handlers put back
    afterwards)."""
    err = Console(stderr=True, soft_wrap=True)
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    if sys.stdout is None:  # started with standard output closed (`>&-`)
        _output_error(err, "it is closed")
    try:
        install()  # inside the try: a SIGTERM already pending is raised as soon as the handler is in place
        group.main(prog_name=prog_name, standalone_mode=False)
        sys.stdout.flush()  # here, not at exit: a full or closed stdout is said like any other error
    except OSError as exc:
        if not _stdout_broken(exc):
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second failure when Python exits
        _output_error(err, exc.strerror or str(exc))
    except ClusterSmithError as exc:
        err.print("[red]error[/]: ", end="")
        err.print(str(exc), highlight=False, markup=False)
        sys.exit(2)
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code if exc.exit_code != 1 else 2)
    except BaseException as exc:  # a signal (blueprints.signals.signalled), however it reached here
        exit_if_signalled(exc, err.print)
        raise
    finally:
        for sig, handler in previous.items():
            if handler is not None:  # None: a handler not set from Python, which cannot be put back
                signal.signal(sig, handler)
