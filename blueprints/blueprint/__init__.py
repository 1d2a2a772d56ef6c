"""The Blueprint: the resolved design, and the one contract between planning and everything downstream.

Every number the planner derives is a ``Traced`` value: the value plus ``derived_from`` (the spec paths
it came from, the rule's name and the arithmetic). Stacks, roles and validators read this model (or
the ``blueprint.yaml`` it serialises to) and never the raw spec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator

from blueprints import yamltext
from blueprints.errors import ClusterSmithError, Problem
from blueprints.fleet_plan import FleetsPlan
from blueprints.hosts import HostGroup, HostRole, names_by_role
from blueprints.lab_plan import LabPlan
from blueprints.model import Frozen
from blueprints.textsafe import one_line
from blueprints.traced import Provenance, Traced, traced

# isort: off
# The nouns of the Blueprint, one module each, below the root; callers take them from here (__all__).
from blueprints.blueprint.compute import ComputePlan
from blueprints.blueprint.fabric import FabricKind, FabricPlan, StorageFabricPlan
from blueprints.blueprint.wiring import CableRun, SwitchTier, WiredFabric, WiringPlan
from blueprints.blueprint.qos import (
    ECT0, DcqcnPlan, EcnThresholds, EtsPlan, LosslessBuffersPlan, PfcWatchdogPlan, QosPlan,
)
from blueprints.blueprint.nccl import EnvVar, NcclPlan, TrafficClassSlot
from blueprints.blueprint.ceph import (
    CephDaemons, CephEcProfile, CephLabException, CephMount, CephNetwork, CephOsdGroup, CephPlan, CephPool,
    CephSetting,
)
from blueprints.blueprint.shared_fs import (
    ClientFs, ClientSetting, FsCacheCounters, FsCachePlan, SharedCapability, SharedFsPlan, StorageEngine,
)
from blueprints.blueprint.storage import (
    CachePlan, ManagedFsPlan, NvmeofHost, NvmeofPlan, NvmeofSubsystem, ProtectionOption, StoragePlan, TierOption,
    TierPlan,
)
from blueprints.blueprint.monitoring import (
    AlertRule, MonitoringAuth, MonitoringPlan, Query, RecordingRule, RuleGroup, ScrapeJob, ScrapeSet, ScrapeTargets,
    TargetPanel,
)
from blueprints.blueprint.acceptance import (
    BUFFERED_WORKLOAD, AcceptancePlan, Check, FioFootprint, FioWorkload, Prediction, ScratchArea, ScratchFs,
)
from blueprints.blueprint.target import Provider, TargetPlan
from blueprints.blueprint.costs import CostLine, CostPlan, PriceRow
from blueprints.blueprint.format import BLUEPRINT_FORMAT, refuse_older
# isort: on

__all__ = [
    "BUFFERED_WORKLOAD", "ECT0", "AcceptancePlan", "AlertRule", "Blueprint", "CableRun", "CachePlan", "CephDaemons",
    "CephEcProfile", "CephLabException", "CephMount", "CephNetwork", "CephOsdGroup", "CephPlan", "CephPool",
    "CephSetting", "Check", "ClientFs", "ClientSetting", "ComputePlan", "CostLine", "CostPlan", "DcqcnPlan",
    "EcnThresholds", "EnvVar", "EtsPlan", "FabricKind", "FabricPlan", "FioFootprint", "FioWorkload", "FsCacheCounters",
    "FsCachePlan", "LosslessBuffersPlan", "ManagedFsPlan", "MonitoringAuth", "MonitoringPlan", "NcclPlan", "NvmeofHost",
    "NvmeofPlan", "NvmeofSubsystem", "PfcWatchdogPlan", "Prediction", "PriceRow", "ProtectionOption", "Provenance",
    "Provider",
    "QosPlan", "Query", "RecordingRule", "RuleGroup", "ScrapeJob", "ScrapeSet", "ScrapeTargets", "ScratchArea",
    "ScratchFs", "SharedCapability", "SharedFsPlan", "StorageEngine", "StorageFabricPlan", "StoragePlan", "SwitchTier",
    "TargetPanel", "TargetPlan", "TierOption", "TierPlan", "Tool", "Traced", "TrafficClassSlot", "WiredFabric",
    "WiringPlan",
    "blueprint_data", "dump_blueprint", "load_blueprint", "traced",
]


class Blueprint(Frozen):
    apiVersion: Literal["clustersmith/v1alpha1"] = "clustersmith/v1alpha1"
    kind: Literal["Blueprint"] = "Blueprint"
    format: int = Field(default=BLUEPRINT_FORMAT, ge=BLUEPRINT_FORMAT, le=BLUEPRINT_FORMAT,
                        description="blueprint.yaml's format (blueprints.blueprint.format); older ones are refused")
    name: str
    spec_file: str = Field(
        description="The spec this was planned from, on one line: control characters and line separators in the "
                    "path written as \\xNN escapes, so every header and report that names it stays on its line")
    spec_lines: dict[str, int] = Field(description="Spec path -> line in spec_file, for explain")
    spec_values: dict[str, str] = Field(
        default_factory=dict, description="Spec path -> the value planned from, for every path a derived_from names")
    target: TargetPlan
    hosts: tuple[HostGroup, ...]
    fleets: FleetsPlan | None = Field(default=None, description="Clouds: the fleet resources the GPU nodes are "
                                                                "provisioned as; None on bare metal and the lab")
    compute: ComputePlan
    fabric: FabricPlan
    storage_fabric: StorageFabricPlan
    wiring: WiringPlan | None = Field(default=None, description="Switches by tier and the cable runs between them "
                                                                "(None in a blueprint.yaml from before the plan)")
    qos: QosPlan
    nccl: NcclPlan
    storage: StoragePlan
    monitoring: MonitoringPlan
    acceptance: AcceptancePlan
    costs: CostPlan = Field(description="What each part costs an hour and a month, from the price catalogue, and "
                                        "the parts no published price covers")
    lab: LabPlan | None = None
    notes: tuple[str, ...] = Field(default=(), description="Planner remarks worth reading")

    @field_validator("spec_file")
    @classmethod
    def _spec_file_on_one_line(cls, value: str) -> str:
        return one_line(value)

    def groups_of(self, role: HostRole) -> list[HostGroup]:
        return [g for g in self.hosts if g.role == role]

    def hosts_by_role(self) -> dict[HostRole, list[str]]:
        """Host names per role, in the Blueprint's order (a host may serve several roles)."""
        return names_by_role(self.hosts)

    def scrape_targets(self) -> list[ScrapeTargets]:
        """What Prometheus scrapes, per job and role (``monitoring.scrape_targets``), with its hosts by name."""
        roles = self.hosts_by_role()
        return [s.targets(roles) for s in self.monitoring.scrape_targets]

    def nvmeof_allowed_hosts(self, subsystem: NvmeofSubsystem) -> list[str]:
        """The hosts a subsystem's target lets in: its owner, nothing else."""
        return [subsystem.owner]

    def nvmeof_owned(self) -> dict[str, list[NvmeofSubsystem]]:
        """Host name -> the subsystems it owns, in the Blueprint's order."""
        return self.storage.nvmeof.owned() if self.storage.nvmeof else {}

    def nvmeof_hosts(self) -> list[NvmeofHost]:
        """Every host that attaches an NVMe-oF subsystem (an owner), with the identity the planner gives it."""
        plan = self.storage.nvmeof
        return [plan.host(n) for n in plan.owned()] if plan else []

    def nccl_environment(self) -> tuple[EnvVar, ...]:
        """What every rank's environment holds: ``nccl.env`` and NCCL_IB_TC where the planner put it."""
        return self.nccl.environment(self.qos.traffic_class)


def blueprint_data(bp: Blueprint) -> dict[str, Any]:
    """The Blueprint as plain data, keys by their aliases: blueprint.yaml's content, and ``plan --json``'s."""
    return bp.model_dump(mode="json", by_alias=True)


def dump_blueprint(bp: Blueprint) -> str:
    """blueprint.yaml's text (libyaml's layout; its per-node lists written by blueprints.yamltext)."""
    return yamltext.dump(blueprint_data(bp), width=110, allow_unicode=True)


def load_blueprint(path: Path) -> Blueprint:
    """Load ``blueprint.yaml`` (or the build folder holding it)."""
    if path.is_dir():
        path = path / "blueprint.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        problem = Problem("", f"cannot read a Blueprint: {exc}")
        raise ClusterSmithError([problem], str(path), "invalid blueprint") from None
    refuse_older(data, str(path))
    try:
        return Blueprint.model_validate(data)
    except ValidationError as exc:
        problems = [
            Problem(".".join(str(p) for p in e["loc"]), str(e["msg"]).removeprefix("Value error, "))
            for e in exc.errors()
        ]
        raise ClusterSmithError(problems, str(path), "invalid blueprint") from None
