"""The project's own error type for user input: every problem at once, each pointing into the file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from blueprints.textsafe import one_line


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the user's input."""

    path: str  # dotted YAML path, e.g. performance.storage.latency_p99 ("" for the document)
    message: str  # what is wrong and what was expected
    line: int | None = None  # 1-based line in the file, when known
    value: str | None = None  # the offending value as the user wrote it
    hint: str | None = None  # e.g. "did you mean 'training_set'?"

    def render(self, filename: str = "") -> str:
        """One line: ``file:line: path: message (got value); hint``. Control characters anywhere in it (a key, a
        value, a file name) are written as escapes, so input cannot clear or retitle the reader's terminal, and a
        value longer than ``LONGEST_VALUE`` is cut, its length said."""
        where = f"{filename}:{self.line}" if self.line and filename else (filename or "")
        head = f"{where}: " if where else ""
        at = self.path or "(document)"
        got = f" (got {cut(self.value)})" if self.value is not None else ""
        hint = f"; {self.hint}" if self.hint else ""
        return one_line(f"{head}{at}: {self.message}{got}{hint}")

    def as_json(self, filename: str = "") -> dict[str, str | int | None]:
        """The problem for a script (``--json``): every key always there, ``null`` where unknown; the value whole."""
        return {"file": filename or None, "line": self.line, "path": self.path, "value": self.value,
                "message": self.message, "hint": self.hint}


LONGEST_VALUE = 80  # characters of a value echoed whole; longer ones are cut to SHOWN_VALUE and their length said
SHOWN_VALUE = 60


def cut(value: str) -> str:
    """``value`` whole up to ``LONGEST_VALUE`` characters, else its start and its length."""
    return value if len(value) <= LONGEST_VALUE else f"{value[:SHOWN_VALUE]}... ({len(value):,} characters)"


@dataclass
class ClusterSmithError(Exception):
    """Bad input: a spec, a Blueprint or an argument. The CLI prints it and exits with 2."""

    problems: Sequence[Problem]
    filename: str = ""
    title: str = field(default="invalid input")

    def __str__(self) -> str:
        lines = [f"{self.title}: {len(self.problems)} problem(s)"]
        lines += ["  " + p.render(self.filename) for p in self.problems]
        return "\n".join(lines)

    def as_json(self) -> dict[str, object]:
        """The document ``--json`` prints on stdout for bad input (exit 2): ``valid`` false, ``error`` the title,
        ``problems`` each as ``Problem.as_json``."""
        return {"valid": False, "error": self.title, "problems": [p.as_json(self.filename) for p in self.problems]}


class SpecError(ClusterSmithError):
    """The requirement spec is malformed or asks for something the catalog cannot deliver."""


class InfeasibleError(ClusterSmithError):
    """The targets are well-formed but cannot be met; each problem names both numbers."""
