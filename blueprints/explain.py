"""``clustersmith explain``: walk a Blueprint value back to the spec lines it was derived from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from blueprints.blueprint import Blueprint
from blueprints.errors import ClusterSmithError, Problem


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


def _children(node: Any) -> list[str]:
    """A section's steps: its keys, a list item's id or name, else its index."""
    if isinstance(node, dict):
        return list(node)
    if isinstance(node, list):
        return [_key_of(item) or str(i) for i, item in enumerate(node)]
    return []


def _parts(data: dict[str, Any], dotted: str) -> list[str]:
    """The path's steps; ``acceptance.<check id>`` is short for ``acceptance.checks.<check id>``."""
    parts = [p for p in dotted.strip().split(".") if p]
    if len(parts) > 1 and parts[0] == "acceptance" and parts[1] not in data["acceptance"]:
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
        return f"{node.get('op', 'threshold')} {_number(node['threshold'])} {node['unit']} ({node['severity']})"
    return {k: v for k, v in node.items() if k != "derived_from"}


def explain(bp: Blueprint, dotted: str) -> Explanation:
    data = bp.model_dump(mode="json", by_alias=True)
    parts = _parts(data, dotted)
    dotted = ".".join(parts)
    node, done = _walk(data, parts, [])
    if node is None:
        parent, _ = _walk(data, done, [])
        options = ", ".join(_children(parent)[:25])
        raise ClusterSmithError(
            [Problem(dotted, f"no such value in the Blueprint; under {'.'.join(done) or '(top)'} there is: {options}")],
            title="cannot explain",
        )
    found = _derived(data, done)
    if found is None:
        return Explanation(dotted, node, None, "", ())
    owner, at = found
    prov = owner["derived_from"]
    sources = [SpecLine(path, bp.spec_lines.get(path), bp.spec_values.get(path, "(default)"))
               for path in prov["spec"]]
    value = _shown(owner) if at == done else node
    within = "" if at == done else ".".join(at)
    return Explanation(dotted, value, prov["rule"], prov.get("formula", ""), tuple(sources), within)


def render_explanation(bp: Blueprint, e: Explanation) -> str:
    lines = [f"{e.path} = {_short(e.value)}"]
    if e.rule is None:
        lines.append("  not derived from the spec: a constant of the design or a container of values")
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


def _number(value: float) -> str:
    return f"{value:g}"


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value[:8]) + (", ..." if len(value) > 8 else "") + "]"
    return str(value)
