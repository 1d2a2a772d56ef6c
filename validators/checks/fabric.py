"""Fabric rules read from the hosts: NVMe-oF paths and I/O policy, and the QoS layers agreeing with the plan."""

from __future__ import annotations

import os

from blueprints.blueprint import Check
from validators.checks import missing, rule, setup_failure
from validators.errors import parse_error
from validators.nvmeof import parse_list_subsys
from validators.outcome import Detail, Measurement
from validators.qos import host_layers, parse_roce_tos
from validators.qos_layers import LayerQos, compare
from validators.results import Results


@rule("nvmeof.paths")
def nvmeof_paths(check: Check, results: Results) -> Measurement:
    """Every fabrics subsystem on every client: live paths (one per rail) and the planned I/O policy."""
    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed
    files = results.files("nvme", pattern="*.json")
    listings = [p for p in files if not p.name.endswith(".iopolicy.json")]
    if not listings:
        return missing("nvme list-subsys output", "nvme/<host>.json")
    want = check.args.get("iopolicy")
    details, notes, violations = [], [], []
    for path in listings:
        host = path.stem
        listing = parse_list_subsys(results.small_text(path, "nvme list-subsys JSON"), str(path))
        policy_file = path.with_name(f"{host}.iopolicy.json")
        policies = results.json_file(policy_file) if os.path.lexists(policy_file) else {}
        if not isinstance(policies, dict):
            raise parse_error(str(policy_file), "I/O policies", "(document)", "expected an object of subsystem: "
                              "policy", policies)
        subsystems = [s for s in listing.subsystems if s.fabrics]
        if not subsystems:
            violations.append(f"{host}: no NVMe-oF subsystem connected")
            details.append(Detail(where=host, value=0.0, unit="paths", note="no fabrics subsystem"))
        for sub in subsystems:
            live = [p for p in sub.paths if p.live]
            rails = {p.address.get("traddr") for p in live}
            policy = sub.iopolicy or policies.get(sub.name)
            details.append(Detail(where=f"{host} {sub.name}", value=float(len(rails)), unit="paths",
                                  note=f"{sub.nqn}; iopolicy {policy or 'unknown'}"))
            for p in sub.paths:
                if not p.live:
                    notes.append(f"degraded: {host} {sub.name} path {p.name} ({p.address.get('traddr', '?')}) is "
                                 f"{p.state}")
            if want and policy is not None and policy != want:
                violations.append(f"{host} {sub.name}: iopolicy {policy}, planned {want}")
            if want and policy is None:
                violations.append(f"{host} {sub.name}: iopolicy not reported (expected {want})")
    value = min((d.value or 0.0) for d in details)
    return Measurement(value=value, details=tuple(details), notes=tuple(notes), violations=tuple(violations))


@rule("qos.consistency")
def qos_consistency(check: Check, results: Results) -> Measurement:
    """Every layer a host states (NCCL, NVMe-oF, RDMA CM) against the plan's DSCP and priority."""
    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed
    hosts = sorted(p.name for p in (results.root / "qos").iterdir() if p.is_dir()) \
        if (results.root / "qos").is_dir() else []
    if not hosts:
        return missing("QoS layer settings", "qos/<host>/{nccl.conf,discovery.conf,rdma_cm_tos.json}")
    plan = LayerQos(layer="plan", field="qos.dscp", dscp=int(check.args["dscp"]),
                    priority=int(check.args["priority"]), shown=f"DSCP {check.args['dscp']}")
    details, violations = [], []
    for host in hosts:
        tos = results.text("qos", host, "rdma_cm_tos.json")
        layers = host_layers(host, results.text("qos", host, "nccl.conf"), results.text("qos", host, "discovery.conf"),
                             parse_roce_tos(tos, str(results.root / "qos" / host)) if tos else {})
        problems = compare(plan, layers)
        violations += [p.message for p in problems]
        details.append(Detail(where=host, value=0.0 if problems or not layers else 1.0, unit="bool",
                              note=", ".join(layer.describe() for layer in layers) or "no QoS layer found"))
        if not layers:
            violations.append(f"{host}: no layer states a QoS marking (no NCCL_IB_TC, no --tos, no rdma_cm ToS)")
    return Measurement(value=min(d.value or 0.0 for d in details), details=tuple(details),
                       violations=tuple(violations))
