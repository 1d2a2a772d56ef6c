"""The commands of later stages are registered through entry points, not imported by the planner's CLI."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from blueprints import cli as cli_module
from blueprints import commands
from blueprints.commands import GROUP, load_command, registered

REPO = Path(__file__).resolve().parents[3]
DOWNSTREAM = {"lab", "deploy", "inventory", "accept", "parse"}


def test_help_lists_every_registered_command() -> None:
    r = subprocess.run([sys.executable, "-m", "blueprints", "--help"], cwd=REPO, capture_output=True, text=True,
                       timeout=120, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    listed = {line.split()[0] for line in r.stdout.split("Commands:", 1)[1].splitlines() if line.strip()}
    assert listed == DOWNSTREAM | {"validate", "plan", "build", "explain", "schema"}


def test_every_registered_entry_point_loads_the_command_of_its_name() -> None:
    eps = registered()
    assert set(eps) == DOWNSTREAM
    for name, ep in eps.items():
        assert load_command(ep).name == name


def test_the_planner_cli_imports_neither_stacks_nor_validators() -> None:
    code = ("import sys, blueprints.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('stacks', 'validators')))")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_stacks_and_validators_never_import_the_planner_cli() -> None:
    offenders = []
    for path in sorted([*(REPO / "stacks").rglob("*.py"), *(REPO / "validators").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            if any(n == "blueprints.cli" or n.startswith("blueprints.cli.") for n in names):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def _main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], eps: dict[str, EntryPoint],
          *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(commands, "registered", lambda: eps)
    monkeypatch.setattr(sys, "argv", ["clustersmith", *args])
    with pytest.raises(SystemExit) as exited:
        cli_module.main()
        sys.exit(0)
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def _ep(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group=GROUP)


@pytest.mark.parametrize(("name", "value", "message"), [
    ("lab", "stacks.no_such_module:lab", "command 'lab' (entry point 'stacks.no_such_module:lab' in group "
                                         "clustersmith.commands) cannot be loaded: ModuleNotFoundError"),
    ("lab", "stacks.lab.cli:no_such_command", "cannot be loaded: AttributeError"),
    ("lab", "blueprints.cli:main", "is a function, not a click command"),
    ("laboratory", "stacks.lab.cli:lab", "loads a command named 'lab'; the two names must agree"),
], ids=["missing-module", "missing-object", "not-a-command", "wrong-name"])
def test_a_broken_entry_point_is_a_clear_error_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, value: str, message: str,
) -> None:  # fmt: skip
    code, _, err = _main(monkeypatch, capsys, {name: _ep(name, value)}, name, "--help")
    assert code == 2
    assert message in err
    if "cannot be loaded" in message:
        assert "pip install -e ." in err
    assert "Traceback" not in err


def test_help_still_lists_the_other_commands_beside_a_broken_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    eps = {"lab": _ep("lab", "stacks.no_such_module:lab"), "parse": _ep("parse", "validators.cli:parse")}
    code, out, _ = _main(monkeypatch, capsys, eps, "--help")
    assert code == 0
    rows = " ".join(out.split("Commands:", 1)[1].split())  # write_dl wraps long rows
    assert "lab (cannot be loaded: command 'lab' (entry point 'stacks.no_such_module:lab'" in rows
    assert "parse Print a tool's output file" in rows
    assert "validate Check a spec" in rows


def test_no_registered_commands_says_how_to_register_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    code, _, err = _main(monkeypatch, capsys, {}, "lab", "up", "out/lab")
    assert code == 2
    assert "No such command 'lab', and no command is registered in the entry-point group clustersmith.commands" in err
    assert "pip install -e ." in err
