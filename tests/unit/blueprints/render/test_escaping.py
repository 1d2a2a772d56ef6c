"""Issue 16 item 7: user text and paths written into generated files are escaped for each file's format.

A spec whose file name holds a newline and YAML-special characters, and whose description holds backslashes,
quotes, Jinja braces, ': ' and '#', builds into files that all parse, inject no key, keep every header naming
the spec on one comment line, and give the description back exactly in Pulumi.yaml.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from blueprints.cli import cli
from blueprints.textsafe import one_line

REPO = Path(__file__).resolve().parents[4]
FILE_NAME = "a\nkey: injected #.yaml"
DESCRIPTION = 'back\\slash \\n "double" \'single\' {{ bp.name }} {% if x %} key: injected # not a comment\\'
INJECTED = {"key", "injected"}


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return {str(k) for k in node} | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def _build(example: str, tmp_path: Path) -> tuple[Path, Path]:
    doc = yaml.safe_load((REPO / "examples" / example).read_text())
    doc["metadata"]["description"] = DESCRIPTION
    spec = tmp_path / FILE_NAME
    spec.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(cli, ["build", str(spec), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    return spec, tmp_path / "out" / doc["metadata"]["name"]


@pytest.mark.parametrize("example", ["cv-training-500tb.yaml", "llm-training-16k.yaml", "lab.yaml"])
def test_file_name_and_description_are_escaped(example: str, tmp_path: Path) -> None:
    spec, folder = _build(example, tmp_path)
    files = sorted(p for p in folder.rglob("*") if p.is_file())

    parsed = 0
    for path in files:
        if path.suffix in (".yml", ".yaml"):
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        elif path.suffix == ".json":
            docs = [json.loads(path.read_text(encoding="utf-8"))]
        else:
            continue
        parsed += 1
        assert not _keys(docs) & INJECTED, path
    assert parsed > 10

    escaped = one_line(str(spec))
    assert "\n" not in escaped and escaped.endswith("a\\x0akey: injected #.yaml")
    headers = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert "\nkey: injected" not in text, path
        for number, line in enumerate(text.splitlines()[:5], 1):  # the header: one comment line names the file
            if "injected #.yaml" in line and path.suffix not in (".json", ".md"):
                assert escaped in line and line.startswith("#"), f"{path}:{number}: {line!r}"
                headers += 1
    assert headers >= (10 if example == "lab.yaml" else 11)

    pulumi = folder / "pulumi" / "Pulumi.yaml"
    if example != "lab.yaml":
        assert yaml.safe_load(pulumi.read_text(encoding="utf-8"))["description"] == DESCRIPTION
    else:
        assert not pulumi.exists()
