from __future__ import annotations

from pathlib import Path

import pytest

from stacks.lab.errors import LabError
from stacks.lab.mirror import find_mirror, parse_deb822, parse_one_line

DEB822 = """Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.example.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.example.org/debian-security
Suites: bookworm-security
Components: main
"""


def test_deb822_picks_the_stanza_with_the_suite() -> None:
    assert parse_deb822(DEB822, "bookworm") == "http://deb.example.org/debian"
    assert parse_deb822(DEB822, "bookworm-security") == "http://deb.example.org/debian-security"
    assert parse_deb822(DEB822, "trixie") is None


def test_one_line_format_with_options_and_comments() -> None:
    text = (
        "# deb http://old/ bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main contrib\n"
    )
    assert parse_one_line(text, "bookworm") == "http://m.example/debian"


def test_no_source_names_the_files(tmp_path: Path) -> None:
    sources = tmp_path / "sources.list"
    sources.write_text("deb http://m/debian trixie main\n")
    with pytest.raises(LabError, match=r"bookworm.*sources\.list"):
        find_mirror("bookworm", (sources,))
