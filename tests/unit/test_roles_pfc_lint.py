"""ansible-lint, production profile, offline, on the pfc_dcqcn role (its molecule scenario included)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def lint(role: str) -> subprocess.CompletedProcess[str]:
    bindir = Path(sys.executable).parent
    env = dict(os.environ, ANSIBLE_ROLES_PATH=str(REPO / "roles"), PATH=f"{bindir}:{os.environ.get('PATH', '')}",
               NO_COLOR="1")
    return subprocess.run([str(bindir / "ansible-lint"), "--offline", "--profile", "production", f"roles/{role}"],
                          cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=300)


def test_pfc_dcqcn_passes_the_production_profile() -> None:
    proc = lint("pfc_dcqcn")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Profile 'production' was required, and it passed" in proc.stdout + proc.stderr
