"""Renderer: ``pulumi/`` — the Pulumi project of a cloud or bare-metal target.

- ``Pulumi.yaml``: the project (Python runtime);
- ``Pulumi.<name>.yaml``: the stack's plain configuration from the Blueprint (region, zone, project,
  machines file); secrets are never written here: the notes at its top say which keys to set with
  ``pulumi config set --secret``;
- ``__main__.py``: three lines that load ``../blueprint.yaml`` and call ``stacks.program.run``;
- ``machines.yaml`` (bare metal, machines: static): one entry per planned host with placeholders.
The lab target has no Pulumi project (``clustersmith lab up`` brings it up), so nothing is written for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from blueprints.blueprint import Blueprint
from blueprints.hosts import expand
from blueprints.textsafe import yaml_str

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "pulumi"
SECRET_KEYS = ("clustersmith:maasApiKey",)


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def _quote(value: str) -> str:
    """A YAML double-quoted scalar that reads back as ``value``, whatever characters it holds."""
    return yaml_str(value)


def stack_config(bp: Blueprint) -> tuple[dict[str, str], list[str]]:
    """The stack's plain config values (already YAML-quoted) and the notes on what else to set."""
    target = bp.target
    config: dict[str, str] = {}
    notes = ["Set before `pulumi up` (clustersmith deploy sets it from --ssh-public-key):",
             '  pulumi config set clustersmith:sshPublicKey "$(cat ~/.ssh/id_ed25519.pub)"',
             "Optional: clustersmith:adminCidr (SSH from outside), clustersmith:sshUser, clustersmith:image."]
    if target.provider == "aws":
        config["aws:region"] = _quote(target.region or "")
        if target.zone:
            config["clustersmith:zone"] = _quote(target.zone)
        notes.append("Credentials: the AWS environment (AWS_PROFILE, AWS_ACCESS_KEY_ID, ~/.aws), never this file.")
    elif target.provider == "gcp":
        config["gcp:region"] = _quote(target.region or "")
        if target.zone:
            config["gcp:zone"] = _quote(target.zone)
            config["clustersmith:zone"] = _quote(target.zone)
        if target.project:
            config["gcp:project"] = _quote(target.project)
            config["clustersmith:project"] = _quote(target.project)
        else:
            notes.append("The spec names no project: pulumi config set clustersmith:project <id>")
        notes.append("Credentials: GOOGLE_APPLICATION_CREDENTIALS or `gcloud auth application-default login`.")
    elif target.provider == "azure":
        config["azure-native:location"] = _quote(target.region or "")
        notes.append("Credentials: `az login` or ARM_CLIENT_ID/ARM_CLIENT_SECRET/ARM_TENANT_ID in the environment.")
    elif target.provider == "baremetal":
        if target.machines == "static":
            config["clustersmith:machinesFile"] = _quote("machines.yaml")
            notes.append("machines: static: fill machines.yaml (every CHANGE_ME) with the racks' addresses.")
        else:
            notes += ["machines: maas: set clustersmith:maasApiUrl, clustersmith:railSubnets (one CIDR per rail),",
                      "clustersmith:gpuRailNetdevs and clustersmith:storageRailNetdevs, and the API key as a secret:",
                      "  pulumi config set --secret clustersmith:maasApiKey <key>   (a plain value is refused)"]
    return config, notes


def render(bp: Blueprint, folder: Path) -> list[Path]:
    target = bp.target
    if target.provider == "lab":
        return []
    out = folder / "pulumi"
    out.mkdir(parents=True, exist_ok=True)
    env = _env()
    config, notes = stack_config(bp)
    description = target.description or f"clustersmith design {bp.name}"
    files: dict[str, str] = {
        "Pulumi.yaml": env.get_template("Pulumi.yaml.j2").render(bp=bp, provider=target.provider,
                                                                 description=yaml_str(description)),
        f"Pulumi.{bp.name}.yaml": env.get_template("Pulumi.stack.yaml.j2").render(bp=bp, config=config,
                                                                                  notes=notes),
        "__main__.py": env.get_template("__main__.py.j2").render(),
    }
    if target.provider == "baremetal" and target.machines == "static":
        files["machines.yaml"] = env.get_template("machines.yaml.j2").render(
            bp=bp, machines=_static_machines(bp), gpu_rails=bp.compute.rails.value,
            storage_rails=bp.compute.storage_nics)
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _static_machines(bp: Blueprint) -> list[dict[str, Any]]:
    return [{"name": h.name, "rails": h.rail_nics} for h in expand(bp.hosts)]
