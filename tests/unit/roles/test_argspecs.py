"""Each role's meta/argument_specs.yml is generated from its RoleVars model, and its defaults agree with it."""

from __future__ import annotations

import pytest
import yaml

from tests.roles.role_models import MODELS, ROLES, argument_specs_path, argument_specs_text


@pytest.mark.parametrize("role", sorted(MODELS))
def test_argument_specs_are_generated_from_the_model(role: str, update_golden: bool) -> None:
    path = argument_specs_path(role)
    expected = argument_specs_text(role)
    if update_golden:
        path.write_text(expected, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == expected, (
        f"{path} differs from the {MODELS[role][0].__name__} model; regenerate with --update-golden")


@pytest.mark.parametrize("role", sorted(MODELS))
def test_role_defaults_match_the_model_defaults(role: str) -> None:
    model, _ = MODELS[role]
    defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()) or {}
    for name, field in model.model_fields.items():
        if field.is_required():
            assert name not in defaults, f"{role}: {name} comes from the Blueprint and must not have a role default"
        elif field.default is not None:
            assert defaults.get(name) == field.default, f"{role}: default of {name} differs from {model.__name__}"
        elif name in defaults and defaults[name] is None:
            continue  # an optional input the Blueprint leaves unset where the plan has none (the role's default: null)
        else:
            assert isinstance(defaults.get(name), str) and "{{" in defaults[name], (
                f"{role}: {name} is a per-host fact and needs a default taken from the inventory")


@pytest.mark.parametrize("role", sorted(MODELS))
def test_every_variable_carries_the_role_prefix(role: str) -> None:
    model, _ = MODELS[role]
    assert all(name.startswith(f"{role}_") for name in model.model_fields)
    defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()) or {}
    assert set(defaults) <= set(model.model_fields), f"{role}: defaults/main.yml has inputs the model lacks"


@pytest.mark.parametrize("role", sorted(MODELS))
def test_the_readme_documents_every_input(role: str) -> None:
    model, _ = MODELS[role]
    readme = (ROLES / role / "README.md").read_text()
    missing = [name for name in model.model_fields if f"`{name}`" not in readme]
    assert not missing, f"roles/{role}/README.md does not document {missing}"
    assert "## Example" in readme
