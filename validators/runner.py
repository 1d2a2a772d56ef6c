"""Fan the acceptance tools out over the inventory with ansible-runner and fill a results folder.

Each step is one playbook from ``validators/playbooks`` run on every host it concerns at once (forks = hosts),
under a timeout. What a host's tasks return is read from ansible-runner's events: output files are fetched
by the playbook, command output is written here. A host where a tool could not run (unreachable, binary
missing, mount absent) is recorded in ``setup-errors.json`` against the checks that needed it, so it is
reported as a setup error and never as a measured miss. What the runner did that a reader of the results should
know (a perftest pair measured on its second attempt) goes to ``runner-notes.json`` and into the check's notes.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import math
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import ansible_runner

from blueprints.blueprint import Blueprint, Check, FioWorkload
from validators.inventory import Inventory, rdma_record
from validators.safety import WritePlan

PLAYBOOKS = Path(__file__).resolve().parent / "playbooks"
PERFTEST_PORT = 18515
Progress = Callable[[str, str], None]  # (step, message)


@dataclass
class HostOutcome:
    ok: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    unreachable: str | None = None
    retried: list[str] = field(default_factory=list)  # failures of a task's earlier tries (``until``/``retries``)

    @property
    def problem(self) -> str | None:
        if self.unreachable is not None:
            return f"unreachable: {self.unreachable}"
        return self.failed[0] if self.failed else None


def _failure(task: str, res: dict[str, Any]) -> str:
    text = str(res.get("msg") or res.get("stderr") or res.get("stdout") or "failed").strip()
    output = str(res.get("stderr") or res.get("stdout") or "").strip()
    if text == "non-zero return code" and output:  # the command module's words; the tool's own say why
        text = f"exit {res.get('rc')}: {output.splitlines()[-1].strip()}"
    cmd = res.get("cmd")
    program = (cmd[0] if isinstance(cmd, list) else str(cmd).split()[0]) if cmd else None
    not_run = "No such file or directory" in text or (text == "Error executing command." and str(res.get("rc")) == "2"
                                                      and not res.get("stdout") and not res.get("stderr"))
    if program and not_run:  # the command module could not start the program (ENOENT)
        text = f"{program}: command not found"
    return f"{task}: {text.splitlines()[-1] if text else 'failed'}"


def ansible_env(bp: Blueprint) -> dict[str, str]:
    """Ansible's settings for every play. SSH host keys are checked on every target but the lab, whose VMs make new
    keys at each boot (its inventory also turns checking off per host: stacks/lab/inventory.py)."""
    env = {"ANSIBLE_RETRY_FILES_ENABLED": "False", "ANSIBLE_NOCOLOR": "True",
           "ANSIBLE_HOST_KEY_CHECKING": "False" if bp.target.provider == "lab" else "True"}
    return env


class Runner:
    def __init__(self, bp: Blueprint, build_dir: Path, inventory: Inventory, results: Path,
                 progress: Progress, timeout_scale: float = 1.0) -> None:
        self.bp = bp
        self.build_dir = build_dir
        self.inventory = inventory
        self.results = results
        self.progress = progress
        self.scale = timeout_scale
        self.setup_errors: dict[str, dict[str, str]] = {}
        self.notes: dict[str, list[str]] = {}
        self.fio_window: tuple[float, float] | None = None  # wall-clock start and end of the fio workloads
        self.rdma: dict[str, dict[int, dict[str, Any]]] = {}  # host -> rail -> what the rdma role recorded

    # -- plumbing ----------------------------------------------------------------------------------------

    def _play(self, step: str, playbook: str, hosts: list[str], extravars: dict[str, Any],
              timeout: float) -> dict[str, HostOutcome]:
        outcomes = {h: HostOutcome() for h in hosts}
        if not hosts:
            return outcomes
        data = self.results / ".ansible-runner" / step
        data.mkdir(parents=True, exist_ok=True)

        def on_event(event: dict[str, Any]) -> bool:
            ed = event.get("event_data", {})
            host, task, res = ed.get("host"), ed.get("task", ""), ed.get("res", {})
            kind = event.get("event", "")
            if host in outcomes:
                if kind in ("runner_on_ok", "runner_item_on_ok"):
                    outcomes[host].ok.setdefault(task, []).append(res)
                elif kind in ("runner_on_failed", "runner_item_on_failed") and not ed.get("ignore_errors"):
                    outcomes[host].failed.append(_failure(task, res))
                elif kind == "runner_retry":
                    outcomes[host].retried.append(_failure(task, res))
                elif kind == "runner_on_unreachable":
                    outcomes[host].unreachable = str(res.get("msg", "unreachable")).strip()
                if kind in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable"):
                    self.progress(step, f"{host}: {task} {'ok' if kind == 'runner_on_ok' else kind[10:]}")
            return True

        run = ansible_runner.run(
            private_data_dir=str(data), project_dir=str(PLAYBOOKS), playbook=playbook,
            inventory=self.inventory.path, extravars={**extravars, "accept_hosts": hosts},
            forks=max(len(hosts), 5), timeout=int(timeout * self.scale) + 60, quiet=True, event_handler=on_event,
            envvars=ansible_env(self.bp),
        )
        if run.status == "timeout":
            for o in outcomes.values():
                if o.problem is None:
                    o.failed.append(f"timed out after {int(timeout * self.scale) + 60} s")
        elif run.status not in ("successful", "failed"):
            for o in outcomes.values():
                o.failed.append(f"ansible-runner ended {run.status}: see {data}")
        return outcomes

    def _record(self, check_ids: list[str], outcomes: dict[str, HostOutcome]) -> None:
        for host, o in outcomes.items():
            if o.problem is not None:
                for cid in check_ids:
                    self.setup_errors.setdefault(cid, {})[host] = o.problem

    def _write(self, *parts: str, text: str) -> None:
        path = self.results.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    # -- steps ---------------------------------------------------------------------------------------------

    def facts(self) -> None:
        hosts = sorted(self.inventory.hosts)
        outcomes = self._play("facts", "facts.yml", hosts, {}, 120)
        facts = {h: {"gpus": int(o.ok.get("Find the GPUs the NVIDIA driver exposes", [{}])[0].get("matched", 0)),
                     "rails": len(self.inventory.hosts[h].rails)} for h, o in outcomes.items() if o.problem is None}
        self._write("host-facts.json", text=json.dumps(facts, indent=2))
        for h, o in outcomes.items():
            record = o.ok.get("Read the rails record of the rdma role", [{}])[0].get("content")
            self.rdma[h] = rdma_record(base64.b64decode(record).decode() if record else "")
        self._record(["nccl.allreduce_busbw"], outcomes)

    def fio(self, workload: FioWorkload, checks: list[Check], write: WritePlan) -> None:
        clients = self.inventory.group("gpu_clients")
        job = self._job_file(workload, write)
        timeout = workload.runtime_s.value + workload.ramp_s + 60 + workload.size.value.value * \
            workload.numjobs.value / 2e6
        dest = self.results / "fio" / workload.name
        dest.mkdir(parents=True, exist_ok=True)
        started = time.time()
        outcomes = self._play(f"fio-{workload.name}", "fio.yml", clients, {
            "accept_workload": workload.name, "accept_job_file": str(job), "accept_results": str(dest),
            "accept_target_kind": write.kind, "accept_target": write.path, "accept_mount": write.mount or "",
            "accept_scratch_nqns": list(write.scratch_nqns), "accept_timeout": int(timeout * self.scale),
        }, timeout)
        ended = time.time()
        self.fio_window = (started, ended) if self.fio_window is None else (self.fio_window[0], ended)
        for host, o in outcomes.items():
            if (dest / f"{host}.json").is_file():
                o.failed.clear()  # fio ran and wrote its report: what it says is measured, not a setup error
            elif o.problem is None:
                o.failed.append("fio wrote no JSON report")
        self._record([c.id for c in checks], outcomes)

    def _job_file(self, workload: FioWorkload, write: WritePlan) -> Path:
        source = self.build_dir / "acceptance" / "fio" / f"{workload.name}.fio"
        target = self.results / ".jobs" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        if write.kind == "directory":
            text = re.sub(r"(?m)^directory=.*$", f"directory={write.path}", text)
        elif write.kind == "device":
            text = re.sub(r"(?m)^directory=.*\n", "", text)
            text = re.sub(r"(?m)^filename_format=.*$", f"filename={write.path}\n"
                          f"offset_increment={int(workload.size.value.value)}", text)
        target.write_text(text, encoding="utf-8")
        return target

    def cleanup(self, write: WritePlan) -> None:
        if write.kind in ("scratch_dir", "directory"):
            self._play("cleanup", "cleanup.yml", self.inventory.group("gpu_clients"), {"accept_target": write.path},
                       120)

    def perftest(self, check: Check, tool: str, args: list[str], duration_s: int) -> None:
        """Every client against a storage target, rail by rail; a target serves one client at a time."""
        clients = self.inventory.group("gpu_clients")
        servers = self.inventory.group("storage_targets") or clients[-1:]
        rails = sorted({r.index for h in clients for r in self.inventory.hosts[h].rails})
        for rail in rails:
            queue = [c for c in clients if c not in servers]
            while queue:
                wave = dict(zip(queue[: len(servers)], servers, strict=False))
                queue = queue[len(servers):]
                self._perftest_wave(check, tool, args, duration_s, rail, wave)

    def _perftest_wave(self, check: Check, tool: str, args: list[str], duration_s: int, rail: int,
                       wave: dict[str, str], attempt: int = 1) -> None:
        """One wave of pairs; a pair whose client failed is measured once more, servers restarted, and the first
        attempt's failure kept as a note. A perftest server serves one connection and exits, so the client's own
        retries cannot recover a run that connected and then failed (Soft-RoCE under TCG: a completion error)."""
        pairs: dict[str, dict[str, Any]] = {}
        for client, server in wave.items():
            address = next((r.address for r in self.inventory.hosts[server].rails if r.index == rail), None)
            if address is None:
                self.setup_errors.setdefault(check.id, {})[client] = f"{server} has no address on rail {rail}"
                continue
            found = {h: self.rdma.get(h, {}).get(rail) for h in (client, server)}
            if not all(found.values()):
                host = next(h for h, f in found.items() if not f)
                self.setup_errors.setdefault(check.id, {})[client] = (
                    f"{host} has no RDMA device recorded for rail {rail} (/etc/ansible/facts.d/rdma.fact: "
                    f"run the rdma role)")
                continue
            for host, f in found.items():
                gid = f.get("gid_index") if f else None
                pairs[host] = {"device": f["device"] if f else "", "port": PERFTEST_PORT + rail, "address": address,
                               "gid": [] if gid is None else ["-x", str(gid)]}
        clients = [c for c in wave if c in pairs]
        servers = sorted({wave[c] for c in clients})
        timeout = duration_s + 60
        step = f"{tool}-rail{rail}-{'-'.join(clients)}" + (f"-attempt{attempt}" if attempt > 1 else "")
        outcomes = self._play(step, "perftest.yml", sorted(set(clients) | set(servers)), {
            "accept_tool": tool, "accept_args": args, "accept_pairs": pairs, "accept_servers": servers,
            "accept_clients": clients, "accept_timeout": int(timeout * self.scale),
        }, timeout * 2)
        failed: dict[str, str] = {}  # client -> why, in the words of the host that failed
        measure = "Run the client against the server's rail address"
        for client in clients:
            res = outcomes[client].ok.get(measure, [])
            if res and res[-1].get("rc") == 0:
                self._write(tool, f"rail{rail}", f"{client}.txt", text=str(res[-1].get("stdout", "")))
            else:
                failed[client] = outcomes[client].problem or outcomes[wave[client]].problem or "no output"
        ran = [c for c in failed if (outcomes[c].problem or "").startswith(measure)]
        if attempt == 1 and ran:
            for client in ran:  # the first try's own words: later tries found the server gone
                why = failed.pop(client)
                first = outcomes[client].retried[0] if outcomes[client].retried else why
                self.notes.setdefault(check.id, []).append(
                    f"{client}: first attempt failed (rail {rail} to {wave[client]}: {first}); measured again")
            self._perftest_wave(check, tool, args, duration_s, rail, {c: wave[c] for c in ran}, attempt + 1)
        for client, why in failed.items():
            self.setup_errors.setdefault(check.id, {})[client] = f"rail {rail} to {wave[client]}: {why}"

    def probe(self, probes: list[str], check_ids: dict[str, list[str]]) -> None:
        clients = self.inventory.group("gpu_clients")
        prometheus = self.monitoring_hosts()[:1]
        hosts = sorted(set(clients) | set(prometheus))
        url = self.prometheus_url(prometheus[0]) if prometheus else ""
        cache_query = self.cache_query_url(url, check_ids.get("cache", [])) if "cache" in probes else None
        if "cache" in probes and cache_query is None:
            probes = [p for p in probes if p != "cache"]
            for cid in check_ids["cache"]:
                self.setup_errors.setdefault(cid, {})["cluster"] = (
                    "no fio workload ran in this acceptance run: the hit ratio is counted over the fio workloads' "
                    "window")
        outcomes = self._play("probe", "probe.yml", hosts, {
            "accept_probes": probes, "accept_clients": clients, "accept_prometheus": prometheus,
            "accept_settle_s": self.paths_settle_s(), "accept_reset_extra_s": self.reset_settle_extra_s(),
            "accept_prometheus_url": url, "accept_cache_query_url": cache_query or "",
            "accept_prometheus_ca": self.bp.monitoring.auth.ca_file,
            "accept_prometheus_user": self.bp.monitoring.auth.username}, 180)
        for host in clients:
            o = outcomes[host]
            if "nvme" in probes:
                listed = o.ok.get("List the NVMe subsystems and their paths", [])
                if listed:
                    self._write("nvme", f"{host}.json", text=str(listed[-1].get("stdout", "")))
                policies = {r["item"]["path"].rsplit("/", 1)[-1]: _b64(r) for r in
                            o.ok.get("Read each subsystem's I/O policy", []) if "item" in r}
                if policies:
                    self._write("nvme", f"{host}.iopolicy.json", text=json.dumps(policies, indent=2))
            if "qos" in probes:
                tos = {r["item"]["path"]: _b64(r) for r in o.ok.get("Read the RDMA CM default ToS of each device", [])
                       if "item" in r}
                self._write("qos", host, "rdma_cm_tos.json", text=json.dumps(tos, indent=2))
                for task, name in (("Read the NCCL configuration file", "nccl.conf"),
                                   ("Read the NVMe-oF discovery configuration", "discovery.conf")):
                    found = o.ok.get(task, [])
                    if found and "content" in found[-1]:
                        self._write("qos", host, name, text=_b64(found[-1]))
        if "cache" in probes:  # storage_tiering puts a cache on every GPU client: each should have a ratio
            self._write("cache-hosts.json", text=json.dumps(clients, indent=2))
        for host in prometheus:
            o = outcomes[host]
            for task, name in (("Read the scrape targets", "targets.json"),
                               ("Query the dm-cache read hit ratio", "cache_hit_ratio.json")):
                res = o.ok.get(task, [])
                if res and "content" in res[-1]:
                    self._write("prometheus", name, text=str(res[-1]["content"]))
        for probe, ids in check_ids.items():
            relevant = prometheus if probe in ("targets", "cache") else clients
            self._record(ids, {h: outcomes[h] for h in relevant})
        if not prometheus:
            planned = ", ".join(self.bp.hosts_by_role().get("monitoring", [])) or "none"
            for cid in check_ids.get("targets", []) + check_ids.get("cache", []):
                self.setup_errors.setdefault(cid, {})["inventory"] = (
                    f"no monitoring host: the Blueprint's ({planned}) are not in the inventory, and its group "
                    "monitoring is empty")

    def cache_query_url(self, prometheus_url: str, check_ids: list[str]) -> str | None:
        """The instant query of the plan's hit ratio over the fio workloads' own window, at its end: hits and misses
        counted from the first workload's start to the last one's end; None when no workload ran."""
        if self.fio_window is None:
            return None
        check = next(c for c in self.bp.acceptance.checks if c.id in check_ids)
        start, end = self.fio_window
        query = self.bp.monitoring.query(check.args["query"]).over(f"{max(1, math.ceil(end - start))}s")
        return f"{prometheus_url}/api/v1/query?{urlencode({'query': query, 'time': f'{end:.3f}'})}"

    def paths_settle_s(self) -> int:
        """How long a path that is reconnecting may take before the paths check judges it: three of the
        Blueprint's reconnect delays (a keep-alive hiccup under load reconnects within one or two)."""
        plan = self.bp.storage.nvmeof
        return 3 * plan.reconnect_delay.value if plan is not None else 0

    def reset_settle_extra_s(self) -> int:
        """How long past the host's admin command timeout (``nvme_core`` ``admin_timeout``, read on the host) a path
        in error recovery ("resetting") may take: two reconnect delays, one reconnect attempt and its margin. The
        recovery waits out that timeout for a stuck admin command, then reconnects after one reconnect delay."""
        plan = self.bp.storage.nvmeof
        return 2 * plan.reconnect_delay.value if plan is not None else 0

    def monitoring_hosts(self) -> list[str]:
        """Where Prometheus runs: the Blueprint's monitoring hosts (the monitoring role's ``monitoring_servers``)
        that the inventory has, else the inventory's ``monitoring`` group. On the lab Prometheus shares the
        storage target, which the lab's inventory lists under storage_targets only."""
        planned = [h for h in self.bp.hosts_by_role().get("monitoring", []) if h in self.inventory.hosts]
        return planned or self.inventory.group("monitoring")

    def prometheus_url(self, host: str) -> str:
        """Prometheus as its host reaches it, over TLS: on the address in the plan's listen network, else by the
        host's name (the monitoring role resolves it to that address; both are in the host's certificate)."""
        mon = self.bp.monitoring
        port = next((j.port for j in mon.scrape if j.exporter == "prometheus"), 9090)
        network = ipaddress.IPv4Network(mon.listen_cidr.value)
        address = next((r.address for r in self.inventory.hosts[host].rails
                        if ipaddress.IPv4Address(r.address) in network), host)
        return f"{mon.auth.scheme}://{address}:{port}"

    def finish(self) -> None:
        self._write("setup-errors.json", text=json.dumps(self.setup_errors, indent=2))
        self._write("runner-notes.json", text=json.dumps(self.notes, indent=2))
        shutil.rmtree(self.results / ".jobs", ignore_errors=True)


def _b64(res: dict[str, Any]) -> str:
    return base64.b64decode(str(res.get("content", ""))).decode("utf-8", errors="replace").strip()
