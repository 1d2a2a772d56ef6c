#!/usr/bin/python3
"""Ansible module: write /etc/nccl.conf and the NCCL environment file from the Blueprint, after checking the host.

Decision logic kept out of YAML, unit-tested in tests/unit/test_roles_nccl_config.py:

* the profile: the Blueprint's ``env`` as planned, or with the degraded overrides (Ring) on top;
* the in-network-reduction and GPUDirect switches of the Blueprint must agree with the variables the
  environment carries (NCCL_COLLNET_ENABLE for SHARP, NCCL_NVLS_ENABLE for NVLS, NCCL_NET_GDR_LEVEL);
* every HCA NCCL_IB_HCA names must exist under /sys/class/infiniband, else the play stops naming it;
* both files are rewritten only when their text changes; the result has ``changed`` and a ``diff``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: nccl_config
short_description: Write /etc/nccl.conf and an NCCL environment file from the Blueprint, checking HCAs
options:
  env: {type: list, elements: dict, required: true, description: "The planned environment, [{name, value}]"}
  degraded_env: {type: list, elements: dict, required: true, description: Overrides of the degraded profile}
  profile: {type: str, choices: [default, degraded], default: default, description: Which profile to write}
  hcas: {type: list, elements: str, required: true, description: HCAs that must exist on the host}
  gpudirect_rdma: {type: bool, required: true, description: The Blueprint plans GPUDirect RDMA}
  in_network_reduction: {type: str, choices: [none, sharp, nvls], required: true, description: INR the Blueprint plans}
  conf_path: {type: path, default: /etc/nccl.conf, description: NCCL's own configuration file}
  env_path: {type: path, default: /etc/nccl.env, description: Environment file for launchers (systemd, mpirun -x)}
  sysfs_root: {type: path, default: /sys, description: Root of sysfs (tests point it at a fake tree)}
"""

RETURN = r"""
env: {description: The environment written, name -> value, type: dict}
"""

INR_VARS = {"sharp": "NCCL_COLLNET_ENABLE", "nvls": "NCCL_NVLS_ENABLE"}
GDR_VAR = "NCCL_NET_GDR_LEVEL"


class NcclError(Exception):
    """A condition the play must stop on."""


@dataclass(frozen=True)
class Inputs:
    env: list[tuple[str, str]]
    degraded_env: list[tuple[str, str]]
    profile: str
    hcas: list[str]
    gpudirect_rdma: bool
    in_network_reduction: str

    @classmethod
    def from_params(cls, p: dict[str, Any]) -> Inputs:
        return cls(env=[(e["name"], str(e["value"])) for e in p["env"]],
                   degraded_env=[(e["name"], str(e["value"])) for e in p["degraded_env"]],
                   profile=p.get("profile", "default"), hcas=list(p["hcas"]),
                   gpudirect_rdma=bool(p["gpudirect_rdma"]), in_network_reduction=p["in_network_reduction"])


def effective_env(inp: Inputs) -> dict[str, str]:
    """The planned environment, with the degraded overrides on top when that profile is chosen."""
    env = dict(inp.env)
    if inp.profile == "degraded":
        env.update(dict(inp.degraded_env))
    elif inp.profile != "default":
        raise NcclError(f"nccl: nccl_profile is {inp.profile!r}; expected 'default' or 'degraded'")
    return env


def check_switches(inp: Inputs, env: dict[str, str]) -> list[str]:
    """Contradictions between the Blueprint's INR/GPUDirect switches and the environment."""
    problems = []
    for mode, var in INR_VARS.items():
        on = env.get(var, "0") not in ("0", "")
        if mode == inp.in_network_reduction and not on:
            problems.append(f"nccl_in_network_reduction is {mode!r} but the environment has no {var}=1")
        if mode != inp.in_network_reduction and on:
            problems.append(f"{var}={env[var]} but nccl_in_network_reduction is {inp.in_network_reduction!r}")
    if inp.gpudirect_rdma and GDR_VAR not in env:
        problems.append(f"nccl_gpudirect_rdma is true but the environment has no {GDR_VAR}")
    if not inp.gpudirect_rdma and GDR_VAR in env:
        problems.append(f"{GDR_VAR}={env[GDR_VAR]} but nccl_gpudirect_rdma is false")
    return problems


def missing_hcas(hcas: list[str], sysfs_root: Path) -> tuple[list[str], list[str]]:
    """(named HCAs that are absent, HCAs the host has)."""
    ib = sysfs_root / "class" / "infiniband"
    present = sorted(p.name for p in ib.iterdir()) if ib.is_dir() else []
    return [h for h in hcas if h not in present], present


def conf_text(env: dict[str, str], profile: str) -> str:
    """NCCL reads NAME=VALUE lines from /etc/nccl.conf (no quotes)."""
    head = f"# Written by the clustersmith nccl role from the Blueprint; profile {profile}. Do not edit.\n"
    return head + "".join(f"{k}={v}\n" for k, v in env.items())


def env_text(env: dict[str, str], profile: str) -> str:
    """The same as an environment file for systemd's EnvironmentFile= and `set -a; . file` in shells."""
    head = (f"# Written by the clustersmith nccl role from the Blueprint; profile {profile}. Do not edit.\n"
            "# Shells: set -a; . /etc/nccl.env; set +a    systemd: EnvironmentFile=/etc/nccl.env\n")
    return head + "".join(f'{k}="{v}"\n' for k, v in env.items())


def write_if_changed(path: Path, text: str, check_mode: bool) -> dict[str, str] | None:
    old = path.read_text() if path.exists() else ""
    if old == text:
        return None
    if not check_mode:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    return {"before_header": str(path), "after_header": str(path), "before": old, "after": text}


def run(inp: Inputs, conf_path: Path, env_path: Path, sysfs_root: Path, host: str,
        check_mode: bool) -> tuple[bool, list[dict[str, str]], dict[str, str]]:
    env = effective_env(inp)
    problems = check_switches(inp, env)
    if problems:
        raise NcclError("nccl: the Blueprint's switches and its NCCL environment disagree: " + "; ".join(problems))
    absent, present = missing_hcas(inp.hcas, sysfs_root)
    if absent:
        raise NcclError(f"nccl: NCCL_IB_HCA names {', '.join(absent)}, which {host} does not have "
                        f"({sysfs_root / 'class' / 'infiniband'} holds: {', '.join(present) or 'nothing'}); "
                        f"create the RDMA devices first (the rdma role) or fix the rails in the Blueprint")
    diffs = [d for d in (write_if_changed(conf_path, conf_text(env, inp.profile), check_mode),
                         write_if_changed(env_path, env_text(env, inp.profile), check_mode)) if d]
    return bool(diffs), diffs, env


def main() -> None:  # pragma: no cover - exercised through Ansible in molecule
    module = AnsibleModule(
        argument_spec={
            "env": {"type": "list", "elements": "dict", "required": True},
            "degraded_env": {"type": "list", "elements": "dict", "required": True},
            "profile": {"type": "str", "default": "default"},
            "hcas": {"type": "list", "elements": "str", "required": True},
            "gpudirect_rdma": {"type": "bool", "required": True},
            "in_network_reduction": {"type": "str", "choices": ["none", "sharp", "nvls"], "required": True},
            "conf_path": {"type": "path", "default": "/etc/nccl.conf"},
            "env_path": {"type": "path", "default": "/etc/nccl.env"},
            "sysfs_root": {"type": "path", "default": "/sys"},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        changed, diffs, env = run(Inputs.from_params(p), Path(p["conf_path"]), Path(p["env_path"]),
                                  Path(p["sysfs_root"]), os.uname().nodename, module.check_mode)
    except (NcclError, KeyError, OSError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=changed, diff=diffs, env=env)


if __name__ == "__main__":
    main()
