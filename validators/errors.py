"""Bad tool output or a bad results folder: the project's input error, so the CLI exits 2 without a traceback."""

from __future__ import annotations

from pydantic import ValidationError

from blueprints.errors import ClusterSmithError, Problem


class ParseError(ClusterSmithError):
    """A file is not the tool output it should be; each problem names the field, the value and what was expected."""


def parse_error(source: str, tool: str, field: str, message: str, value: object = None) -> ParseError:
    shown = None if value is None else _short(value)
    return ParseError([Problem(field, message, value=shown)], source, f"not {tool} output")


def invalid(source: str, tool: str, where: str, exc: ValidationError) -> ParseError:
    """A value the model refused, named by its field under ``where``: a negative latency, bandwidth or count (no
    tool measures less than nothing) says so; anything else in pydantic's words."""
    first = exc.errors()[0]
    field = ".".join(str(p) for p in (where, *first["loc"]) if p != "")
    message = ("expected a value >= 0: no tool measures a negative latency, rate or count"
               if first["type"] == "greater_than_equal" else first["msg"].lower())
    return parse_error(source, tool, field, message, first.get("input"))


def _short(value: object, limit: int = 60) -> str:
    """The value as the problem line shows it: stripped, cut to ``limit`` with its length said (Problem.render
    escapes what is left)."""
    text = (value if isinstance(value, str) else repr(value)).strip()
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"
