"""What each QoS layer on a host says RoCE traffic is marked with, for the one-plan consistency check.

Read from the files the roles write: ``/etc/nccl.conf`` (``NCCL_IB_TC=<ToS>``), ``/etc/nvme/discovery.conf``
(``--tos=<ToS>`` per line), and RDMA CM's ``default_roce_tos`` per device (configfs). Each becomes a
``validators.qos_layers.LayerQos`` compared with the plan (``compare``).
"""

from __future__ import annotations

import json
import re

from validators.errors import parse_error
from validators.qos_layers import LayerQos, layer_from_tos
from validators.source import json_loads

TOS_OPTION = re.compile(r"--tos[= ](?P<tos>-?\d+)")


def parse_env_file(text: str, source: str = "<nccl.conf>") -> dict[str, str]:
    """``KEY=VALUE`` lines (comments and blank lines skipped), as NCCL reads /etc/nccl.conf."""
    values = {}
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise parse_error(source, "an NCCL configuration file", f"line {n}", "expected KEY=VALUE", line)
        values[key.strip()] = value.strip().strip('"')
    return values


def host_layers(host: str, nccl_conf: str | None, discovery_conf: str | None,
                roce_tos: dict[str, str]) -> list[LayerQos]:
    layers = []
    if nccl_conf is not None:
        tc = parse_env_file(nccl_conf, f"{host}:/etc/nccl.conf").get("NCCL_IB_TC")
        if tc is not None:
            layers.append(_tos("nccl", f"{host}:/etc/nccl.conf NCCL_IB_TC", tc, f"NCCL_IB_TC={tc}"))
    if discovery_conf is not None:
        for n, line in enumerate(discovery_conf.splitlines(), start=1):
            m = TOS_OPTION.search(line)
            if m and not line.lstrip().startswith("#"):
                layers.append(_tos("nvmeof", f"{host}:/etc/nvme/discovery.conf line {n}", m.group("tos"),
                                   f"--tos={m.group('tos')}"))
    for path, value in sorted(roce_tos.items()):
        device = path.split("/rdma_cm/")[-1].split("/")[0] if "/rdma_cm/" in path else path
        layers.append(_tos("rdma_cm", f"{host}:rdma_cm {device} default_roce_tos", value, value))
    return layers


def _tos(layer: str, field: str, value: str, shown: str) -> LayerQos:
    try:
        return layer_from_tos(layer, field, int(value), shown)
    except ValueError:
        raise parse_error(field.split(":")[0], "a QoS setting", field, "expected a ToS byte 0..255", value) from None


def parse_roce_tos(text: str, source: str = "<rdma_cm_tos.json>") -> dict[str, str]:
    try:
        data = json_loads(text)
    except json.JSONDecodeError as exc:
        raise parse_error(source, "JSON", f"(line {exc.lineno})", f"invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise parse_error(source, "rdma_cm ToS map", "(document)", "expected {configfs path: ToS}", data)
    return {str(k): str(v) for k, v in data.items()}
