"""The provider side of ``stacks.fleet_inventory.FleetClient``: list a fleet's live instances, tag one with its host.

- AWS (boto3): EC2 DescribeInstances filtered by the tags the stack's Auto Scaling group propagates
  (``clustersmith:fleet``, ``clustersmith:design``) and state pending or running; CreateTags writes the host tag.
- GCP (Compute Engine REST v1): ``instances.list`` in the fleet's zone filtered by the labels of the fleet's instance
  template (``clustersmith-fleet``, ``clustersmith-design``), status PROVISIONING, STAGING or RUNNING;
  ``instances.setLabels`` (all labels plus the fingerprint read with them) writes the host label.
- Azure (ARM REST): "Virtual Machines - List" in the scale set's resource group with
  ``$filter='virtualMachineScaleSet/id' eq '<id>'`` (a Flexible scale set's VMs are ordinary VMs naming their set;
  the stack's tags stay on the set), the resource group's network interfaces for the addresses, and
  "Tags - Update At Scope" (operation Merge) for the host tag.

GCP and Azure go through a ``Transport`` (method, URL, JSON body -> JSON), so the parsing is tested on the APIs'
documented response shapes without a network; the real transport is urllib with a bearer token from the
provider's own credential library (``pip install 'clustersmith[gcp]'`` or ``[azure]``), imported only when used.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from blueprints.errors import ClusterSmithError, Problem
from stacks.fleet_inventory import FleetClient, FleetInstance
from stacks.model import gcp_label
from stacks.outputs import AwsFleetRef, AzureFleetRef, GcpFleetRef, StackFleet

Transport = Callable[[str, str, dict[str, Any] | None], dict[str, Any]]
GCE = "https://compute.googleapis.com/compute/v1"
ARM = "https://management.azure.com"
ARM_COMPUTE_API = "2022-08-01"  # Virtual Machines - List with $filter on the scale set
ARM_NETWORK_API = "2023-09-01"
ARM_TAGS_API = "2021-04-01"
GCE_LIVE = ("PROVISIONING", "STAGING", "RUNNING")
AZURE_GONE = ("Deleting", "Failed")


def _missing(provider: str, package: str, why: str) -> ClusterSmithError:
    return ClusterSmithError([Problem("inventory", f"reading the {provider} fleets needs {package} ({why}): "
                                      f"pip install 'clustersmith[{provider}]'")], provider, "missing package")


class AwsFleets:
    """Auto Scaling groups' instances through EC2 (boto3)."""

    def __init__(self, session: Any = None) -> None:
        if session is None:
            try:
                import boto3
            except ImportError:
                raise _missing("aws", "boto3", "the AWS SDK") from None
            session = boto3.session.Session()
        self._session = session
        self._clients: dict[str, Any] = {}

    def _ec2(self, fleet: StackFleet) -> Any:
        ref = fleet.ref
        assert isinstance(ref, AwsFleetRef)
        if ref.region not in self._clients:
            self._clients[ref.region] = self._session.client("ec2", region_name=ref.region)
        return self._clients[ref.region]

    def instances(self, fleet: StackFleet, design: str) -> list[FleetInstance]:
        filters = [{"Name": "tag:clustersmith:fleet", "Values": [fleet.name]},
                   {"Name": "tag:clustersmith:design", "Values": [design]},
                   {"Name": "instance-state-name", "Values": ["pending", "running"]}]
        found: list[FleetInstance] = []
        for page in self._ec2(fleet).get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page["Reservations"]:
                for inst in reservation["Instances"]:
                    if not inst.get("PrivateIpAddress"):
                        continue  # not addressable yet: not counted, so the fleet reads as short
                    tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
                    launched = inst["LaunchTime"]
                    found.append(FleetInstance(
                        id=inst["InstanceId"], host=tags.get(fleet.host_tag), address=inst["PrivateIpAddress"],
                        launched=launched.isoformat() if isinstance(launched, datetime) else str(launched)))
        return found

    def name(self, fleet: StackFleet, instance: FleetInstance, host: str) -> None:
        self._ec2(fleet).create_tags(Resources=[instance.id], Tags=[{"Key": fleet.host_tag, "Value": host}])


def _pages(transport: Transport, url: str, token_key: str, next_key: str) -> Iterator[dict[str, Any]]:
    """Every page of a list call: GCE pages by ``pageToken``, ARM by ``nextLink``."""
    while url:
        page = transport("GET", url, None)
        yield page
        following = page.get(next_key)
        if not following:
            return
        if token_key:
            parts = urllib.parse.urlsplit(url)
            query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != token_key]
            url = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(
                [*query, (token_key, following)])))
        else:
            url = following


class GcpFleets:
    """Managed instance groups' instances through the Compute Engine API."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._labels: dict[str, tuple[dict[str, str], str]] = {}

    def instances(self, fleet: StackFleet, design: str) -> list[FleetInstance]:
        ref = fleet.ref
        assert isinstance(ref, GcpFleetRef)
        query = urllib.parse.urlencode({"filter": f'labels.clustersmith-fleet="{gcp_label(fleet.name)}" AND '
                                                  f'labels.clustersmith-design="{gcp_label(design)}"'})
        url = f"{GCE}/projects/{ref.project}/zones/{ref.zone}/instances?{query}"
        found: list[FleetInstance] = []
        for page in _pages(self._transport, url, "pageToken", "nextPageToken"):
            for item in page.get("items", []):
                nics = item.get("networkInterfaces", [])
                if item.get("status") not in GCE_LIVE or not nics or not nics[0].get("networkIP"):
                    continue
                labels = dict(item.get("labels", {}))
                self._labels[item["name"]] = (labels, item.get("labelFingerprint", ""))
                found.append(FleetInstance(
                    id=item["name"], launched=item["creationTimestamp"], host=labels.get(fleet.host_tag),
                    address=nics[0]["networkIP"],
                    rail_addresses=tuple(n.get("networkIP", "") for n in nics if n.get("nicType") == "MRDMA")))
        return found

    def name(self, fleet: StackFleet, instance: FleetInstance, host: str) -> None:
        ref = fleet.ref
        assert isinstance(ref, GcpFleetRef)
        labels, fingerprint = self._labels[instance.id]
        self._transport("POST", f"{GCE}/projects/{ref.project}/zones/{ref.zone}/instances/{instance.id}/setLabels",
                        {"labels": {**labels, fleet.host_tag: host}, "labelFingerprint": fingerprint})


def _resource_group(scale_set_id: str) -> str:
    """``/subscriptions/<s>/resourceGroups/<g>`` of an ARM id."""
    parts = scale_set_id.strip("/").split("/")
    return "/" + "/".join(parts[:4])


class AzureFleets:
    """Flexible scale sets' VMs through Azure Resource Manager."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def _addresses(self, group: str) -> dict[str, str]:
        """Network interface id (lower case) -> its primary private address, for the resource group."""
        url = f"{ARM}{group}/providers/Microsoft.Network/networkInterfaces?api-version={ARM_NETWORK_API}"
        found: dict[str, str] = {}
        for page in _pages(self._transport, url, "", "nextLink"):
            for nic in page.get("value", []):
                configs = nic.get("properties", {}).get("ipConfigurations", [])
                primary = next((c for c in configs if c.get("properties", {}).get("primary")), configs[0] if configs
                               else None)
                address = (primary or {}).get("properties", {}).get("privateIPAddress")
                if address:
                    found[nic["id"].lower()] = address
        return found

    def instances(self, fleet: StackFleet, design: str) -> list[FleetInstance]:
        ref = fleet.ref
        assert isinstance(ref, AzureFleetRef)
        group = _resource_group(ref.scale_set_id)
        query = urllib.parse.urlencode({"api-version": ARM_COMPUTE_API,
                                        "$filter": f"'virtualMachineScaleSet/id' eq '{ref.scale_set_id}'"})
        url = f"{ARM}{group}/providers/Microsoft.Compute/virtualMachines?{query}"
        addresses = self._addresses(group)
        found: list[FleetInstance] = []
        for page in _pages(self._transport, url, "", "nextLink"):
            for vm in page.get("value", []):
                props = vm.get("properties", {})
                if props.get("provisioningState") in AZURE_GONE:
                    continue
                nics = props.get("networkProfile", {}).get("networkInterfaces", [])
                primary = next((n for n in nics if n.get("properties", {}).get("primary")), nics[0] if nics else {})
                address = addresses.get(str(primary.get("id", "")).lower())
                if address is None:
                    continue
                found.append(FleetInstance(id=vm["id"], launched=props.get("timeCreated", ""),
                                           host=(vm.get("tags") or {}).get(fleet.host_tag), address=address))
        return found

    def name(self, fleet: StackFleet, instance: FleetInstance, host: str) -> None:
        self._transport("PATCH", f"{ARM}{instance.id}/providers/Microsoft.Resources/tags/default"
                                 f"?api-version={ARM_TAGS_API}",
                        {"operation": "Merge", "properties": {"tags": {fleet.host_tag: host}}})


def bearer_transport(token: Callable[[], str]) -> Transport:
    """HTTPS JSON calls with ``Authorization: Bearer <token()>``."""
    def call(method: str, url: str, body: dict[str, Any] | None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method, headers={
            "Authorization": f"Bearer {token()}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                text = response.read().decode() or "{}"
        except OSError as exc:
            raise ClusterSmithError([Problem("inventory", f"{method} {url.split('?')[0]} failed: {exc}")], url,
                                    "provider API call failed") from None
        parsed: dict[str, Any] = json.loads(text)
        return parsed
    return call


def _gcp_token() -> Callable[[], str]:
    try:
        import google.auth
        import google.auth.transport.requests
    except ImportError:
        raise _missing("gcp", "google-auth", "Application Default Credentials") from None
    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/compute"])

    def token() -> str:
        if not credentials.valid:
            credentials.refresh(google.auth.transport.requests.Request())
        return str(credentials.token)
    return token


def _azure_token() -> Callable[[], str]:
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError:
        raise _missing("azure", "azure-identity", "DefaultAzureCredential") from None
    credential = DefaultAzureCredential()
    return lambda: str(credential.get_token(f"{ARM}/.default").token)


def client_for(provider: str) -> FleetClient:
    """The real client of ``provider``'s API."""
    if provider == "aws":
        return AwsFleets()
    if provider == "gcp":
        return GcpFleets(bearer_transport(_gcp_token()))
    if provider == "azure":
        return AzureFleets(bearer_transport(_azure_token()))
    raise ValueError(f"{provider} has no fleets")
