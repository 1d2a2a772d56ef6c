"""The runner for real: ansible-runner runs the playbooks and fio on a host reached through Ansible's local
connection (the lab tier does the same over SSH into VMs). Setup failures come back as setup errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from blueprints.blueprint import Check, load_blueprint
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import build
from tests.conftest import BIN
from validators.evaluate import evaluate
from validators.inventory import load_inventory, rdma_record
from validators.results import Results
from validators.runner import HostOutcome, Runner, _failure

REPO = Path(__file__).resolve().parents[2]
RDMA = REPO / "tests" / "fixtures" / "rdma"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder, _ = build(plan(load_requirements(REPO / "examples" / "lab.yaml")), tmp_path_factory.mktemp("out"))
    return folder


def inventory(tmp_path: Path, **host: object) -> Path:
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {"gpu_clients": {"hosts": {"local-1": host}}}}}))
    return path


LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def accept(out: Path, *args: str | Path, path: str = f"{BIN}:/usr/bin:/bin") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "validators", "accept", str(out), *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=600, env={"PATH": path, "COLUMNS": "200"})


def latest_report(out: Path) -> dict[str, dict[str, object]]:
    run = sorted((out / "acceptance" / "runs").iterdir())[-1]
    return {c["id"]: c for c in json.loads((run / "report.json").read_text())["checks"]}


def test_runs_fio_for_real_and_cleans_its_scratch_files(out: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    r = accept(out, "--inventory", inventory(tmp_path, **LOCAL), "--fio-target", scratch, "--destructive",
               "--only", "storage.latency_p99,nccl.allreduce_busbw")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"fio will write 1 file(s) of up to 67 MB per client into {scratch}" in r.stdout
    checks = latest_report(out)
    assert checks["storage.latency_p99"]["status"] == "info" and float(checks["storage.latency_p99"]["measured"]) > 0
    assert checks["nccl.allreduce_busbw"]["status"] == "not_applicable"
    run = sorted((out / "acceptance" / "runs").iterdir())[-1]
    assert (run / "fio" / "rand_read_4k" / "local-1.json").is_file()
    assert (run / "report.html").is_file() and (run / "junit.xml").is_file()
    assert list(scratch.iterdir()) == [], "the scratch files are removed afterwards"


def test_a_missing_fio_is_a_setup_error(out: Path, tmp_path: Path) -> None:
    bin_without_fio = tmp_path / "bin"
    bin_without_fio.mkdir()
    for tool in Path("/usr/bin").iterdir():
        if tool.name != "fio":
            (bin_without_fio / tool.name).symlink_to(tool)
    r = accept(out, "--inventory", inventory(tmp_path, **LOCAL), "--fio-target", tmp_path / "s", "--destructive",
               "--only", "storage.mixed", path=f"{BIN}:{bin_without_fio}")
    assert r.returncode == 2, r.stdout + r.stderr
    got = latest_report(out)["storage.mixed"]
    assert got["status"] == "setup_error" and "fio: command not found" in str(got["message"])


def test_an_unreachable_host_is_a_setup_error(out: Path, tmp_path: Path) -> None:
    inv = inventory(tmp_path, ansible_host="127.0.0.1", ansible_port=9, ansible_user="nobody",
                    ansible_ssh_common_args="-o ConnectTimeout=5 -o BatchMode=yes -o StrictHostKeyChecking=no")
    r = accept(out, "--inventory", inv, "--only", "nvmeof.paths")
    assert r.returncode == 2, r.stdout + r.stderr
    got = latest_report(out)["nvmeof.paths"]
    assert got["status"] == "setup_error" and "local-1: unreachable" in str(got["message"])


def test_the_plan_scratch_must_be_on_its_mount_before_anything_is_written(out: Path, tmp_path: Path) -> None:
    r = accept(out, "--inventory", inventory(tmp_path, **LOCAL), "--only", "storage.latency_p99")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "in /mnt/clustersmith/.clustersmith-accept (plan scratch on /mnt/clustersmith)" in r.stdout
    got = latest_report(out)["storage.latency_p99"]
    assert "tiered file system is mounted" in str(got["message"])
    assert not Path("/mnt/clustersmith/.clustersmith-accept").exists()


def test_writing_outside_the_scratch_needs_destructive(out: Path, tmp_path: Path) -> None:
    before = sorted((out / "acceptance" / "runs").iterdir()) if (out / "acceptance" / "runs").exists() else []
    r = accept(out, "--inventory", inventory(tmp_path, **LOCAL), "--fio-target", "/dev/vdz", "--only",
               "storage.mixed")
    assert r.returncode == 2
    assert "--fio-target: not a scratch area of the plan" in r.stderr
    assert "would overwrite the data on /dev/vdz on local-1; pass --destructive" in r.stderr.replace("\n", " ")
    after = sorted((out / "acceptance" / "runs").iterdir()) if (out / "acceptance" / "runs").exists() else []
    assert after == before, "nothing ran"


def test_playbooks_pass_ansible_lint_production() -> None:
    lint = BIN / "ansible-lint"
    assert lint.exists(), "ansible-lint is a dev dependency of the roles; pip install ansible-lint"
    r = subprocess.run([str(lint), "--offline", "--profile", "production", "validators/playbooks/"], cwd=REPO,
                       capture_output=True, text=True, timeout=600, env={"PATH": f"{BIN}:/usr/bin:/bin",
                                                                         "HOME": str(Path.home())})
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_failed_command_is_reported_with_the_tools_own_last_words() -> None:
    res = {"msg": "non-zero return code", "rc": 1, "cmd": ["ib_write_bw", "-d", "rxe0", "10.77.0.1"],
           "stdout": "", "stderr": "Couldn't connect to 10.77.0.1:18515\nUnable to open file descriptor for socket\n"}
    assert _failure("Run the client", res) == "Run the client: exit 1: Unable to open file descriptor for socket"
    assert _failure("Run fio", {"msg": "", "rc": 2, "cmd": ["fio"], "stderr": "fio: No such file or directory"}) \
        == "Run fio: fio: command not found"


def test_prometheus_is_looked_for_on_the_blueprints_monitoring_host(out: Path, tmp_path: Path) -> None:
    """The lab's inventory lists its storage target, where the Blueprint puts Prometheus, under storage_targets
    only: the probe must still query it there, not report a missing monitoring group."""
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {"gpu_clients": {"hosts": {"local-1": LOCAL}},
                                                         "storage_targets": {"hosts": {"storage-1": LOCAL}}}}}))
    r = accept(out, "--inventory", path, "--only", "monitoring.targets_up")
    assert r.returncode == 2, r.stdout + r.stderr
    got = latest_report(out)["monitoring.targets_up"]
    assert got["status"] == "setup_error" and "storage-1" in str(got["message"]), got["message"]
    assert "no monitoring host" not in str(got["message"])


class ScriptedRunner(Runner):
    """The runner with ansible-runner's answers scripted per perftest attempt (the playbook itself runs in the lab
    tier: tests/lab/test_accept_lab.py): what the retry policy does with them."""

    def __init__(self, out: Path, results: Path, answers: list[dict[str, HostOutcome]]) -> None:
        rails = {name: {"rails": [{"index": i, "address": f"10.77.{i}.{n}"} for i in (0, 1)]}
                 for n, name in enumerate(("storage-1", "client-1", "client-2"), start=1)}
        path = results / "inventory.yml"
        path.write_text(yaml.safe_dump({"all": {"children": {
            "storage_targets": {"hosts": {"storage-1": rails["storage-1"]}},
            "gpu_clients": {"hosts": {c: rails[c] for c in ("client-1", "client-2")}}}}}))
        super().__init__(load_blueprint(out), out, load_inventory(path), results / "run", lambda s, m: None)
        self.answers = answers
        # every lab host's rdma record as rdma_links writes it, from the recorded `rdma -j link show` (client-2)
        links = json.loads((REPO / "tests" / "roles" / "fixtures" / "rdma-link-show.json").read_text())
        record = {"rails": [{"index": int(x["netdev"][-1]), "name": x["netdev"], "netdev": x["netdev"],
                             "device": x["ifname"], "port": x["port"], "gid_index": 1} for x in links]}
        self.rdma = {h: rdma_record(json.dumps(record)) for h in rails}
        self.steps: list[str] = []
        self.extravars: list[dict[str, object]] = []

    def _play(self, step: str, playbook: str, hosts: list[str], extravars: dict[str, object],
              timeout: float) -> dict[str, HostOutcome]:
        self.steps.append(step)
        self.extravars.append(extravars)
        return {h: self.answers[len(self.steps) - 1].get(h, HostOutcome()) for h in hosts}


MEASURE = "Run the client against the server's rail address"
COMPLETION_ERROR = f"{MEASURE}: exit 1: Failed to complete run_iter_bw function successfully"


def perftest_check(out: Path) -> Check:
    return next(c for c in load_blueprint(out).acceptance.checks if c.id == "rdma.write_bw")


def test_a_perftest_pair_that_failed_mid_run_is_measured_again_and_noted(out: Path, tmp_path: Path) -> None:
    """A perftest server serves one connection: a client that connected and then failed (a completion error
    under Soft-RoCE) cannot retry against it. The wave runs again with the server restarted; the note stays."""
    recorded = (RDMA / "lab-ib_write_bw-rail0.client.txt").read_text()
    gone = f"{MEASURE}: exit 1: Unable to open file descriptor for socket connection"
    runner = ScriptedRunner(out, tmp_path, [{"client-2": HostOutcome(failed=[gone], retried=[COMPLETION_ERROR, gone])},
                                            {"client-2": HostOutcome(ok={MEASURE: [{"rc": 0, "stdout": recorded}]})}])
    runner._perftest_wave(perftest_check(out), "ib_write_bw", [], 10, 0, {"client-2": "storage-1"})
    runner.finish()
    assert runner.steps == ["ib_write_bw-rail0-client-2", "ib_write_bw-rail0-client-2-attempt2"]
    assert (runner.results / "ib_write_bw" / "rail0" / "client-2.txt").read_text() == recorded
    assert runner.setup_errors == {}
    judged = {r.id: r for r in evaluate(load_blueprint(out), Results(runner.results), ["rdma.write_bw"],
                                        strict=False)}
    assert judged["rdma.write_bw"].status == "info"
    assert f"client-2: first attempt failed (rail 0 to storage-1: {COMPLETION_ERROR}); measured again" in \
        judged["rdma.write_bw"].notes, judged["rdma.write_bw"].notes


def test_a_perftest_pair_that_fails_twice_is_a_setup_error_and_one_not_run_is_not_retried(out: Path,
                                                                                           tmp_path: Path) -> None:
    runner = ScriptedRunner(out, tmp_path, [{"client-1": HostOutcome(unreachable="ssh: connect timed out"),
                                             "client-2": HostOutcome(failed=[COMPLETION_ERROR])},
                                            {"client-2": HostOutcome(failed=[COMPLETION_ERROR])}])
    runner._perftest_wave(perftest_check(out), "ib_write_bw", [], 10, 0,
                          {"client-1": "storage-1", "client-2": "storage-1"})
    assert runner.steps == ["ib_write_bw-rail0-client-1-client-2", "ib_write_bw-rail0-client-2-attempt2"]
    assert runner.setup_errors["rdma.write_bw"] == {
        "client-1": "rail 0 to storage-1: unreachable: ssh: connect timed out",
        "client-2": f"rail 0 to storage-1: {COMPLETION_ERROR}"}


def test_the_cache_probe_names_the_hosts_with_a_cache(out: Path, tmp_path: Path) -> None:
    """storage_tiering caches every GPU client: the runner says so beside the Prometheus answer, so the check
    can name a client Prometheus has no hit ratio for."""
    runner = ScriptedRunner(out, tmp_path, [{}])
    runner.fio_window = (1796031000.0, 1796031130.4)
    runner.probe(["cache"], {"cache": ["cache.hit_ratio"]})
    assert Results(tmp_path / "run").cache_hosts() == ("client-1", "client-2")


def test_the_cache_probe_asks_the_plans_hit_ratio_over_the_fio_window_at_its_end(out: Path, tmp_path: Path) -> None:
    runner = ScriptedRunner(out, tmp_path, [{}])
    runner.fio_window = (1796031000.0, 1796031130.4)  # fio ran 130.4 s: the counters' increase over 131 s
    runner.probe(["cache", "targets"], {"cache": ["cache.hit_ratio"], "targets": ["monitoring.targets_up"]})
    url = urlsplit(str(runner.extravars[0]["accept_cache_query_url"]))
    asked = parse_qs(url.query)
    assert f"{url.scheme}://{url.netloc}" == "https://10.77.1.1:9090"  # the lab's Prometheus on rail 1, TLS
    assert asked["time"] == ["1796031130.400"]
    assert asked["query"] == [
        "increase(clustersmith_lvmcache_read_hits_total[131s]) / (increase(clustersmith_lvmcache_read_hits_total"
        "[131s]) + increase(clustersmith_lvmcache_read_misses_total[131s]))"]
    assert asked["query"] == [load_blueprint(out).monitoring.query("cache.read_hit_ratio").over("131s")]
    auth = load_blueprint(out).monitoring.auth  # the probe verifies the cluster CA and sends the monitoring user
    assert (runner.extravars[0]["accept_prometheus_ca"], runner.extravars[0]["accept_prometheus_user"]) == (
        auth.ca_file, auth.username)


def test_without_a_fio_window_the_hit_ratio_is_a_setup_error_and_not_asked(out: Path, tmp_path: Path) -> None:
    runner = ScriptedRunner(out, tmp_path, [{}])
    runner.probe(["cache", "targets"], {"cache": ["cache.hit_ratio"], "targets": ["monitoring.targets_up"]})
    assert runner.extravars[0]["accept_probes"] == ["targets"]
    assert "no fio workload ran" in runner.setup_errors["cache.hit_ratio"]["cluster"]


def test_perftest_uses_each_hosts_recorded_device_and_gid_and_names_a_missing_record(out: Path,
                                                                                   tmp_path: Path) -> None:
    runner = ScriptedRunner(out, tmp_path, [{}])
    runner._perftest_wave(perftest_check(out), "ib_write_bw", [], 10, 1, {"client-2": "storage-1"})
    pairs = runner.extravars[0]["accept_pairs"]
    assert pairs["client-2"]["device"] == "rxe1" and pairs["client-2"]["gid"] == ["-x", "1"]  # type: ignore[index]
    runner.rdma["storage-1"] = {}
    runner._perftest_wave(perftest_check(out), "ib_write_bw", [], 10, 0, {"client-1": "storage-1"})
    assert runner.setup_errors["rdma.write_bw"]["client-1"].startswith(
        "storage-1 has no RDMA device recorded for rail 0")


@pytest.mark.parametrize(("example", "checking"), [
    ("lab.yaml", "False"), ("cv-training-500tb.yaml", "True"), ("llm-training-16k.yaml", "True"),
    ("recsys-inference.yaml", "True")])
def test_host_keys_are_checked_on_every_target_but_the_lab(example: str, checking: str) -> None:
    from validators.runner import ansible_env

    bp = plan(load_requirements(REPO / "examples" / example))
    assert ansible_env(bp)["ANSIBLE_HOST_KEY_CHECKING"] == checking, bp.target.provider
