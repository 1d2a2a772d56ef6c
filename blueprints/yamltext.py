"""YAML text of large documents: what ``yaml.dump`` with libyaml's emitter writes, byte for byte, in a fraction of
the time.

A 1M-GPU design's Blueprint and role variables hold lists with one record per GPU node (NVMe-oF subsystems, host
identities, scrape hosts). PyYAML turns every scalar of them into a node in Python before libyaml writes it, which
costs seconds and hundreds of MB. :func:`dump` writes those lists itself, as libyaml lays them out, and leaves the
rest of the document to PyYAML: each qualifying list is swapped for a one-line token, PyYAML dumps what remains
(small), and the token's line is replaced by the list's text at the token key's column.

A list qualifies when it is a mapping's value and every item is a scalar, or every item a non-empty mapping of
scalars with string keys: ``None``, ``bool``, ``int`` and strings made of ``[A-Za-z0-9_./:@+=-]`` that start with a
letter, digit, ``_`` or ``/``, do not end in ``:`` and are under 100 characters. libyaml writes such a string
plain when it reads back as a string and single-quoted when it would read back as something else (``'4420'``,
``'true'``, ``'2026-11-01'``): it holds no character that needs escaping or a line break. Any other list, and every
float, is PyYAML's. ``tests/unit/blueprints/test_yamltext.py`` holds the two outputs equal.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import yaml
from yaml.resolver import Resolver

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_PLAIN = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./:@+=-]{0,98}")
# Per first character, what reads back as something else than a string (bool, int, float, null, timestamp): the
# implicit resolvers PyYAML's dumper consults, as one pattern (Resolver.resolve tries them in turn; same answer).
_NOT_STR = {first: re.compile("|".join(f"(?{'x' if r.flags & re.X else ''}:{r.pattern})" for _, r in found))
            for first, found in Resolver.yaml_implicit_resolvers.items() if first}


def dump(data: Any, *, width: int = 80, allow_unicode: bool = False) -> str:
    """``yaml.dump(data, Dumper=CSafeDumper, sort_keys=False, width=width, allow_unicode=allow_unicode)``."""
    lists: dict[str, str] = {}
    token = f"yamltext{uuid.uuid4().hex}n"
    rest = _swap(data, token, lists, _shared(data))
    text = yaml.dump(rest, Dumper=_DUMPER, sort_keys=False, width=width, allow_unicode=allow_unicode)
    out: list[str] = []
    at = 0
    for name, body in lists.items():  # in the order PyYAML wrote them: the document's
        end = text.find(f": {name}\n", at)
        start = text.rfind("\n", 0, max(end, 0)) + 1
        column = _key_column(text[start:end])
        if end < 0 or start + column == end:  # not `key: token` (a complex key): PyYAML writes it all
            return yaml.dump(data, Dumper=_DUMPER, sort_keys=False, width=width, allow_unicode=allow_unicode)
        out += [text[at:end], ":\n", body.replace("\x00", " " * column)]
        at = end + len(name) + 3
    out.append(text[at:])
    return "".join(out)


def _key_column(line: str) -> int:
    """Where the key of a ``key: value`` line starts, after its indentation, the ``- `` of enclosing items and the
    ``: `` of a complex key's value (a mapping under a key PyYAML writes as ``? key``)."""
    column = 0
    while line.startswith((" ", "- ", ": "), column):
        column += 1 if line[column] == " " else 2
    return column


def _shared(data: Any) -> set[int]:
    """The ids of lists and mappings the document holds more than once, which PyYAML writes as an anchor and
    aliases: those stay PyYAML's."""
    seen: set[int] = set()
    again: set[int] = set()
    todo = [data]
    while todo:
        here = todo.pop()
        if isinstance(here, (dict, list)):
            if id(here) in seen:
                again.add(id(here))
                continue
            seen.add(id(here))
            todo.extend(here.values() if isinstance(here, dict) else here)
    return again


def _swap(data: Any, token: str, lists: dict[str, str], shared: set[int]) -> Any:
    """``data`` with each qualifying list (a mapping's value) replaced by a token; each list's text by its token,
    every line starting with a NUL that stands for the key's column. A shared object is kept whole, as it is."""
    if id(data) in shared:
        return data
    if isinstance(data, dict):
        found: dict[Any, Any] = {}
        for key, value in data.items():
            text = None
            if isinstance(key, str) and isinstance(value, list) and id(value) not in shared:
                text = _list(value, shared)
            if text is None:
                found[key] = _swap(value, token, lists, shared)
            else:
                found[key] = name = f"{token}{len(lists)}"
                lists[name] = text
        return found
    if isinstance(data, list):
        return [_swap(item, token, lists, shared) for item in data]
    return data


def _list(items: list[Any], shared: set[int]) -> str | None:
    """A list's block-sequence text at column 0 of its key (NUL marks where that column goes), or None."""
    if not items:
        return None
    lines: list[str] = []
    if isinstance(items[0], dict):
        keys: dict[Any, str | None] = {}  # the records share their keys
        for item in items:
            if not isinstance(item, dict) or not item or id(item) in shared:
                return None
            lead = "\x00- "
            for key, value in item.items():
                if key not in keys:
                    keys[key] = _scalar(key) if isinstance(key, str) else None
                k = keys[key]
                v = _scalar(value)
                if k is None or v is None:
                    return None
                lines.append(f"{lead}{k}: {v}\n")
                lead = "\x00  "
        return "".join(lines)
    for item in items:
        v = _scalar(item)
        if v is None:
            return None
        lines.append(f"\x00- {v}\n")
    return "".join(lines)


def _scalar(value: Any) -> str | None:
    """The scalar as libyaml writes it in block context, or None when only PyYAML may write it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    if type(value) is not str or _PLAIN.fullmatch(value) is None or value.endswith(":"):
        return None
    not_str = _NOT_STR.get(value[0])
    return f"'{value}'" if not_str is not None and not_str.match(value) else value
