"""``clustersmith explain``: walk a Blueprint value back to the spec lines it was derived from."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from blueprints.blueprint import Blueprint, blueprint_data
from blueprints.errors import ClusterSmithError, Problem
from blueprints.figures import plain

EXAMPLE_PATH = "acceptance.storage.read_throughput"
WIDE = 100  # characters of a section's line before its value is cut


@dataclass(frozen=True)
class SpecLine:
    path: str
    line: int | None
    value: str


@dataclass(frozen=True)
class Explanation:
    path: str
    value: Any
    rule: str | None
    formula: str
    sources: tuple[SpecLine, ...]
    within: str = ""  # the node whose derived_from covers this value, where it is not the value itself
    section: bool = False  # a container of values without a derivation of its own: listed one value a line
    fields: dict[str, Any] | None = None  # the derived node's own fields, where ``value`` shows them as one string


def _key_of(item: Any) -> str | None:
    if isinstance(item, dict):
        for key in ("id", "name"):
            if isinstance(item.get(key), str):
                return str(item[key])
    return None


def _walk(node: Any, parts: list[str], done: list[str]) -> tuple[Any, list[str]]:
    if not parts:
        return node, done
    if isinstance(node, dict):
        # keys may hold dots (check ids such as storage.read_throughput): longest match first
        for n in range(len(parts), 0, -1):
            key = ".".join(parts[:n])
            if key in node:
                return _walk(node[key], parts[n:], [*done, key])
        return None, done
    if isinstance(node, list):
        for n in range(len(parts), 0, -1):
            key = ".".join(parts[:n])
            for i, item in enumerate(node):
                if _key_of(item) == key or key == str(i):
                    return _walk(item, parts[n:], [*done, key])
        return None, done
    return None, done


def _items(node: Any) -> list[tuple[str, Any]]:
    """A section's values by the step that names each: a key, a list item's id or name, else its index."""
    if isinstance(node, dict):
        return list(node.items())
    if isinstance(node, list):
        return [(_key_of(item) or str(i), item) for i, item in enumerate(node)]
    return []


def _parts(data: dict[str, Any], dotted: str) -> list[str]:
    """The path's steps; an empty or blank path, or one with an empty step, is bad input naming the sections.
    ``acceptance.<check id>`` is short for ``acceptance.checks.<check id>``."""
    parts = dotted.strip().split(".")
    if not dotted.strip() or not all(parts):
        what = "empty" if not dotted.strip() else "has an empty step"
        sections = [k for k, v in data.items() if isinstance(v, dict | list) and not k.startswith("spec_")]
        raise ClusterSmithError(
            [Problem("PATH", f"{what}; expected a dotted path to one value of the Blueprint, e.g. {EXAMPLE_PATH}",
                     value=repr(dotted), hint="its sections: " + ", ".join(sections))],
            title="cannot explain")
    if parts[0] == "acceptance" and len(parts) > 1 and parts[1] not in data["acceptance"]:
        parts.insert(1, "checks")
    return parts


def _derived(data: dict[str, Any], done: list[str]) -> tuple[dict[str, Any], list[str]] | None:
    """The innermost node on the path that carries a derived_from, with its path."""
    for n in range(len(done), -1, -1):
        node, _ = _walk(data, done[:n], [])
        if isinstance(node, dict) and "derived_from" in node:
            return node, done[:n]
    return None


def _shown(node: dict[str, Any]) -> Any:
    if "value" in node:
        return node["value"]
    if "threshold" in node:  # an acceptance check or an alert rule
        return f"{node.get('op', 'threshold')} {plain(node['threshold'])} {node['unit']} ({node['severity']})"
    return {k: v for k, v in node.items() if k != "derived_from"}


def explain(bp: Blueprint, dotted: str) -> Explanation:
    data = blueprint_data(bp)
    parts = _parts(data, dotted)
    dotted = ".".join(parts)
    node, done = _walk(data, parts, [])
    if ".".join(done) != dotted:  # not found (a value found may be null: a check's predicted figure where none is)
        parent, _ = _walk(data, done, [])
        options = ", ".join(key for key, _ in _items(parent)[:25])
        raise ClusterSmithError(
            [Problem(dotted, f"no such value in the Blueprint; under {'.'.join(done) or '(top)'} there is: {options}")],
            title="cannot explain",
        )
    found = _derived(data, done)
    if found is None:
        return Explanation(dotted, node, None, "", (), section=isinstance(node, dict | list))
    owner, at = found
    prov = owner["derived_from"]
    sources = [SpecLine(path, bp.spec_lines.get(path), bp.spec_values.get(path, "(default)"))
               for path in prov["spec"]]
    value = _shown(owner) if at == done else node
    within = "" if at == done else ".".join(at)
    fields = {k: v for k, v in owner.items() if k != "derived_from"} if at == done and isinstance(value, str) \
        and "threshold" in owner else None
    return Explanation(dotted, value, prov["rule"], prov.get("formula", ""), tuple(sources), within, fields=fields)


def render_explanation(bp: Blueprint, e: Explanation) -> str:
    if e.section:
        return _render_section(e)
    lines = _value_lines(e.path, e.value)
    if e.rule is None:
        lines.append("  not derived from the spec: a constant of the design")
        return "\n".join(lines)
    if e.within:
        lines.append(f"  part of: {e.within}, derived as a whole")
    lines.append(f"  rule:    {e.rule}")
    if e.formula:
        lines.append(f"  because: {e.formula}")
    lines.append(f"  from {bp.spec_file}:")
    for s in e.sources:
        where = f"line {s.line:>3}" if s.line else "(not in the file: default)"
        lines.append(f"    {where}  {s.path}: {s.value}")
    return "\n".join(lines)


def _render_section(e: Explanation) -> str:
    """A section, one value a line (cut to ``WIDE``), each named by the path that explains it."""
    items = _items(e.value)
    lines = [f"{e.path}: a section of {len(items)} value(s), not derived as a whole; explain one of:"]
    for key, value in items:
        derived = isinstance(value, dict) and "derived_from" in value
        line = f"  {e.path}.{key} = {_short(_shown(value)) if derived else _outline(value)}"
        lines.append((line if len(line) <= WIDE else line[:WIDE - 1] + "…") + ("  (derived)" if derived else ""))
    return "\n".join(lines)


def _value_lines(path: str, value: Any) -> list[str]:
    """``path = value`` on one line; a group of values (a check's arguments, a scratch area) one value a line."""
    if not isinstance(value, dict | list) or not value:
        return [f"{path} = {_short(value)}"]
    return [f"{path} =", *(f"    {key}: {_short(item)}" for key, item in _items(value))]


def _outline(value: Any) -> str:
    """A value inside a section: a nested section by its count and names, anything else as it is."""
    if isinstance(value, dict | list):
        names = [key for key, _ in _items(value)]
        opening, closing = "{}" if isinstance(value, dict) else "[]"
        return f"{opening}{len(names)}: {', '.join(names)}{closing}" if names else opening + closing
    return str(value)


def explanation_json(bp: Blueprint, e: Explanation) -> dict[str, Any]:
    """``explain --json``: the ``Explanation``'s fields and ``spec_file``: ``path`` (as explained, the
    ``acceptance.<id>`` shorthand written out), ``value``, ``rule`` and ``formula`` (``null`` and ``""`` for a value
    not derived from the spec), ``sources`` (each spec line's ``path``, ``line``, ``null`` for a default, and
    ``value``), ``within`` (the node derived as a whole that holds the value, else ``""``), ``section`` (true for
    a section of values: ``value`` is then the whole section) and ``fields`` (for a check or an alert rule, whose
    ``value`` is one line such as ``">= 0.02 GB/s (info)"``: its own fields, threshold, unit and severity among
    them, as numbers and words; else ``null``)."""
    return {**asdict(e), "spec_file": bp.spec_file}


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value[:8]) + (", ..." if len(value) > 8 else "") + "]"
    return str(value)
