#!/usr/bin/python3
"""Ansible module: the address this host's monitoring listeners bind to.

With ``cidr`` set (the management network), the host's IPv4 address inside it; without, the first
address of the interface that carries the default route. Fails, naming the addresses it saw, when
neither exists: binding to 0.0.0.0 instead would expose the listeners on the data rails.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: monitoring_listen_address
short_description: Pick the address the monitoring listeners bind to
description: Reads C(ip -j -4 addr) and C(ip -j -4 route show default); changes nothing.
options:
  cidr:
    description: Management network; empty selects the default-route interface's address.
    type: str
    default: ""
"""


class NoAddress(Exception):
    pass


def addresses(ip_addr: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """(interface, address, prefix) of every IPv4 address in ``ip -j -4 addr show`` output."""
    found = []
    for link in ip_addr:
        for info in link.get("addr_info", []):
            if info.get("family") == "inet" and "local" in info:
                found.append((link["ifname"], info["local"], int(info.get("prefixlen", 32))))
    return found


def choose(ip_addr: list[dict[str, Any]], routes: list[dict[str, Any]], cidr: str) -> tuple[str, str]:
    """(address, interface) to listen on; raises NoAddress with the reason."""
    found = addresses(ip_addr)
    seen = ", ".join(f"{a}/{p} on {i}" for i, a, p in found) or "none"
    if cidr:
        try:
            net = ipaddress.IPv4Network(cidr, strict=False)
        except ValueError as err:
            raise NoAddress(f"monitoring_listen_cidr {cidr!r} is not an IPv4 network ({err})") from None
        for iface, address, _ in found:
            if ipaddress.IPv4Address(address) in net:
                return address, iface
        raise NoAddress(f"no address of this host is in monitoring_listen_cidr {cidr}; addresses: {seen}")
    for route in routes:
        if route.get("dst") == "default" and route.get("dev"):
            if route.get("prefsrc"):
                return route["prefsrc"], route["dev"]
            for iface, address, _ in found:
                if iface == route["dev"]:
                    return address, iface
    raise NoAddress("this host has no default route to pick a management address from; set "
                    f"monitoring_listen_cidr to the management network (addresses: {seen})")


def main() -> None:
    module = AnsibleModule(argument_spec={"cidr": {"type": "str", "default": ""}}, supports_check_mode=True)
    out: str  # run_command's stdout (AnsibleModule is untyped)
    _rc, out, _err = module.run_command(["ip", "-j", "-4", "addr", "show"], check_rc=True)
    ip_addr = json.loads(out or "[]")
    _rc, out, _err = module.run_command(["ip", "-j", "-4", "route", "show", "default"], check_rc=True)
    routes = json.loads(out or "[]")
    try:
        address, iface = choose(ip_addr, routes, module.params["cidr"])
    except NoAddress as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, address=address, interface=iface)


if __name__ == "__main__":
    main()
