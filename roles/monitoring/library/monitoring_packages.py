#!/usr/bin/python3
"""Ansible module: which of the given Debian packages are installed or installable from the host's sources.

The role installs Grafana and dcgm-exporter only where their vendors' apt sources are configured;
elsewhere it records why it skipped them instead of failing. Reads ``apt-cache policy``; changes nothing.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: monitoring_packages
short_description: Report installed and candidate versions of Debian packages
options:
  names:
    description: Package names.
    type: list
    elements: str
    required: true
"""


def parse_policy(text: str) -> dict[str, dict[str, str | None]]:
    """``apt-cache policy a b`` -> {name: {installed, candidate}}; ``(none)`` becomes None.

    Packages apt does not know are absent from the output (and so from the result).
    """
    found: dict[str, dict[str, str | None]] = {}
    current: str | None = None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            current = line[:-1]
            found[current] = {"installed": None, "candidate": None}
            continue
        key, _, value = line.strip().partition(": ")
        if current and key in ("Installed", "Candidate"):
            found[current][key.lower()] = None if value == "(none)" else value
    return found


def availability(names: list[str], policy: dict[str, dict[str, str | None]]) -> dict[str, bool]:
    return {n: bool(policy.get(n, {}).get("installed") or policy.get(n, {}).get("candidate")) for n in names}


def main() -> None:
    module = AnsibleModule(argument_spec={"names": {"type": "list", "elements": "str", "required": True}},
                           supports_check_mode=True)
    names: list[str] = module.params["names"]
    rc: int  # run_command's exit status, stdout and stderr (AnsibleModule is untyped)
    out: str
    err: str
    rc, out, err = module.run_command(["apt-cache", "policy", *names], environ_update={"LC_ALL": "C"})
    if rc != 0:
        module.fail_json(msg=f"apt-cache policy failed ({rc}): {err.strip()}")
    policy = parse_policy(out)
    module.exit_json(changed=False, available=availability(names, policy), policy=policy)


if __name__ == "__main__":
    main()
