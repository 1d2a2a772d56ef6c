"""The command line as a script meets it (issue 43 item 6, part a): `--json` documents on stdout, `build --quiet`,
progress on a terminal's stderr only, and shell completion. Real subprocesses, as test_cli.py runs them."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from blueprints.blueprint import Blueprint, blueprint_data

REPO = Path(__file__).resolve().parents[3]
LAB = REPO / "examples" / "lab.yaml"
ENV = {"COLUMNS": "200", "PATH": "/usr/bin:/bin", "CLUSTERSMITH_SECRETS_DIR": os.environ["CLUSTERSMITH_SECRETS_DIR"]}
PROBLEM_KEYS = ["file", "line", "path", "value", "message", "hint"]


def run(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "blueprints", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={**ENV, **(env or {})}, check=False)


def on_a_terminal(*args: str | Path) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (as a person's shell has it) and stdout on a pipe: the exit code, stdout
    and everything the terminal was sent."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "blueprints", *map(str, args)], cwd=REPO, env=ENV,
                            stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    shown: list[bytes] = []

    def read_terminal() -> None:  # beside communicate(): a child blocked on a full stdout pipe would never end
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its end
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read_terminal)
    reader.start()
    stdout, _ = proc.communicate(timeout=120)
    reader.join(timeout=10)
    os.close(leader)
    return proc.returncode, stdout.decode(), b"".join(shown).decode(errors="replace")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The build folder of examples/lab.yaml, built once for the tests that read one."""
    out = tmp_path_factory.mktemp("out")
    r = run("build", LAB, "-o", out)
    assert r.returncode == 0, r.stderr
    return out / "lab"


def bad_spec(tmp_path: Path) -> Path:
    bad = tmp_path / "bad.yaml"
    bad.write_text(LAB.read_text().replace("  gpus: 2\n", "  gpus: many\n").replace("jitter:", "jiter:"))
    assert bad.read_text() != LAB.read_text()
    return bad


def test_validate_json() -> None:
    r = run("validate", "--json", LAB)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert json.loads(r.stdout) == {"valid": True, "spec": str(LAB), "gpus": 2, "nodes": 2, "node_type": "lab-vm",
                                    "provider": "lab"}


def test_validate_json_bad_spec_gives_the_problems_as_json_and_the_message_on_stderr(tmp_path: Path) -> None:
    bad = bad_spec(tmp_path)
    r = run("validate", "--json", bad)
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert doc["valid"] is False and doc["error"] == "invalid spec"
    assert all(list(p) == PROBLEM_KEYS for p in doc["problems"]), doc
    by_path = {p["path"]: p for p in doc["problems"]}
    gpus = by_path["compute.gpus"]
    assert gpus["file"] == str(bad) and gpus["line"] == 14 and gpus["value"] == "'many'"
    assert "valid integer" in gpus["message"]
    assert by_path["performance.storage.jiter"]["hint"] == "did you mean 'jitter'?"
    assert f"{bad}:14: compute.gpus:" in r.stderr and "Traceback" not in r.stderr  # the person's message as before


def test_plan_json_bad_spec_gives_the_same_document(tmp_path: Path) -> None:
    r = run("plan", "--json", bad_spec(tmp_path))
    assert r.returncode == 2 and json.loads(r.stdout)["problems"][0]["path"] == "compute.gpus"


def test_without_json_bad_input_prints_nothing_on_stdout(tmp_path: Path) -> None:
    r = run("validate", bad_spec(tmp_path))
    assert r.returncode == 2 and r.stdout == "" and "compute.gpus" in r.stderr


def test_plan_json_is_the_blueprint_build_writes(built: Path) -> None:
    r = run("plan", "--json", LAB)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    doc = json.loads(r.stdout)
    assert doc == yaml.safe_load((built / "blueprint.yaml").read_text())
    assert blueprint_data(Blueprint.model_validate(doc)) == doc  # a script can load it back as the model
    assert doc["acceptance"]["checks"][0]["derived_from"]["spec"]  # every derived value with its provenance


def test_explain_json(built: Path) -> None:
    r = run("explain", "--json", built, "acceptance.storage.read_throughput")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    doc = json.loads(r.stdout)
    fields = doc.pop("fields")
    assert doc == {
        "path": "acceptance.checks.storage.read_throughput", "value": ">= 0.02 GB/s (info)",
        "rule": "acceptance.read_throughput", "formula": ">=20MB/s; lab: emulated, informational",
        "sources": [{"path": "performance.storage.read_throughput", "line": 21, "value": ">=20MB/s"}],
        "within": "", "section": False, "spec_file": str(LAB)}
    # the check's own fields for a script, not the one line a person reads
    assert {k: fields[k] for k in ("id", "op", "threshold", "unit", "severity")} == {
        "id": "storage.read_throughput", "op": ">=", "threshold": 0.02, "unit": "GB/s", "severity": "info"}
    r = run("explain", "--json", built, "compute")
    section = json.loads(r.stdout)
    assert r.returncode == 0 and section["rule"] is None and section["section"] is True  # not derived as a whole
    assert section["value"]["gpus"] == 2


def test_explain_json_unknown_path(built: Path) -> None:
    r = run("explain", "--json", built, "storage.tiers.hott")
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    assert doc["valid"] is False and doc["error"] == "cannot explain"
    assert doc["problems"][0]["path"] == "storage.tiers.hott" and "no such value" in doc["problems"][0]["message"]
    assert "storage.tiers.hott: no such value" in r.stderr


def test_build_quiet_prints_the_folder_alone(tmp_path: Path) -> None:
    r = run("build", "-q", LAB, "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{tmp_path / 'lab'}\n"  # no file list, next steps, progress
    # the one secrets line a script's user must not miss: the file made once, to keep
    assert r.stderr.startswith("secrets: created ") and r.stderr.count("\n") == 1, r.stderr
    assert (tmp_path / "lab" / "blueprint.yaml").is_file()
    again = run("build", "-q", LAB, "-o", tmp_path)
    assert again.returncode == 0 and again.stdout == f"{tmp_path / 'lab'}\n" and again.stderr == "", again.stderr


def test_build_quiet_still_says_what_it_kept(tmp_path: Path) -> None:
    """A kept file means the user's file stands where the generated one would: --quiet must not hide that."""
    out = tmp_path / "out"
    assert run("build", LAB, "-o", out).returncode == 0
    folder = out / "lab"
    site = folder / "ansible" / "site.yml"
    site.unlink()
    site.write_text("# mine\n")  # a real file where build links its generated one
    r = run("build", "--quiet", LAB, "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{folder}\n"
    said = " ".join(r.stderr.split())
    assert said.startswith(f"kept {site}: a real file") and said.count("kept ") == 1, said
    assert "secrets:" not in said
    assert site.read_text() == "# mine\n"


def test_build_shows_progress_on_a_terminal_and_nothing_in_stdout(tmp_path: Path) -> None:
    code, stdout, shown = on_a_terminal("build", LAB, "-o", tmp_path / "out")
    assert code == 0, shown
    for step in ("planning 2 GPUs", "rendering blueprint.yaml (1/", "rendering switch_qos", "linking ",
                 "swapping in the new tree"):
        assert step in shown, shown
    assert "\x1b[2K" in shown  # drawn over itself and erased, not left in the scrollback as lines
    assert "rendering" not in stdout and stdout.startswith("secrets: ")


def test_no_progress_without_a_terminal_or_with_quiet(tmp_path: Path) -> None:
    r = run("build", LAB, "-o", tmp_path / "a")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    code, stdout, shown = on_a_terminal("build", "-q", LAB, "-o", tmp_path / "b")
    # on the terminal: the secrets file made (build_quiet's one line), no progress
    assert code == 0 and shown.startswith("secrets: created ") and shown.count("\n") == 1, shown
    assert stdout == f"{tmp_path / 'b' / 'lab'}\n"


def test_json_stays_one_document_while_a_terminal_shows_progress() -> None:
    code, stdout, shown = on_a_terminal("plan", "--json", LAB)
    assert code == 0 and "planning 2 GPUs" in shown
    assert json.loads(stdout)["name"] == "lab"


@pytest.mark.parametrize(("shell", "function"), [("bash", "_clustersmith_completion() {"),
                                                 ("zsh", "compdef _clustersmith_completion clustersmith"),
                                                 ("fish", "function _clustersmith_completion")])
def test_completion_scripts(shell: str, function: str) -> None:
    r = run(env={"_CLUSTERSMITH_COMPLETE": f"{shell}_source"})
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert function in r.stdout and "_CLUSTERSMITH_COMPLETE=" in r.stdout


def test_bash_completes_commands_and_options(tmp_path: Path) -> None:
    """The bash script, sourced as README.md says, completes a command and an option through the real program."""
    wrapper = tmp_path / "clustersmith"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m blueprints "$@"\n')
    wrapper.chmod(0o755)
    complete = 'COMPREPLY=(); _clustersmith_completion clustersmith; echo "${COMPREPLY[@]}"\n'
    script = ('eval "$(_CLUSTERSMITH_COMPLETE=bash_source clustersmith)"\n'
              f"COMP_WORDS=(clustersmith va); COMP_CWORD=1; {complete}"
              f"COMP_WORDS=(clustersmith build --qu); COMP_CWORD=2; {complete}")
    done = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
                          env={**ENV, "PATH": f"{tmp_path}:{ENV['PATH']}", "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and done.stdout.splitlines() == ["validate", "--quiet"], done.stdout + done.stderr
