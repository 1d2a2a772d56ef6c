"""Where PyYAML, which reads YAML 1.1, would read a spec differently from YAML 1.2 core, and merges as YAML says.

PyYAML resolves plain (unquoted) scalars by YAML 1.1's rules: ``0755`` is the octal number 493 (YAML 1.2 core
reads 755), ``1:30`` the base-60 number 90 and ``0b101`` the binary number 5 (both text in YAML 1.2 core),
``yes``, ``no``, ``on`` and ``off`` booleans (text in YAML 1.2 core). A spec value read one way by clustersmith
and another by the user's editor, linter or a YAML 1.2 tool is refused here with what YAML read, never taken
silently; so is a boolean (``true`` included) where a number or a name is expected, which pydantic would
otherwise count as 1 or refuse with a message that does not say why.

Merge keys (``<<: [*a, *b]``): the YAML merge spec says keys of maps earlier in the list win over later ones and
the map's own keys over all of them. PyYAML 6.0.x de-duplicates merged keys by the identity of the key's string
object (``flatten_mapping``), so for a key longer than one character the *later* map won (a one-character key is
an interned string and came out right). ``SpecConstructor`` merges by the keys' values, as the spec says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from blueprints.errors import LONGEST_VALUE
from blueprints.figures import long_integer, plain

INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
BOOL_TAG = "tag:yaml.org,2002:bool"
MERGE_TAG = "tag:yaml.org,2002:merge"

# PyYAML's YAML 1.1 forms that YAML 1.2 core reads otherwise (yaml/resolver.py; YAML 1.2.2 section 10.3.2).
_OCTAL = re.compile(r"[-+]?0[0-7_]+")
_BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
_BINARY = re.compile(r"[-+]?0b[0-1_]+")
_CORE_BOOLS = frozenset(("true", "True", "TRUE", "false", "False", "FALSE"))


@dataclass(frozen=True)
class Reading:
    """How PyYAML read a plain scalar that is not text: ``how`` in words, ``only_yaml11`` where YAML 1.2 core
    reads the same characters otherwise."""

    text: str
    how: str
    only_yaml11: bool
    fix: str  # what to write instead


def _number(value: float) -> str:
    """A number YAML read, for a message: positional (blueprints.figures), or an integer past a float's range by its
    size (``figures.long_integer``)."""
    if isinstance(value, int) and value.bit_length() > 1000:
        return long_integer(value)
    return plain(value)


def reading(node: ScalarNode, value: Any) -> Reading | None:
    """What YAML made of ``node`` when it is a plain scalar read as a boolean or a number in a YAML 1.1 form."""
    if node.style is not None:  # quoted or block: always text
        return None
    text = str(node.value)
    quoted = f"quote it ({_quote(text)}) if it is text" if len(text) <= LONGEST_VALUE else "quote it if it is text"
    if node.tag == BOOL_TAG:
        word = "true" if value else "false"
        if text in _CORE_BOOLS:
            return Reading(text, f"the boolean {word}", False, quoted)
        return Reading(text, f"the boolean {word} (YAML 1.2 reads it as text)", True, quoted)
    if node.tag == INT_TAG and _OCTAL.fullmatch(text):
        decimal = int(text.replace("_", ""), 10)
        return Reading(text, f"the octal number {_number(value)} (YAML 1.2 reads {_number(decimal)})", True,
                       f"write {_number(decimal)} without the leading zero, or {quoted}")
    if node.tag in (INT_TAG, FLOAT_TAG) and _BASE60.fullmatch(text):
        return Reading(text, f"the base-60 number {_number(value)} (YAML 1.2 reads it as text)", True,
                       f"{quoted}, or write the number {_number(value)}")
    if node.tag == INT_TAG and _BINARY.fullmatch(text):
        return Reading(text, f"the binary number {_number(value)} (YAML 1.2 reads it as text)", True,
                       f"write {_number(value)}, or {quoted}")
    if node.tag in (INT_TAG, FLOAT_TAG):
        long = isinstance(value, int) and value.bit_length() > 1000
        return Reading(text, long_integer(value) if long else f"the number {_number(value)}", False, quoted)
    return None


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class SpecConstructor(yaml.SafeLoader):
    """The safe loader with YAML's merge order: earlier maps in a merge list win, the map's own keys win over all."""

    def flatten_mapping(self, node: MappingNode) -> None:
        own: list[tuple[Any, Any]] = []
        merged: list[tuple[Any, Any]] = []
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            if key_node.tag != MERGE_TAG:
                if key_node.tag == "tag:yaml.org,2002:value":
                    key_node.tag = "tag:yaml.org,2002:str"
                own.append((key_node, value_node))
                continue
            sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            for source in sources:
                if not isinstance(source, MappingNode):
                    raise ConstructorError("while constructing a mapping", node.start_mark,
                                           f"expected a mapping or list of mappings for merging, but found "
                                           f"{source.id}", source.start_mark)
                self.flatten_mapping(source)
                for pair in source.value:
                    key = _merge_key(pair[0])
                    if key not in seen:
                        seen.add(key)
                        merged.append(pair)
        own_keys = {_merge_key(k) for k, _ in own}
        node.value = [p for p in merged if _merge_key(p[0]) not in own_keys] + own


def _merge_key(node: Any) -> Any:
    """A key node's identity for merging: its tag and text (a scalar), or the node itself (a complex key)."""
    return (node.tag, node.value) if isinstance(node, ScalarNode) else id(node)


def construct(root: yaml.Node | None) -> Any:
    """The Python value of a composed document, merges resolved as YAML says."""
    if root is None:
        return None
    loader = SpecConstructor("")
    try:
        return loader.construct_document(root)
    finally:
        loader.dispose()
