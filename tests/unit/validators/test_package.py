"""`import validators` must be this repository's package, never the PyPI project of the same name."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import validators

REPO = Path(__file__).resolve().parents[3]


def test_import_resolves_to_this_repository() -> None:
    assert Path(validators.__file__).resolve() == REPO / "validators" / "__init__.py"
    assert "not the PyPI package" in (validators.__doc__ or "")


def test_the_pypi_validators_package_is_not_installed() -> None:
    names = {(d.metadata["Name"] or "").lower() for d in importlib.metadata.distributions()}
    assert "validators" not in names


def test_nothing_installed_depends_on_the_pypi_validators_package() -> None:
    needing = sorted(
        str(d.metadata["Name"])
        for d in importlib.metadata.distributions()
        for req in (d.requires or [])
        if re.split(r"[\s;<>=!~\[(]", req.strip(), maxsplit=1)[0].lower() == "validators"
    )
    assert needing == []
