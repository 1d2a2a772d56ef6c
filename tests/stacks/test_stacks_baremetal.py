"""Bare metal under mocks: static racks (inventory only) and MAAS machines; the MAAS key only as a secret."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from blueprints.blueprint import Blueprint
from stacks.config import StackConfig
from stacks.model import StackError, machines
from tests.stacks.conftest import SSH_KEY, blueprint_of, construct, example
from tests.stacks.mocks import plain
from tests.stacks.tagging import assert_every_resource_labelled, assert_no_plaintext_secret

MAAS_KEY = "consumer:token:secret-part"


@pytest.fixture(scope="module")
def cv() -> Blueprint:
    return blueprint_of(example("cv-training-500tb.yaml"), "examples/cv-training-500tb.yaml")


@pytest.fixture(scope="module")
def cv_maas() -> Blueprint:
    return blueprint_of(example("cv-training-500tb.yaml", target__machines="maas"), "examples/cv-training-500tb.yaml")


def machines_file(bp: Blueprint, path: Path) -> Path:
    rails = {"gpu_client": bp.compute.rails.value, "storage_target": bp.compute.storage_nics}
    doc = {"machines": [
        {"name": m.name, "address": f"192.0.2.{n % 250 + 1}",
         "rails": [{"index": i, "netdev": f"ens{i}", "address": f"198.51.100.{n % 250 + 1}", "prefix": 24}
                   for i in range(rails.get(m.role, 0))]}
        for n, m in enumerate(machines(bp))]}
    path.write_text(yaml.safe_dump(doc))
    return path


def test_static_creates_nothing_and_exports_the_racks(cv: Blueprint, tmp_path: Path) -> None:
    path = machines_file(cv, tmp_path / "machines.yaml")
    built = construct(cv, StackConfig(machines_file=str(path)))
    assert [r.typ for r in built.mocks.resources] == ["clustersmith:baremetal:StaticCluster"]
    hosts = built.outputs["hosts"]
    assert len(hosts) == sum(g.count for g in cv.hosts)
    gpu = next(h for h in hosts if h["name"] == "gpu-1")
    assert len(gpu["rails"]) == cv.compute.rails.value and gpu["rails"][0]["netdev"] == "ens0"
    target = next(h for h in hosts if h["role"] == "storage_target")
    assert len(target["rails"]) == cv.compute.storage_nics


def test_static_reports_every_problem_in_the_machines_file(cv: Blueprint, tmp_path: Path) -> None:
    path = machines_file(cv, tmp_path / "machines.yaml")
    doc = yaml.safe_load(path.read_text())
    doc["machines"] = [m for m in doc["machines"] if m["name"] != "gpu-2"]
    doc["machines"][0]["address"] = "CHANGE_ME"
    doc["machines"][0]["rails"] = doc["machines"][0]["rails"][:3]
    doc["machines"].append({"name": "gpu-999", "address": "192.0.2.9"})
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(StackError) as err:
        construct(cv, StackConfig(machines_file=str(path)))
    text = str(err.value)
    assert "missing planned host(s): gpu-2" in text
    assert "host(s) not in the Blueprint: gpu-999" in text
    assert "gpu-1: 3 rail(s) listed, the Blueprint plans 8 for a gpu_client" in text
    assert "gpu-1: 'CHANGE_ME' is not an IP address" in text


def test_static_without_a_machines_file_says_what_to_write(cv: Blueprint, tmp_path: Path) -> None:
    with pytest.raises(StackError, match="machines: static needs the machines file"):
        construct(cv, StackConfig(machines_file=str(tmp_path / "none.yaml")))


MAAS_CFG = StackConfig(ssh_public_key=SSH_KEY, maas_api_url="http://maas.invalid:5240/MAAS",
                       rail_subnets=tuple(f"198.18.{i}.0/24" for i in range(8)),
                       gpu_rail_netdevs=tuple(f"ens{i}np0" for i in range(8)),
                       storage_rail_netdevs=("ens1f0np0", "ens1f1np1"))


def test_maas_allocates_one_machine_per_host_with_static_rail_addresses(cv_maas: Blueprint) -> None:
    built = construct(cv_maas, MAAS_CFG, config={"clustersmith:maasApiKey": MAAS_KEY},
                      secret_keys=["clustersmith:maasApiKey"])
    instances = built.mocks.of_type("maas:index/instance:Instance")
    assert len(instances) == sum(g.count for g in cv_maas.hosts)
    gpu = plain(next(i for i in instances if i.name == "gpu-1").inputs)
    assert gpu["allocateParams"]["tags"] == [cv_maas.compute.node_type.value]
    assert [n["name"] for n in gpu["networkInterfaces"]] == list(MAAS_CFG.gpu_rail_netdevs)
    addresses = [plain(i.inputs)["networkInterfaces"][0]["ipAddress"] for i in instances
                 if i.inputs.get("networkInterfaces")]
    assert len(addresses) == len(set(addresses))  # no two machines share a rail address
    assert_every_resource_labelled(built.mocks, "cv-training-500tb", "cv-training-500tb.yaml")
    (provider,) = built.mocks.of_type("pulumi:providers:maas")
    assert provider.inputs["apiKey"] != MAAS_KEY and plain(provider.inputs)["apiKey"] == MAAS_KEY
    assert_no_plaintext_secret(built.mocks, built.outputs, secrets=[MAAS_KEY])


def test_maas_refuses_a_plain_api_key(cv_maas: Blueprint) -> None:
    with pytest.raises(StackError, match="must be set as a secret"):
        construct(cv_maas, MAAS_CFG, config={"clustersmith:maasApiKey": MAAS_KEY})


def test_maas_lists_missing_settings_at_once(cv_maas: Blueprint) -> None:
    with pytest.raises(StackError) as err:
        construct(cv_maas, StackConfig(rail_subnets=("not-a-cidr",) * 8))
    text = str(err.value)
    assert "clustersmith:maasApiUrl" in text and "clustersmith:gpuRailNetdevs with 8 NIC names (got 0)" in text
    assert "'not-a-cidr' is not a CIDR" in text


def test_equinix_is_refused_with_the_reason() -> None:
    bp = blueprint_of(example("cv-training-500tb.yaml", target__machines="equinix"))
    with pytest.raises(StackError, match="Equinix Metal was sunset"):
        construct(bp)
