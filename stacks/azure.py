"""Azure: ND-series VMs on InfiniBand in Flexible scale sets, and Azure Managed Lustre
(azure-native ``storagecache.AmlFilesystem``).

The GPU nodes are scale sets in Flexible orchestration (``Blueprint.fleets``): at most 1,000 VMs each, and each one
InfiniBand partition: Azure puts a scale set's VMs in one InfiniBand group and gives VMs of different scale sets no
InfiniBand path (Azure CycleCloud, "Availability Sets"); the planner says how many and which hosts each holds. Each
scale set sits in a proximity placement group of its own, one fault domain. The HCAs (ib0..ibN) get their addresses
in the guest, so the rails carry no address in the stack outputs. A Flexible scale set's VMs are ordinary VMs whose
``virtualMachineScaleSet`` names the set: ``inventory --from-stack`` lists them by it, names each once with the
``clustersmith:host`` tag and refuses a scale set short of its size, by name. Azure Managed Lustre needs its own
subnet and a weekly 30-minute maintenance window.

Only submodules of pulumi-azure-native are imported (compute, network, resources, storagecache).
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_azure_native import compute, network, resources, storagecache

from blueprints.blueprint import Blueprint
from blueprints.subnets import carve, management_subnets
from stacks.component import FleetOut, HostOut, RailOut, stack_outputs
from stacks.config import StackConfig
from stacks.model import CloudClusterArgs, ClusterArgs, StackError, fleets_of

# design defaults (not performance figures)
HPC_IMAGE = {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "latest"}
DEFAULT_USER = "azureuser"
OS_DISK_GB = 256
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
                   file_system=bp.storage.managed, fleets=fleets_of(bp), ssh_public_key=cfg.ssh_public_key,
                   ssh_user=cfg.ssh_user or DEFAULT_USER, admin_cidr=cfg.admin_cidr)


def linux_configuration(args: AzureClusterArgs) -> compute.LinuxConfigurationArgs:
    """SSH keys only, no password."""
    return compute.LinuxConfigurationArgs(
        disable_password_authentication=True,
        ssh=compute.SshConfigurationArgs(public_keys=[compute.SshPublicKeyArgs(
            path=f"/home/{args.ssh_user}/.ssh/authorized_keys", key_data=args.ssh_public_key)]))


def scale_set_profile(args: AzureClusterArgs, fleet_name: str, subnet_id: pulumi.Input[str]
                      ) -> compute.VirtualMachineScaleSetVMProfileArgs:
    """What every VM of a Flexible scale set is: the HPC image, a premium OS disk, one accelerated NIC in the compute
    subnet (Flexible orchestration creates the NICs itself, so it needs the network API version)."""
    return compute.VirtualMachineScaleSetVMProfileArgs(
        os_profile=compute.VirtualMachineScaleSetOSProfileArgs(
            computer_name_prefix=fleet_name, admin_username=args.ssh_user,
            linux_configuration=linux_configuration(args)),
        storage_profile=compute.VirtualMachineScaleSetStorageProfileArgs(
            image_reference=compute.ImageReferenceArgs(**args.image),
            os_disk=compute.VirtualMachineScaleSetOSDiskArgs(
                create_option="FromImage", disk_size_gb=OS_DISK_GB,
                managed_disk=compute.VirtualMachineScaleSetManagedDiskParametersArgs(storage_account_type="Premium_LRS"))),
        network_profile=compute.VirtualMachineScaleSetNetworkProfileArgs(
            network_api_version="2020-11-01",
            network_interface_configurations=[compute.VirtualMachineScaleSetNetworkConfigurationArgs(
                name="primary", primary=True, enable_accelerated_networking=True,
                ip_configurations=[compute.VirtualMachineScaleSetIPConfigurationArgs(
                    name="primary", primary=True, subnet=compute.ApiEntityReferenceArgs(id=subnet_id))])]))


class AzureCluster(pulumi.ComponentResource):
    outputs: pulumi.Output[str]

    def __init__(self, name: str, args: AzureClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("clustersmith:azure:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = args.labels.tags()
        loc = args.location
        mons = args.of_role("monitoring")
        compute_cidr, lustre_cidr = carve(args.network, management_subnets("azure", len(args.machines)))

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
        fleets: list[FleetOut] = []
        self.scale_sets: list[compute.VirtualMachineScaleSet] = []
        rails = [RailOut(index=i, kind="infiniband", netdev=f"ib{i}") for i in range(args.rails)]
        for f in args.fleets.fleets:
            ppg = compute.ProximityPlacementGroup(f"{name}-{f.name}-ppg", resource_group_name=rg, location=loc,
                                                  proximity_placement_group_type="Standard", tags=tags, opts=child)
            vmss = compute.VirtualMachineScaleSet(
                f"{name}-{f.name}", vm_scale_set_name=f"{args.design}-{f.name}", resource_group_name=rg,
                location=loc, orchestration_mode="Flexible", platform_fault_domain_count=1,
                sku=compute.SkuArgs(name=f.node_type, tier="Standard", capacity=f.size),
                proximity_placement_group=compute.SubResourceArgs(id=ppg.id),
                virtual_machine_profile=scale_set_profile(args, f.name, self.compute_subnet.id),
                tags={**tags, "clustersmith:role": f.role, "clustersmith:fleet": f.name}, opts=child)
            self.scale_sets.append(vmss)
            fleets.append(FleetOut(f, vmss.id.apply(lambda i: {"provider": "azure", "scale_set_id": i}),
                                   args.ssh_user, args.fleets.host_tag, rails))

        hosts: list[HostOut] = []
        self.vms: list[compute.VirtualMachine] = []
        for m in mons:
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
                os_profile=compute.OSProfileArgs(computer_name=m.name, admin_username=args.ssh_user,
                                                 linux_configuration=linux_configuration(args)),
                network_profile=compute.NetworkProfileArgs(network_interfaces=[
                    compute.NetworkInterfaceReferenceArgs(id=nic.id, primary=True)]),
                tags={**tags, "clustersmith:role": m.role}, opts=child)
            self.vms.append(vm)
            address = nic.ip_configurations.apply(lambda cs: (cs or [])[0].private_ip_address)
            hosts.append(HostOut(m, address, args.ssh_user))

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
        self.outputs = stack_outputs(args.design, "azure", hosts, fs_out, fleets)
        self.register_outputs({"outputs": self.outputs})
