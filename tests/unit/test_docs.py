"""The documents as a newcomer reads them: README.md a short front door, every relative link in README.md and
docs/ leading to a file of the repository, and every decision record listed in docs/decisions/README.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
DECISIONS = DOCS / "decisions"
README_MAX_BYTES = 12_288
# A Markdown inline link or image: [text](target) or [text](target "title"); the target up to a space or ")".
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:


def _documents() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _relative_links(doc: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.DOTALL)  # code blocks are not links
    return [t for t in LINK.findall(text) if not EXTERNAL.match(t) and not t.startswith("#")]


def test_readme_is_a_front_door() -> None:
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; expected at most {README_MAX_BYTES}: move detail out"


def test_the_documents_exist() -> None:
    assert (DOCS / "architecture.md").is_file()
    assert (DECISIONS / "README.md").is_file()
    assert sorted(DECISIONS.glob("0*.md")), "docs/decisions holds no numbered decision record"


@pytest.mark.parametrize("doc", _documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(doc: Path) -> None:
    links = _relative_links(doc)
    broken = [t for t in links if not (doc.parent / t.split("#", 1)[0]).resolve().exists()]
    assert broken == [], f"{doc.relative_to(REPO)} links to paths that do not exist: {broken}"
    outside = [t for t in links if not (doc.parent / t.split("#", 1)[0]).resolve().is_relative_to(REPO)]
    assert outside == [], f"{doc.relative_to(REPO)} links outside the repository: {outside}"


def test_the_link_pattern_reads_links() -> None:
    """The checks above are only as good as LINK: it must find plain, titled and anchored links, and skip URLs."""
    sample = 'See [a](docs/a.md), [b](../b.md#part "B"), ![c](img/c.png), [d](https://x.org/d) and [e](#here).'
    assert LINK.findall(sample) == ["docs/a.md", "../b.md#part", "img/c.png", "https://x.org/d", "#here"]


def test_every_decision_is_in_the_index() -> None:
    index = (DECISIONS / "README.md").read_text(encoding="utf-8")
    listed = {Path(t.split("#", 1)[0]).name for t in LINK.findall(index)}
    records = sorted(p.name for p in DECISIONS.glob("*.md") if p.name != "README.md")
    missing = [name for name in records if name not in listed]
    assert missing == [], f"docs/decisions/README.md does not list {missing}: add a line for each"


def test_decision_records_are_numbered() -> None:
    names = sorted(p.name for p in DECISIONS.glob("*.md") if p.name != "README.md")
    bad = [n for n in names if not re.fullmatch(r"\d{4}-[a-z0-9-]+\.md", n)]
    assert bad == [], f"decision records named {bad}; expected NNNN-short-title.md"
    numbers = [int(n[:4]) for n in names]
    assert numbers == list(range(1, len(numbers) + 1)), f"decision numbers {numbers}; expected 1..{len(numbers)}"
