"""The stack's own configuration (namespace ``clustersmith``): what the Blueprint cannot know.

Plain values live in ``Pulumi.<stack>.yaml``; ``clustersmith deploy`` or ``pulumi config set`` fills them.
The one secret, ``clustersmith:maasApiKey``, must be set with ``pulumi config set --secret``: a plain
value is refused, so it never sits unencrypted in a stack file.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pulumi
from pydantic import BaseModel, ConfigDict, Field

from stacks.model import StackError

NAMESPACE = "clustersmith"
SECRET_KEYS = ("maasApiKey",)


class StackConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ssh_public_key: str | None = Field(default=None, description="OpenSSH public key put on every machine")
    ssh_user: str | None = Field(default=None, description="SSH user; the image's default when unset")
    admin_cidr: str | None = Field(default=None, description="CIDR allowed to SSH in; none: no SSH from outside")
    allow_admin_from_anywhere: bool = Field(
        default=False, description="Let admin_cidr be 0.0.0.0/0 or ::/0 (SSH open to the whole internet)")
    image: str | None = Field(default=None, description="Machine image; the target's default when unset")
    project: str | None = Field(default=None, description="GCP project when the spec does not name one")
    zone: str | None = Field(default=None, description="Zone when the spec does not name one")
    machines_file: str = Field(default="machines.yaml", description="Bare metal, static: the machines file")
    maas_api_url: str | None = Field(default=None, description="Bare metal, maas: the MAAS API URL")
    maas_pool: str | None = Field(default=None, description="Bare metal, maas: resource pool to allocate from")
    rail_subnets: tuple[str, ...] = Field(default=(), description="Bare metal, maas: one IPv4 CIDR per rail")
    gpu_rail_netdevs: tuple[str, ...] = Field(default=(), description="Bare metal, maas: GPU nodes' rail NICs")
    storage_rail_netdevs: tuple[str, ...] = Field(default=(), description="Bare metal, maas: storage rail NICs")


_KEYS: dict[str, str] = {
    "sshPublicKey": "ssh_public_key", "sshUser": "ssh_user", "adminCidr": "admin_cidr", "image": "image",
    "project": "project", "zone": "zone", "machinesFile": "machines_file", "maasApiUrl": "maas_api_url",
    "maasPool": "maas_pool", "railSubnets": "rail_subnets", "gpuRailNetdevs": "gpu_rail_netdevs",
    "storageRailNetdevs": "storage_rail_netdevs", "allowAdminFromAnywhere": "allow_admin_from_anywhere",
}
_BOOLS = {"allowAdminFromAnywhere"}
_LISTS = {"railSubnets", "gpuRailNetdevs", "storageRailNetdevs"}


def read_config() -> StackConfig:
    """Read ``clustersmith:*`` from the running stack's configuration."""
    cfg = pulumi.Config(NAMESPACE)
    values: dict[str, Any] = {}
    for key, field in _KEYS.items():
        value: Any
        if key in _LISTS:
            listed = cfg.get_object(key)
            value = None if listed is None else tuple(listed)
        else:
            value = cfg.get_bool(key) if key in _BOOLS else cfg.get(key)
        if value is not None:
            values[field] = value
    config = StackConfig(**values)
    check_admin_cidr(config)
    return config


def check_admin_cidr(config: StackConfig) -> None:
    """SSH from anywhere only when the stack says so in its own key: a /0 admin CIDR is refused otherwise."""
    if config.admin_cidr is None:
        return
    try:
        network = ipaddress.ip_network(config.admin_cidr, strict=False)
    except ValueError as exc:
        raise StackError(f"clustersmith:adminCidr {config.admin_cidr!r} is not a CIDR ({exc}); expected e.g. "
                         "203.0.113.0/24") from None
    if network.prefixlen == 0 and not config.allow_admin_from_anywhere:
        raise StackError(f"clustersmith:adminCidr {config.admin_cidr!r} opens SSH to the whole internet; expected "
                         "the network you administer from (e.g. 203.0.113.0/24), or set "
                         "`pulumi config set clustersmith:allowAdminFromAnywhere true` if that is really meant")


def is_secret(key: str) -> bool:
    """Whether ``clustersmith:<key>`` was stored encrypted (``pulumi config set --secret``)."""
    return bool(pulumi.runtime.is_config_secret(f"{NAMESPACE}:{key}"))
