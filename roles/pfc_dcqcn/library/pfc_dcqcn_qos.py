#!/usr/bin/python3
"""Ansible module: bring a NIC's lossless-RoCE QoS to the plan (DSCP trust, DSCP->priority, PFC, ETS, DCQCN).

Decision logic, kept out of YAML so it can be unit-tested against recorded ``dcb`` output and a sysfs
tree laid out like mlx5's:

* capability: ``dcb -j pfc show dev IF`` answering "Operation not supported" means the NIC has no DCB
  (virtio-net, veth); no ``/sys/class/net/IF/ecn`` means no DCQCN knobs (the MLNX_OFED ``en_ecn``
  interface). The play fails naming the NIC, unless the target is the lab, where the module records
  "unsupported" as a fact for the validators.
* DSCP trust: the DSCP APP entries (``dcb app``); mlx5 switches its trust state to DSCP when the first
  DSCP APP entry is added (mlx5e_dcbnl_ieee_setapp, drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c).
* PFC: ``dcb pfc set ... prio-pfc`` with all eight priorities spelled out, so only the planned ones are on.
* DCQCN: ``ecn/roce_np`` and ``ecn/roce_rp`` files, enable per priority, CNP DSCP and 802.1p priority,
  reaction-point parameters.
* persistence: the whole desired state as a ``dcb -b`` batch file and a list of sysfs writes, replayed
  at boot by the role's systemd unit.

Only what differs is changed; the result carries ``changed`` and a before/after ``diff``.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: pfc_dcqcn_qos
short_description: Apply the Blueprint's lossless-RoCE QoS plan to NICs with dcb and the mlx5 ecn sysfs files
options:
  interfaces: {type: list, elements: str, required: true, description: Netdevs to configure}
  trust: {type: str, choices: [dscp, pcp], default: dscp, description: What the NIC classifies traffic by}
  dscp_map: {type: list, elements: dict, required: true, description: "Entries {dscp, priority}"}
  pfc_priorities: {type: list, elements: int, required: true, description: PFC is enabled on these only}
  ets: {type: dict, required: false, description: "{prio_tc, tc_tsa, tc_bw}, eight each; omitted: ETS left alone"}
  ecn_priorities: {type: list, elements: int, required: true, description: Priorities with DCQCN enabled}
  cnp_dscp: {type: int, required: true, description: DSCP of congestion notification packets}
  cnp_priority: {type: int, required: true, description: 802.1p priority of CNPs}
  rp_params: {type: dict, required: true, description: roce_rp file name -> value}
  np_params: {type: dict, required: true, description: roce_np file name -> value}
  lab: {type: bool, default: false, description: Record a NIC without PFC/DCQCN as unsupported instead of failing}
  state_dir: {type: path, default: /etc/clustersmith, description: Where the boot-time replay files go}
  sysfs_root: {type: path, default: /sys, description: Root of sysfs (tests point it at a fake tree)}
  dcb: {type: str, default: dcb, description: The iproute2 dcb binary}
"""

RETURN = r"""
support: {description: "Per interface: pfc and dcqcn 'supported' or 'unsupported', and why", type: dict}
commands: {description: dcb commands run (or that would run in check mode), type: list}
"""

PRIOS = range(8)
NOT_SUPPORTED = "Operation not supported"
NO_DEVICE = "No such device"


class QosError(Exception):
    """A condition the play must stop on; the message names the NIC."""


# dcb output -------------------------------------------------------------------------------------


def parse_pfc(text: str) -> list[bool]:
    """``dcb -j pfc show dev IF``: ``prio_pfc`` is eight JSON booleans (dcb_pfc.c, dcb_print_array_on_off)."""
    data = json.loads(text)
    values = [bool(v) for v in data["prio_pfc"]]
    if len(values) != 8:
        raise ValueError(f"prio_pfc has {len(values)} entries, expected 8")
    return values


def parse_app_dscp(text: str) -> dict[int, list[int]]:
    """``dcb -j app show dev IF``: ``dscp_prio`` is a list of ``[dscp, prio]`` pairs (older builds add a " ")."""
    data = json.loads(text) if text.strip() else {}
    table: dict[int, list[int]] = {}
    for entry in data.get("dscp_prio", []):
        dscp, prio = int(entry[0]), int(entry[1])
        table.setdefault(dscp, []).append(prio)
    return {d: sorted(p) for d, p in table.items()}


def parse_ets(text: str) -> dict[str, list[Any]]:
    """``dcb -j ets show dev IF``: ``prio_tc``, ``tc_tsa`` and ``tc_bw``, eight entries each."""
    data = json.loads(text)
    return {key: list(data[key]) for key in ("prio_tc", "tc_tsa", "tc_bw")}


def classify_dcb_failure(stderr: str) -> str:
    """What a failed ``dcb ... show`` means: 'unsupported' (no DCB), 'missing' (no such netdev) or 'error'."""
    if NOT_SUPPORTED in stderr:
        return "unsupported"
    if NO_DEVICE in stderr:
        return "missing"
    return "error"


# desired state ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Desired:
    trust: str
    dscp_map: dict[int, int]
    pfc_priorities: frozenset[int]
    ecn_priorities: frozenset[int]
    cnp_dscp: int
    cnp_priority: int
    rp_params: dict[str, int]
    np_params: dict[str, int]
    ets: dict[str, list[Any]] | None = None

    @classmethod
    def from_params(cls, p: dict[str, Any]) -> Desired:
        ets = p.get("ets")
        return cls(
            trust=p.get("trust", "dscp"),
            dscp_map={int(e["dscp"]): int(e["priority"]) for e in p["dscp_map"]},
            pfc_priorities=frozenset(int(x) for x in p["pfc_priorities"]),
            ecn_priorities=frozenset(int(x) for x in p["ecn_priorities"]),
            cnp_dscp=int(p["cnp_dscp"]),
            cnp_priority=int(p["cnp_priority"]),
            rp_params={k: int(v) for k, v in p["rp_params"].items()},
            np_params={k: int(v) for k, v in p["np_params"].items()},
            ets={k: list(ets[k]) for k in ("prio_tc", "tc_tsa", "tc_bw")} if ets else None,
        )

    def pfc_vector(self) -> list[bool]:
        return [p in self.pfc_priorities for p in PRIOS]

    def sysfs(self) -> dict[str, str]:
        """ecn file (relative to /sys/class/net/IF/ecn) -> value."""
        out: dict[str, str] = {}
        for side in ("roce_np", "roce_rp"):
            for p in PRIOS:
                out[f"{side}/enable/{p}"] = "1" if p in self.ecn_priorities else "0"
        out["roce_np/cnp_dscp"] = str(self.cnp_dscp)
        out["roce_np/cnp_802p_prio"] = str(self.cnp_priority)
        out.update({f"roce_np/{k}": str(v) for k, v in sorted(self.np_params.items())})
        out.update({f"roce_rp/{k}": str(v) for k, v in sorted(self.rp_params.items())})
        return out


def _onoff(vec: list[bool]) -> str:
    return " ".join(f"{p}:{'on' if on else 'off'}" for p, on in zip(PRIOS, vec, strict=True))


def _ets_args(ets: dict[str, list[Any]]) -> list[str]:
    def mapping(values: list[Any]) -> list[str]:
        return [f"{i}:{v}" for i, v in enumerate(values)]
    return ["prio-tc", *mapping(ets["prio_tc"]), "tc-tsa", *mapping(ets["tc_tsa"]),
            "tc-bw", *mapping(ets["tc_bw"])]


def batch_lines(ifname: str, want: Desired) -> list[str]:
    """The full desired DCB state of one NIC as ``dcb -b`` lines (replayed at boot)."""
    lines = [f"pfc set dev {ifname} prio-pfc {_onoff(want.pfc_vector())}"]
    if want.trust == "dscp" and want.dscp_map:
        pairs = " ".join(f"{d}:{p}" for d, p in sorted(want.dscp_map.items()))
        lines.append(f"app replace dev {ifname} dscp-prio {pairs}")
    if want.ets:
        lines.append(f"ets set dev {ifname} " + " ".join(_ets_args(want.ets)))
    return lines


# current state and the plan ---------------------------------------------------------------------


@dataclass
class Current:
    pfc: list[bool]
    dscp_map: dict[int, list[int]]
    ets: dict[str, list[Any]] | None
    sysfs: dict[str, str | None]  # None: the file does not exist


@dataclass
class Plan:
    ifname: str
    commands: list[list[str]] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)  # (ecn-relative path, value)
    missing: list[str] = field(default_factory=list)
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.commands or self.writes)


def plan_interface(ifname: str, want: Desired, cur: Current, dcb: str = "dcb") -> Plan:
    """The commands and sysfs writes that take ``cur`` to ``want``; nothing when they already agree."""
    plan = Plan(ifname)
    pfc = want.pfc_vector()
    if cur.pfc != pfc:
        plan.commands.append([dcb, "pfc", "set", "dev", ifname, "prio-pfc", *_onoff(pfc).split()])
        plan.before["prio-pfc"], plan.after["prio-pfc"] = _onoff(cur.pfc), _onoff(pfc)

    if want.trust == "dscp":
        wrong = {d: p for d, p in want.dscp_map.items() if cur.dscp_map.get(d) != [p]}
        if wrong:
            pairs = [f"{d}:{p}" for d, p in sorted(wrong.items())]
            plan.commands.append([dcb, "app", "replace", "dev", ifname, "dscp-prio", *pairs])
        planned_prios = set(want.dscp_map.values())
        stray = sorted((d, p) for d, prios in cur.dscp_map.items() for p in prios
                       if d not in want.dscp_map and p in planned_prios)
    else:
        wrong, stray = {}, sorted((d, p) for d, prios in cur.dscp_map.items() for p in prios)
    if stray:
        plan.commands.append([dcb, "app", "del", "dev", ifname, "dscp-prio", *(f"{d}:{p}" for d, p in stray)])
    if wrong or stray:
        plan.before["dscp-prio"] = _pairs(cur.dscp_map)
        plan.after["dscp-prio"] = " ".join(f"{d}:{p}" for d, p in sorted(want.dscp_map.items())) \
            if want.trust == "dscp" else ""

    if want.ets and cur.ets != want.ets:
        plan.commands.append([dcb, "ets", "set", "dev", ifname, *_ets_args(want.ets)])
        plan.before["ets"], plan.after["ets"] = cur.ets, want.ets

    for rel, value in want.sysfs().items():
        have = cur.sysfs.get(rel)
        if have is None:
            plan.missing.append(rel)
        elif have != value:
            plan.writes.append((rel, value))
            plan.before[f"ecn/{rel}"], plan.after[f"ecn/{rel}"] = have, value
    return plan


def _pairs(table: dict[int, list[int]]) -> str:
    return " ".join(f"{d}:{p}" for d in sorted(table) for p in table[d])


# the host ---------------------------------------------------------------------------------------


class Host:
    """Reads and changes one machine: ``dcb`` through subprocess, sysfs under ``sysfs_root``."""

    def __init__(self, sysfs_root: str = "/sys", dcb: str = "dcb") -> None:
        self.root = Path(sysfs_root)
        self.dcb = dcb

    def netdev(self, ifname: str) -> Path:
        return self.root / "class" / "net" / ifname

    def driver(self, ifname: str) -> str:
        link = self.netdev(ifname) / "device" / "driver"
        return os.path.basename(os.readlink(link)) if link.is_symlink() else "unknown driver"

    def dcb_show(self, obj: str, ifname: str) -> tuple[int, str, str]:
        proc = subprocess.run([self.dcb, "-j", obj, "show", "dev", ifname], capture_output=True, text=True,
                              check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def ecn_dir(self, ifname: str) -> Path:
        return self.netdev(ifname) / "ecn"

    def read_sysfs(self, ifname: str, rels: list[str]) -> dict[str, str | None]:
        base = self.ecn_dir(ifname)
        out: dict[str, str | None] = {}
        for rel in rels:
            path = base / rel
            out[rel] = path.read_text().strip() if path.is_file() else None
        return out

    def write_sysfs(self, ifname: str, rel: str, value: str) -> None:
        (self.ecn_dir(ifname) / rel).write_text(value + "\n")

    def run(self, argv: list[str]) -> None:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise QosError(f"`{' '.join(argv)}` failed (rc {proc.returncode}): {proc.stderr.strip()}")


@dataclass
class Outcome:
    plans: list[Plan]
    support: dict[str, dict[str, str]]
    batch: list[str]
    sysfs_lines: list[str]


def survey(host: Host, interfaces: list[str], want: Desired, lab: bool) -> Outcome:
    """Detect what each NIC can do, read its state and plan the changes; raise QosError where the play must stop."""
    plans: list[Plan] = []
    support: dict[str, dict[str, str]] = {}
    batch: list[str] = []
    sysfs_lines: list[str] = []
    for ifname in interfaces:
        if not host.netdev(ifname).exists():
            raise QosError(f"pfc_dcqcn: {ifname} does not exist on this host (no {host.netdev(ifname)})")
        rc, out, err = host.dcb_show("pfc", ifname)
        kind = "ok" if rc == 0 else classify_dcb_failure(err)
        if kind in ("missing", "error"):
            raise QosError(f"pfc_dcqcn: `dcb -j pfc show dev {ifname}` failed (rc {rc}): {err.strip()}")
        has_ecn = host.ecn_dir(ifname).is_dir()
        entry = {"driver": host.driver(ifname),
                 "pfc": "supported" if kind == "ok" else "unsupported",
                 "dcqcn": "supported" if has_ecn else "unsupported"}
        reasons = []
        if kind != "ok":
            reasons.append(f"dcb pfc show: {err.strip() or NOT_SUPPORTED}")
        if not has_ecn:
            reasons.append(f"no {host.ecn_dir(ifname)} (mlx5 ecn interface)")
        if reasons:
            entry["reason"] = "; ".join(reasons)
            support[ifname] = entry
            needs = bool(want.pfc_priorities) or bool(want.ecn_priorities)
            if needs and not lab:
                raise QosError(f"pfc_dcqcn: NIC {ifname} ({entry['driver']}) cannot do PFC/DCQCN: "
                               f"{entry['reason']}. Use a DCB-capable NIC (e.g. ConnectX with mlx5), or plan "
                               f"the target as the lab to record it as unsupported")
            continue
        support[ifname] = entry
        cur = Current(pfc=parse_pfc(out), dscp_map=_app(host, ifname), ets=_ets(host, ifname, want),
                      sysfs=host.read_sysfs(ifname, list(want.sysfs())))
        plan = plan_interface(ifname, want, cur, host.dcb)
        if plan.missing:
            raise QosError(f"pfc_dcqcn: NIC {ifname} lacks ecn files {', '.join(plan.missing)} under "
                           f"{host.ecn_dir(ifname)}; this driver cannot take the planned DCQCN settings")
        plans.append(plan)
        batch += batch_lines(ifname, want)
        sysfs_lines += [f"{host.ecn_dir(ifname).relative_to(host.root)}/{rel} {v}" for rel, v in want.sysfs().items()]
    return Outcome(plans, support, batch, sysfs_lines)


def _app(host: Host, ifname: str) -> dict[int, list[int]]:
    rc, out, err = host.dcb_show("app", ifname)
    if rc != 0:
        raise QosError(f"pfc_dcqcn: `dcb -j app show dev {ifname}` failed (rc {rc}): {err.strip()}")
    return parse_app_dscp(out)


def _ets(host: Host, ifname: str, want: Desired) -> dict[str, list[Any]] | None:
    if not want.ets:
        return None
    rc, out, err = host.dcb_show("ets", ifname)
    if rc != 0:
        raise QosError(f"pfc_dcqcn: `dcb -j ets show dev {ifname}` failed (rc {rc}): {err.strip()}")
    return parse_ets(out)


def write_if_changed(path: Path, text: str) -> tuple[bool, str]:
    old = path.read_text() if path.exists() else ""
    if old == text:
        return False, old
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return True, old


def apply(host: Host, outcome: Outcome, state_dir: Path, check_mode: bool) -> tuple[bool, list[dict[str, Any]]]:
    """Run the planned changes and write the boot-time replay files; returns (changed, diffs)."""
    changed = False
    diffs: list[dict[str, Any]] = []
    for plan in outcome.plans:
        if not plan.changed:
            continue
        changed = True
        diffs.append({"before_header": f"{plan.ifname} (before)", "after_header": f"{plan.ifname} (after)",
                      "before": json.dumps(plan.before, indent=1, sort_keys=True) + "\n",
                      "after": json.dumps(plan.after, indent=1, sort_keys=True) + "\n"})
        if check_mode:
            continue
        for argv in plan.commands:
            host.run(argv)
        for rel, value in plan.writes:
            host.write_sysfs(plan.ifname, rel, value)
    if outcome.batch:
        files = {state_dir / "pfc_dcqcn.dcb": "\n".join(outcome.batch) + "\n",
                 state_dir / "pfc_dcqcn.sysfs": "\n".join(outcome.sysfs_lines) + "\n"}
        for path, text in files.items():
            old = path.read_text() if path.exists() else ""
            if old != text:
                changed = True
                diffs.append({"before_header": str(path), "after_header": str(path), "before": old, "after": text})
                if not check_mode:
                    write_if_changed(path, text)
    return changed, diffs


def main() -> None:  # pragma: no cover - exercised through Ansible in molecule
    module = AnsibleModule(
        argument_spec={
            "interfaces": {"type": "list", "elements": "str", "required": True},
            "trust": {"type": "str", "choices": ["dscp", "pcp"], "default": "dscp"},
            "dscp_map": {"type": "list", "elements": "dict", "required": True},
            "pfc_priorities": {"type": "list", "elements": "int", "required": True},
            "ets": {"type": "dict", "required": False},
            "ecn_priorities": {"type": "list", "elements": "int", "required": True},
            "cnp_dscp": {"type": "int", "required": True},
            "cnp_priority": {"type": "int", "required": True},
            "rp_params": {"type": "dict", "required": True},
            "np_params": {"type": "dict", "required": True},
            "lab": {"type": "bool", "default": False},
            "state_dir": {"type": "path", "default": "/etc/clustersmith"},
            "sysfs_root": {"type": "path", "default": "/sys"},
            "dcb": {"type": "str", "default": "dcb"},
        },
        supports_check_mode=True,
    )
    p: dict[str, Any] = module.params  # AnsibleModule is untyped: its params as the argument spec makes them
    host = Host(p["sysfs_root"], module.get_bin_path(p["dcb"], required=True))
    try:
        want = Desired.from_params(p)
        outcome = survey(host, p["interfaces"], want, p["lab"])
        changed, diffs = apply(host, outcome, Path(p["state_dir"]), module.check_mode)
    except (QosError, ValueError, KeyError, OSError) as exc:
        module.fail_json(msg=str(exc))
    commands = [" ".join(c) for plan in outcome.plans for c in plan.commands]
    module.exit_json(changed=changed, diff=diffs, support=outcome.support, commands=commands,
                     ansible_facts={"pfc_dcqcn_support": outcome.support})


if __name__ == "__main__":
    main()
