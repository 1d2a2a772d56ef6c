"""Signals on every clustersmith command line: installed first, before the heavy imports start.

Ctrl-C (SIGINT) exits 130 and SIGTERM exits 143, with a one-line message and no traceback, at any moment:
during start-up (importing pydantic, jinja2 and the planner takes a noticeable fraction of a second) as well as
in a command. SIGTERM raises ``Terminated`` in the main thread, so ``finally`` blocks and the build's clean-up
run as they do for Ctrl-C. This module imports only the standard library, so ``blueprints.__main__`` (the console
script) installs it at once; ``blueprints.commands.run`` installs it too, for ``python -m stacks`` and ``-m
validators``.
"""

from __future__ import annotations

import signal
from types import FrameType

EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


class Terminated(BaseException):
    """SIGTERM arrived; like KeyboardInterrupt it is no Exception, so ``except Exception`` lets it through."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def install() -> None:
    """Turn SIGTERM into ``Terminated`` (SIGINT already raises KeyboardInterrupt); main thread only."""
    signal.signal(signal.SIGTERM, _terminate)
