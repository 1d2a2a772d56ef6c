"""Signals on every clustersmith command line: installed first, before the heavy imports start.

Ctrl-C (SIGINT) exits 130 and SIGTERM exits 143, with a one-line message and no traceback, at any moment:
during start-up (importing pydantic, jinja2 and the planner takes a noticeable fraction of a second) as well as
in a command. SIGTERM raises ``Terminated`` in the main thread, so ``finally`` blocks and the build's clean-up
run as they do for Ctrl-C. This module imports only the standard library, so ``blueprints.__main__`` (the console
script) installs it at once; ``blueprints.commands.run`` installs it too, for ``python -m stacks`` and ``-m
validators``.

Imports are run with both signals ``held``: a Python signal handler runs at whatever bytecode comes next, and inside a
library's import that can be code that does not let the exception through as it is. Seen on this project's start-up
(about 1 in 20 signals sent at a random moment of it): pydantic-core, building a model's validator at class creation,
turned the KeyboardInterrupt into a ``SchemaError`` (a traceback, exit 1), and other runs caught it as meant but then
died by SIGINT (-2) instead of exiting 130, the interpreter having recorded the KeyboardInterrupt as unhandled on the
way (strace: ``kill(self, SIGINT)`` after ``interrupted`` was written). Held, the signal waits in the kernel and is
delivered when the imports end, in our own frame.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


class Terminated(BaseException):
    """SIGTERM arrived; like KeyboardInterrupt it is no Exception, so ``except Exception`` lets it through."""


@dataclass(frozen=True)
class Signalled:
    """How a command line ends after a signal: its exit code and its one line."""

    code: int
    message: str


INTERRUPTED = Signalled(EXIT_INTERRUPTED, "interrupted")
TERMINATED = Signalled(EXIT_TERMINATED, "terminated")
_BY_SIGNAL = {signal.SIGINT: INTERRUPTED, signal.SIGTERM: TERMINATED}
_received: list[int] = []  # the signals our handlers raised for, first first


def _interrupt(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


def _terminate(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise Terminated


def install() -> None:
    """Turn SIGTERM into ``Terminated`` and SIGINT into KeyboardInterrupt, each remembered (``signalled``); a SIGINT
    that is ignored (a background job's) stays ignored. Main thread only; each call starts a new record."""
    _received.clear()
    signal.signal(signal.SIGTERM, _terminate)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)


def signalled(exc: BaseException) -> Signalled | None:
    """The signal ``exc`` stands for, or None. KeyboardInterrupt and ``Terminated`` do; so does any other Exception
    once one of our handlers has raised: library code that calls back into Python can wrap what the handler raised
    in an error of its own (pydantic-core, serialising a model: ``PydanticSerializationError: Error calling function
    `<lambda>`: KeyboardInterrupt``), and a signal is still what ended the command."""
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED
    if isinstance(exc, Terminated):
        return TERMINATED
    if isinstance(exc, Exception) and _received:
        return _BY_SIGNAL[signal.Signals(_received[0])]
    return None


def exit_if_signalled(exc: BaseException, say: Callable[[str], object]) -> None:
    """End the command line as ``signalled(exc)`` says (its one line through ``say``, then its exit code); return
    when ``exc`` stands for no signal, for the caller to re-raise."""
    ended = signalled(exc)
    if ended is not None:
        say(ended.message)
        sys.exit(ended.code)


HELD = frozenset({signal.SIGINT, signal.SIGTERM})


@contextmanager
def held() -> Iterator[None]:
    """Block SIGINT and SIGTERM in this thread for the ``with`` block, then deliver what arrived during it: the
    handler runs as the mask is put back (``signal.pthread_sigmask`` runs pending handlers before it returns), so the
    KeyboardInterrupt or ``Terminated`` is raised from the block's end. For imports only: a Ctrl-C waits for them (about
    half a second here). It holds where this is the process's only thread, as in a command line's start-up (the
    CLI's imports start none): the kernel gives a signal sent to the process to a thread that does not block it."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
