"""Progress reporting that works with and without a terminal.

The lab's API takes a plain callable; the CLI adapts it to ``rich.progress``. Without one, events go
to the ``stacks.lab`` logger, so a script or a test sees them in its log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("stacks.lab")


@dataclass(frozen=True)
class ProgressEvent:
    """One step of a long task: ``task`` groups the events (``image``, ``boot:storage-1``)."""

    task: str
    message: str
    done: bool = False


Progress = Callable[[ProgressEvent], None]


def log_progress(event: ProgressEvent) -> None:
    """The default sink: one log line per event."""
    log.info("%s: %s%s", event.task, event.message, " (done)" if event.done else "")
