"""`inventory --from-stack` names every fleet instance after a Blueprint host, stable across runs and replacement,
and refuses (exit 2, nothing written) a fleet with fewer or more live instances than planned."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import pytest

from blueprints.commands import run
from blueprints.hosts import expand
from stacks import fleet_clients
from stacks.cli import inventory
from stacks.fleet_inventory import FleetSizeError, resolve
from stacks.outputs import StackOutputs
from tests.stacks.conftest import SSH_KEY, blueprint_of, construct, example
from tests.stacks.fleet_fakes import FakeFleets


@pytest.fixture(scope="module")
def two_fleets() -> StackOutputs:
    """The GCP stack's real outputs for 2,001 nodes: 3 managed instance groups, plus the monitoring host."""
    from stacks.config import StackConfig

    bp = blueprint_of(example("recsys-inference.yaml", compute__gpus=8 * 2001, target__project="p"))
    built = construct(bp, StackConfig(ssh_public_key=SSH_KEY))
    return StackOutputs.parse(built.outputs)


def names(outputs: StackOutputs) -> dict[str, str]:
    """Host name -> management address, for the fleets' hosts."""
    return {h.name: h.address for h in outputs.hosts if h.role == "gpu_client"}


def test_every_planned_host_is_named_once_each_in_host_order(two_fleets: StackOutputs) -> None:
    fake = FakeFleets.launched(two_fleets)
    resolved = resolve(two_fleets, fake, "test")
    bp_hosts = [h.name for h in expand(blueprint_of(example(
        "recsys-inference.yaml", compute__gpus=8 * 2001, target__project="p")).hosts)]
    assert [h.name for h in resolved.hosts] == ["mon-1"] + [n for n in bp_hosts if n.startswith("gpu-")]
    assert len(fake.written) == 2001 and len({host for _, host in fake.written}) == 2001
    gpu = next(h for h in resolved.hosts if h.name == "gpu-668")  # the second group's first host
    assert len(gpu.rails) == 8 and all(r.address and r.address.startswith("10.") for r in gpu.rails)


def test_a_second_run_writes_nothing_and_maps_the_same(two_fleets: StackOutputs) -> None:
    fake = FakeFleets.launched(two_fleets)
    first = names(resolve(two_fleets, fake, "test"))
    fake.written.clear()
    assert names(resolve(two_fleets, fake, "test")) == first
    assert fake.written == []


def test_a_replacement_takes_the_name_of_the_instance_it_replaced(two_fleets: StackOutputs) -> None:
    fake = FakeFleets.launched(two_fleets)
    first = names(resolve(two_fleets, fake, "test"))
    fake.terminate("gpu-fleet-2", "gpu-700")
    new = fake.launch("gpu-fleet-2", rails=8)
    fake.written.clear()
    second = names(resolve(two_fleets, fake, "test"))
    assert fake.written == [(new.id, "gpu-700")]
    assert second["gpu-700"] == new.address
    assert {k: v for k, v in second.items() if k != "gpu-700"} == {k: v for k, v in first.items() if k != "gpu-700"}


def test_two_claims_on_one_host_go_to_the_older_instance(two_fleets: StackOutputs) -> None:
    fake = FakeFleets.launched(two_fleets)
    resolve(two_fleets, fake, "test")
    insts = fake.by_fleet["gpu-fleet-1"]
    older, younger = insts[1], insts[5]  # gpu-2 and gpu-6, launched in that order
    # the younger one claims gpu-2 too (a tag copied by hand), and gpu-6 is left without an owner
    fake.by_fleet["gpu-fleet-1"] = [i.model_copy(update={"host": "gpu-2"}) if i.id == younger.id else i
                                    for i in insts]
    fake.written.clear()
    mapping = names(resolve(two_fleets, fake, "test"))
    assert mapping["gpu-2"] == older.address
    assert fake.written == [(younger.id, "gpu-6")]


def test_a_tag_outside_the_fleets_range_is_replaced(two_fleets: StackOutputs) -> None:
    fake = FakeFleets.launched(two_fleets)
    stray = fake.by_fleet["gpu-fleet-1"][0]
    fake.by_fleet["gpu-fleet-1"][0] = stray.model_copy(update={"host": "gpu-1500"})  # another fleet's host
    resolve(two_fleets, fake, "test")
    assert (stray.id, "gpu-1") in fake.written


@pytest.mark.parametrize(("change", "live"), [(-1, 666), (+2, 669)])
def test_a_fleet_short_or_over_its_size_is_refused_by_name_before_any_tag_is_written(
        two_fleets: StackOutputs, change: int, live: int) -> None:
    fake = FakeFleets.launched(two_fleets)
    if change < 0:
        fake.by_fleet["gpu-fleet-3"].pop()
    else:
        for _ in range(change):
            fake.launch("gpu-fleet-3", rails=8)
    with pytest.raises(FleetSizeError) as err:
        resolve(two_fleets, fake, "stack recsys-inference")
    (problem,) = err.value.problems
    assert problem.path == "fleets.gpu-fleet-3"
    assert problem.message.startswith(f"fleet gpu-fleet-3 (managed instance group recsys-inference-gpu-fleet-3 in "
                                      f"us-central1-a) has {live} live instances; the Blueprint plans 667 "
                                      "(gpu-1335 .. gpu-2001)")
    assert fake.written == [], "no fleet is named while any fleet is off its size"


def test_the_inventory_command_exits_2_and_writes_nothing_for_a_short_fleet(
        two_fleets: StackOutputs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"clustersmith": two_fleets.model_dump(mode="json")}))
    fake = FakeFleets.launched(two_fleets)
    fake.by_fleet["gpu-fleet-1"] = fake.by_fleet["gpu-fleet-1"][:600]
    monkeypatch.setattr(fleet_clients, "client_for", lambda provider: fake)
    monkeypatch.setattr(sys, "argv", ["clustersmith", "inventory", str(tmp_path / "out"), "--outputs", str(outputs)])
    with pytest.raises(SystemExit) as exit_:
        run(click.Group(commands=[inventory]), prog_name="clustersmith")
    assert exit_.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "fleet gpu-fleet-1" in err and "has 600 live instances; the Blueprint plans 667" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out" / "ansible" / "inventory.yml").exists()
