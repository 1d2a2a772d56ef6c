"""A role's template rendered as Ansible renders it on a host: Ansible's own Templar over the role's defaults, its
vars, the group_vars given and the host's variables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROLES = Path(__file__).resolve().parents[2] / "roles"


def _trusted(value: Any) -> Any:
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: _trusted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_trusted(v) for v in value]
    return value


def evaluate(folder: Path, text: str, group: dict[str, Any], host: dict[str, Any] | None = None) -> str:
    """``text`` (a template or an expression) as Ansible renders it with the role in ``folder``: its defaults and
    vars, the group_vars ``group`` and the host's variables ``host``."""
    variables = {**yaml.safe_load((folder / "defaults/main.yml").read_text()),
                 **yaml.safe_load((folder / "vars/main.yml").read_text()), **group, **(host or {}),
                 "ansible_managed": "Ansible managed"}
    templar = Templar(loader=DataLoader(), variables={k: _trusted(v) for k, v in variables.items()})
    return str(templar.template(trust_as_template(text)))


def render(role: str, template: str, group: dict[str, Any], host: dict[str, Any]) -> str:
    """``roles/<role>/templates/<template>`` on a host with variables ``host``, the role's group_vars ``group``."""
    return evaluate(ROLES / role, (ROLES / role / "templates" / template).read_text(), group, host)
