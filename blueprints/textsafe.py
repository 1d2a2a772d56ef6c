"""Escaping of user text (spec values, file names) for the formats the renderers write.

Renderers never write a user's string raw: a newline in a spec's file name written into a ``# Generated
from ...`` header starts a new YAML line, and a backslash or quote in a description written between
double quotes ends the scalar early. Each helper here makes one kind of place safe:

- ``one_line``: comments and prose (YAML/shell/Python comments, Markdown): control characters, line and
  paragraph separators written as visible escapes, so the text stays on its line;
- ``yaml_str``: a YAML double-quoted scalar that reads back as exactly the input (also valid JSON when the
  input is ASCII-printable);
- ``md_code``: a Markdown code span that no backtick in the text can close.
"""

from __future__ import annotations

import unicodedata

# YAML 1.1 (PyYAML) breaks lines on these besides \n and \r; Python's str.splitlines() also on \x1c-\x1e.
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def _unsafe(ch: str) -> bool:
    return ch in _LINE_BREAKS or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def one_line(text: str) -> str:
    """``text`` with every control character and line separator written as ``\\xNN``/``\\uNNNN``."""
    return "".join(_escape(ch) if _unsafe(ch) else ch for ch in text)


def yaml_str(text: str) -> str:
    """A YAML double-quoted scalar that parses back to ``text`` exactly."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif _unsafe(ch):
            out.append(_escape(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def md_code(text: str) -> str:
    """A Markdown code span around ``text`` on one line, fenced with more backticks than the text holds."""
    body = one_line(text)
    run = longest = 0
    for ch in body:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"
