"""GCP: the GPU VM family on its RDMA network and Google Cloud Managed Lustre.

A3 Ultra and A4 VMs (a3-ultragpu-8g, a4-highgpu-8g) carry 8 CX-7 NICs for RDMA over RoCE v2: they attach
as ``MRDMA`` NICs to a VPC created with the zone's RoCE network profile (``<zone>-vpc-roce``), MTU 8896,
and every non-RDMA NIC (the two gVNICs) to regular VPCs (Google Cloud, "RDMA network profiles").
Each rail gets its own subnet in the RoCE VPC. Managed Lustre sits on the first regular VPC and needs
private services access on it: a VPC_PEERING range and a servicenetworking connection (Google Cloud
Managed Lustre, "Configure a VPC network").

The GPU nodes are zonal managed instance groups (``Blueprint.fleets``: at most 1,000 VMs each), each over an
instance template of its own that carries the fleet's compact placement policy (COLLOCATED; Compute Engine applies
a placement policy named in an instance template to the MIG's VMs) and its ``clustersmith-fleet`` label. Where the
spec names a reservation, the template consumes it (``reservation_affinity`` SPECIFIC_RESERVATION). The MIG does not
wait for its instances; ``inventory --from-stack`` lists them by label, names each once with ``clustersmith-host``
and refuses a group short of its size, by name.

a3-megagpu-8g uses GPUDirect-TCPXO (8 gVNIC data NICs on 8 VPCs, not RDMA): not built here; the planner refuses it
(blueprints/planner/compute.py), and the check below guards a Blueprint written by hand.
"""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pulumi_gcp as gcp

from blueprints.blueprint import Blueprint
from blueprints.fleet_plan import Fleet
from blueprints.subnets import carve, management_subnets, prefix_for
from stacks.component import FleetOut, HostOut, RailOut, stack_outputs
from stacks.config import StackConfig
from stacks.model import CloudClusterArgs, ClusterArgs, StackError, fleets_of

RDMA_MACHINE_TYPES = ("a3-ultragpu-8g", "a4-highgpu-8g")
# design defaults (not performance figures)
GPU_IMAGE = "projects/ubuntu-os-accelerator-images/global/images/family/ubuntu-accelerator-2204-amd64-with-nvidia-570"
MONITORING_IMAGE = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts"
DEFAULT_USER = "clustersmith"
BOOT_DISK_GB = 200
LUSTRE_PEERING_PREFIX = 20


class GcpClusterArgs(CloudClusterArgs):
    project: str
    region: str
    zone: str
    machine_type: str
    image: str = GPU_IMAGE

    @classmethod
    def from_blueprint(cls, bp: Blueprint, cfg: StackConfig) -> GcpClusterArgs:
        target = bp.target
        if target.provider != "gcp" or target.region is None:
            raise StackError(f"target.provider is {target.provider!r}; the gcp stack needs 'gcp' and a region")
        machine_type = bp.compute.node_type.value
        if machine_type not in RDMA_MACHINE_TYPES:
            raise StackError(f"compute.instance_type {machine_type!r}: the gcp stack builds the RoCE (MRDMA) network "
                             f"of {', '.join(RDMA_MACHINE_TYPES)}; {machine_type} needs GPUDirect-TCPXO networking, "
                             "which is not implemented")
        project = target.project or cfg.project
        zone = target.zone or cfg.zone
        missing = [what for what, value in (("target.project (or clustersmith:project)", project),
                                            ("target.zone (or clustersmith:zone)", zone)) if not value]
        if missing:
            raise StackError("the gcp stack needs " + " and ".join(missing) +
                             ": the RoCE network profile is per zone and named inside a project")
        assert project is not None and zone is not None
        return cls(**ClusterArgs.common(bp), project=project, region=target.region, zone=zone,
                   machine_type=machine_type, file_system=bp.storage.managed, fleets=fleets_of(bp),
                   ssh_public_key=cfg.ssh_public_key, ssh_user=cfg.ssh_user or DEFAULT_USER,
                   admin_cidr=cfg.admin_cidr, image=cfg.image or GPU_IMAGE)


def lustre_filesystem_name(design: str) -> str:
    """Managed Lustre's file system name: letters and digits, at most eight."""
    return (re.sub(r"[^a-z0-9]", "", design.lower()) or "lustre")[:8]


def reservation_affinity(args: GcpClusterArgs) -> gcp.compute.InstanceTemplateReservationAffinityArgs | None:
    """Consume the spec's reservation by name; None leaves Compute Engine's default (any matching reservation)."""
    if args.fleets.capacity.reservation is None:
        return None
    named = gcp.compute.InstanceTemplateReservationAffinitySpecificReservationArgs(
        key="compute.googleapis.com/reservation-name", values=[args.fleets.capacity.reservation])
    return gcp.compute.InstanceTemplateReservationAffinityArgs(type="SPECIFIC_RESERVATION", specific_reservation=named)


def group_name(design: str, fleet: Fleet) -> str:
    """The MIG's name and its instances' base name: lower-case, at most 54 characters (58 for base names, less
    the suffix Compute Engine appends)."""
    return re.sub(r"[^a-z0-9-]", "-", f"{design}-{fleet.name}".lower())[:54].rstrip("-")


class GcpCluster(pulumi.ComponentResource):
    outputs: pulumi.Output[str]

    def __init__(self, name: str, args: GcpClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("clustersmith:gcp:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = args.labels.labels()
        gpus, mons = args.fleets.fleets, args.of_role("monitoring")
        rail_prefix = prefix_for(sum(f.size for f in gpus))
        # both gVNIC subnets inside the management network; the monitoring ports are reachable from it alone
        # (each host network's one ingress rule admits its own subnet)
        host_cidrs = carve(args.network, management_subnets("gcp", len(args.machines)))
        rail_cidrs = carve("10.128.0.0/9", [rail_prefix] * args.rails)

        self.host_networks: list[gcp.compute.Network] = []
        self.host_subnets: list[gcp.compute.Subnetwork] = []
        for i, cidr in enumerate(host_cidrs):
            net = gcp.compute.Network(f"{name}-net{i}", project=args.project, auto_create_subnetworks=False,
                                      mtu=args.mtu, opts=child)
            sub = gcp.compute.Subnetwork(f"{name}-net{i}-sub", project=args.project, network=net.id,
                                         region=args.region, ip_cidr_range=cidr, opts=child)
            gcp.compute.Firewall(f"{name}-net{i}-internal", project=args.project, network=net.id,
                                 source_ranges=[cidr], allows=[gcp.compute.FirewallAllowArgs(protocol="all")],
                                 description=f"clustersmith {args.design}: traffic between the cluster's hosts",
                                 opts=child)
            self.host_networks.append(net)
            self.host_subnets.append(sub)
        if args.admin_cidr:
            gcp.compute.Firewall(f"{name}-ssh", project=args.project, network=self.host_networks[0].id,
                                 source_ranges=[args.admin_cidr],
                                 allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])], opts=child)

        self.rdma_network = gcp.compute.Network(
            f"{name}-rdma", project=args.project, auto_create_subnetworks=False, mtu=args.mtu,
            network_profile=f"projects/{args.project}/global/networkProfiles/{args.zone}-vpc-roce", opts=child)
        self.rail_subnets = [
            gcp.compute.Subnetwork(f"{name}-rail{i}", project=args.project, network=self.rdma_network.id,
                                   region=args.region, ip_cidr_range=cidr, opts=child)
            for i, cidr in enumerate(rail_cidrs)]
        metadata = {"ssh-keys": f"{args.ssh_user}:{args.ssh_public_key}"} if args.ssh_public_key else {}
        nics = [gcp.compute.InstanceTemplateNetworkInterfaceArgs(subnetwork=s.id, nic_type="GVNIC")
                for s in self.host_subnets]
        nics += [gcp.compute.InstanceTemplateNetworkInterfaceArgs(subnetwork=s.id, nic_type="MRDMA")
                 for s in self.rail_subnets]
        rails = [RailOut(index=r, kind="mrdma", prefix=rail_prefix) for r in range(args.rails)]
        fleets: list[FleetOut] = []
        self.placements: list[gcp.compute.ResourcePolicy] = []
        self.groups: list[gcp.compute.InstanceGroupManager] = []
        for f in args.fleets.fleets:
            placement = gcp.compute.ResourcePolicy(
                f"{name}-{f.name}-placement", project=args.project, region=args.region,
                group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(collocation="COLLOCATED"),
                opts=child)
            template = gcp.compute.InstanceTemplate(
                f"{name}-{f.name}", project=args.project, machine_type=args.machine_type,
                disks=[gcp.compute.InstanceTemplateDiskArgs(source_image=args.image, disk_size_gb=BOOT_DISK_GB,
                                                            disk_type="hyperdisk-balanced", boot=True,
                                                            auto_delete=True)],
                network_interfaces=nics,
                scheduling=gcp.compute.InstanceTemplateSchedulingArgs(on_host_maintenance="TERMINATE",
                                                                      automatic_restart=True),
                resource_policies=placement.self_link, reservation_affinity=reservation_affinity(args),
                metadata=metadata, labels={**labels, "clustersmith-role": f.role.replace("_", "-"),
                                           "clustersmith-fleet": f.name},
                opts=child)
            group = gcp.compute.InstanceGroupManager(
                f"{name}-{f.name}-mig", name=group_name(args.design, f), project=args.project, zone=args.zone,
                base_instance_name=group_name(args.design, f), target_size=f.size, wait_for_instances=False,
                versions=[gcp.compute.InstanceGroupManagerVersionArgs(name="primary",
                                                                      instance_template=template.self_link)],
                opts=child)
            self.placements.append(placement)
            self.groups.append(group)
            fleets.append(FleetOut(f, group.name.apply(lambda n: {"provider": "gcp", "project": args.project,
                                                                  "zone": args.zone, "group": n}),
                                   args.ssh_user, args.fleets.host_tag, rails))

        hosts: list[HostOut] = []
        self.instances: list[gcp.compute.Instance] = []
        for m in mons:
            inst = gcp.compute.Instance(
                m.name, name=m.name, project=args.project, zone=args.zone, machine_type=m.node_type,
                boot_disk=gcp.compute.InstanceBootDiskArgs(initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                    image=MONITORING_IMAGE, size=BOOT_DISK_GB)),
                network_interfaces=[gcp.compute.InstanceNetworkInterfaceArgs(subnetwork=self.host_subnets[0].id,
                                                                             nic_type="GVNIC")],
                metadata=metadata, labels={**labels, "clustersmith-role": m.role}, opts=child)
            self.instances.append(inst)
            hosts.append(HostOut(m, inst.network_interfaces.apply(lambda ns: ns[0].network_ip), args.ssh_user))

        fs_out: pulumi.Output[dict[str, Any]] | None = None
        self.file_system: gcp.lustre.Instance | None = None
        if args.file_system is not None:
            fs = args.file_system
            net = self.host_networks[0]
            peering = gcp.compute.GlobalAddress(f"{name}-lustre-range", project=args.project, network=net.id,
                                                purpose="VPC_PEERING", address_type="INTERNAL",
                                                prefix_length=LUSTRE_PEERING_PREFIX, labels=labels, opts=child)
            connection = gcp.servicenetworking.Connection(
                f"{name}-psa", network=net.id, service="servicenetworking.googleapis.com",
                reserved_peering_ranges=[peering.name], opts=child)
            self.file_system = gcp.lustre.Instance(
                f"{name}-lustre", project=args.project, instance_id=f"{args.design}-lustre"[:63], location=args.zone,
                filesystem=lustre_filesystem_name(args.design), capacity_gib=str(fs.capacity_gib),
                per_unit_storage_throughput=str(fs.per_unit_throughput), network=net.id, labels=labels,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[connection]))
            fs_out = self.file_system.mount_point.apply(lambda mount: {
                "service": fs.service, "capacity_gib": fs.capacity_gib,
                "throughput_mbps": round(fs.throughput.value.value / 1e6), "mount": mount or ""})
        self.outputs = stack_outputs(args.design, "gcp", hosts, fs_out, fleets)
        self.register_outputs({"outputs": self.outputs})
