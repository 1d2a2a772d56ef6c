"""Reading the acceptance HTML report as a browser does: its plots per check section, and the DOM that
headless Chromium builds from it. Shared by the report's unit tests and the lab's acceptance run."""

from __future__ import annotations

import subprocess
from html.parser import HTMLParser
from pathlib import Path

from tests.conftest import require_tool


class Plots(HTMLParser):
    """Per check section (``<section id=check>``): the plots' titles and the point count of each line."""

    def __init__(self) -> None:
        super().__init__()
        self.section: str | None = None
        self.svgs: dict[str, list[str]] = {}
        self.lines: dict[str, list[int]] = {}
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id")
        elif tag == "svg" and self.section:
            self.svgs.setdefault(self.section, []).append(a.get("aria-label") or "")
        elif tag == "polyline" and self.section:
            self.lines.setdefault(self.section, []).append(int(a.get("data-points") or 0))
        elif tag in ("script", "link", "img") or (tag == "a" and (a.get("href") or "").startswith("http")):
            self.external.append(tag)


def plots(html: str) -> Plots:
    parser = Plots()
    parser.feed(html)
    return parser


def chromium() -> str:
    """Headless Chromium's path; under CI its absence fails the test, elsewhere it skips it."""
    return require_tool("chromium", or_else=("chromium-browser",))


def rendered_dom(report: Path) -> str:
    """The DOM headless Chromium builds from the report file."""
    dom = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", report.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0 and "<section" in dom.stdout, dom.stderr[-2000:]
    return dom.stdout
