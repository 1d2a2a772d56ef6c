"""`clustersmith deploy`: a clear error when the Pulumi CLI or the cloud credentials are missing, recorded in
the state file; unknown steps are refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from blueprints.blueprint import load_blueprint
from blueprints.cli import plan_file
from blueprints.errors import ClusterSmithError
from blueprints.render import build
from stacks.deploy import DeployOptions, check_credentials, deploy

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out, _ = build(plan_file(REPO / "examples" / "llm-training-16k.yaml"), tmp_path_factory.mktemp("out"))
    return out


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stacks", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, check=False)


def test_missing_pulumi_cli_is_a_clear_error_and_recorded(folder: Path, tmp_path: Path) -> None:
    assert shutil.which("pulumi") is None, "this test needs a machine without the Pulumi CLI"
    work = tmp_path / folder.name
    shutil.copytree(folder, work)
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    run = cli("deploy", str(work), env=env)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "the Pulumi CLI is not installed: `pulumi` is not on PATH" in run.stderr
    assert "--skip up" in run.stderr
    assert "Traceback" not in run.stderr
    state = json.loads((work / "deploy" / "state.json").read_text())
    assert state["steps"]["up"]["status"] == "failed"
    assert "inventory" not in state["steps"]  # nothing after the failed step ran
    # the build's placeholder inventory is untouched
    assert (work / "ansible" / "inventory.yml").read_text() == (folder / "ansible" / "inventory.yml").read_text()


@pytest.mark.parametrize(
    ("env", "files", "ok"),
    [
        ({}, [], False),
        ({"AWS_PROFILE": "prod"}, [], True),
        ({}, [".aws/credentials"], True),
        ({"GOOGLE_APPLICATION_CREDENTIALS": "/x.json"}, [], False),  # another cloud's variable does not count
    ],
)
def test_aws_credentials_are_looked_for(folder: Path, tmp_path: Path, env: dict[str, str], files: list[str],
                                        ok: bool) -> None:
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("[default]\n")
    bp = load_blueprint(folder)
    if ok:
        check_credentials(bp, folder, env, tmp_path)
        return
    with pytest.raises(ClusterSmithError) as err:
        check_credentials(bp, folder, env, tmp_path)
    text = str(err.value)
    assert "no aws credentials found" in text and "AWS_ACCESS_KEY_ID" in text and "~/.aws/credentials" in text
    assert "--no-credential-check" in text


def test_unknown_step_is_refused(folder: Path) -> None:
    with pytest.raises(ClusterSmithError, match="unknown step 'provision'"):
        deploy(folder, DeployOptions(skip=("provision",)), log=lambda _: None)


def test_unknown_step_on_the_command_line_exits_2(folder: Path) -> None:
    run = cli("deploy", str(folder), "--skip", "provision")
    assert run.returncode == 2
    assert "provision" in run.stderr and "Traceback" not in run.stderr


def test_inventory_needs_a_source(folder: Path) -> None:
    run = cli("inventory", str(folder))
    assert run.returncode == 2
    assert "--from-stack" in run.stderr and "--outputs FILE" in run.stderr


def test_inventory_from_stack_without_the_cli(folder: Path) -> None:
    """Issue 43 item 6: inventory's hint was deploy's, '--skip up', an option inventory does not have."""
    run = cli("inventory", str(folder), "--from-stack", env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert run.returncode == 2
    assert "cannot read the stack's outputs" in run.stderr
    assert "--from-stack: the Pulumi CLI is not installed: `pulumi` is not on PATH" in run.stderr
    assert ("or read the outputs from a file with --outputs FILE (`pulumi stack output --json` on a machine that has "
            "the CLI)") in run.stderr
    assert "--skip" not in run.stderr and "deploy step" not in run.stderr and "Traceback" not in run.stderr
