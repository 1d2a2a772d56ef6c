"""Bare metal: machines from MAAS (the ``pulumi-maas`` package), or a static inventory of racks that exist.

- ``machines: static`` creates nothing: it reads a machines file (``clustersmith:machinesFile``, default
  ``machines.yaml`` beside the program) that lists every planned host with its management address and
  rail addresses, checks it against the Blueprint, and exports it like any other stack.
- ``machines: maas`` allocates and deploys one MAAS machine per planned host (chosen by a MAAS tag
  equal to the Blueprint's node type, e.g. ``dgx-h100``), configures each rail NIC with a static address
  in its rail subnet (``clustersmith:railSubnets``, one CIDR per rail; NIC names from
  ``clustersmith:gpuRailNetdevs`` / ``storageRailNetdevs``) and tags the machines with the design and spec.
  The MAAS API key is read only as a secret (``pulumi config set --secret clustersmith:maasApiKey``).
- ``machines: equinix`` is refused: Equinix Metal was sunset on 30 June 2026.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pydantic import Field, ValidationError

from blueprints.blueprint import Blueprint
from blueprints.model import Frozen
from stacks.component import HostOut, RailOut, nth_address, stack_outputs
from stacks.config import StackConfig, is_secret
from stacks.model import ClusterArgs, Machine, StackError

DEFAULT_USER = "ubuntu"
DISTRO = "jammy"


class StaticRail(Frozen):
    index: int = Field(ge=0)
    netdev: str
    address: str
    prefix: int = Field(ge=1, le=32)


class StaticMachine(Frozen):
    name: str
    address: str = Field(description="Management address Ansible connects to")
    user: str = DEFAULT_USER
    rails: tuple[StaticRail, ...] = ()


class MachinesFile(Frozen):
    machines: tuple[StaticMachine, ...]


def rails_for(args: ClusterArgs, m: Machine) -> int:
    """Rails a machine carries in the inventory: compute rails on GPU nodes, storage NICs on targets."""
    return {"gpu_client": args.rails, "storage_target": args.storage_nics}.get(m.role, 0)


def read_machines(path: Path, args: ClusterArgs) -> dict[str, StaticMachine]:
    """Load and check the static machines file; every problem is reported at once."""
    try:
        doc = MachinesFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise StackError(f"machines: static needs the machines file {path}: {exc.strerror}; list every planned "
                         "host with address and rails (clustersmith:machinesFile names another file)") from None
    except (yaml.YAMLError, ValidationError) as exc:
        raise StackError(f"{path}: not a machines file: {exc}") from None
    given = {m.name: m for m in doc.machines}
    problems: list[str] = []
    planned = {m.name: m for m in args.machines}
    missing = [n for n in planned if n not in given]
    if missing:
        problems.append(f"missing planned host(s): {', '.join(missing)}")
    extra = [n for n in given if n not in planned]
    if extra:
        problems.append(f"host(s) not in the Blueprint: {', '.join(extra)}")
    for name, m in planned.items():
        if name in given and len(given[name].rails) != rails_for(args, m):
            problems.append(f"{name}: {len(given[name].rails)} rail(s) listed, the Blueprint plans "
                            f"{rails_for(args, m)} for a {m.role}")
    for name, sm in given.items():
        for value in [sm.address, *(r.address for r in sm.rails)]:
            try:
                ipaddress.ip_address(value)
            except ValueError:
                problems.append(f"{name}: {value!r} is not an IP address")
    if problems:
        raise StackError(f"{path}: " + "; ".join(problems))
    return given


class StaticClusterArgs(ClusterArgs):
    machines_file: Path


class StaticCluster(pulumi.ComponentResource):
    """Racks that already exist: no resources, only the inventory as the stack output."""

    outputs: pulumi.Output[str]

    def __init__(self, name: str, args: StaticClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("clustersmith:baremetal:StaticCluster", name, None, opts)
        given = read_machines(args.machines_file, args)
        hosts = [HostOut(m, given[m.name].address, given[m.name].user,
                         [RailOut(index=r.index, kind="roce" if m.role == "gpu_client" else "storage",
                                  netdev=r.netdev, address=r.address, prefix=r.prefix)
                          for r in given[m.name].rails])
                 for m in args.machines]
        self.outputs = stack_outputs(args.design, "baremetal", hosts)
        self.register_outputs({"outputs": self.outputs})


class MaasClusterArgs(ClusterArgs):
    api_url: str
    pool: str | None = None
    rail_subnets: tuple[str, ...]
    gpu_rail_netdevs: tuple[str, ...]
    storage_rail_netdevs: tuple[str, ...]
    ssh_user: str = DEFAULT_USER

    @classmethod
    def from_blueprint(cls, bp: Blueprint, cfg: StackConfig) -> MaasClusterArgs:
        common = ClusterArgs.common(bp)
        need = max(bp.compute.rails.value, bp.compute.storage_nics)
        problems = []
        if not cfg.maas_api_url:
            problems.append("clustersmith:maasApiUrl (e.g. http://maas:5240/MAAS)")
        if len(cfg.rail_subnets) < need:
            problems.append(f"clustersmith:railSubnets with {need} CIDRs, one per rail (got {len(cfg.rail_subnets)})")
        if len(cfg.gpu_rail_netdevs) != bp.compute.rails.value:
            problems.append(f"clustersmith:gpuRailNetdevs with {bp.compute.rails.value} NIC names "
                            f"(got {len(cfg.gpu_rail_netdevs)})")
        if len(cfg.storage_rail_netdevs) != bp.compute.storage_nics:
            problems.append(f"clustersmith:storageRailNetdevs with {bp.compute.storage_nics} NIC names "
                            f"(got {len(cfg.storage_rail_netdevs)})")
        for cidr in cfg.rail_subnets:
            try:
                ipaddress.ip_network(cidr)
            except ValueError:
                problems.append(f"clustersmith:railSubnets: {cidr!r} is not a CIDR")
        if problems:
            raise StackError("machines: maas needs " + "; ".join(problems))
        return cls(**common, api_url=cfg.maas_api_url, pool=cfg.maas_pool, rail_subnets=cfg.rail_subnets,
                   gpu_rail_netdevs=cfg.gpu_rail_netdevs, storage_rail_netdevs=cfg.storage_rail_netdevs,
                   ssh_user=cfg.ssh_user or DEFAULT_USER)


class MaasCluster(pulumi.ComponentResource):
    outputs: pulumi.Output[str]

    def __init__(self, name: str, args: MaasClusterArgs, api_key: pulumi.Output[str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        import pulumi_maas as maas

        super().__init__("clustersmith:baremetal:MaasCluster", name, None, opts)
        self.provider = maas.Provider(f"{name}-maas", api_url=args.api_url, api_key=api_key,
                                      opts=pulumi.ResourceOptions(parent=self))
        child = pulumi.ResourceOptions(parent=self, provider=self.provider)
        hosts: list[HostOut] = []
        self.instances: list[Any] = []
        for seq, m in enumerate(args.machines):
            netdevs = {"gpu_client": args.gpu_rail_netdevs, "storage_target": args.storage_rail_netdevs}.get(
                m.role, ())
            rails = []
            for i, netdev in enumerate(netdevs):
                cidr = args.rail_subnets[i]
                rails.append(RailOut(index=i, kind="roce" if m.role == "gpu_client" else "storage", netdev=netdev,
                                     address=nth_address(cidr, seq),
                                     prefix=ipaddress.ip_network(cidr).prefixlen))
            inst = maas.Instance(
                m.name, allocate_params=maas.InstanceAllocateParamsArgs(tags=[m.node_type],
                                                                      pool=args.pool),
                deploy_params=maas.InstanceDeployParamsArgs(distro_series=DISTRO),
                network_interfaces=[maas.InstanceNetworkInterfaceArgs(
                    name=r.netdev or "", subnet_cidr=args.rail_subnets[r.index], ip_address=r.address)
                    for r in rails], opts=child)
            self.instances.append(inst)
            hosts.append(HostOut(m, inst.ip_addresses.apply(lambda a: a[0] if a else ""), args.ssh_user, rails))
        ids = [i.id for i in self.instances]
        self.tags = [maas.Tag(f"{name}-{tag}", name=tag, machines=ids, opts=child) for tag in args.labels.tag_names()]
        self.outputs = stack_outputs(args.design, "baremetal", hosts)
        self.register_outputs({"outputs": self.outputs})


def baremetal_cluster(bp: Blueprint, cfg: StackConfig, program_dir: Path) -> StaticCluster | MaasCluster:
    target = bp.target
    if target.provider != "baremetal":
        raise StackError(f"target.provider is {target.provider!r}; the baremetal stack needs 'baremetal'")
    if target.machines == "static":
        path = Path(cfg.machines_file)
        args = StaticClusterArgs(**ClusterArgs.common(bp),
                                 machines_file=path if path.is_absolute() else program_dir / path)
        return StaticCluster(bp.name, args)
    if target.machines == "maas":
        args_maas = MaasClusterArgs.from_blueprint(bp, cfg)
        if not is_secret("maasApiKey"):
            raise StackError("clustersmith:maasApiKey must be set as a secret: "
                             "`pulumi config set --secret clustersmith:maasApiKey <key>` (a plain value is refused)")
        key = pulumi.Config("clustersmith").require_secret("maasApiKey")
        return MaasCluster(bp.name, args_maas, key)
    raise StackError("target.machines 'equinix': Equinix Metal was sunset on 30 June 2026 and takes no new "
                     "machines; use machines: maas, or static for racks that exist")
