"""Which apt index the lab's kernel package is resolved and fetched with.

A kernel from the machine's own suites (bookworm and its security updates) uses the machine's apt index as it is.
A kernel from a suite the machine's sources do not list (bookworm-backports) uses a private index: its own sources
list naming the machine's mirror URI with that suite, its own lists and cache folders under the lab cache, and the
system's trusted keyring (``/etc/apt/trusted.gpg.d``), so ``apt-get update`` verifies the suite's InRelease and
nothing of the machine's apt state changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AptIndex:
    """``options`` go before the apt command's own arguments; empty for the machine's own index."""

    options: tuple[str, ...] = ()
    root: Path | None = None
    source_line: str = ""

    @property
    def private(self) -> bool:
        return self.root is not None


MACHINE_INDEX = AptIndex()


def private_index(root: Path, mirror: str, suite: str) -> AptIndex:
    """The options of a private index of ``mirror``'s ``suite`` (component main) kept under ``root``."""
    options = (
        f"-o=Dir::Etc::SourceList={root / 'sources.list'}",
        f"-o=Dir::Etc::SourceParts={root / 'sources.list.d'}",
        f"-o=Dir::Etc::Preferences={root / 'preferences'}",
        f"-o=Dir::Etc::PreferencesParts={root / 'preferences.d'}",
        f"-o=Dir::State::Lists={root / 'lists'}",
        f"-o=Dir::Cache={root / 'cache'}",
        "-o=Acquire::AllowInsecureRepositories=false",
        "-o=Acquire::AllowDowngradeToInsecureRepositories=false",
    )
    return AptIndex(options=options, root=root, source_line=f"deb {mirror} {suite} main")


def prepare(index: AptIndex) -> None:
    """Write the private index's sources list and folders (the machine's index needs nothing)."""
    if index.root is None:
        return
    for folder in ("sources.list.d", "preferences.d", "lists/partial", "cache/archives/partial"):
        (index.root / folder).mkdir(parents=True, exist_ok=True)
    (index.root / "sources.list").write_text(index.source_line + "\n")
    (index.root / "preferences").write_text("")
