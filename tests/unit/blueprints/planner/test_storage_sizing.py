"""Managed file-system sizing the stacks rely on: sizes the service accepts, maxima, the larger GCP step,
and the planner's error when no tier of a cloud can meet the targets (before any stack runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints.blueprint import Blueprint
from blueprints.catalog import load_catalog
from blueprints.errors import InfeasibleError
from blueprints.loader import parse_requirements
from blueprints.planner import plan
from blueprints.planner.storage_services import managed_capacity

REPO = Path(__file__).resolve().parents[4]
GIB, TIB = 2.0**30, 2.0**40


def cloud_spec(provider: dict[str, Any], training_set: str, read: str, write: str = ">=1GB/s",
               instance_type: str | None = None, accelerator: str = "H100-SXM", gpus: int = 8) -> dict[str, Any]:
    compute: dict[str, Any] = {"accelerator": accelerator, "gpus": gpus}
    if instance_type:
        compute["instance_type"] = instance_type
    return {
        "apiVersion": "clustersmith/v1alpha1", "kind": "Requirements", "metadata": {"name": "sizing"},
        "business": {"type": "training", "domain": "llm"}, "compute": compute,
        "data": {"training_set": training_set, "hot_fraction": "10%"},
        "performance": {"storage": {"read_throughput": read, "write_throughput": write,
                                    "latency_p99": "<1ms", "jitter": "<5%"}},
        "target": provider,
    }


def planned(doc: dict[str, Any]) -> Blueprint:
    return plan(parse_requirements(yaml.safe_dump(doc, sort_keys=False)))


AWS = {"provider": "aws", "region": "us-east-1", "availability_zone": "us-east-1a"}
GCP = {"provider": "gcp", "region": "us-central1", "zone": "us-central1-a"}
AZURE = {"provider": "azure", "region": "eastus"}


@pytest.mark.parametrize(
    ("service", "need_gib", "expected_gib"),
    [
        ("fsx-lustre-persistent2-1000", 100, 1200),  # the 1200 GiB minimum is a valid size
        ("fsx-lustre-persistent2-1000", 1200, 1200),
        ("fsx-lustre-persistent2-1000", 1201, 2400),
        ("fsx-lustre-persistent2-1000", 4801, 7200),
        ("gcp-managed-lustre-1000", 1, 9000),
        ("gcp-managed-lustre-1000", 1_530_000, 1_530_000),  # at the threshold: 9000 GiB steps
        ("gcp-managed-lustre-1000", 1_530_001, 1_584_000),  # above it: multiples of 72000 GiB
        ("amlfs-durable-premium-500", 5 * 1024, 8 * 1024),
        ("amlfs-durable-premium-40", 1, 48 * 1024),
    ],
)
def test_managed_capacity_is_a_size_the_service_accepts(service: str, need_gib: int, expected_gib: int) -> None:
    fs = load_catalog().file_systems[service]
    assert managed_capacity(fs, need_gib * GIB) == expected_gib * GIB


def test_small_fsx_gets_the_1200_gib_minimum() -> None:
    bp = planned(cloud_spec(AWS, "100GB", ">=1GB/s", instance_type="p5.48xlarge"))
    assert bp.storage.managed is not None
    assert bp.storage.managed.capacity_gib == 1200
    assert bp.storage.managed.per_unit_throughput == 1000
    assert bp.storage.managed.sku == "PERSISTENT_2"


def test_fsx_throughput_is_capacity_times_per_unit_throughput() -> None:
    bp = planned(cloud_spec(AWS, "10TB", ">=20GB/s", instance_type="p5.48xlarge"))
    m = bp.storage.managed
    assert m is not None
    assert m.throughput.value.value == pytest.approx(m.capacity_gib / 1024 * m.per_unit_throughput * 1e6)
    assert m.throughput.value.value >= 20e9
    assert m.capacity_gib % 2400 == 0 or m.capacity_gib == 1200


def test_azure_falls_back_to_a_tier_large_enough_for_the_data() -> None:
    # 200 TB is more than the 128 TiB the 500/250/125 MBps tiers list, so the 40 MBps tier (768 TiB) is used
    bp = planned(cloud_spec(AZURE, "200TB", ">=1GB/s", accelerator="H100-SXM"))
    m = bp.storage.managed
    assert m is not None and m.service == "amlfs-durable-premium-40"
    assert m.sku == "AMLFS-Durable-Premium-40"
    assert m.capacity_gib % (48 * 1024) == 0
    assert m.max_capacity is not None and m.capacity_gib * GIB <= m.max_capacity.value


def test_azure_throughput_beyond_every_tier_is_an_error_naming_the_numbers() -> None:
    with pytest.raises(InfeasibleError) as err:
        planned(cloud_spec(AZURE, "10TB", ">=500GB/s", gpus=256))
    text = str(err.value)
    assert "performance.storage.read_throughput" in text
    assert "amlfs-durable-premium-500 needs" in text and "holds at most 128TiB" in text
    assert "500GB/s" in text


def test_azure_data_beyond_every_tier_points_at_the_data() -> None:
    with pytest.raises(InfeasibleError) as err:
        planned(cloud_spec(AZURE, "1PB", ">=1GB/s"))
    assert "data.training_set" in str(err.value)
    assert "holds at most 768TiB" in str(err.value)


def test_gcp_large_capacity_uses_the_larger_step() -> None:
    bp = planned(cloud_spec(GCP, "2PB", ">=10GB/s", instance_type="a3-ultragpu-8g", accelerator="H200"))
    m = bp.storage.managed
    assert m is not None and m.service == "gcp-managed-lustre-1000"
    assert m.capacity_gib > 1_530_000
    assert m.capacity_gib % 72_000 == 0


def test_cli_reports_the_infeasible_file_system_with_exit_code_2(tmp_path: Path) -> None:
    spec = tmp_path / "too-fast.yaml"
    spec.write_text(yaml.safe_dump(cloud_spec(AZURE, "10TB", ">=500GB/s", gpus=256)))
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-c", "from blueprints.cli import main; main()", "build", str(spec),
                          "-o", str(out)], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 2, run.stderr
    assert "no azure managed file system in the catalog fits" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (out / "sizing").exists()
