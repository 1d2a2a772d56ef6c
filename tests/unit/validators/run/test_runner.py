"""The runner for real: ansible-runner runs the playbooks and fio on a host reached through Ansible's local
connection (the lab tier does the same over SSH into VMs). Setup failures come back as setup errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from blueprints.blueprint import Check, load_blueprint
from blueprints.blueprint.check_args import FioArgs, NvmeArgs, args_as
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import build
from blueprints.render.acceptance import FioTarget, fio_job
from tests.conftest import BIN, require_tool
from validators.evaluate import evaluate
from validators.fio import parse_fio_file
from validators.inventory import load_inventory, rdma_record
from validators.results import Results
from validators.run import probe
from validators.run.fio import cut_short
from validators.run.jobs import Job, Record
from validators.run.perftest import Pair, compute_waves, plan_waves, run_waves, server_words, storage_waves
from validators.run.plumbing import HostOutcome, Session, ansible_env, failure

REPO = Path(__file__).resolve().parents[4]
RDMA = REPO / "tests" / "fixtures" / "rdma"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder, _ = build(plan(load_requirements(REPO / "examples" / "lab.yaml")), tmp_path_factory.mktemp("out"))
    return folder


@pytest.fixture(scope="module")
def short_fio(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lab's build folder with its latency workload cut to 1 s of ramp and 2 s measured (the plan's 2 + 10 s prove
    nothing more about the runner here): the tests that run fio for real, each fio run 9 s shorter."""
    bp = plan(load_requirements(REPO / "examples" / "lab.yaml"))
    workloads = tuple(w.model_copy(update={"ramp_s": 1, "runtime_s": w.runtime_s.model_copy(update={"value": 2})})
                      if w.name == "rand_read_4k" else w for w in bp.acceptance.workloads)
    short = bp.model_copy(update={"acceptance": bp.acceptance.model_copy(update={"workloads": workloads})})
    folder, _ = build(short, tmp_path_factory.mktemp("short"))
    return folder


def inventory(tmp_path: Path, names: tuple[str, ...] = ("local-1",), **host: object) -> Path:
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {"gpu_clients": {"hosts": {n: host for n in names}}}}}))
    return path


LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def accept(out: Path, *args: str | Path, path: str = f"{BIN}:/usr/bin:/bin") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "validators", "accept", str(out), *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=600, env={"PATH": path, "COLUMNS": "200"})


def latest_report(out: Path) -> dict[str, dict[str, object]]:
    run = sorted((out / "acceptance" / "runs").iterdir())[-1]
    return {c["id"]: c for c in json.loads((run / "report.json").read_text())["checks"]}


def steps_run(out: Path) -> list[str]:
    """The steps the latest run made, in order, from its own account of its time (timings.json)."""
    run = sorted((out / "acceptance" / "runs").iterdir())[-1]
    return [t["step"] for t in json.loads((run / "timings.json").read_text())]


def test_runs_fio_for_real_and_cleans_its_scratch_files(short_fio: Path, tmp_path: Path) -> None:
    out = short_fio
    require_tool("fio")
    scratch = tmp_path / "scratch"  # both planned lab clients, reached locally: the verdict covers the plan
    r = accept(out, "--inventory", inventory(tmp_path, ("client-1", "client-2"), **LOCAL), "--fio-target", scratch,
               "--destructive", "--only", "storage.latency_p99")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"fio will write 1 file(s) of up to 34 MB per client into {scratch}" in r.stdout
    checks = latest_report(out)
    assert checks["storage.latency_p99"]["status"] == "info" and float(checks["storage.latency_p99"]["measured"]) > 0
    run = sorted((out / "acceptance" / "runs").iterdir())[-1]
    assert (run / "fio" / "rand_read_4k" / "client-1.json").is_file()
    # both clients began at the runner's common start: their reports end within a second or two of each other
    ends = [json.loads((run / "fio" / "rand_read_4k" / f"{c}.json").read_text())["timestamp_ms"]
            for c in ("client-1", "client-2")]
    assert abs(ends[0] - ends[1]) < 3000, ends
    assert (run / "report.html").is_file() and (run / "junit.xml").is_file()
    assert list(scratch.iterdir()) == [], "the scratch files are removed afterwards"
    assert steps_run(out) == ["facts", "fio-rand_read_4k", "cleanup"]


def test_keep_scratch_reuses_the_files_laid_out_and_leaves_them(short_fio: Path, tmp_path: Path) -> None:
    """--keep-scratch: fio finds client-1's file already laid out (here by the test, a sparse file with an old mtime)
    and reads it as it is (same inode, mtime untouched), and the run leaves both clients' files for the next."""
    out = short_fio
    require_tool("fio")
    scratch = tmp_path / "scratch"
    scratch.mkdir(mode=0o700)
    size = next(w for w in load_blueprint(out).acceptance.workloads if w.name == "rand_read_4k").size.value.value
    laid_out = scratch / "clustersmith-accept.client-1.0"
    with laid_out.open("wb") as f:
        f.truncate(int(size))
    os.utime(laid_out, (1_000_000_000, 1_000_000_000))
    before = laid_out.stat()
    r = accept(out, "--inventory", inventory(tmp_path, ("client-1", "client-2"), **LOCAL), "--fio-target", scratch,
               "--destructive", "--keep-scratch", "--only", "storage.latency_p99")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "and keep them for the next run (--keep-scratch)" in " ".join(r.stdout.split())
    after = laid_out.stat()
    assert (after.st_ino, after.st_mtime) == (before.st_ino, 1_000_000_000), "fio laid the kept file out again"
    assert sorted(p.name for p in scratch.iterdir()) == ["clustersmith-accept.client-1.0",
                                                         "clustersmith-accept.client-2.0"]
    assert steps_run(out) == ["facts", "fio-rand_read_4k"], "no clean-up call"


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
    assert steps_run(out) == ["facts", "probe"], "no fio ran, so no cleanup call is made on the clients"


def test_the_plan_scratch_must_be_on_its_mount_before_anything_is_written(out: Path, tmp_path: Path) -> None:
    r = accept(out, "--inventory", inventory(tmp_path, **LOCAL), "--only", "storage.latency_p99")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "in /mnt/clustersmith/.clustersmith-accept (plan scratch on /mnt/clustersmith)" in r.stdout
    got = latest_report(out)["storage.latency_p99"]
    assert "file system is mounted where the plan says" in str(got["message"])
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
    assert failure("Run the client", res) == "Run the client: exit 1: Unable to open file descriptor for socket"
    assert failure("Run fio", {"msg": "", "rc": 2, "cmd": ["fio"], "stderr": "fio: No such file or directory"}) \
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


class ScriptedSession(Session):
    """The runner's session with ansible-runner's answers scripted per play or host job (the playbooks and jobs
    themselves run for real above and in the lab tier: tests/lab/test_accept_lab.py): each answer is the hosts'
    outcomes and the files the play or job would have brought back (path under the results folder -> text)."""

    def __init__(self, out: Path, results: Path, answers: list[tuple[dict[str, HostOutcome], dict[str, str]]]) -> None:
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
        self.jobs: list[Job] = []

    def _answer(self, step: str, hosts: list[str]) -> dict[str, HostOutcome]:
        self.steps.append(step)
        outcomes, files = self.answers[len(self.steps) - 1] if len(self.steps) <= len(self.answers) else ({}, {})
        for name, text in files.items():
            self.write(name, text=text)
        return {h: outcomes.get(h, HostOutcome()) for h in hosts}

    def play(self, step: str, playbook: str, hosts: list[str], extravars: dict[str, object], timeout: float,
             groups: dict[str, list[str]] | None = None) -> dict[str, HostOutcome]:
        self.extravars.append(extravars)
        return self._answer(step, hosts)

    def job(self, job: Job) -> dict[str, HostOutcome]:
        self.jobs.append(job)
        return self._answer(job.step, list(job.specs))


MEASURE = "Run the client against the server's rail address"
COMPLETION_ERROR = f"{MEASURE}: exit 1: Failed to complete run_iter_bw function successfully"
STORAGE_PAIR = Pair("storage", "client-2", 0, "storage-1", 0)


def perftest_check(out: Path) -> Check:
    return next(c for c in load_blueprint(out).acceptance.checks if c.id == "rdma.write_bw")


def pair_failed(key: str, final: str, *tries: str) -> HostOutcome:
    """What job_perftest.sh records for a pair whose client failed: each earlier try, then the last one."""
    return HostOutcome(records=[*(Record("retried", key, t) for t in tries), Record("failed", key, final)])


def test_a_perftest_pair_that_failed_mid_run_is_measured_again_and_noted(out: Path, tmp_path: Path) -> None:
    """A perftest server serves one connection: a client that connected and then failed (a completion error
    under Soft-RoCE) cannot retry against it. The pair runs again in a second job, its server started anew; the note
    stays."""
    recorded = (RDMA / "lab-ib_write_bw-rail0.client.txt").read_text()
    gone = f"{MEASURE}: exit 1: Unable to open file descriptor for socket connection"
    base = "ib_write_bw/rail0/client-2@storage-1"
    runner = ScriptedSession(out, tmp_path, [
        ({"client-2": pair_failed(base, gone, COMPLETION_ERROR, gone)}, {f"{base}.rc": "1\n",
                                                                          f"{base}.out": "partial\n"}),
        ({}, {f"{base}.rc": "0\n", f"{base}.txt": recorded})])
    run_waves(runner, perftest_check(out), "ib_write_bw", [], 10, [[STORAGE_PAIR]])
    runner.finish()
    assert runner.steps == ["ib_write_bw", "ib_write_bw-attempt2"]
    assert [list(j.specs) for j in runner.jobs] == [["storage-1", "client-2"]] * 2, "the server is started anew"
    assert (runner.results / f"{base}.txt").read_text() == recorded
    assert not (runner.results / f"{base}.out").exists(), "the failed attempt's output is not left to be read"
    assert runner.setup_errors == {}
    judged = {r.id: r for r in evaluate(load_blueprint(out), Results(runner.results), ["rdma.write_bw"],
                                        strict=False)}
    # only client-2's storage NIC 0 was scripted: the verdict says what the plan still lacks, and keeps the note
    assert judged["rdma.write_bw"].status == "setup_error"
    assert judged["rdma.write_bw"].coverage_shown == \
        "0 of 4 compute rail measurements, 1 of 4 storage rail measurements"
    assert "missing: rail0 client-1, rail1 client-1, rail1 client-2" in judged["rdma.write_bw"].message
    assert f"rail0 client-2@storage-1: first attempt failed ({COMPLETION_ERROR}); measured again" in \
        judged["rdma.write_bw"].notes, judged["rdma.write_bw"].notes


def test_a_perftest_pair_that_fails_twice_is_a_setup_error_and_one_not_run_is_not_retried(out: Path,
                                                                                           tmp_path: Path) -> None:
    pairs = [Pair("compute", "client-1", 0, "client-2", 0)]
    runner = ScriptedSession(out, tmp_path, [({"client-1": HostOutcome(unreachable="ssh: connect timed out")}, {})])
    run_waves(runner, perftest_check(out), "ib_write_bw", [], 10, [pairs])
    assert runner.steps == ["ib_write_bw"], "a client that never measured is not retried"
    assert runner.setup_errors["rdma.write_bw"] == {"rail0 client-1@client-2": "unreachable: ssh: connect timed out"}
    key = "ib_write_bw/rail0/client-2@storage-1"
    failing = {f"{key}.rc": "1\n"}
    runner = ScriptedSession(out, tmp_path, [({"client-2": pair_failed(key, COMPLETION_ERROR)}, failing),
                                             ({"client-2": pair_failed(key, COMPLETION_ERROR)}, failing)])
    run_waves(runner, perftest_check(out), "ib_write_bw", [], 10, [[STORAGE_PAIR]])
    assert runner.steps == ["ib_write_bw", "ib_write_bw-attempt2"]
    assert runner.setup_errors["rdma.write_bw"] == {"rail0 client-2@storage-1": COMPLETION_ERROR}


def test_a_pair_that_could_not_measure_names_what_its_server_said(out: Path, tmp_path: Path) -> None:
    """A client refused on every try says only that nothing listened; its server's own end says why: a server that
    waited its whole timeout had no client come (the client's host ran late past it), one that exited said so."""
    key, taken = "ib_write_bw/rail0/client-2@storage-1", "lab-ib_write_bw-port-taken.server"
    refused = f"{MEASURE}: exit 1: Unable to open file descriptor for socket connection"
    runner = ScriptedSession(out, tmp_path, [
        ({"client-2": pair_failed(key, refused)}, {f"{key}.rc": "1\n", f"{key}.server.rc": "124\n",
                                                   f"{key}.server": "WARNING: BW peak won't be measured\n"}),
        ({"client-2": pair_failed(key, refused)}, {f"{key}.rc": "1\n", f"{key}.server.rc": "1\n",
                                                   f"{key}.server": (RDMA / f"{taken}.txt").read_text(),
                                                   f"{key}.server.err": (RDMA / f"{taken}.err").read_text()})])
    run_waves(runner, perftest_check(out), "ib_write_bw", [], 10, [[STORAGE_PAIR]])
    # the first attempt's server waited its whole (10 + 60) s timeout: no client came
    assert runner.notes["rdma.write_bw"] == [f"rail0 client-2@storage-1: first attempt failed ({refused}; its server "
                                             "on storage-1 waited 70 s and no client came); measured again"]
    # the server's stderr, first lines first: the cause, then perftest's generic words (never the banner on stdout)
    assert runner.setup_errors["rdma.write_bw"] == {"rail0 client-2@storage-1": (
        f"{refused}; its server on storage-1 exited 1: Couldn't listen to port 18515 / Unable to open file descriptor "
        "for socket connection Unable to init the socket connection")}
    (runner.results / f"{key}.server.rc").write_text("0\n")
    assert server_words(runner, "ib_write_bw", STORAGE_PAIR, 260) is None, "a server that served said nothing wrong"


def test_only_the_failed_pairs_run_again_each_in_its_own_wave(out: Path, tmp_path: Path) -> None:
    """Three pairs fail after they ran, two in one storage wave (one on each of the target's NICs) and one in the
    next: the second job holds those three, in two waves a slot apart, the target serving both NICs at once in the
    first."""
    runner = ScriptedSession(out, tmp_path, [])
    waves, _ = plan_waves(runner)
    failing = {f"ib_write_bw/{pair}.rc": "1\n" for pair in (
        "rail0/client-1@storage-1", "rail1/client-2@storage-1", "rail0/client-2@storage-1")}
    runner.answers = [({}, failing)]
    run_waves(runner, perftest_check(out), "ib_write_bw", [], 10, waves)
    assert runner.steps == ["ib_write_bw", "ib_write_bw-attempt2"]
    first, again = runner.jobs
    assert first.aligned and again.aligned
    # each wave has ports of its own (a late client of wave 0 still finds its server while wave 1's serves)
    assert str(again.specs["storage-1"]["schedule"]).splitlines() == [
        "0 server rxe0 18515 1 - ib_write_bw/rail0/client-1@storage-1",
        "0 server rxe1 18516 1 - ib_write_bw/rail1/client-2@storage-1",
        "1 server rxe0 18517 1 - ib_write_bw/rail0/client-2@storage-1"]
    assert str(again.specs["client-1"]["schedule"]) == \
        "0 client rxe0 18515 1 10.77.0.1 ib_write_bw/rail0/client-1@storage-1"
    assert str(again.specs["client-2"]["schedule"]).splitlines() == [
        "0 client rxe1 18516 1 10.77.1.1 ib_write_bw/rail1/client-2@storage-1",
        "1 client rxe0 18517 1 10.77.0.1 ib_write_bw/rail0/client-2@storage-1"]


def test_the_cache_probe_names_the_hosts_with_a_cache(out: Path, tmp_path: Path) -> None:
    """storage_tiering caches every GPU client: the runner says so beside the Prometheus answer, so the check
    can name a client Prometheus has no hit ratio for."""
    runner = ScriptedSession(out, tmp_path, [])
    runner.fio_window = (1796031000.0, 1796031130.4)
    probe.run(runner, ["cache"], {"cache": ["cache.hit_ratio"]})
    assert Results(tmp_path / "run").cache_hosts() == ("client-1", "client-2")


def test_the_cache_probe_asks_the_plans_hit_ratio_over_the_fio_window_at_its_end(out: Path, tmp_path: Path) -> None:
    runner = ScriptedSession(out, tmp_path, [])
    runner.fio_window = (1796031000.0, 1796031130.4)  # fio ran 130.4 s: the counters' increase over 131 s
    probe.run(runner, ["cache", "targets"], {"cache": ["cache.hit_ratio"], "targets": ["monitoring.targets_up"]})
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


def test_the_paths_probe_settles_for_the_windows_the_blueprint_gives_the_check(out: Path, tmp_path: Path) -> None:
    runner = ScriptedSession(out, tmp_path, [])
    probe.run(runner, ["nvme"], {"nvme": ["nvmeof.paths"]})
    paths = next(c for c in runner.bp.acceptance.checks if c.id == "nvmeof.paths")
    delay = runner.bp.storage.nvmeof.reconnect_delay.value  # type: ignore[union-attr]
    args = args_as(paths.args, NvmeArgs)
    assert (args.settle.value, args.reset_extra.value) == (3 * delay, 2 * delay)
    for client in ("client-1", "client-2"):  # every client's own job settles for them
        assert runner.jobs[0].specs[client]["settle_s"] == 3 * delay
        assert runner.jobs[0].specs[client]["reset_extra_s"] == 2 * delay
    assert runner.steps == ["probe"], "the paths are a client probe: Prometheus is not asked"


class MeetingSession(ScriptedSession):
    """A scripted session whose play and host job each wait at one barrier for the other: run one after the other,
    the first would wait out the barrier's timeout and break it."""

    def __init__(self, out: Path, results: Path, answers: list[tuple[dict[str, HostOutcome], dict[str, str]]]) -> None:
        super().__init__(out, results, answers)
        self.meet = threading.Barrier(2, timeout=20)

    def play(self, step: str, playbook: str, hosts: list[str], extravars: dict[str, object], timeout: float,
             groups: dict[str, list[str]] | None = None) -> dict[str, HostOutcome]:
        self.meet.wait()
        return {h: HostOutcome(unreachable="Prometheus' host did not answer") for h in hosts}

    def job(self, job: Job) -> dict[str, HostOutcome]:
        self.meet.wait()
        return {h: HostOutcome(failed=["nvme list-subsys: exit 1"]) if h == "client-2" else HostOutcome()
                for h in job.specs}


def test_the_clients_and_prometheus_are_probed_side_by_side_and_each_answer_judges_its_own_checks(
        out: Path, tmp_path: Path) -> None:
    runner = MeetingSession(out, tmp_path, [])
    probe.run(runner, ["nvme", "targets"], {"nvme": ["nvmeof.paths"], "targets": ["monitoring.targets_up"]})
    assert not runner.meet.broken  # both were running at once
    assert set(runner.setup_errors["nvmeof.paths"]) == {"client-2"}
    assert set(runner.setup_errors["monitoring.targets_up"]) == {"storage-1"}
    assert "did not answer" in runner.setup_errors["monitoring.targets_up"]["storage-1"]


def test_a_step_that_raised_beside_another_is_raised_once_both_ended(out: Path, tmp_path: Path) -> None:
    runner = ScriptedSession(out, tmp_path, [])
    ended: list[str] = []

    def slow() -> None:
        time.sleep(0.3)
        ended.append("slow")

    def broken() -> None:
        raise RuntimeError("the play's inventory could not be written")

    with pytest.raises(RuntimeError, match="inventory could not be written"):
        runner.side_by_side(broken, slow)
    assert ended == ["slow"]


def test_without_a_fio_window_the_hit_ratio_is_a_setup_error_and_not_asked(out: Path, tmp_path: Path) -> None:
    runner = ScriptedSession(out, tmp_path, [])
    probe.run(runner, ["cache", "targets"], {"cache": ["cache.hit_ratio"], "targets": ["monitoring.targets_up"]})
    assert runner.extravars[0]["accept_probes"] == ["targets"]
    assert "no fio workload ran" in runner.setup_errors["cache.hit_ratio"]["cluster"]


def test_perftest_uses_each_hosts_recorded_device_and_gid_and_names_a_missing_record(out: Path,
                                                                                   tmp_path: Path) -> None:
    runner = ScriptedSession(out, tmp_path, [])
    run_waves(runner, perftest_check(out), "ib_write_bw", [], 10, [[Pair("storage", "client-2", 1, "storage-1", 1)]])
    # client-2's rail-1 device and GID index, against the server's rail-1 address
    assert runner.jobs[0].specs["client-2"]["schedule"] == \
        "0 client rxe1 18516 1 10.77.1.1 ib_write_bw/rail1/client-2@storage-1"
    assert runner.jobs[0].specs["storage-1"]["schedule"] == \
        "0 server rxe1 18516 1 - ib_write_bw/rail1/client-2@storage-1"
    runner.rdma["client-2"] = {1: {"device": "mlx5_7", "gid_index": 3}}  # whatever the host recorded, not mlx5_<rail>
    run_waves(runner, perftest_check(out), "ib_write_bw", [], 10, [[Pair("storage", "client-2", 1, "storage-1", 1)]])
    assert str(runner.jobs[1].specs["client-2"]["schedule"]).startswith("0 client mlx5_7 18516 3 ")
    runner.rdma["storage-1"] = {}
    run_waves(runner, perftest_check(out), "ib_write_bw", [], 10, [[Pair("storage", "client-1", 0, "storage-1", 0)]])
    assert runner.setup_errors["rdma.write_bw"]["rail0 client-1@storage-1"].startswith(
        "storage-1 has no RDMA device recorded for rail 0")


def test_the_lab_pairs_its_clients_on_the_compute_rails_and_each_client_with_the_target(out: Path,
                                                                                         tmp_path: Path) -> None:
    """The lab's two rails carry both fabrics (storage_fabric.client_rails): client-1 against client-2 on rail 0 and
    rail 1, and each client against the storage target on both, the target serving both clients at once, one on
    each of its NICs."""
    runner = ScriptedSession(out, tmp_path, [])
    waves, problems = plan_waves(runner)
    assert problems == []
    assert [[p.label for p in w] for w in waves] == [
        ["rail0 client-1@client-2"], ["rail1 client-1@client-2"],
        ["rail0 client-1@storage-1", "rail1 client-2@storage-1"],
        ["rail1 client-1@storage-1", "rail0 client-2@storage-1"]]
    assert {p.fabric for p in waves[0] + waves[1]} == {"compute"}


def test_compute_pairs_are_disjoint_same_rail_and_an_odd_node_gets_its_own_wave() -> None:
    nodes = [f"gpu-{n}" for n in range(1, 6)]
    waves = compute_waves(nodes, 8)
    assert len(waves) == 16  # per rail: (1,2), (3,4) at once, then (5,1)
    assert [(p.client, p.server) for p in waves[0]] == [("gpu-1", "gpu-2"), ("gpu-3", "gpu-4")]
    assert [(p.client, p.server) for p in waves[1]] == [("gpu-5", "gpu-1")]
    for wave in waves:
        hosts = [h for p in wave for h in (p.client, p.server)]
        assert len(hosts) == len(set(hosts)), wave
        assert len({p.client_rail for p in wave} | {p.server_rail for p in wave}) == 1, wave
    measured = {(h, p.client_rail) for w in waves for p in w for h in (p.client, p.server)}
    assert measured == {(n, r) for n in nodes for r in range(8)}, "every rail of every node is in a pair"
    assert compute_waves(["gpu-1"], 8) == []


def test_an_8_rail_gpu_node_pairs_its_storage_nics_with_a_2_nic_target() -> None:
    """cv-training-500tb: 8 compute rails and 2 storage NICs per GPU node, 2 NICs per storage target. Compute pairs
    use rails 0-7 between GPU nodes; the storage NICs (rails 8, 9) meet the targets' NICs 0 and 1, every target NIC
    serving one node per wave and every node one pair per wave, never an 8-rail index a target does not have. Seven
    nodes against three 2-NIC targets take 3 waves (each target serving on both NICs at once), where one node per
    target per wave took 6."""
    bp = plan(load_requirements(REPO / "examples" / "cv-training-500tb.yaml"))
    assert bp.compute.rails.value == 8 and bp.storage_fabric.client_rails.value == (8, 9)
    targets = {h: 2 for h in bp.hosts_by_role()["storage_target"][:3]}
    nodes = [f"gpu-{n}" for n in range(1, 8)]
    waves = storage_waves(nodes, bp.storage_fabric.client_rails.value, targets)
    assert [[(p.client, p.client_rail, p.server, p.server_rail) for p in w] for w in waves[:1]] == [
        [("gpu-1", 8, "hot-1", 0), ("gpu-2", 8, "hot-2", 0), ("gpu-3", 8, "hot-3", 0),
         ("gpu-4", 9, "hot-1", 1), ("gpu-5", 9, "hot-2", 1), ("gpu-6", 9, "hot-3", 1)]]
    assert len(waves) == 3
    assert {(p.client_rail, p.server_rail) for w in waves for p in w} == {(8, 0), (9, 1)}
    for wave in waves:
        clients = [p.client for p in wave]
        nics = [(p.server, p.server_rail) for p in wave]
        assert len(clients) == len(set(clients)) and len(nics) == len(set(nics)), wave
    assert sorted((p.client, p.client_rail) for w in waves for p in w) == sorted(
        (n, r) for n in nodes for r in (8, 9))
    assert {p.client: p.server for w in waves for p in w} == {
        f"gpu-{n}": f"hot-{(n - 1) % 3 + 1}" for n in range(1, 8)}, "a node meets one target on every NIC"
    four = storage_waves(["gpu-1"], (8, 9, 10, 11), {"hot-1": 2})  # more storage NICs than the target has
    assert [[(p.client_rail, p.server_rail) for p in w] for w in four] == [[(8, 0)], [(9, 1)], [(10, 0)], [(11, 1)]]
    lab = storage_waves(["client-1", "client-2"], (2, 3), {"storage-1": 2})  # the example lab's shape
    assert [[(p.client, p.client_rail, p.server_rail) for p in w] for w in lab] == [
        [("client-1", 2, 0), ("client-2", 3, 1)], [("client-1", 3, 1), ("client-2", 2, 0)]]
    assert storage_waves(nodes, (8, 9), {}) == [] and storage_waves(nodes, (), targets) == []


def test_a_missing_storage_nic_in_the_inventory_is_a_setup_error_naming_host_and_rail(out: Path,
                                                                                       tmp_path: Path) -> None:
    runner = ScriptedSession(out, tmp_path, [])
    run_waves(runner, perftest_check(out), "ib_write_bw", [], 10, [[Pair("storage", "client-1", 8, "storage-1", 0)]])
    assert runner.steps == [], "nothing to run"
    assert runner.setup_errors["rdma.write_bw"] == {
        "rail8 client-1@storage-1": "client-1 has no address on rail 8 in the inventory"}


def test_a_fio_killed_mid_run_is_cut_short_and_one_with_a_job_error_is_measured(out: Path, tmp_path: Path) -> None:
    """fio for real: the lab's seq_read job rendered for a local directory, SIGTERM two seconds in. fio still writes a
    report whose jobs say error 0, and exits non-zero: the runner must not take that report as a measure."""
    fio = require_tool("fio")
    bp = load_blueprint(out)
    workload = next(w for w in bp.acceptance.workloads if w.name == "seq_read")
    job = tmp_path / "job.fio"
    (tmp_path / "scratch").mkdir()
    job.write_text(fio_job(bp, workload, FioTarget(kind="directory", path=str(tmp_path / "scratch")))
                   .replace("direct=1", "direct=0"))  # this test's edit: tmpfs refuses O_DIRECT
    dest = tmp_path / "fio"
    dest.mkdir()
    proc = subprocess.Popen([fio, "--output-format=json+", f"--output={dest}/local-1.json", str(job)], cwd=tmp_path,
                            env={"PATH": "/usr/bin:/bin", "CLUSTERSMITH_HOST": "local-1"}, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0
    (dest / "local-1.exit").write_text(f"{proc.returncode}\n{stderr}")  # what fio.yml writes beside the report
    assert parse_fio_file(dest / "local-1.json").errors == 0, "the report alone looks like a finished run"
    why = cut_short(dest, "local-1")
    assert why is not None and why.startswith(f"fio exited {proc.returncode} before its workload finished"), why
    failure = REPO / "tests" / "fixtures" / "fio" / "verify-failure" / "client-1.json"  # job error 84 (EILSEQ)
    (dest / "client-1.json").write_text(failure.read_text())
    (dest / "client-1.exit").write_text("1\nfio: verify failed\n")  # this test's exit status beside the recording
    assert cut_short(dest, "client-1") is None, "fio ran and reported its error: the verdict judges it"
    (dest / "client-3.exit").write_text("0\n")
    assert cut_short(dest, "client-3") == "fio ended 0 but wrote no JSON report"
    # this test's input: the status fio.yml writes when the task ended with no rc (its timeout), and a message
    (dest / "client-4.exit").write_text("none\nThe command action failed to execute in the expected time frame\n")
    assert cut_short(dest, "client-4") == ("fio did not end within its timeout: The command action failed to execute "
                                           "in the expected time frame")


def test_accept_and_build_render_one_job_file_and_a_device_target_gets_regions_not_files(out: Path) -> None:
    bp = load_blueprint(out)
    for w in bp.acceptance.workloads:
        built = (out / "acceptance" / "fio" / f"{w.name}.fio").read_text()
        assert fio_job(bp, w, FioTarget(kind="directory", path=bp.acceptance.scratch_dir(w.on).path)) == built
    w = bp.acceptance.workloads[0]
    device = fio_job(bp, w, FioTarget(kind="device", path="/dev/nvme1n1"))
    assert "filename=/dev/nvme1n1\n" in device and f"offset_increment={int(w.size.value.value)}\n" in device
    assert "directory=" not in device and "filename_format" not in device


@pytest.mark.parametrize(("example", "checking"), [
    ("lab.yaml", "False"), ("cv-training-500tb.yaml", "True"), ("llm-training-16k.yaml", "True"),
    ("recsys-inference.yaml", "True")])
def test_host_keys_are_checked_on_every_target_but_the_lab(example: str, checking: str) -> None:

    bp = plan(load_requirements(REPO / "examples" / example))
    assert ansible_env(bp)["ANSIBLE_HOST_KEY_CHECKING"] == checking, bp.target.provider


@pytest.mark.parametrize("example", ["lab.yaml", "cv-training-500tb.yaml", "llm-training-16k.yaml",
                                     "recsys-inference.yaml"])
def test_every_fio_series_check_reads_its_interval_from_the_blueprint(example: str) -> None:
    """The throughput and jitter checks sum per-interval bandwidth: their bwavgtime is the workload's log interval,
    the log_avg_msec its job file writes, so neither the rule nor the runner assumes fio's default."""
    bp = plan(load_requirements(REPO / "examples" / example))
    workloads = {w.name: w for w in bp.acceptance.workloads}
    series = [c for c in bp.acceptance.checks if c.id in ("storage.read_throughput", "storage.write_throughput",
                                                          "storage.jitter")]
    assert len(series) >= 2
    for check in series:
        args = args_as(check.args, FioArgs)
        w = workloads[args.workload]
        assert args.interval_ms == w.log_avg_ms, check.id
        assert f"log_avg_msec={w.log_avg_ms}\n" in fio_job(bp, w, FioTarget(kind="directory", path="/x"))
