#!/usr/bin/python3
"""Ansible module: write /etc/nccl.conf, /etc/nccl.env and the job-level degraded profile from the Blueprint.

Decision logic kept out of YAML, unit-tested in tests/unit/roles/nccl/test_nccl_config.py:

* the node-wide environment forces nothing NCCL chooses itself (NCCL_ALGO, NCCL_PROTO, NVLS/CollNet enables,
  NCCL_NET_GDR_LEVEL, NCCL_IB_GID_INDEX, socket-transport threads; shared reference 10.1): such a variable is
  refused, naming it;
* NCCL_IB_HCA is built per host in exact-match form (``=dev:port,...``) from the rails record the rdma role
  wrote (/etc/ansible/facts.d/rdma.fact), for the compute rails the Blueprint names; every device must exist
  under /sys/class/infiniband;
* the degraded profile (/etc/clustersmith/nccl/degraded.env, sourced by a job) keeps an algorithm for every
  collective: a per-collective NCCL_ALGO starts with a default list, and a prefix-less NCCL_PROTO is refused;
* files are rewritten only when their text changes; the result has ``changed`` and a ``diff``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: nccl_config
short_description: Write the NCCL environment files from the Blueprint, NCCL_IB_HCA from the rdma role's record
options:
  env: {type: list, elements: dict, required: true, description: "The node-wide environment, [{name, value}]"}
  degraded_env: {type: list, elements: dict, required: true, description: The job-level degraded profile}
  ib_hca_rails: {type: list, elements: int, required: true, description: Compute rails NCCL_IB_HCA names}
  rdma_facts: {type: path, default: /etc/ansible/facts.d/rdma.fact, description: The rdma role's rails record}
  conf_path: {type: path, default: /etc/nccl.conf, description: NCCL's own configuration file}
  env_path: {type: path, default: /etc/nccl.env, description: Environment file for launchers (systemd, mpirun -x)}
  degraded_path: {type: path, default: /etc/clustersmith/nccl/degraded.env, description: The degraded profile}
  sysfs_root: {type: path, default: /sys, description: Root of sysfs (tests point it at a fake tree)}
"""

RETURN = r"""
env: {description: The node-wide environment written, name -> value, type: dict}
"""

# Variables NCCL decides for itself (shared reference 10.1); the node-wide environment never forces them.
NOT_NODE_WIDE = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE", "NCCL_NET_GDR_LEVEL",
                 "NCCL_IB_GID_INDEX", "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD")
HCA = "NCCL_IB_HCA"


class NcclError(Exception):
    """A condition the play must stop on."""


@dataclass(frozen=True)
class Inputs:
    env: list[tuple[str, str]]
    degraded_env: list[tuple[str, str]]
    ib_hca_rails: list[int]

    @classmethod
    def from_params(cls, p: dict[str, Any]) -> Inputs:
        return cls(env=[(e["name"], str(e["value"])) for e in p["env"]],
                   degraded_env=[(e["name"], str(e["value"])) for e in p["degraded_env"]],
                   ib_hca_rails=[int(r) for r in p["ib_hca_rails"]])


def check_node_wide(env: list[tuple[str, str]]) -> list[str]:
    return [f"nccl_env sets {name}={value}: NCCL chooses it itself and forcing it node-wide breaks jobs "
            f"(shared reference 10.1); put it in a job-level profile" if name != HCA else
            f"nccl_env sets {HCA}={value}: the role writes it per host from the rdma role's record"
            for name, value in env if name in NOT_NODE_WIDE or name == HCA]


def check_degraded(env: list[tuple[str, str]]) -> list[str]:
    """Every collective keeps an algorithm; no prefix-less NCCL_PROTO (an invalid-usage trap)."""
    problems = []
    for name, value in env:
        entries = [e for e in value.split(";") if e]
        if name == "NCCL_PROTO" and any(":" not in e for e in entries):
            problems.append(f"nccl_degraded_env sets NCCL_PROTO={value}: a list without a collective prefix "
                            f"applies to every collective; name the collective (e.g. allreduce:simple)")
        if name == "NCCL_ALGO" and (not entries or ":" in entries[0] or len(entries) == 1):
            problems.append(f"nccl_degraded_env sets NCCL_ALGO={value}: expected a default list for every "
                            f"collective, then per-collective overrides (e.g. tree,ring;allreduce:ring)")
    return problems


def ib_hca(rails: list[int], facts_text: str | None, facts_path: Path) -> str | None:
    """``=dev:port,...`` for the compute rails, from the rdma role's record; None where no rail is named."""
    if not rails:
        return None
    if facts_text is None:
        raise NcclError(f"nccl: {facts_path} is missing: run the rdma role first, it records the RDMA device "
                        f"behind each rail")
    found = {int(r["index"]): r for r in json.loads(facts_text).get("rails", [])}
    absent = [r for r in rails if r not in found]
    if absent:
        have = ", ".join(f"rail {i} {r['device']}:{r['port']}" for i, r in sorted(found.items())) or "no rails"
        raise NcclError(f"nccl: compute rail {', '.join(map(str, absent))} has no RDMA device in {facts_path} "
                        f"(the rdma role found: {have})")
    return "=" + ",".join(f"{found[r]['device']}:{found[r]['port']}" for r in rails)


def missing_hcas(value: str, sysfs_root: Path) -> tuple[list[str], list[str]]:
    """(devices an exact-match NCCL_IB_HCA names that are absent, devices the host has)."""
    ib = sysfs_root / "class" / "infiniband"
    present = sorted(p.name for p in ib.iterdir()) if ib.is_dir() else []
    named = [item.split(":")[0] for item in value.lstrip("=").split(",") if item]
    return [h for h in named if h not in present], present


def conf_text(env: dict[str, str]) -> str:
    """NCCL reads NAME=VALUE lines from /etc/nccl.conf (no quotes)."""
    head = "# Written by the clustersmith nccl role from the Blueprint. Do not edit.\n"
    return head + "".join(f"{k}={v}\n" for k, v in env.items())


def env_text(env: dict[str, str], what: str, path: str) -> str:
    """An environment file for systemd's EnvironmentFile= and `set -a; . file` in shells."""
    head = (f"# Written by the clustersmith nccl role from the Blueprint: {what}. Do not edit.\n"
            f"# Shells: set -a; . {path}; set +a    systemd: EnvironmentFile={path}\n")
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


def run(inp: Inputs, paths: dict[str, Path], sysfs_root: Path, check_mode: bool,
        host: str = "") -> tuple[bool, list[dict[str, str]], dict[str, str]]:
    problems = check_node_wide(inp.env) + check_degraded(inp.degraded_env)
    if problems:
        raise NcclError("nccl: " + "; ".join(problems))
    facts = paths["rdma_facts"]
    env = dict(inp.env)
    hca = ib_hca(inp.ib_hca_rails, facts.read_text() if facts.is_file() else None, facts)
    if hca is not None:
        absent, present = missing_hcas(hca, sysfs_root)
        if absent:
            raise NcclError(f"nccl: NCCL_IB_HCA names {', '.join(absent)}, which {host or 'this host'} does not "
                            f"have ({sysfs_root / 'class' / 'infiniband'} holds: {', '.join(present) or 'nothing'});"
                            f" rerun the rdma role, its record {facts} is stale")
        env = {HCA: hca, **env}
    degraded = dict(inp.degraded_env)
    texts = [(paths["conf"], conf_text(env)),
             (paths["env"], env_text(env, "node-wide environment", str(paths["env"]))),
             (paths["degraded"], env_text(degraded, "degraded profile, a job sources it after /etc/nccl.env",
                                          str(paths["degraded"])))]
    diffs = [d for d in (write_if_changed(path, text, check_mode) for path, text in texts) if d]
    return bool(diffs), diffs, env


def main() -> None:  # pragma: no cover - exercised through Ansible in molecule
    module = AnsibleModule(
        argument_spec={
            "env": {"type": "list", "elements": "dict", "required": True},
            "degraded_env": {"type": "list", "elements": "dict", "required": True},
            "ib_hca_rails": {"type": "list", "elements": "int", "required": True},
            "rdma_facts": {"type": "path", "default": "/etc/ansible/facts.d/rdma.fact"},
            "conf_path": {"type": "path", "default": "/etc/nccl.conf"},
            "env_path": {"type": "path", "default": "/etc/nccl.env"},
            "degraded_path": {"type": "path", "default": "/etc/clustersmith/nccl/degraded.env"},
            "sysfs_root": {"type": "path", "default": "/sys"},
        },
        supports_check_mode=True,
    )
    p: dict[str, Any] = module.params  # AnsibleModule is untyped: its params as the argument spec makes them
    paths = {"conf": Path(p["conf_path"]), "env": Path(p["env_path"]), "degraded": Path(p["degraded_path"]),
             "rdma_facts": Path(p["rdma_facts"])}
    try:
        changed, diffs, env = run(Inputs.from_params(p), paths, Path(p["sysfs_root"]), module.check_mode,
                                  os.uname().nodename)
    except (NcclError, KeyError, OSError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=changed, diff=diffs, env=env)


if __name__ == "__main__":
    main()
