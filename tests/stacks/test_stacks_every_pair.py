"""A property of the whole product: if `clustersmith build` exits 0, the Pulumi program it wrote constructs under the
mocks for that target. Checked over every catalog GPU x provider pair, at a small GPU count; the pairs the planner
refuses are named here with their exit-2 message, so a pair that starts (or stops) building is noticed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from blueprints.blueprint import load_blueprint
from blueprints.catalog import load_catalog
from stacks.outputs import StackOutputs
from tests.stacks.conftest import SSH_KEY, run_program
from tests.stacks.test_stacks_baremetal import machines_file

GPUS = 16  # two 8-GPU nodes: small enough to construct in well under a second
PROVIDERS = {
    "aws": {"provider": "aws", "region": "us-east-1", "availability_zone": "us-east-1a"},
    "gcp": {"provider": "gcp", "region": "us-central1", "zone": "us-central1-a", "project": "clustersmith-test"},
    "azure": {"provider": "azure", "region": "eastus"},
    "baremetal": {"provider": "baremetal", "fabric": "roce", "machines": "static", "management_network": "10.0.0.0/16"},
}
GCP_RDMA = "expected compute.accelerator one of the GPUs gcp's RDMA machine types in the catalog carry: B200 " \
           "(a4-highgpu-8g), H200 (a3-ultragpu-8g), or another target.provider"
# (provider, GPU) -> the message `build` exits 2 with; every other pair must build and construct.
REFUSED = {
    ("aws", "B200"): "compute.accelerator: no aws instance type in the catalog carries B200",
    ("aws", "L40S"): "compute.accelerator: no aws instance type in the catalog carries L40S",
    ("gcp", "A100"): "compute.accelerator: no gcp instance type in the catalog carries A100",
    ("gcp", "L40S"): "compute.accelerator: no gcp instance type in the catalog carries L40S",
    ("gcp", "H100-SXM"): "compute.accelerator: 'H100-SXM' on target.provider gcp: a3-megagpu-8g networks its GPUs "
                         f"with GPUDirect-TCPXO, which clustersmith does not build; {GCP_RDMA}",
    ("azure", "B200"): "compute.accelerator: no azure instance type in the catalog carries B200",
    ("azure", "L40S"): "compute.accelerator: no azure instance type in the catalog carries L40S",
}
PAIRS = [(p, g) for p in PROVIDERS for g in sorted(load_catalog().gpus)]


def _spec(provider: str, gpu: str, folder: Path) -> Path:
    name = f"pair-{provider}-{gpu.lower()}"
    doc = {
        "apiVersion": "clustersmith/v1alpha1", "kind": "Requirements", "metadata": {"name": name},
        "business": {"type": "training", "domain": "llm"},
        "compute": {"accelerator": gpu, "gpus": GPUS},
        "data": {"training_set": "20TB", "validation_set": "1TB", "hot_fraction": "20%"},
        "performance": {"storage": {"read_throughput": ">=20GB/s", "write_throughput": ">=5GB/s",
                                    "latency_p99": "<1ms", "jitter": "<10%"}},
        "target": PROVIDERS[provider],
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _build(spec: Path, out: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[
        int, str]:
    """`clustersmith build SPEC -o OUT` in this process: its exit status and what it wrote to stderr."""
    from blueprints.cli import main

    monkeypatch.setattr(sys, "argv", ["clustersmith", "build", str(spec), "-o", str(out)])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, " ".join(capsys.readouterr().err.split())


def test_the_refused_pairs_are_catalog_pairs() -> None:
    assert set(REFUSED) <= set(PAIRS)


@pytest.mark.parametrize(("provider", "gpu"), PAIRS, ids=[f"{p}-{g}" for p, g in PAIRS])
def test_what_build_writes_constructs_or_build_refuses_by_name(
        provider: str, gpu: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(provider, gpu, tmp_path)
    code, err = _build(spec, tmp_path / "out", capsys, monkeypatch)
    if (provider, gpu) in REFUSED:
        assert code == 2, f"{provider} x {gpu} was expected to be refused, build exited {code}"
        assert REFUSED[(provider, gpu)] in err
        assert "Traceback" not in err
        assert not (tmp_path / "out").exists(), "a refused build writes nothing"
        return
    assert code == 0, f"{provider} x {gpu}: build exited {code}: {err}"
    folder = tmp_path / "out" / spec.stem
    pulumi_dir = folder / "pulumi"
    extra = {"clustersmith:sshPublicKey": SSH_KEY}
    if provider == "baremetal":  # static racks: the user fills in the machines file build left placeholders in
        machines_file(load_blueprint(folder), pulumi_dir / "machines.yaml")
    built = run_program(pulumi_dir, extra)
    out = StackOutputs.parse(built.outputs)
    bp = load_blueprint(folder)
    assert out.provider == provider
    fleet_hosts = [n for f in out.fleets for n in f.host_names()]
    assert len(out.hosts) + len(fleet_hosts) == sum(g.count for g in bp.hosts)
    gpu_hosts = [h.name for h in out.hosts if h.role == "gpu_client"] + fleet_hosts
    assert len(gpu_hosts) == bp.compute.nodes.value == GPUS // bp.compute.gpus_per_node
    assert bool(out.fleets) == (provider != "baremetal"), "the clouds provision GPU nodes as fleets"
