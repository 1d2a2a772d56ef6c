"""Which Debian mirror to bootstrap from: the one this machine's own apt sources name."""

from __future__ import annotations

import re
from pathlib import Path

from stacks.lab.errors import LabError

SOURCES = (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list"))


def parse_deb822(text: str, suite: str) -> str | None:
    """The first ``URIs:`` of a deb822 stanza of type ``deb`` that carries ``suite`` and ``main``."""
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            key, value = line.split(":", 1)
            fields[key.strip().lower()] = value.strip()
        if (
            "deb" in fields.get("types", "").split()
            and suite in fields.get("suites", "").split()
            and "main" in fields.get("components", "").split()
            and fields.get("enabled", "yes").lower() != "no"
        ):
            return fields.get("uris", "").split()[0] if fields.get("uris") else None
    return None


def parse_one_line(text: str, suite: str) -> str | None:
    """The URI of the first ``deb [opts] URI suite ... main`` line of a sources.list."""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        line = re.sub(r"\[[^]]*\]\s*", "", line)
        words = line.split()
        if len(words) >= 4 and words[0] == "deb" and words[2] == suite and "main" in words[3:]:
            return words[1]
    return None


def find_mirror(suite: str, sources: tuple[Path, ...] = SOURCES) -> str:
    """The mirror URI for ``suite``, read at run time; an error names the files it looked at."""
    extra = sorted(Path("/etc/apt/sources.list.d").glob("*.sources")) if sources == SOURCES else []
    for path in (*sources, *extra):
        if not path.is_file():
            continue
        text = path.read_text()
        uri = parse_deb822(text, suite) if path.suffix == ".sources" else parse_one_line(text, suite)
        if uri:
            return uri
    names = ", ".join(str(p) for p in sources)
    raise LabError(f"no apt source for suite {suite!r} with component main in {names}")
