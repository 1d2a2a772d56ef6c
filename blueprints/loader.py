"""Load a requirement spec from YAML and turn every pydantic error into a Problem with its line.

``load_requirements(path)`` returns a ``Requirements`` or raises ``SpecError`` holding all problems
found in one pass: YAML path, line number, the offending value, what was expected, and a
"did you mean" for misspelt keys and choices.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import types
import typing
import unicodedata
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from blueprints.errors import Problem, SpecError, cut
from blueprints.figures import long_integer
from blueprints.spec import Requirements, RuleError
from blueprints.units import Quantity, bound_of
from blueprints.yaml11 import construct, reading

Loc = tuple[str | int, ...]


# Bounds on what the loader reads: a spec is a page of YAML (the examples are under 2 KB and 60 nodes, 4 keys
# deep), so each bound leaves two orders of magnitude of room and stops hostile input in milliseconds.
MAX_SPEC_BYTES = 1 << 20  # 1 MiB: /dev/zero or a log passed by mistake is refused before it fills memory
MAX_DEPTH = 32  # nesting; the deepest spec path is 3 keys (performance.storage.read_throughput)
MAX_ALIASES = 64  # YAML aliases (*name) in one document
MAX_NODES = 10_000  # YAML nodes after expanding every alias: an alias bomb expands x9 per level
MAX_INT_DIGITS = 18  # every integer field is below 10**7; 18 digits stays inside int64, int() never sees 5,000


class _Refused(Exception):
    """Input that breaks a bound; carries the Problem to report."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _dotted(path: list[str | int] | tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in path)


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses too many aliases and too deep nesting while composing, before any expansion."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._path: list[str | int] = []

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise _Refused(Problem(_dotted(self._path), f"more than {MAX_ALIASES} YAML aliases (*name); "
                                       "expected a spec that writes its values out", line=_line(mark)))
            return super().compose_node(parent, index)
        is_key = isinstance(parent, yaml.MappingNode) and index is None
        if parent is not None and not is_key:
            self._path.append(str(index.value) if isinstance(index, yaml.ScalarNode)
                              else index if isinstance(index, int) else "?")
        try:
            if len(self._path) > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise _Refused(Problem(_dotted(self._path), f"nested more than {MAX_DEPTH} levels deep; "
                                       "expected a spec like the examples (3 levels)", line=_line(mark)))
            return super().compose_node(parent, index)
        finally:
            if parent is not None and not is_key:
                self._path.pop()


def _line(mark: yaml.Mark) -> int:
    """The 1-based line of a YAML mark as an editor counts it: by newlines. YAML also breaks lines at NEL, U+2028,
    U+2029 and a lone CR, so ``mark.line`` can name a line the file does not have in an editor (fuzzing found
    '"\\x85' reported on line 2 of a one-line text)."""
    buffer = getattr(mark, "buffer", None)
    if isinstance(buffer, str):
        return buffer.count("\n", 0, mark.index) + 1
    return int(mark.line) + 1


def _compose(text: str) -> yaml.Node | None:
    """Compose the single document of ``text`` within the bounds above (raises _Refused or YAMLError)."""
    if len(text) > MAX_SPEC_BYTES:
        raise _Refused(Problem("", f"the spec is {len(text)} characters; expected at most {MAX_SPEC_BYTES}"))
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


class _Walk:
    """One pass over the composed document, every alias expanded (within MAX_DEPTH and MAX_NODES): the
    line of every path, and the problems YAML itself lets through (duplicate keys, oversized integers)."""

    def __init__(self) -> None:
        self.lines: dict[tuple[str | int, ...], int] = {}
        self.problems: list[Problem] = []
        self.plain: list[tuple[tuple[str | int, ...], yaml.ScalarNode]] = []  # unquoted scalars, every path
        self.nodes = 0
        self._open: set[int] = set()
        self._checked: set[int] = set()

    def walk(self, node: yaml.Node, path: tuple[str | int, ...]) -> None:
        line = _line(node.start_mark)
        if id(node) in self._open:
            raise _Refused(Problem(_dotted(path), "a YAML alias refers to a mapping or list that contains it; "
                                   "expected a value that ends", line=line))
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _Refused(Problem(_dotted(path), f"the document expands to more than {MAX_NODES} values "
                                   "(YAML aliases); expected a spec that writes its values out", line=line))
        if len(path) > MAX_DEPTH:
            raise _Refused(Problem(_dotted(path), f"nested more than {MAX_DEPTH} levels deep (through YAML "
                                   "aliases); expected a spec like the examples (3 levels)", line=line))
        self.lines.setdefault(path, line)
        first = id(node) not in self._checked
        self._checked.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if first:
                self._check_int(node, path)
            if node.style is None:
                self.plain.append((path, node))
            return
        self._open.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                seen: dict[str, int] = {}
                for key, value in node.value:
                    sub = (*path, str(key.value))
                    key_line = _line(key.start_mark)
                    if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                        if first and str(key.value) in seen:
                            self.problems.append(Problem(
                                _dotted(sub), f"duplicate key {key.value!r} on lines {seen[str(key.value)]} and "
                                f"{key_line}; expected each key once (YAML would silently keep the last)",
                                line=key_line))
                        seen.setdefault(str(key.value), key_line)
                    self.lines[sub] = key_line
                    self.walk(value, sub)
            elif isinstance(node, yaml.SequenceNode):
                for i, item in enumerate(node.value):
                    self.walk(item, (*path, i))
        finally:
            self._open.discard(id(node))

    def _check_int(self, node: yaml.ScalarNode, path: tuple[str | int, ...]) -> None:
        if node.tag != "tag:yaml.org,2002:int":
            return
        digits = sum(ch.isdigit() for ch in node.value)
        if digits > MAX_INT_DIGITS:
            self.problems.append(Problem(
                _dotted(path), f"an integer of {digits} digits; expected a number of at most {MAX_INT_DIGITS} "
                "digits", line=_line(node.start_mark), value=node.value[:20] + "..."))


def _line_map(text: str) -> dict[tuple[str | int, ...], int]:
    root = _compose(text)
    w = _Walk()
    if root is not None:
        w.walk(root, ())
    return w.lines


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
    close = prefixed if len(prefixed) == 1 else difflib.get_close_matches(word, choices, n=1, cutoff=0.5)
    if not close:
        return None
    return f"did you mean {close[0]!r}?" + _look_alikes(word, close[0])


def _look_alikes(word: str, suggestion: str) -> str:
    """Where ``word`` holds characters outside ASCII that the suggestion does not (a Cyrillic 'а', a Unicode dash),
    name them by code point: printed side by side, the two can look the same."""
    odd = [(i, ch) for i, ch in enumerate(word) if ord(ch) > 127 and ch not in suggestion]
    if not odd:
        return ""
    named = ", ".join(f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')} at character {i + 1}" for i, ch in odd[:3])
    more = f" and {len(odd) - 3} more" if len(odd) > 3 else ""
    return f" (what you wrote has {named}{more}, not the ASCII character it looks like)"


def _other_targets(model: type[BaseModel] | None, key: str) -> list[str]:
    """The providers whose target takes ``key``, where ``model`` is a target that does not."""
    if model is None or "provider" not in model.model_fields:
        return []
    targets = _tag_map(_unwrap(Requirements.model_fields["target"].annotation))
    return [tag for tag, other in targets.items() if other is not model and key in other.model_fields]


def _nearest_line(lines: dict[tuple[str | int, ...], int], path: tuple[str | int, ...]) -> int | None:
    for n in range(len(path), -1, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None


def _shown(raw: object) -> str:
    """A value for a message, as Python writes it; an integer past Python's 4300-digit limit (YAML reads a
    hexadecimal one of any length) by its size."""
    try:
        return repr(raw)
    except ValueError:
        return long_integer(raw) if isinstance(raw, int) else f"a {type(raw).__name__} that cannot be written"


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
    value = None if raw is None or isinstance(raw, dict | list) else _shown(raw)
    hint = None
    message = str(err["msg"]).removeprefix("Value error, ")
    if message.startswith("Input should be"):
        message = "expected a value that should be" + message.removeprefix("Input should be")
    if kind in ("bool_type", "bool_parsing"):
        message = "expected true or false"

    if kind == "extra_forbidden":
        _, parent_model = _resolve(loc[:-1])
        allowed = list(parent_model.model_fields) if parent_model else []
        message = f"unknown key {path[-1]!r}; expected one of: {', '.join(allowed)}"
        owners = _other_targets(parent_model, str(path[-1]))
        if owners and parent_model is not None:  # GCP's `project` on an AWS target: no "did you mean 'provider'?"
            this = typing.get_args(_unwrap(parent_model.model_fields["provider"].annotation))[0]
            message = (f"unknown key {path[-1]!r} for the {this} target (a key of the {', '.join(owners)} "
                       f"target{'s' if len(owners) > 1 else ''}); expected one of: {', '.join(allowed)}")
        else:
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
    elif kind == "string_pattern_mismatch" and model is not None and path and str(path[-1]) in model.model_fields:
        desc = model.model_fields[str(path[-1])].description  # the field's own words, never the raw regex
        message = f"expected {desc}" if desc else "expected a value of the documented form"
    elif kind == "union_tag_not_found":
        message = "key 'provider' is missing; expected one of: aws, gcp, azure, baremetal, lab"
    elif isinstance(original, RuleError):
        value = None
    return Problem(path=dotted, message=message, line=line, value=value, hint=hint)


def parse_requirements(text: str, filename: str = "<spec>") -> Requirements:
    """Parse spec text; raise SpecError with every problem found."""
    try:
        root = _compose(text)
        walk = _Walk()
        if root is not None:
            walk.walk(root, ())
        if walk.problems:
            raise SpecError(sorted(walk.problems, key=lambda p: (p.line or 0, p.path)), filename, "invalid spec")
        doc = construct(root)
        lines = walk.lines
    except _Refused as exc:
        raise SpecError([exc.problem], filename, "invalid spec") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = _line(mark) if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError([Problem("", f"not valid YAML: {problem}", line=line)], filename, "invalid spec") from None
    if not isinstance(doc, dict):
        got = type(doc).__name__ if doc is not None else "an empty document"
        raise SpecError(
            [Problem("", f"expected a mapping with apiVersion, kind, metadata, ... (got {got})", line=1)],
            filename,
            "invalid spec",
        )
    read_otherwise = _yaml_readings(walk.plain, doc)
    try:
        spec = Requirements.model_validate(doc)
        problems = []
    except ValidationError as exc:
        problems = [_problem(e, doc, lines) for e in exc.errors()]
    if read_otherwise or problems:
        named = {p.path for p in read_otherwise}
        problems = read_otherwise + [p for p in problems if p.path not in named]
        problems.sort(key=lambda p: (p.line or 0, p.path))
        raise SpecError(problems, filename, "invalid spec") from None
    return spec


def _field_at(doc: Any, path: tuple[str | int, ...]) -> tuple[Any, list[Any]] | None:
    """The annotation and metadata of the spec field a YAML path names (a target's model chosen by its
    ``provider``), or None where the path names no field."""
    annotation: Any = Requirements
    metadata: list[Any] = []
    node = doc
    for part in path:
        kind = _unwrap(annotation)
        if isinstance(kind, tuple):
            kind = _tag_map(kind).get(str(node.get("provider"))) if isinstance(node, dict) else None
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            field = kind.model_fields.get(part) if isinstance(part, str) else None
            if field is None:
                return None
            annotation, metadata = field.annotation, list(field.metadata)
        elif typing.get_origin(kind) in (list, tuple) and isinstance(part, int):
            annotation, metadata = typing.get_args(kind)[0], []
        elif typing.get_origin(kind) is dict and isinstance(part, str):
            annotation, metadata = typing.get_args(kind)[1], []
        else:
            return None
        node = _value_at(node, (part,))
    return annotation, metadata


def _leaf_kinds(annotation: Any) -> tuple[Any, ...]:
    """The types a field takes, Optional and Annotated stripped: ``(bool,)``, ``(Size,)``, ``(Literal[...],)``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _leaf_kinds(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return tuple(k for a in typing.get_args(annotation) if a is not type(None) for k in _leaf_kinds(a))
    return (annotation,)


def _expected(annotation: Any, metadata: list[Any]) -> str | None:
    """What a field expects, in words, for a message; None for mappings and lists (pydantic says those)."""
    bound = bound_of(annotation, metadata)
    if bound is not None:
        return bound
    words: list[str] = []
    for kind in _leaf_kinds(annotation):
        if kind is int:
            words.append("a whole number")
        elif kind is float:
            words.append("a number")
        elif kind is str:
            words.append("text (a name)")
        elif typing.get_origin(kind) is typing.Literal:
            words.append("one of: " + ", ".join(str(a) for a in typing.get_args(kind)))
        elif isinstance(kind, type) and issubclass(kind, Quantity):
            words.append(f"a {kind.kind} such as {kind.example!r}")
    return " or ".join(words) or None


def _yaml_readings(plain: list[tuple[tuple[str | int, ...], yaml.ScalarNode]], doc: Any) -> list[Problem]:
    """Unquoted values YAML read as something other than the field expects: a YAML 1.1 form that YAML 1.2 reads
    otherwise (octal, base 60, binary, yes/no/on/off) where no boolean belongs, or a boolean or number where the
    field takes no boolean or number (blueprints/yaml11.py)."""
    problems: list[Problem] = []
    for path, node in plain:
        value = _value_at(doc, path)
        read = reading(node, value)
        field = _field_at(doc, path)
        if read is None or field is None:
            continue
        kinds = _leaf_kinds(field[0])
        if isinstance(value, bool):
            misread = bool not in kinds
        else:  # a number: wrong in any YAML-1.1-only form, or where the field takes text and no number
            misread = read.only_yaml11 or (str in kinds and int not in kinds and float not in kinds)
        if not misread:
            continue
        expected = _expected(*field)
        message = f"YAML reads {cut(read.text)} as {read.how}"
        if isinstance(value, bool) and not any(k is str or typing.get_origin(k) is typing.Literal for k in kinds):
            message += f", which would count as {int(value)}" if int in kinds else ""
            message += f"; expected {expected}" if expected else ""
        else:
            message += f"; expected {expected}: {read.fix}" if expected else f"; {read.fix}"
        problems.append(Problem(_dotted(path), message, line=_line(node.start_mark)))
    return problems


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _read_spec(path: Path) -> str:
    """The text of a regular file of at most MAX_SPEC_BYTES, read without blocking on FIFOs or devices."""

    def refuse(message: str) -> SpecError:
        return SpecError([Problem("", message)], str(path), "invalid spec")

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise refuse(f"cannot read the spec: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise refuse(f"the spec is {kind}; expected a regular YAML file")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_SPEC_BYTES:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_SPEC_BYTES:
            raise refuse(f"the spec is larger than {MAX_SPEC_BYTES} bytes; expected a YAML file of a few KB")
    except OSError as exc:
        raise refuse(f"cannot read the spec: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refuse(f"the spec is not UTF-8 text (byte {exc.start}); expected a UTF-8 YAML file") from None


def load_requirements(path: Path) -> Requirements:
    """Read and parse a spec file; a missing, unreadable, special or oversized file is a SpecError too."""
    return parse_requirements(_read_spec(path), str(path))


def requirement_lines(path: Path) -> dict[str, int]:
    """Dotted spec path -> line, for pointing planner errors and provenance at the file."""
    try:
        lines = _line_map(_read_spec(path))
    except (SpecError, _Refused, yaml.YAMLError):
        return {}
    return {".".join(str(p) for p in k): v for k, v in lines.items() if k}
