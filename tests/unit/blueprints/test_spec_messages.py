"""Issue 43 item 5: messages that cannot harm or mislead. Control characters are escaped wherever a key, value or
file name is echoed; long values are cut with their length said; look-alike characters are named by code point
beside the did-you-mean; patterns are said in words; a key of another provider's target is named as such."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.blueprints.test_spec_bounds import REPO
from tests.unit.blueprints.test_spec_bounds import _problems as _problems

CV = (REPO / "examples" / "cv-training-500tb.yaml").read_text()
LLM = (REPO / "examples" / "llm-training-16k.yaml").read_text()


@pytest.mark.parametrize(("text", "old", "new", "message"), [
    (LLM, "region: us-east-1\n", "region: us-east-1\n  project: foo\n",
     "s.yaml:30: target.project: unknown key 'project' for the aws target (a key of the gcp target); expected one "
     "of: provider, region, availability_zone, management_network, capacity_reservation, capacity_block"),
    (CV, "training_set:", "tr\u0430ining_set:",
     "s.yaml:16: data.tr\u0430ining_set: unknown key 'tr\u0430ining_set'; expected one of: training_set, "
     "validation_set, hot_fraction, checkpoint_size; did you mean 'training_set'? (what you wrote has U+0430 "
     "CYRILLIC SMALL LETTER A at character 3, not the ASCII character it looks like)"),
    (CV, "domain: cv", "domain: c\u2013v",
     "s.yaml:10: business.domain: expected one of: cv, llm, recsys (got 'c\u2013v'); did you mean 'cv'? (what you "
     "wrote has U+2013 EN DASH at character 2, not the ASCII character it looks like)"),
    (LLM, "region: us-east-1", "region: US_EAST",
     "s.yaml:29: target.region: expected AWS region, e.g. us-east-1 (got 'US_EAST')"),
    (CV, "training_set:", "\"\\e]0;pwned\\a\\e[2J\": 1\n  training_set:",
     "s.yaml:16: data.\\x1b]0;pwned\\x07\\x1b[2J: unknown key '\\x1b]0;pwned\\x07\\x1b[2J'"),
    (CV, "domain: cv", "domain: " + "x" * 3000,
     "s.yaml:10: business.domain: expected one of: cv, llm, recsys (got '" + "x" * 59 + "... (3,002 characters))"),
])
def test_messages(text: str, old: str, new: str, message: str) -> None:
    assert old in text
    problems = _problems(text.replace(old, new, 1))
    assert any(p.startswith(message) for p in problems), problems
    assert all("\x1b" not in p and "\x07" not in p for p in problems)


def test_parse_escapes_what_a_file_echoes(tmp_path: Path) -> None:
    """`parse` echoed terminal escape sequences from a file in "(got ...)"."""
    path = tmp_path / "log.txt"
    path.write_text("\x1b]0;pwned\x07\x1b[2J 1 2 3\n")
    done = subprocess.run([sys.executable, "-m", "validators", "parse", "nccl", str(path)], cwd=REPO,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "\x1b" not in done.stderr and "\x07" not in done.stderr, done.stderr
    assert "\\x1b]0;pwned\\x07" in done.stderr
