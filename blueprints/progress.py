"""What a slow command is doing, for a person watching a terminal: one spinner line on standard error.

A build of 100,000 GPUs renders for several seconds (docs/benchmarks.md) and said nothing meanwhile. ``progress``
shows the step under way (planning, rendering each part, linking, swapping) as a transient spinner on stderr, and
only when stderr is a terminal: a log, a pipe or a script's capture gets no line, and stdout never does, so
``--json`` output and piped tables stay as they were. The line is erased when the step is done.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner

Step = Callable[[str], None]  # says which step begins, e.g. "rendering switch (7/9)"


def silent(_: str) -> None:
    """The ``Step`` of a caller that shows no progress."""


@contextmanager
def progress(show: bool = True) -> Iterator[Step]:
    """A ``Step`` for the work inside the block: a spinner with its text on stderr while ``show`` and stderr is a
    terminal, else ``silent``. Each step is drawn at once; the spinner turns between steps and is erased at the end,
    an error or Ctrl-C included, before anything else is printed."""
    console = Console(stderr=True)
    if not show or not console.is_terminal:
        yield silent
        return
    spinner = Spinner("dots")
    # stdout stays the process's own: rich would send it through this console (stderr) while the spinner shows
    with Live(spinner, console=console, transient=True, redirect_stdout=False, redirect_stderr=False) as live:

        def step(text: str) -> None:
            spinner.update(text=f"{text}...")
            live.refresh()

        yield step
