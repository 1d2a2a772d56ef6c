"""Lint what `clustersmith build` writes, as a user's CI would: every example built, then its YAML through yamllint
(strict: a warning fails) and its Ansible (site.yml, inventory, group_vars) through ansible-lint's production
profile, both run from the repository root, whose `.yamllint` and `ansible.cfg` they read (issue 37, item 10), and
its SONiC config_db fragments through SONiC's own YANG models with libyang's yanglint (tests/sonic_yang.py).

    .venv/bin/python tests/lint_generated.py [examples/lab.yaml ...]

`make lint` runs it over examples/*.yaml. It prints each tool's verdict and exits 1 on any problem. ansible-lint gets
every example's files in one call, so the roles that site.yml names are linted once (tests/unit/roles/test_lint.py
lints them on their own).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def generated_yaml(folder: Path) -> list[Path]:
    """Every YAML file a build folder holds, through its links (the tree behind them, `.generated/`, once)."""
    found = []
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = [d for d in dirs if d != ".generated"]
        found += [Path(root) / f for f in files if f.endswith((".yml", ".yaml"))]
    return sorted(found)


def build(example: Path, out: Path) -> Path:
    done = subprocess.run([str(BIN / "clustersmith"), "build", str(example), "-o", str(out)], cwd=REPO,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"clustersmith build {example} failed ({done.returncode}): {done.stderr[-2000:]}")
    return out / example.stem


def yamllint(files: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "yamllint"), "--strict", "-f", "parsable", "-c", str(REPO / ".yamllint"),
                           *map(str, files)], cwd=REPO, capture_output=True, text=True, check=False)


def ansible_lint(files: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "ansible-lint"), "--profile", "production", "--offline", "--nocolor",
                           *map(str, files)], cwd=REPO, capture_output=True, text=True, check=False)


def sonic_yang(files: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "tests" / "sonic_yang.py"), *map(str, files)], cwd=REPO,
                          capture_output=True, text=True, check=False)


def main(argv: list[str]) -> int:
    examples = [Path(a).resolve() for a in argv] or sorted((REPO / "examples").glob("*.yaml"))
    with tempfile.TemporaryDirectory(prefix="clustersmith-lint-") as tmp:
        started = time.monotonic()
        folders = [build(example, Path(tmp)) for example in examples]
        found = {folder: generated_yaml(folder) for folder in folders}
        yaml_files = [f for files in found.values() for f in files]
        ansible_files = [f for folder, files in found.items() for f in files if f.is_relative_to(folder / "ansible")]
        sonic_files = [f for folder in folders for f in sorted((folder / "switch").glob("sonic-*config_db.json"))]
        failed = 0
        for name, files, run in (("yamllint", yaml_files, yamllint), ("ansible-lint --profile production",
                                                                       ansible_files, ansible_lint),
                                 ("SONiC YANG (yanglint)", sonic_files, sonic_yang)):
            done = run(files)
            print(f"{name}: {len(files)} generated files of {len(examples)} example build(s): "
                  f"{'passed' if done.returncode == 0 else f'FAILED (exit {done.returncode})'}")
            if done.returncode != 0:
                failed += 1
                print((done.stdout + done.stderr)[-6000:])
        print(f"lint of the generated files: {time.monotonic() - started:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
