"""ansible-lint, production profile, offline, on the nccl role (its molecule scenario included)."""

from __future__ import annotations

from test_roles_pfc_lint import lint


def test_nccl_passes_the_production_profile() -> None:
    proc = lint("nccl")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Profile 'production' was required, and it passed" in proc.stdout + proc.stderr
