"""The runner's Ceph step (validators/run/ceph.py) and its planned check, issue 18 item 5: which host and commands it
runs, the real ceph CLI (Debian's Ceph 16.2.15 on this machine) through Ansible's local connection when it cannot
read a cluster, how a timeout or output no parser takes becomes a setup error naming host and command, and the
recordings (tests/fixtures/ceph) judged through ``accept --results`` end to end."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from blueprints.blueprint import Blueprint, Check
from blueprints.blueprint.check_args import CephArgs, args_as
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import build
from tests.conftest import BIN, require_tool
from validators.inventory import load_inventory
from validators.run import ceph
from validators.run.plumbing import Session

REPO = Path(__file__).resolve().parents[4]
CEPH = REPO / "tests" / "fixtures" / "ceph"
FILES = ("status.json", "osd-pool-ls-detail.json", "osd-tree.json")


def blueprint(name: str) -> Blueprint:
    return plan(load_requirements(REPO / "examples" / f"{name}.yaml"))


@pytest.fixture(scope="module")
def lab() -> Blueprint:
    return blueprint("lab")


def ceph_check(bp: Blueprint) -> Check:
    return next(c for c in bp.acceptance.checks if c.id == "storage.ceph_health")


def session(bp: Blueprint, tmp_path: Path, hosts: tuple[str, ...] = ("storage-1",), scale: float = 1.0) -> Session:
    path = tmp_path / "inventory.yml"
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    path.write_text(yaml.safe_dump({"all": {"children": {"storage_targets": {"hosts": {h: local for h in hosts}}}}}))
    results = tmp_path / "results"
    results.mkdir()
    return Session(bp, tmp_path, load_inventory(path), results, lambda step, message: None, scale)


def test_ceph_is_planned_on_bare_metal_and_the_lab_read_on_the_first_monitor(lab: Blueprint) -> None:
    check = ceph_check(lab)
    assert (check.tool, check.op, check.threshold, check.severity) == ("ceph", "==", 1, "error")  # judged in the lab
    assert check.args == CephArgs(monitor="storage-1")
    assert check.derived_from.spec == ("data.training_set", "data.hot_fraction", "target.storage_targets",
                                       "target.provider")
    assert "4 OSDs up and in" in check.derived_from.formula and "cephfs_hot hot_k2m1" in check.derived_from.formula
    metal = blueprint("cv-training-500tb")
    assert metal.storage.ceph is not None
    assert args_as(ceph_check(metal).args, CephArgs).monitor == metal.storage.ceph.daemons.monitor_hosts[0]
    assert "performance.storage.read_throughput" in ceph_check(metal).derived_from.spec
    assert all(c.id != "storage.ceph_health" for c in blueprint("llm-training-16k").acceptance.checks)  # FSx


def test_plan_shows_the_check_in_its_acceptance_table() -> None:
    r = subprocess.run([str(BIN / "clustersmith"), "plan", "examples/lab.yaml"], cwd=REPO, capture_output=True,
                       text=True, timeout=120, env={"PATH": f"{BIN}:/usr/bin:/bin", "COLUMNS": "250"})
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if "storage.ceph_health" in line)
    assert "ceph" in row and "== 1 bool" in row and "error" in row and "target.storage_targets" in row


def test_the_step_reads_with_the_roles_admin_keyring_and_bounded_calls(lab: Blueprint, tmp_path: Path) -> None:
    read = ceph.plan_read(lab, ceph_check(lab), session(lab, tmp_path).inventory)
    assert not isinstance(read, str)
    assert read.host == "storage-1" and read.keyring == "/etc/ceph/ceph.client.admin.keyring"
    assert read.call_timeout_s == 60
    assert [c.file for c in read.calls] == list(FILES)  # where the rule reads them
    assert read.calls[2].argv == ("ceph", "--cluster", "ceph", "--name", "client.admin", "--keyring",
                                  "/etc/ceph/ceph.client.admin.keyring", "--connect-timeout", "30", "osd", "tree",
                                  "-f", "json")
    assert [c.shown for c in read.calls] == ["ceph status -f json", "ceph osd pool ls detail -f json",
                                             "ceph osd tree -f json"]


def test_a_monitor_host_missing_from_the_inventory_is_a_setup_error(lab: Blueprint, tmp_path: Path) -> None:
    s = session(lab, tmp_path, hosts=("client-1",))
    ceph.run(s, ceph_check(lab))
    assert s.setup_errors == {"storage.ceph_health": {
        "inventory": "monitor host storage-1 (the check's args.monitor) is not in the inventory (client-1)"}}


def test_a_host_without_the_clusters_config_is_a_setup_error_in_cephs_words(lab: Blueprint, tmp_path: Path) -> None:
    """The real ceph CLI on this machine, which has no /etc/ceph/ceph.conf: each call exits 1 at once."""
    require_tool("ceph", "ceph-common")
    if Path("/etc/ceph/ceph.conf").exists():
        pytest.skip("this machine has a Ceph cluster configuration")
    s = session(lab, tmp_path)
    ceph.run(s, ceph_check(lab))
    said = s.setup_errors["storage.ceph_health"]["storage-1"]
    for shown in ("ceph status -f json", "ceph osd pool ls detail -f json", "ceph osd tree -f json"):
        assert f"{shown}: exited 1: Error initializing cluster client: ObjectNotFound('RADOS object not found " \
               "(error calling conf_read_file)')" in said
    assert (s.results / "ceph" / "status.json.rc").read_text().strip() == "1"  # fetched for --results


def test_a_cluster_that_does_not_answer_is_a_setup_error_within_the_connect_timeout(
        lab: Blueprint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real CLI against a monitor address where nothing listens (CEPH_CONF: librados reads the file it names):
    it retries until --connect-timeout (30 s scaled by 0.1) and gives up; nothing hangs the run, and the calls after
    it are not made (each would wait out the same timeout)."""
    require_tool("ceph", "ceph-common")
    conf = tmp_path / "dead.conf"
    conf.write_text("[global]\nmon host = v2:127.0.0.1:9\n")
    monkeypatch.setenv("CEPH_CONF", str(conf))
    s = session(lab, tmp_path, scale=0.1)
    ceph.run(s, ceph_check(lab))
    said = s.setup_errors["storage.ceph_health"]["storage-1"]
    assert said.count(": exited 1: timed out") == 1, said
    assert said.count(": not made: an earlier call found no monitor answering") == 2, said


def calls_written(lab: Blueprint, tmp_path: Path, rc: int, output: str, err: str = "") -> tuple[ceph.CephRead, Path]:
    tmp_path.mkdir()
    read = ceph.plan_read(lab, ceph_check(lab), session(lab, tmp_path).inventory)
    assert not isinstance(read, str)
    folder = tmp_path / "ceph"
    folder.mkdir()
    for call in read.calls:
        (folder / call.file).write_text(output)
        (folder / f"{call.file}.err").write_text(err)
        (folder / f"{call.file}.rc").write_text(f"{rc}\n")
    return read, folder


def test_a_call_killed_by_its_timeout_or_that_printed_no_json_never_counts(lab: Blueprint, tmp_path: Path) -> None:
    """What the playbook fetches for a call timeout(1) killed (exit 124), and for one that ended 0 with a text the
    parser refuses: each is the step's reason, never output to judge."""
    read, folder = calls_written(lab, tmp_path / "killed", 124, "")
    assert ceph.judge_call(folder, read.calls[0], read.call_timeout_s) == "timed out after 60 s"
    read, folder = calls_written(lab, tmp_path / "garbage", 0, "HEALTH_OK\n")
    said = ceph.judge_call(folder, read.calls[0], read.call_timeout_s)
    assert said is not None and "not ceph status output" in said and "expected JSON (ceph status -f json)" in said
    read, folder = calls_written(lab, tmp_path / "denied", 13, "", "[errno 13] RADOS permission denied\n")
    assert ceph.judge_call(folder, read.calls[1], 60) == "exited 13: [errno 13] RADOS permission denied"
    (folder / "osd-tree.json.rc").unlink()
    assert ceph.judge_call(folder, read.calls[2], 60) == "did not run (no exit status came back)"
    read, folder = calls_written(lab, tmp_path / "good", 0, (CEPH / "healthy" / "osd-tree.json").read_text())
    assert ceph.judge_call(folder, read.calls[2], 60) is None


def accept(out: Path, results: Path, report: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "validators", "accept", str(out), "--results", str(results),
                           "--report-dir", str(report), "--only", "storage.ceph_health"], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": f"{BIN}:/usr/bin:/bin", "COLUMNS": "200"})


@pytest.fixture(scope="module")
def out(lab: Blueprint, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder, _ = build(lab, tmp_path_factory.mktemp("out"))
    return folder


def recorded(tmp_path: Path, state: str) -> Path:
    results = tmp_path / state
    (results / "ceph").mkdir(parents=True)
    for name in FILES:
        shutil.copy(CEPH / state / name, results / "ceph" / name)
    return results


def report(folder: Path) -> dict[str, object]:
    checks = json.loads((folder / "report.json").read_text())["checks"]
    return next(c for c in checks if c["id"] == "storage.ceph_health")


def test_accept_results_judges_the_recordings(out: Path, tmp_path: Path) -> None:
    healthy = accept(out, recorded(tmp_path, "healthy"), tmp_path / "r1")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    got = report(tmp_path / "r1")
    assert got["status"] == "pass" and got["coverage_shown"] == "1 of 1 clusters (read on monitor storage-1)"
    down = accept(out, recorded(tmp_path, "osd-down"), tmp_path / "r2")
    assert down.returncode == 1, down.stdout + down.stderr
    assert report(tmp_path / "r2")["status"] == "fail"
    assert "osd.3 on storage-1 is down" in down.stdout


def test_accept_results_refuses_output_that_is_not_cephs(out: Path, tmp_path: Path) -> None:
    results = recorded(tmp_path, "healthy")
    (results / "ceph" / "osd-tree.json").write_text("ID  CLASS  WEIGHT   TYPE NAME\n-1         4.00000  root default\n")
    r = accept(out, results, tmp_path / "r")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "not ceph osd tree output" in r.stdout + r.stderr and "osd-tree.json" in r.stdout + r.stderr
