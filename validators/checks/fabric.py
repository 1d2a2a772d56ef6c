"""Fabric rules read from the hosts: NVMe-oF paths and I/O policy, and the QoS layers agreeing with the plan.

Both judge every host the Blueprint plans: ``nvmeof.paths`` each host that owns a planned subsystem
(``owner``), each of those subsystems by NQN (a missing or foreign NQN is a setup error) and its paths, one
per rail, each host connected as the host NQN the Blueprint assigns it; ``qos.consistency`` every GPU node."""

from __future__ import annotations

import os

from blueprints.blueprint import Check
from blueprints.blueprint.check_args import NvmeArgs, QosArgs, args_as
from validators.checks import missing, rule, setup_failure
from validators.coverage import Planned, count, cover
from validators.errors import parse_error
from validators.nvmeof import parse_list_subsys
from validators.outcome import Detail, Measurement
from validators.qos import host_layers, parse_roce_tos
from validators.qos_layers import LayerQos, compare
from validators.results import Results


@rule("nvmeof.paths",
      measures="live NVMe-oF paths per planned subsystem on each host that attaches one (`nvme list-subsys -o json`, "
               "after the settle windows `args.settle_s` and `args.reset_extra_s`): live paths on distinct target "
               "addresses, one per rail; the fewest of any subsystem counts. Also each subsystem's I/O policy and "
               "the host NQN each host connects as",
      passes="the planner's paths per subsystem (one per storage rail); besides, every subsystem's I/O policy as "
             "planned (`args.iopolicy`), each host connected as the host NQN the Blueprint assigns it, and a "
             "fabrics subsystem on every listed host; a planned path that is down is a miss naming it (reported "
             "degraded), not a coverage gap",
      setup_error="a host where nvme could not run (the runner's record); no `nvme/<host>.json`; a planned host or "
                  "subsystem (by NQN) missing, one the Blueprint does not name, or one reported twice")
def nvmeof_paths(check: Check, results: Results, planned: Planned) -> Measurement:
    """Every fabrics subsystem on every client: live paths (one per rail) and the planned I/O policy."""
    hosts_planned = list(planned.subsystems)
    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed.model_copy(update={"coverage": (cover("hosts", [], hosts_planned),)})
    files = results.files("nvme", pattern="*.json")
    listings = [p for p in files if not p.name.endswith(".iopolicy.json")]
    if not listings:
        return missing("nvme list-subsys output", "nvme/<host>.json").model_copy(
            update={"coverage": (cover("hosts", [], hosts_planned),)})
    want = args_as(check.args, NvmeArgs).iopolicy
    details: list[Detail] = []
    notes: list[str] = []
    failures: list[str] = []  # the host's storage path failed or drifted from the plan
    violations: list[str] = []  # the listing does not match the plan's view of the host, or leaves a fact out
    seen_subsystems: list[str] = []
    live_paths = 0
    for path in listings:
        host = path.stem
        listing = parse_list_subsys(results.small_text(path, "nvme list-subsys JSON"), str(path))
        policy_file = path.with_name(f"{host}.iopolicy.json")
        policies = results.json_file(policy_file) if os.path.lexists(policy_file) else {}
        if not isinstance(policies, dict):
            raise parse_error(str(policy_file), "I/O policies", "(document)", "expected an object of subsystem: "
                              "policy", policies)
        subsystems = [s for s in listing.subsystems if s.fabrics]
        want_nqn = planned.host_nqns.get(host)
        if want_nqn is not None and listing.host_nqn != want_nqn:  # only a target that lets any host in takes it
            violations.append(f"{host}: connects as host NQN {listing.host_nqn or '(not reported)'}, planned "
                              f"{want_nqn}")
        if not subsystems:
            failures.append(f"{host}: no NVMe-oF subsystem connected")
            details.append(Detail(where=host, value=0.0, unit="paths", note="no fabrics subsystem"))
        for sub in subsystems:
            seen_subsystems.append(f"{host} {sub.nqn}")
            live = [p for p in sub.paths if p.live]
            rails = {p.address.get("traddr") for p in live}
            if sub.nqn in planned.subsystems.get(host, ()):
                live_paths += min(len(rails), planned.paths_per_subsystem)
                if len(rails) < planned.paths_per_subsystem:
                    failures.append(f"{host} {sub.name}: {len(rails)} of {planned.paths_per_subsystem} planned "
                                    "paths live")
            policy = sub.iopolicy or policies.get(sub.name)
            details.append(Detail(where=f"{host} {sub.name}", value=float(len(rails)), unit="paths",
                                  note=f"{sub.nqn}; iopolicy {policy or 'unknown'}"))
            for p in sub.paths:
                if not p.live:
                    notes.append(f"degraded: {host} {sub.name} path {p.name} ({p.address.get('traddr', '?')}) is "
                                 f"{p.state}")
            if want and policy is not None and policy != want:
                failures.append(f"{host} {sub.name}: iopolicy {policy}, planned {want}")
            if want and policy is None:
                violations.append(f"{host} {sub.name}: iopolicy not reported (expected {want})")
    value = min((d.value or 0.0) for d in details)
    planned_subsystems = [f"{h} {nqn}" for h, nqns in planned.subsystems.items() for nqn in nqns]
    coverage = (cover("hosts", [p.stem for p in listings], hosts_planned),
                cover("subsystems", seen_subsystems, planned_subsystems),
                count("paths", live_paths, len(planned_subsystems) * planned.paths_per_subsystem).model_copy(
                    update={"gate": False}))
    return Measurement(value=value, details=tuple(details), notes=tuple(notes), failures=tuple(failures),
                       violations=tuple(violations), coverage=coverage)


@rule("qos.consistency",
      measures="every QoS layer a GPU node states (`NCCL_IB_TC` in `/etc/nccl.conf`, `--tos` in "
               "`/etc/nvme/discovery.conf`, the RDMA CM default ToS in configfs) against the plan's DSCP and RoCE "
               "priority; 1 on a node where all agree",
      passes="1 on every GPU node: every layer it states carries the plan's DSCP and priority (`args.dscp`, "
             "`args.priority`, from the QoS plan), and at least one layer states a marking; each disagreement is a "
             "violation naming both layers and values",
      setup_error="a host the runner could not read (its record); no `qos/<host>/` folder at all; a GPU node without "
                  "its folder, or a host the Blueprint does not name")
def qos_consistency(check: Check, results: Results, planned: Planned) -> Measurement:
    """Every layer a host states (NCCL, NVMe-oF, RDMA CM) against the plan's DSCP and priority."""
    failed = setup_failure(results.setup_errors(check.id))
    if failed is not None:
        return failed.model_copy(update={"coverage": (cover("hosts", [], planned.gpu_nodes),)})
    hosts = sorted(p.name for p in (results.root / "qos").iterdir() if p.is_dir()) \
        if (results.root / "qos").is_dir() else []
    if not hosts:
        return missing("QoS layer settings", "qos/<host>/{nccl.conf,discovery.conf,rdma_cm_tos.json}").model_copy(
            update={"coverage": (cover("hosts", [], planned.gpu_nodes),)})
    args = args_as(check.args, QosArgs)
    plan = LayerQos(layer="plan", field="qos.dscp", dscp=args.dscp, priority=args.priority, shown=f"DSCP {args.dscp}")
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
                       failures=tuple(violations), coverage=(cover("hosts", hosts, planned.gpu_nodes),))
