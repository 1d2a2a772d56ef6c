"""Shared fixtures and options for every tier."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
# The virtualenv running the tests, wherever it is: clustersmith, ansible-playbook, ansible-lint, molecule.
BIN = Path(sys.executable).parent


def default_sigint() -> None:
    """A subprocess's ``preexec_fn`` for tests that send it Ctrl-C: SIGINT back to its default. A shell without job
    control starts background jobs with SIGINT ignored, and Python keeps an inherited SIG_IGN (no
    KeyboardInterrupt), so a suite started that way would see the child ignore Ctrl-C, as a user's background job
    rightly does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def require_tool(tool: str, package: str = "", *, or_else: tuple[str, ...] = ()) -> str:
    """The path of ``tool`` (or of the first of ``or_else`` found on PATH). Missing, the test skips with the tool's
    name on a developer's machine and fails under CI (env CI set, as .ci/run sets it), which installs every tool the
    tests use: a proof never silently stops running where it must run."""
    for name in (tool, *or_else):
        path = shutil.which(name)
        if path:
            return path
    message = f"{tool} is missing (apt-get install {package or tool})"
    if os.environ.get("CI"):
        pytest.fail("CI must run this test, but " + message, pytrace=False)
    pytest.skip(message)


def pytest_configure(config: pytest.Config) -> None:
    """Every build a test runs (in process or in a subprocess) keeps its cluster secrets file in a folder of this
    session's, never in the home directory (blueprints.secrets)."""
    if "CLUSTERSMITH_SECRETS_DIR" not in os.environ:
        folder = tempfile.mkdtemp(prefix="clustersmith-test-secrets-")
        os.environ["CLUSTERSMITH_SECRETS_DIR"] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/ (and generated argument specs) from the current output")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))
