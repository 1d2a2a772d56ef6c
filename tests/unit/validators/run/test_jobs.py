"""Host jobs (validators/run/jobs.py, playbooks/job.yml, playbooks/files/accept_job.sh) for real: ansible-runner and
ansible-playbook start each host's job through Ansible's local connection, hosts with names of their own, and collect
what it wrote. What a host sends back is untrusted input: only the files its step declares land in the results."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from blueprints.blueprint import Blueprint, Check, load_blueprint
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.render import build
from tests.conftest import require_tool
from validators.inventory import load_inventory, rdma_record
from validators.run import facts, perftest
from validators.run.jobs import BEGIN, END, FILES, Job, Record, payload, script, spec_text, unpack
from validators.run.plumbing import HostOutcome, Session, shard, start_margin_s

REPO = Path(__file__).resolve().parents[4]
RDMA = REPO / "tests" / "fixtures" / "rdma"
LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder, _ = build(plan(load_requirements(REPO / "examples" / "lab.yaml")), tmp_path_factory.mktemp("out"))
    return folder


def archive(files: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def test_only_the_files_a_step_declares_land_in_the_results(tmp_path: Path) -> None:
    got = unpack(archive({
        "out/facts/node-1.json": b'{"gpus": 8}\n', "out/facts/node-1.rdma.fact": b"{}",
        "out/facts/node-2.json": b"another host's", "out/elsewhere.txt": b"x", "out/../../escape": b"x",
        "/etc/passwd": b"x", "meta/records": b"failed\t-\tCheck: words\nretried\tk\tTry: once\nrubbish\n",
        "meta/status": b"0\n"}, links={"out/facts/node-1.link": "/etc/shadow"}),
        "node-1", tmp_path, ("facts/{host}.json", "facts/{host}.rdma.fact"))
    assert sorted(p.relative_to(tmp_path).as_posix() for p in got.written) == [
        "facts/node-1.json", "facts/node-1.rdma.fact"]
    assert sorted(got.refused) == ["/etc/passwd", "elsewhere.txt", "facts/node-2.json", "out/../../escape",
                                   "out/facts/node-1.link"]
    assert [(r.kind, r.key, r.words) for r in got.records] == [("failed", "-", "Check: words"),
                                                               ("retried", "k", "Try: once")]
    assert got.status == "0"
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == [
        "facts/node-1.json", "facts/node-1.rdma.fact"]


def test_a_host_name_with_glob_characters_matches_only_itself(tmp_path: Path) -> None:
    got = unpack(archive({"out/facts/a1.json": b"{}", "out/facts/a[1].json": b"{}"}), "a[1]", tmp_path,
                 ("facts/{host}.json",))
    assert [p.name for p in got.written] == ["a[1].json"] and got.refused == ["facts/a1.json"]


def test_the_archive_is_read_between_its_markers_whatever_a_pty_added() -> None:
    data = archive({"out/x": b"1"})
    text = base64.b64encode(data).decode()
    stdout = f"motd line\r\n{BEGIN}\r\n{text[:20]}\r\n{text[20:]}\r\n{END}\r\n"
    assert payload(stdout) == data
    assert payload(f"{BEGIN}\n{text}\n") is None, "no end marker: cut short"
    assert payload(f"{BEGIN}\n!!not base64!!\n{END}\n") is None
    assert unpack(b"not a tar", "h", Path("/nonexistent"), ()).refused[0].startswith("the archive is damaged")


def test_a_spec_quotes_every_value_and_refuses_a_bad_name() -> None:
    text = spec_text({"host": "node-1", "job": "a'b\n$(reboot)", "n": 3})
    assert text == "host=node-1\njob='a'\"'\"'b\n$(reboot)'\nn=3\n"
    with pytest.raises(ValueError, match="not a shell variable name"):
        spec_text({"bad-name": "x"})


def test_the_fio_start_call_never_names_the_job_file(out: Path) -> None:
    """The start call's shell has the step's script and the host's spec in its arguments while it runs; only fio's
    own command line may say job.fio, by which the lab's fault test finds the workload's fio (KILL_FIO_MID_RUN in
    tests/lab/test_accept_lab.py)."""
    assert "job.fio" not in script("fio")
    for job in (out / "acceptance" / "fio").glob("*.fio"):
        assert "job.fio" not in job.read_text(), job


def test_shards_split_hosts_evenly_within_their_bounds() -> None:
    hosts = [f"h{i}" for i in range(10)]
    assert shard(hosts, 1, 4) == [hosts]
    assert [len(s) for s in shard(hosts, 3, 4)] == [4, 4, 2]
    assert [len(s) for s in shard(hosts, 8, 4)] == [4, 4, 2]
    assert [len(s) for s in shard(hosts, 8, 256)] == [10]
    assert [h for part in shard(hosts, 3, 1) for h in part] == hosts


def test_the_common_start_stretches_only_the_hosts_share_with_the_timeout_scale() -> None:
    """At scale 1 a shard of 256 hosts starts within 4 s + 12.8 s; slow hosts (scale 4) stretch the first
    connections' 1 s, not the controller's own share."""
    assert start_margin_s(256, 1.0) == pytest.approx(16.8)
    assert start_margin_s(2, 4.0) == pytest.approx(7.1)
    assert start_margin_s(2, 4.0) - start_margin_s(2, 1.0) == pytest.approx(3.0)


def local_session(bp: Blueprint, tmp_path: Path, groups: dict[str, list[str]], scale: float = 1.0,
                  host_vars: dict[str, dict[str, object]] | None = None, **kwargs: int) -> Session:
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {
        g: {"hosts": {h: {**LOCAL, **(host_vars or {}).get(h, {})} for h in names}} for g, names in groups.items()}}}))
    results = tmp_path / "results"
    results.mkdir()
    return Session(bp, tmp_path, load_inventory(path), results, lambda step, message: None, scale, **kwargs)


def test_a_step_over_shards_collects_every_host_once(out: Path, tmp_path: Path) -> None:
    """Ten hosts in three ansible-runner processes side by side: every host's facts come back, each once."""
    hosts = [f"node-{i:02d}" for i in range(10)]
    session = local_session(load_blueprint(out), tmp_path, {"gpu_clients": hosts}, shards=3, shard_hosts=4)
    # job folders another run left (an interrupted bench, a test beside this one) are not this step's
    earlier = set(Path("/tmp").glob("clustersmith-accept-facts-*"))
    facts.run(session)
    session.finish()
    assert json.loads((session.results / "setup-errors.json").read_text()) == {}
    assert sorted(json.loads((session.results / "host-facts.json").read_text())) == hosts
    assert sorted((session.results / ".ansible-runner" / "facts").iterdir()) == [
        session.results / ".ansible-runner" / "facts" / f"shard{k}" for k in range(3)]
    assert not set(Path("/tmp").glob("clustersmith-accept-facts-*")) - earlier, "every job folder is removed"
    # where the step's time went: one entry, over its ten hosts; not an aligned job, so no start margin to account
    (timing,) = json.loads((session.results / "timings.json").read_text())
    assert (timing["step"], timing["hosts"], timing["start_margin_s"]) == ("facts", 10, None)
    assert timing["seconds"] > 0


def one_launch(out: Path, tmp_path: Path, command: str, timeout: int, limit: int) -> tuple[Session, HostOutcome, float]:
    """One NCCL launch step on a local host running ``sh -c '<command>; echo <marker>'`` under timeout(1) ``timeout``
    in a job limited to ``limit`` s; its session, outcome and wall seconds, and afterwards no process of it alive."""
    session = local_session(load_blueprint(out), tmp_path, {"gpu_clients": ["node-1"]})
    work = tmp_path / "work"
    work.mkdir()
    marker = f"clustersmith-test-{os.getpid()}-{timeout}-{limit}"
    began = time.monotonic()
    outcomes = session.job(Job("launch", "nccl_launch", {"node-1": {
        "host": "node-1", "launcher_tool": "sleep", "workdir": str(work), "timeout": timeout, "runs": 1,
        "run_1_log": "x.txt", "run_1_dest": "nccl/x.txt", "run_1_argv": f"sh -c '{command}; echo {marker}'"}},
        ("nccl/x.txt", "nccl/x.txt.rc"), limit))
    took = time.monotonic() - began
    alive = subprocess.run(["pgrep", "-f", f"echo {marker}"], capture_output=True, text=True)
    assert alive.returncode == 1, f"the job's processes are ended: {alive.stdout}"
    return session, outcomes["node-1"], took


def test_a_job_past_its_limit_is_ended_and_named(out: Path, tmp_path: Path) -> None:
    """A launch that would run 60 s in a job limited to 3 s: the collector ends the job's whole session and the host
    is named, never waited for past the limit."""
    _, outcome, took = one_launch(out, tmp_path, "sleep 60", 60, 3)
    assert took < 45
    assert outcome.problem == "Run the step: did not end within its 3 s (ended by the collector)"


def test_a_tool_that_ignores_its_timeouts_term_is_killed_soon_after(out: Path, tmp_path: Path) -> None:
    """A launch that ignores SIGTERM (its shell and its sleep inherit the ignored signal) past its 2 s timeout:
    timeout(1) kills it kill_after_s (10 s) after the TERM, so the step ends then with the launch's status 137 (the
    runner names the launch), long before the job's 60 s limit and the collector."""
    session, outcome, took = one_launch(out, tmp_path, 'trap "" TERM; sleep 60', 2, 60)
    assert outcome.problem is None, outcome
    assert (session.results / "nccl" / "x.txt.rc").read_text().strip() == "137"
    assert 12 <= took < 45, f"ended {took:.0f} s after the start: expected the 2 s timeout + 10 s, not the limit"


def test_late_starts_are_noted_with_the_worst(out: Path, tmp_path: Path) -> None:
    session = local_session(load_blueprint(out), tmp_path, {"gpu_clients": ["a"]})
    outcomes = {"a": HostOutcome(records=[Record("note", "late_ms", "2500")]),
                "b": HostOutcome(records=[Record("note", "late_ms", "900")]), "c": HostOutcome()}
    session.late(["storage.read_throughput"], outcomes, "fio seq_read")
    assert session.notes == {"storage.read_throughput": [
        "fio seq_read began up to 2.5 s after the planned start on 1 host(s): a"]}


def perftest_session(bp: Blueprint, tmp_path: Path, clients: list[str], scale: float = 0.1) -> Session:
    """A session at --timeout-scale ``scale`` over local hosts: storage-1 and ``clients``, host n's rail i at
    10.77.i.n and its RDMA device named ``<host>_r<i>`` (GID index 1), as the rdma role records them."""
    hosts = ["storage-1", *clients]
    rails = {h: {"rails": [{"index": i, "address": f"10.77.{i}.{n}"} for i in (0, 1)]}
             for n, h in enumerate(hosts, start=1)}
    session = local_session(bp, tmp_path, {"gpu_clients": clients, "storage_targets": ["storage-1"]}, scale=scale,
                            host_vars=rails)
    session.rdma = {h: rdma_record(json.dumps({"rails": [{"index": i, "name": f"rail{i}", "netdev": f"eth{i}",
                                                          "device": f"{h}_r{i}", "port": 1, "gid_index": 1}
                                                         for i in (0, 1)]})) for h in hosts}
    return session


STAND_IN = """#!/bin/sh
# A stand-in for ib_write_bw where no RDMA device exists (the real tool runs in the lab tier): it records when each
# side started and on which device, then answers as the recorded lab client does.
[ "$1" = --version ] && {{ echo "Version: 6.15"; exit 0; }}
device=$2
last=$(eval echo \\${{$#}})
case $last in 10.*) role=client ;; *) role=server ;; esac
echo "$(date +%s%3N) $role $device" >> {log}
[ "$role" = server ] && exit 0
# the failing device's client fails every try of the first job (its server would be gone: it serves one connection)
if [ "$device" = {failing} ] && [ "$(grep -c "client $device" {log})" -le {tries} ]; then
    echo "Failed to complete run_iter_bw function successfully" >&2
    exit 1
fi
sleep 0.3
cat {recorded}
"""


def test_the_pairs_of_a_wave_start_together_and_waves_follow_one_another(out: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Every wave of the lab's pairs in one job over local hosts, each host's devices named after it: a wave's pairs
    begin together, a wave begins a slot after the one before, and a pair whose client failed after it ran is
    measured again in a second job, with the note."""
    bp = load_blueprint(out)
    clients = ["client-1", "client-2", "client-3", "client-4"]
    hosts = ["storage-1", *clients]
    # scale 0.1: 1.4 s slots (the tool's 1 s and 0.4 s of overhead), ample for a stand-in that answers in 0.3 s 0.1 s
    # into its slot; seven slots over two jobs
    session = perftest_session(bp, tmp_path, clients)
    bin_dir, log = tmp_path / "bin", tmp_path / "started.log"
    bin_dir.mkdir()
    tool = bin_dir / "ib_write_bw"
    tool.write_text(STAND_IN.format(log=log, failing="client-3_r1", tries=perftest.TRIES,
                                    recorded=RDMA / "lab-ib_write_bw-rail0.client.txt"))
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(perftest, "TRY_DELAY_S", 0)  # this test's: a failing client's tries at once, not 3 s apart
    check: Check = next(c for c in bp.acceptance.checks if c.id == "rdma.write_bw")
    waves, problems = perftest.plan_waves(session)
    # two compute waves of two pairs, then each rail of each client against the one target, two clients at a time
    # (one on each of the target's two NICs, both of its servers started at the wave's start)
    assert problems == [] and [len(w) for w in waves] == [2, 2, 2, 2, 2, 2]
    assert all(len({p.server for p in w}) == 1 and len({p.server_rail for p in w}) == 2 for w in waves[2:])
    perftest.run_waves(session, check, "ib_write_bw", ["-D", "1"], 1, waves)
    lines = [line.split() for line in log.read_text().splitlines()]
    servers = sorted(int(ms) for ms, role, _ in lines if role == "server")[:12]  # the first job's servers
    slot_ms = (1 + perftest.SLOT_EXTRA_S * 0.1) * 1000  # the tool's own 1 s is not scaled
    at = 0
    began = []
    for wave in waves:
        mine, at = servers[at:at + len(wave)], at + len(wave)
        assert mine[-1] - mine[0] < 1000, mine  # the servers of a wave start together
        began.append(mine[0])
    # wave k begins k slots after the first, never earlier: the job places each wave on one schedule from a common
    # start, so a wave started late by this loaded machine's scheduler lengthens the gap before it and shortens the
    # one after (CI, 2026-12-05: gaps 3400, 3404, 4384, 2436 ms for 3400 ms slots), and the next wave is on time
    assert all(b - began[0] >= k * slot_ms - 500 for k, b in enumerate(began)), began
    tried = [ms for ms, role, device in lines if role == "client" and device == "client-3_r1"]
    assert len(tried) == perftest.TRIES + 2, "client-3's rail 1: each try failed, then measured again in a second job"
    assert session.setup_errors == {}
    # (a late start of client-3's later entries, after its six failed tries, may be noted beside it)
    assert "rail1 client-3@client-4: first attempt failed (Run the client against the server's rail address: exit 1: " \
        "Failed to complete run_iter_bw function successfully); measured again" in session.notes["rdma.write_bw"]
    # the step timings account for the slots: each job's slot, the most of it a client used (the stand-in's 0.3 s
    # after the client's delay, never past the slot here), and the common start's unused part
    first, again = session.timings
    assert (first.step, again.step, first.slot_s) == ("ib_write_bw", "ib_write_bw-attempt2", slot_ms / 1000)
    assert first.most_slot_used_s is not None and 0.3 < first.most_slot_used_s < slot_ms / 1000, first
    assert first.start_margin_s == round(start_margin_s(len(hosts), 0.1), 1)
    assert first.least_wait_s is not None and 0 <= first.least_wait_s < first.start_margin_s, first
    got = sorted(p.relative_to(session.results).as_posix() for p in (session.results / "ib_write_bw").rglob("*.txt"))
    assert got == sorted(f"ib_write_bw/rail{p.client_rail}/{p.client}@{p.server}.txt" for w in waves for p in w)


LISTENER = """#!/bin/sh
# A stand-in for ib_write_bw whose server serves one client, as the real one does (the real tool runs in the lab
# tier): a server marks its device and port as listening until a client takes the mark or timeout(1) ends it; a
# client takes its server's mark (the server's device from the address, in {map}) or, finding none, fails as the real
# client does when nothing listens. client-1's first run takes {slow} s, several slots: that host starts its later
# waves late.
[ "$1" = --version ] && {{ echo "Version: 6.15"; exit 0; }}
device=$2 port=$4
last=$(eval echo \\${{$#}})
case $last in
10.*)
    echo "$(date +%s%3N) client $device" >> {dir}/log
    server=$(grep "^$last " {map} | cut -d' ' -f2)
    mv "{dir}/$server-$port" "{dir}/$server-$port.taken" 2> /dev/null || {{
        echo "Unable to open file descriptor for socket connection" >&2; exit 1; }}
    if [ "$device" = client-1_r0 ] && [ ! -e {dir}/slow ]; then touch {dir}/slow; sleep {slow}; fi
    cat {recorded}
    ;;
*)
    trap 'rm -f "{dir}/$device-$port"; exit 143' TERM
    touch "{dir}/$device-$port"
    while [ ! -e "{dir}/$device-$port.taken" ]; do sleep 0.05; done
    echo "served on $port"
    ;;
esac
"""


def test_a_client_whose_host_runs_late_still_finds_its_server(out: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The CI failure of 2026-12-07 (stop 54): a client whose host ran its earlier wave past the slot came to its
    later waves late, and its server had been replaced by the next wave's on the same port, then ended with the last
    slot: every try of six was refused ("Unable to open file descriptor for socket connection"), twice. Every wave
    has ports of its own now and a server lives until it has served its client: client-1, three slots late, measures
    every pair in the first job, its late start noted, and each server's words come back."""
    bp = load_blueprint(out)
    hosts = ["storage-1", "client-1", "client-2"]
    # scale 0.3: 1.9 s slots and servers that wait 18 s for their client, room for a loaded machine (a unit tier on
    # two cores beside a lab) to start a server late or a late client later still
    scale = 0.3
    session = perftest_session(bp, tmp_path, hosts[1:], scale)
    marks, addresses = tmp_path / "marks", tmp_path / "addresses"
    marks.mkdir()
    addresses.write_text("".join(f"10.77.{i}.{n} {h}_r{i}\n" for n, h in enumerate(hosts, start=1) for i in (0, 1)))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    slot_s = 1 + perftest.SLOT_EXTRA_S * scale
    tool = bin_dir / "ib_write_bw"
    tool.write_text(LISTENER.format(dir=marks, map=addresses, slow=round(3 * slot_s, 1),
                                    recorded=RDMA / "lab-ib_write_bw-rail0.client.txt"))
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(perftest, "TRY_DELAY_S", 1)  # a client before its server (a loaded machine) tries again
    check: Check = next(c for c in bp.acceptance.checks if c.id == "rdma.write_bw")
    waves, _ = perftest.plan_waves(session)
    assert [len(w) for w in waves] == [1, 1, 2, 2]  # two compute waves, then the target's two NICs twice
    perftest.run_waves(session, check, "ib_write_bw", ["-D", "1"], 1, waves)
    assert session.setup_errors == {}
    assert [t.step for t in session.timings] == ["ib_write_bw"], "nothing needed measuring again"
    got = sorted(p.relative_to(session.results).as_posix() for p in (session.results / "ib_write_bw").rglob("*.txt"))
    assert got == sorted(f"ib_write_bw/rail{p.client_rail}/{p.client}@{p.server}.txt" for w in waves for p in w)
    # client-1 took each of its later waves late, and found its server there
    tried = {line.split()[2] for line in (marks / "log").read_text().splitlines()}
    assert tried == {f"{p.client}_r{p.client_rail}" for w in waves for p in w}, tried
    assert any(n.startswith("ib_write_bw pairs began up to") and n.endswith("client-1")
               for n in session.notes["rdma.write_bw"]), session.notes
    for pair in (p for w in waves for p in w):
        assert pair.file(session, "ib_write_bw", ".server.rc").read_text().strip() == "0"
        assert pair.file(session, "ib_write_bw", ".server").read_text().startswith("served on 185")


def test_a_job_outlives_the_terminal_of_the_call_that_started_it(tmp_path: Path) -> None:
    """Ansible's SSH connection gives a raw call a terminal; its hang-up when the call ends must not reach the job.
    script(1) gives the start call a terminal here and hangs it up as it ends."""
    require_tool("script", "util-linux")
    job = tmp_path / "job"
    job.mkdir()
    done = tmp_path / "survived"
    (job / "job.sh").write_text(f"step() {{ sleep 2; echo yes > {done}; }}\n" + (FILES / "accept_job.sh").read_text())
    (job / "spec").write_text(spec_text({"job_limit_s": 30}))
    call = subprocess.run(["script", "-qec", f"sh {job}/job.sh start {job} 0", "/dev/null"], capture_output=True,
                          text=True, timeout=60)
    assert call.returncode == 0 and "started" in call.stdout, call.stdout + call.stderr
    collected = subprocess.run(["sh", f"{job}/job.sh", "collect", str(job)], capture_output=True, text=True,
                               timeout=60)
    assert done.read_text() == "yes\n", collected.stdout[-500:]
    got = unpack(payload(collected.stdout) or b"", "h", tmp_path / "results", ())
    assert got.status == "0" and got.records == []
    assert not job.exists(), "collect removes the job's folder"


def test_a_job_that_failed_with_no_words_of_its_own_is_named_with_its_shells(out: Path, tmp_path: Path) -> None:
    """A body that stops on a shell error (here the facts body without its host's name in the spec: set -u) and
    records nothing: the host is named with the job's status and the shell's own last line, never passed over."""
    session = local_session(load_blueprint(out), tmp_path, {"gpu_clients": ["node-1"]})
    outcomes = session.job(Job("facts", "facts", {"node-1": {}}, ("facts/{host}.json",), 60, short=True))
    problem = outcomes["node-1"].problem
    assert problem is not None and problem.startswith("the step's job ended 2: ") and "host" in problem, problem
