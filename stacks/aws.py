"""AWS: VPC and subnets, a security group, a cluster placement group, the GPU nodes as Auto Scaling groups over one
launch template with one EFA per network card, a monitoring instance, and FSx for Lustre sized by the planner.

EFA layout (AWS EC2 User Guide, "Maximize network bandwidth on Amazon EC2 instances with multiple network
cards", efa-acc-inst-types): the primary interface (network card 0, device 0) is ENA; card 0 device 1 is
EFA-only; every further card carries an EFA-only interface at device 0. So an instance type with N
EFA-capable cards gets N EFA devices (the Blueprint's rails) and one ENA for IP traffic. EFA traffic
needs a security group that lets all traffic in and out between its own members.

Fleets (``Blueprint.fleets``): each is an Auto Scaling group of fixed size (min = max = desired) in the compute
subnet and the cluster placement group; the launch template's interfaces name no subnet, the group's subnet is
used (a launch template for an Auto Scaling group leaves the subnet to the group). Instances carry the design,
spec, role and ``clustersmith:fleet`` tags (propagated at launch); ``inventory --from-stack`` lists them by those
tags and names each once with ``clustersmith:host``. Where the spec names a capacity reservation or a Capacity
Block, the launch template targets it (a Capacity Block with market type ``capacity-block``). The group does not
wait for capacity (``wait_for_capacity_timeout`` 0): the inventory refuses a fleet short of its size, by name.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from blueprints.blueprint import Blueprint
from blueprints.subnets import carve, management_subnets
from stacks.component import FleetOut, HostOut, RailOut, stack_outputs
from stacks.config import StackConfig
from stacks.model import CloudClusterArgs, ClusterArgs, StackError, fleets_of

# design defaults (not performance figures): the GPU image to look up
GPU_AMI_NAME = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"
DEFAULT_USER = "ubuntu"
ROOT_VOLUME_GIB = 200


class AwsClusterArgs(CloudClusterArgs):
    region: str
    availability_zone: str
    instance_type: str
    efa_interfaces: int
    image: str | None = None

    @classmethod
    def from_blueprint(cls, bp: Blueprint, cfg: StackConfig) -> AwsClusterArgs:
        target = bp.target
        if target.provider != "aws" or target.region is None:
            raise StackError(f"target.provider is {target.provider!r}; the aws stack needs 'aws' and a region")
        zone = target.zone or cfg.zone
        if zone is None:
            raise StackError("no availability zone: set target.availability_zone in the spec or `pulumi config "
                             "set clustersmith:zone <zone>` (a cluster placement group lives in one zone)")
        return cls(**ClusterArgs.common(bp), region=target.region, availability_zone=zone,
                   instance_type=bp.compute.node_type.value, efa_interfaces=bp.compute.rails.value,
                   file_system=bp.storage.managed, fleets=fleets_of(bp), ssh_public_key=cfg.ssh_public_key,
                   ssh_user=cfg.ssh_user or DEFAULT_USER, admin_cidr=cfg.admin_cidr, image=cfg.image)


def efa_interfaces(count: int, security_group_id: pulumi.Input[str]
                   ) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """ENA primary on card 0 device 0, then one EFA-only interface per network card (card 0 at device 1); no
    subnet: the Auto Scaling group's."""
    def iface(card: int, device: int, kind: str | None) -> aws.ec2.LaunchTemplateNetworkInterfaceArgs:
        return aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=card, device_index=device, interface_type=kind, security_groups=[security_group_id],
            delete_on_termination="true")
    return [iface(0, 0, None)] + [iface(card, 1 if card == 0 else 0, "efa-only") for card in range(count)]


def capacity_options(args: AwsClusterArgs) -> dict[str, Any]:
    """Launch-template inputs that put the GPU nodes into the spec's capacity reservation or Capacity Block."""
    capacity = args.fleets.capacity
    if capacity.reservation is None:
        return {}
    options: dict[str, Any] = {"capacity_reservation_specification":
                               aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                                   capacity_reservation_target=aws.ec2.
                                   LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                                       capacity_reservation_id=capacity.reservation))}
    if capacity.source.value == "capacity-block":
        options["instance_market_options"] = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
            market_type="capacity-block")
    return options


class AwsCluster(pulumi.ComponentResource):
    outputs: pulumi.Output[str]

    def __init__(self, name: str, args: AwsClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("clustersmith:aws:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = args.labels.tags()

        def tagged(extra: str) -> dict[str, str]:
            return {**tags, "Name": f"{args.design}-{extra}"}

        mons = args.of_role("monitoring")
        compute_cidr, fsx_cidr, public_cidr = carve(args.network, management_subnets("aws", len(args.machines)))
        self.vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=args.network, enable_dns_hostnames=True,
                               enable_dns_support=True,
                               tags=tagged("vpc"), opts=child)
        self.compute_subnet = aws.ec2.Subnet(f"{name}-compute", vpc_id=self.vpc.id, cidr_block=compute_cidr,
                                             availability_zone=args.availability_zone, tags=tagged("compute"),
                                             opts=child)
        self.fsx_subnet = aws.ec2.Subnet(f"{name}-fsx", vpc_id=self.vpc.id, cidr_block=fsx_cidr,
                                         availability_zone=args.availability_zone, tags=tagged("fsx"), opts=child)
        self.public_subnet = aws.ec2.Subnet(f"{name}-public", vpc_id=self.vpc.id, cidr_block=public_cidr,
                                            availability_zone=args.availability_zone, tags=tagged("public"),
                                            opts=child)
        self._routes(name, args, tagged, child)

        ingress = [aws.ec2.SecurityGroupIngressArgs(protocol="-1", from_port=0, to_port=0, self=True,
                                                    description="EFA and Lustre: all traffic between members")]
        ingress += [aws.ec2.SecurityGroupIngressArgs(protocol="tcp", from_port=port, to_port=port,
                                                     cidr_blocks=[args.network],
                                                     description="monitoring (TLS, basic auth): management network")
                    for port in args.monitoring_ports]
        if args.admin_cidr:
            ingress.append(aws.ec2.SecurityGroupIngressArgs(protocol="tcp", from_port=22, to_port=22,
                                                            cidr_blocks=[args.admin_cidr], description="SSH"))
        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-sg", vpc_id=self.vpc.id, description=f"clustersmith {args.design}: EFA needs all traffic "
            "to and from itself", ingress=ingress,
            egress=[aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, self=True),
                    aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0,
                                                    cidr_blocks=["0.0.0.0/0"])],
            tags=tagged("sg"), opts=child)
        self.placement_group = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=tagged("pg"), opts=child)

        key_name: pulumi.Input[str] | None = None
        if args.ssh_public_key:
            self.key_pair = aws.ec2.KeyPair(f"{name}-key", public_key=args.ssh_public_key, tags=tagged("key"),
                                            opts=child)
            key_name = self.key_pair.key_name
        image = args.image or aws.ec2.get_ami_output(
            owners=["amazon"], most_recent=True,
            filters=[aws.ec2.GetAmiFilterArgs(name="name", values=[GPU_AMI_NAME])], opts=pulumi.InvokeOptions(
                parent=self)).id
        per_resource = [aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags)
                        for kind in ("instance", "volume", "network-interface")]
        self.launch_template = aws.ec2.LaunchTemplate(
            f"{name}-gpu", image_id=image, instance_type=args.instance_type, key_name=key_name,
            network_interfaces=efa_interfaces(args.efa_interfaces, self.security_group.id),
            block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name="/dev/sda1", ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=ROOT_VOLUME_GIB, volume_type="gp3", delete_on_termination="true",
                    encrypted="true"))],  # not left to the account's default
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(http_tokens="required"),
            tag_specifications=per_resource, tags=tagged("gpu"), **capacity_options(args), opts=child)
        version = self.launch_template.latest_version.apply(str)
        rails = [RailOut(index=i, kind="efa-only", network_card=i) for i in range(args.efa_interfaces)]
        fleets: list[FleetOut] = []
        self.groups: list[aws.autoscaling.Group] = []
        for f in args.fleets.fleets:
            group_tags = {**tags, "Name": f"{args.design}-{f.name}", "clustersmith:role": f.role,
                          "clustersmith:fleet": f.name}
            group = aws.autoscaling.Group(
                f"{name}-{f.name}", name=f"{args.design}-{f.name}", min_size=f.size, max_size=f.size,
                desired_capacity=f.size, launch_template=aws.autoscaling.GroupLaunchTemplateArgs(
                    id=self.launch_template.id, version=version),
                vpc_zone_identifiers=[self.compute_subnet.id], placement_group=self.placement_group.name,
                health_check_type="EC2", wait_for_capacity_timeout="0",
                tags=[aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=True)
                      for k, v in group_tags.items()], opts=child)
            self.groups.append(group)
            fleets.append(FleetOut(f, group.name.apply(lambda n: {"provider": "aws", "region": args.region,
                                                                  "group": n}),
                                   args.ssh_user, args.fleets.host_tag, rails))
        hosts: list[HostOut] = []
        self.instances: list[aws.ec2.Instance] = []
        for m in mons:
            inst = aws.ec2.Instance(
                m.name, ami=image, instance_type=m.node_type, subnet_id=self.compute_subnet.id,
                vpc_security_group_ids=[self.security_group.id], key_name=key_name,
                root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(volume_type="gp3", encrypted=True),
                metadata_options=aws.ec2.InstanceMetadataOptionsArgs(http_tokens="required"),
                tags={**tags, "Name": m.name, "clustersmith:role": m.role}, opts=child)
            self.instances.append(inst)
            hosts.append(HostOut(m, inst.private_ip, args.ssh_user))

        fs_out: pulumi.Output[dict[str, Any]] | None = None
        self.file_system: aws.fsx.LustreFileSystem | None = None
        if args.file_system is not None:
            fs = args.file_system
            self.file_system = aws.fsx.LustreFileSystem(
                f"{name}-fsx", deployment_type=fs.sku, storage_type="SSD", storage_capacity=fs.capacity_gib,
                per_unit_storage_throughput=fs.per_unit_throughput, subnet_ids=self.fsx_subnet.id,
                security_group_ids=[self.security_group.id], file_system_type_version="2.15",
                tags=tagged("fsx"), opts=child)
            lustre = self.file_system
            fs_out = pulumi.Output.all(lustre.dns_name, lustre.mount_name).apply(lambda v: {
                "service": fs.service, "capacity_gib": fs.capacity_gib,
                "throughput_mbps": round(fs.throughput.value.value / 1e6), "mount": f"{v[0]}@tcp:/{v[1]}"})
        self.outputs = stack_outputs(args.design, "aws", hosts, fs_out, fleets)
        self.register_outputs({"outputs": self.outputs})

    def _routes(self, name: str, args: AwsClusterArgs, tagged: Any, child: pulumi.ResourceOptions) -> None:
        """Outbound internet for package installs: an internet gateway, a NAT gateway in the public subnet."""
        self.igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=self.vpc.id, tags=tagged("igw"), opts=child)
        self.nat_ip = aws.ec2.Eip(f"{name}-nat-ip", domain="vpc", tags=tagged("nat-ip"), opts=child)
        self.nat = aws.ec2.NatGateway(f"{name}-nat", allocation_id=self.nat_ip.id, subnet_id=self.public_subnet.id,
                                      tags=tagged("nat"), opts=child)
        public = aws.ec2.RouteTable(f"{name}-public-rt", vpc_id=self.vpc.id, routes=[aws.ec2.RouteTableRouteArgs(
            cidr_block="0.0.0.0/0", gateway_id=self.igw.id)], tags=tagged("public-rt"), opts=child)
        private = aws.ec2.RouteTable(f"{name}-private-rt", vpc_id=self.vpc.id, routes=[aws.ec2.RouteTableRouteArgs(
            cidr_block="0.0.0.0/0", nat_gateway_id=self.nat.id)], tags=tagged("private-rt"), opts=child)
        aws.ec2.RouteTableAssociation(f"{name}-public-rta", subnet_id=self.public_subnet.id, route_table_id=public.id,
                                      opts=child)
        for sub, label in ((self.compute_subnet, "compute"), (self.fsx_subnet, "fsx")):
            aws.ec2.RouteTableAssociation(f"{name}-{label}-rta", subnet_id=sub.id, route_table_id=private.id,
                                          opts=child)
