"""The Pulumi program every generated ``__main__.py`` calls: load ``blueprint.yaml``, build the target's
component, export the ``clustersmith`` output. Each target's SDK is imported only when it is used."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import pulumi

from blueprints.blueprint import Blueprint, load_blueprint
from stacks.config import StackConfig, read_config
from stacks.model import StackError
from stacks.outputs import OUTPUT_NAME

TARGETS = ("aws", "gcp", "azure", "baremetal")


class Cluster(Protocol):
    outputs: pulumi.Output[str]


def build(bp: Blueprint, cfg: StackConfig, program_dir: Path | None = None) -> Cluster:
    """The component for the Blueprint's target (resources are registered as it is constructed)."""
    provider = bp.target.provider
    if provider == "aws":
        from stacks.aws import AwsCluster, AwsClusterArgs
        return AwsCluster(bp.name, AwsClusterArgs.from_blueprint(bp, cfg))
    if provider == "gcp":
        from stacks.gcp import GcpCluster, GcpClusterArgs
        return GcpCluster(bp.name, GcpClusterArgs.from_blueprint(bp, cfg))
    if provider == "azure":
        from stacks.azure import AzureCluster, AzureClusterArgs
        return AzureCluster(bp.name, AzureClusterArgs.from_blueprint(bp, cfg))
    if provider == "baremetal":
        from stacks.baremetal import baremetal_cluster
        return baremetal_cluster(bp, cfg, program_dir or Path.cwd())
    raise StackError(f"target.provider {provider!r} has no Pulumi stack; expected one of {', '.join(TARGETS)} "
                     "(the lab is brought up with `clustersmith lab up`)")


def run(blueprint: Path) -> None:
    """Entry point of ``out/<name>/pulumi/__main__.py``. ``blueprint`` is the build folder's link, not resolved:
    the machines file the user fills in is the real file in the build folder's pulumi/, never the generated one."""
    bp = load_blueprint(blueprint)
    cluster = build(bp, read_config(), Path(blueprint).absolute().parent / "pulumi")
    pulumi.export(OUTPUT_NAME, cluster.outputs)
