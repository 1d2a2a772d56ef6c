"""Load a requirement spec from YAML and turn every pydantic error into a Problem with its line.

``load_requirements(path)`` returns a ``Requirements`` or raises ``SpecError`` holding all problems
found in one pass: YAML path, line number, the offending value, what was expected, and a
"did you mean" for misspelt keys and choices.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from blueprints.errors import Problem, SpecError
from blueprints.spec import Requirements, RuleError

Loc = tuple[str | int, ...]


class _LineLoader(yaml.SafeLoader):
    """SafeLoader that also records the line of every mapping key and value."""


def _line_map(text: str) -> dict[tuple[str | int, ...], int]:
    lines: dict[tuple[str | int, ...], int] = {}
    root = yaml.compose(text, Loader=_LineLoader)

    def walk(node: yaml.Node, path: tuple[str | int, ...]) -> None:
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = (*path, str(key.value))
                lines[sub] = key.start_mark.line + 1
                walk(value, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*path, i))

    if root is not None:
        walk(root, ())
    return lines


def _unwrap(annotation: Any) -> Any:
    """Strip Optional and Annotated down to the model class or union of classes."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(args[0]) if len(args) == 1 else tuple(_unwrap(a) for a in args)
    return annotation


def _tag_map(union: tuple[Any, ...]) -> dict[str, type[BaseModel]]:
    tags: dict[str, type[BaseModel]] = {}
    for cls in union:
        if isinstance(cls, type) and issubclass(cls, BaseModel) and "provider" in cls.model_fields:
            for tag in typing.get_args(_unwrap(cls.model_fields["provider"].annotation)):
                tags[str(tag)] = cls
    return tags


def _resolve(loc: Loc) -> tuple[tuple[str | int, ...], type[BaseModel] | None]:
    """Map a pydantic loc to the YAML path (discriminator tags dropped) and the model at its end."""
    model: Any = Requirements
    path: list[str | int] = []
    parent: type[BaseModel] | None = Requirements
    pending_union: dict[str, type[BaseModel]] | None = None
    for part in loc:
        if pending_union is not None:
            model = pending_union.get(str(part))
            pending_union = None
            parent = model
            continue
        path.append(part)
        parent = model if isinstance(model, type) and issubclass(model, BaseModel) else None
        if parent is not None and isinstance(part, str) and part in parent.model_fields:
            nxt = _unwrap(parent.model_fields[part].annotation)
            if isinstance(nxt, tuple):
                pending_union = _tag_map(nxt)
                model = None
            else:
                model = nxt
        else:
            model = None
    last_model = model if isinstance(model, type) and issubclass(model, BaseModel) else None
    return tuple(path), (parent if path else last_model) if last_model is None else last_model


def _value_at(doc: Any, path: tuple[str | int, ...]) -> Any:
    node = doc
    for part in path:
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if in_dict or in_list:
            node = node[part]
        else:
            return None
    return node


def _did_you_mean(word: str, choices: list[str]) -> str | None:
    prefixed = [c for c in choices if c.lower().startswith(word.lower()) and word]
    if len(prefixed) == 1:
        return f"did you mean {prefixed[0]!r}?"
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.5)
    return f"did you mean {close[0]!r}?" if close else None


def _nearest_line(lines: dict[tuple[str | int, ...], int], path: tuple[str | int, ...]) -> int | None:
    for n in range(len(path), -1, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None


def _problem(err: Any, doc: Any, lines: dict[tuple[str | int, ...], int]) -> Problem:
    loc: Loc = tuple(err["loc"])
    kind = err["type"]
    ctx = err.get("ctx") or {}
    original = ctx.get("error")
    if isinstance(original, RuleError):
        loc = (*loc, *original.field.split("."))
    path, model = _resolve(loc)
    dotted = ".".join(str(p) for p in path)
    line = _nearest_line(lines, path)
    raw = _value_at(doc, path)
    value = None if raw is None or isinstance(raw, dict | list) else repr(raw)
    hint = None
    message = str(err["msg"]).removeprefix("Value error, ")
    if message.startswith("Input should be"):
        message = "expected a value that should be" + message.removeprefix("Input should be")

    if kind == "extra_forbidden":
        _, parent_model = _resolve(loc[:-1])
        allowed = list(parent_model.model_fields) if parent_model else []
        message = f"unknown key {path[-1]!r}; expected one of: {', '.join(allowed)}"
        hint = _did_you_mean(str(path[-1]), allowed)
        value = None
    elif kind == "missing":
        message = "required key is missing"
        if model is not None and path and isinstance(path[-1], str) and path[-1] in model.model_fields:
            desc = model.model_fields[path[-1]].description
            message += f" ({desc})" if desc else ""
    elif kind == "literal_error":
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        message = f"expected one of: {', '.join(choices)}"
        hint = _did_you_mean(str(raw), choices)
    elif kind == "union_tag_invalid":
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected_tags", "")))
        path = (*path, "provider")
        dotted += ".provider"
        line = _nearest_line(lines, path)
        value = repr(ctx.get("tag"))
        message = f"unknown provider; expected one of: {', '.join(choices)}"
        hint = _did_you_mean(str(ctx.get("tag")), choices)
    elif kind == "union_tag_not_found":
        message = "key 'provider' is missing; expected one of: aws, gcp, azure, baremetal, lab"
    elif isinstance(original, RuleError):
        value = None
    return Problem(path=dotted, message=message, line=line, value=value, hint=hint)


def parse_requirements(text: str, filename: str = "<spec>") -> Requirements:
    """Parse spec text; raise SpecError with every problem found."""
    try:
        doc = yaml.safe_load(text)
        lines = _line_map(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError([Problem("", f"not valid YAML: {problem}", line=line)], filename, "invalid spec") from None
    if not isinstance(doc, dict):
        got = type(doc).__name__ if doc is not None else "an empty document"
        raise SpecError(
            [Problem("", f"expected a mapping with apiVersion, kind, metadata, ... (got {got})", line=1)],
            filename,
            "invalid spec",
        )
    try:
        return Requirements.model_validate(doc)
    except ValidationError as exc:
        problems = [_problem(e, doc, lines) for e in exc.errors()]
        problems.sort(key=lambda p: (p.line or 0, p.path))
        raise SpecError(problems, filename, "invalid spec") from None


def load_requirements(path: Path) -> Requirements:
    """Read and parse a spec file; a missing or unreadable file is a SpecError too."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SpecError([Problem("", f"cannot read the spec: {reason}")], str(path), "invalid spec") from None
    return parse_requirements(text, str(path))


def requirement_lines(path: Path) -> dict[str, int]:
    """Dotted spec path -> line, for pointing planner errors and provenance at the file."""
    try:
        lines = _line_map(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return {".".join(str(p) for p in k): v for k, v in lines.items() if k}
