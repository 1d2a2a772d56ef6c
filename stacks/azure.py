"""Azure: ND-series VMs on InfiniBand and Azure Managed Lustre (azure-native ``storagecache.AmlFilesystem``).

InfiniBand joins VMs that Azure places in the same InfiniBand group; individual VMs get there through one
availability set (Azure CycleCloud, "Availability Sets": they place "Nodes and NodeArrays in the same
Infiniband group"), here with a proximity placement group. The HCAs (ib0..ibN) get their addresses in
the guest, so the rails carry no address in the stack outputs. Azure Managed Lustre needs its own subnet
and a weekly 30-minute maintenance window.

Only submodules of pulumi-azure-native are imported (compute, network, resources, storagecache).
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_azure_native import compute, network, resources, storagecache

from blueprints.blueprint import Blueprint
from stacks.component import HostOut, RailOut, carve, prefix_for, stack_outputs
from stacks.config import StackConfig
from stacks.model import CloudClusterArgs, ClusterArgs, StackError

# design defaults (not performance figures)
HPC_IMAGE = {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "latest"}
DEFAULT_USER = "azureuser"
OS_DISK_GB = 256
AMLFS_SUBNET_PREFIX = 24  # "at least a /24 subnet mask" (storagecache AmlFilesystem filesystem_subnet)
MAINTENANCE = {"day_of_week": "Sunday", "time_of_day_utc": "02:00"}


class AzureClusterArgs(CloudClusterArgs):
    location: str
    vm_size: str
    ssh_public_key: str  # required: Azure Linux VMs here take SSH keys only
    image: dict[str, str] = HPC_IMAGE

    @classmethod
    def from_blueprint(cls, bp: Blueprint, cfg: StackConfig) -> AzureClusterArgs:
        target = bp.target
        if target.provider != "azure" or target.region is None:
            raise StackError(f"target.provider is {target.provider!r}; the azure stack needs 'azure' and a region")
        if not cfg.ssh_public_key:
            raise StackError("Azure Linux VMs need an SSH key: `pulumi config set clustersmith:sshPublicKey "
                             "\"$(cat ~/.ssh/id_ed25519.pub)\"` (clustersmith deploy sets it from --ssh-public-key)")
        return cls(**ClusterArgs.common(bp), location=target.region, vm_size=bp.compute.node_type.value,
                   file_system=bp.storage.managed, ssh_public_key=cfg.ssh_public_key,
                   ssh_user=cfg.ssh_user or DEFAULT_USER, admin_cidr=cfg.admin_cidr)


class AzureCluster(pulumi.ComponentResource):
    outputs: pulumi.Output[str]

    def __init__(self, name: str, args: AzureClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("clustersmith:azure:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = args.labels.tags()
        loc = args.location
        gpus, mons = args.of_role("gpu_client"), args.of_role("monitoring")
        compute_cidr, lustre_cidr = carve(args.network, [prefix_for(len(args.machines)), AMLFS_SUBNET_PREFIX])

        self.group = resources.ResourceGroup(f"{name}-rg", location=loc, tags=tags, opts=child)
        rg = self.group.name
        rules = [network.SecurityRuleArgs(name="ssh", priority=100, direction="Inbound", access="Allow",
                                          protocol="Tcp", source_address_prefix=args.admin_cidr,
                                          source_port_range="*", destination_address_prefix="*",
                                          destination_port_range="22")] if args.admin_cidr else []
        # Azure's default AllowVnetInBound admits peered and VPN-connected networks too: the monitoring ports are
        # allowed from the management network and denied from everywhere else.
        ports = [str(p) for p in args.monitoring_ports]
        if ports:
            rules += [
                network.SecurityRuleArgs(name="monitoring", priority=110, direction="Inbound", access="Allow",
                                         protocol="Tcp", source_address_prefix=args.network, source_port_range="*",
                                         destination_address_prefix="*", destination_port_ranges=ports),
                network.SecurityRuleArgs(name="monitoring-elsewhere", priority=120, direction="Inbound",
                                         access="Deny", protocol="Tcp", source_address_prefix="*",
                                         source_port_range="*", destination_address_prefix="*",
                                         destination_port_ranges=ports)]
        self.nsg = network.NetworkSecurityGroup(f"{name}-nsg", resource_group_name=rg, location=loc,
                                                security_rules=rules, tags=tags, opts=child)
        self.vnet = network.VirtualNetwork(f"{name}-vnet", resource_group_name=rg, location=loc,
                                           address_space=network.AddressSpaceArgs(address_prefixes=[args.network]),
                                           tags=tags, opts=pulumi.ResourceOptions(parent=self,
                                                                                  ignore_changes=["subnets"]))
        self.compute_subnet = network.Subnet(
            f"{name}-compute", resource_group_name=rg, virtual_network_name=self.vnet.name,
            address_prefix=compute_cidr, network_security_group=network.NetworkSecurityGroupArgs(id=self.nsg.id),
            opts=child)
        self.lustre_subnet = network.Subnet(f"{name}-lustre", resource_group_name=rg,
                                            virtual_network_name=self.vnet.name, address_prefix=lustre_cidr,
                                            opts=child)
        self.ppg = compute.ProximityPlacementGroup(f"{name}-ppg", resource_group_name=rg, location=loc,
                                                   proximity_placement_group_type="Standard", tags=tags, opts=child)
        self.availability_set = compute.AvailabilitySet(
            f"{name}-ib", resource_group_name=rg, location=loc, platform_fault_domain_count=1,
            platform_update_domain_count=1, sku=compute.SkuArgs(name="Aligned"),
            proximity_placement_group=compute.SubResourceArgs(id=self.ppg.id), tags=tags, opts=child)

        hosts: list[HostOut] = []
        self.vms: list[compute.VirtualMachine] = []
        for m in gpus + mons:
            gpu = m.role == "gpu_client"
            nic = network.NetworkInterface(
                f"{m.name}-nic", resource_group_name=rg, location=loc, enable_accelerated_networking=True,
                ip_configurations=[network.NetworkInterfaceIPConfigurationArgs(
                    name="primary", primary=True, private_ip_allocation_method="Dynamic",
                    subnet=network.SubnetArgs(id=self.compute_subnet.id))],
                tags=tags, opts=child)
            vm = compute.VirtualMachine(
                m.name, vm_name=m.name, resource_group_name=rg, location=loc,
                hardware_profile=compute.HardwareProfileArgs(vm_size=m.node_type),
                storage_profile=compute.StorageProfileArgs(
                    image_reference=compute.ImageReferenceArgs(**args.image),
                    os_disk=compute.OSDiskArgs(create_option="FromImage", disk_size_gb=OS_DISK_GB,
                                               managed_disk=compute.ManagedDiskParametersArgs(
                                                   storage_account_type="Premium_LRS"))),
                os_profile=compute.OSProfileArgs(
                    computer_name=m.name, admin_username=args.ssh_user,
                    linux_configuration=compute.LinuxConfigurationArgs(
                        disable_password_authentication=True,
                        ssh=compute.SshConfigurationArgs(public_keys=[compute.SshPublicKeyArgs(
                            path=f"/home/{args.ssh_user}/.ssh/authorized_keys", key_data=args.ssh_public_key)]))),
                network_profile=compute.NetworkProfileArgs(network_interfaces=[
                    compute.NetworkInterfaceReferenceArgs(id=nic.id, primary=True)]),
                availability_set=compute.SubResourceArgs(id=self.availability_set.id) if gpu else None,
                tags={**tags, "clustersmith:role": m.role}, opts=child)
            self.vms.append(vm)
            address = nic.ip_configurations.apply(lambda cs: (cs or [])[0].private_ip_address)
            rails = [RailOut(index=i, kind="infiniband", netdev=f"ib{i}") for i in range(args.rails)] if gpu else []
            hosts.append(HostOut(m, address, args.ssh_user, rails))

        fs_out: pulumi.Output[dict[str, Any]] | None = None
        self.file_system: storagecache.AmlFilesystem | None = None
        if args.file_system is not None:
            fs = args.file_system
            if not fs.sku:
                raise StackError(f"{fs.service}: the catalog names no AMLFS SKU")
            self.file_system = storagecache.AmlFilesystem(
                f"{name}-amlfs", resource_group_name=rg, location=loc, sku=storagecache.SkuNameArgs(name=fs.sku),
                storage_capacity_ti_b=fs.capacity_gib / 1024, filesystem_subnet=self.lustre_subnet.id,
                maintenance_window=storagecache.AmlFilesystemMaintenanceWindowArgs(**MAINTENANCE),
                zones=["1"], tags=tags, opts=child)
            fs_out = self.file_system.client_info.apply(lambda info: {
                "service": fs.service, "capacity_gib": fs.capacity_gib,
                "throughput_mbps": round(fs.throughput.value.value / 1e6),
                "mount": f"{info.mgs_address}@tcp:/lustrefs" if info else ""})
        self.outputs = stack_outputs(args.design, "azure", hosts, fs_out)
        self.register_outputs({"outputs": self.outputs})
