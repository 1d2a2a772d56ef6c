"""The monitoring role's decision modules, on real ``ip -j`` and ``apt-cache policy`` output."""

from __future__ import annotations

import importlib.util
import json
import sys
from types import ModuleType

import pytest

from tests.promtool.support import REPO

LIBRARY = REPO / "roles" / "monitoring" / "library"
FIXTURES = REPO / "roles" / "monitoring" / "tests" / "fixtures"


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, LIBRARY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


listen = _module("monitoring_listen_address")
packages = _module("monitoring_packages")


def _json(name: str) -> list[dict[str, object]]:
    return json.loads((FIXTURES / name).read_text())


def test_default_route_interface_gives_the_address() -> None:
    address, iface = listen.choose(_json("ip-addr-dev-machine.json"), _json("ip-route-default-dev-machine.json"), "")
    assert (address, iface) == ("192.0.2.2", "eth0")


def test_the_cidr_picks_the_address_inside_it() -> None:
    assert listen.choose(_json("ip-addr-dev-machine.json"), [], "192.0.2.0/24") == ("192.0.2.2", "eth0")


def test_a_cidr_the_host_is_not_in_is_refused_with_its_addresses() -> None:
    with pytest.raises(listen.NoAddress, match=r"no address of this host is in monitoring_listen_cidr "
                                                r"10\.99\.0\.0/24; addresses: 127\.0\.0\.1/8 on lo, 192\.0\.2\.2/24"):
        listen.choose(_json("ip-addr-dev-machine.json"), [], "10.99.0.0/24")


def test_a_malformed_cidr_is_named() -> None:
    with pytest.raises(listen.NoAddress, match=r"monitoring_listen_cidr 'mgmt' is not an IPv4 network"):
        listen.choose(_json("ip-addr-dev-machine.json"), [], "mgmt")


def test_no_default_route_and_no_cidr_asks_for_the_cidr() -> None:
    with pytest.raises(listen.NoAddress, match=r"no default route .* set monitoring_listen_cidr"):
        listen.choose(_json("ip-addr-dev-machine.json"), [], "")


def test_lab_guest_has_no_default_route_but_a_rail_address() -> None:
    addrs = _json("ip-addr-lab-client.json")
    routes = _json("ip-route-default-lab-client.json")
    assert routes == []
    assert listen.choose(addrs, routes, "10.77.1.0/24") == ("10.77.1.2", "rail1")


def test_apt_cache_policy_tells_installed_from_installable_from_unknown() -> None:
    policy = packages.parse_policy((FIXTURES / "apt-cache-policy-dev-machine.txt").read_text())
    assert policy["prometheus"]["installed"] == policy["prometheus"]["candidate"] == "2.42.0+ds-5+deb12u1"
    assert policy["prometheus-alertmanager"] == {"installed": None, "candidate": "0.25.0-1+b4"}
    got = packages.availability(["prometheus", "prometheus-alertmanager", "grafana"], policy)
    assert got == {"prometheus": True, "prometheus-alertmanager": True, "grafana": False}
