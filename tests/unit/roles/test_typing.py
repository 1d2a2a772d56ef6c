"""mypy sees each role's module_utils under the name the role's modules import it by (ansible.module_utils.<name>):
typings/ links every one of them, or its modules would type-check against Any without a word."""

from __future__ import annotations

from tests.roles.library import ROLES

TYPINGS = ROLES.parent / "typings" / "ansible" / "module_utils"


def test_every_module_utils_file_is_linked_for_mypy() -> None:
    utils = sorted(ROLES.glob("*/module_utils/*.py"))
    assert utils, "no role ships module_utils: the walk over the roles is broken"
    for util in utils:
        link = TYPINGS / f"{util.stem}.pyi"
        assert link.is_symlink() and link.resolve() == util.resolve(), f"{link} does not link {util}"
    assert {p.stem for p in TYPINGS.iterdir()} == {u.stem for u in utils}, "a link to no role's module_utils"
