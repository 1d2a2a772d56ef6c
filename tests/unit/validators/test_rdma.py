"""perftest and nvme-cli output recorded in the QEMU lab (tests/fixtures/lab/record.py), and their rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from blueprints.blueprint import Blueprint
from blueprints.loader import load_requirements
from blueprints.planner import plan
from tests.unit.validators.gate_inputs import nvme_results as planned_nvme_results
from tests.unit.validators.gate_inputs import two_node_blueprint
from validators.errors import ParseError
from validators.evaluate import evaluate
from validators.nvmeof import parse_list_subsys
from validators.outcome import CheckResult, exit_code
from validators.rdma import parse_perftest_bw, parse_perftest_bw_file, parse_perftest_lat
from validators.results import Results

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
RDMA, NVME = FIXTURES / "rdma", FIXTURES / "nvmeof"


def blueprint(name: str) -> Blueprint:
    return plan(load_requirements(REPO / "examples" / f"{name}.yaml"))


def judged(bp: Blueprint, root: Path, check_id: str) -> CheckResult:
    return evaluate(bp, Results(root), [check_id], strict=True)[0]


def test_ib_write_bw_soft_roce() -> None:
    out = parse_perftest_bw((RDMA / "lab-ib_write_bw-rail0.client.txt").read_text(), "x")
    assert (out.banner.test, out.banner.device, out.banner.qps, out.banner.link_type) == \
        ("RDMA_Write BW Test", "rxe0", 2, "Ethernet")
    assert [(r.bytes, r.iterations) for r in out.rows] == [(65536, 82)]
    assert out.average_gbit == 0.013789 and out.rows[0].peak_gbit == 0.0


def test_ib_read_lat_columns_with_spaces_and_tabs() -> None:
    out = parse_perftest_lat((RDMA / "lab-ib_read_lat-rail0.client.txt").read_text(), "x")
    row = out.rows[0]
    assert out.banner.test == "RDMA_Read Latency Test" and (row.bytes, row.iterations) == (2, 1000)
    assert (row.t_typical_us, row.p99_us, row.p99_9_us) == (4218.98, 26516.01, 113711.81)


def test_the_server_side_prints_the_same_table() -> None:
    client = parse_perftest_bw((RDMA / "lab-ib_write_bw-rail0.client.txt").read_text(), "c")
    server = parse_perftest_bw((RDMA / "lab-ib_write_bw-rail0.server.txt").read_text(), "s")
    assert server.rows[0].bytes == client.rows[0].bytes


@pytest.mark.parametrize(("text", "field", "message"), [
    ("", "(document)", "expected a results table starting with '#bytes'"),
    (" #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n-----\n", "(table)",
     "expected at least one result row"),
    (" #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n 65536 82 0.0 fast 0.1\n", "row 1",
     "expected 5 numbers"),
    (" #bytes #iterations BW peak[bananas] BW average[bananas] MsgRate[Mpps]\n 65536 82 0 1 0\n", "(header)",
     "expected a bandwidth unit"),
])
def test_bad_bandwidth_output(text: str, field: str, message: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_perftest_bw(text, "bad.txt")
    assert err.value.problems[0].path == field and message in err.value.problems[0].message


def rails_results(root: Path, bp: Blueprint, hosts: list[str] | None = None) -> Path:
    """The recorded client output of lab rail (i mod 2) filed as the runner files it (copies): each GPU node of
    ``hosts`` (default: all) against the next GPU node on every compute rail, and against the first storage target
    on each of its storage NICs."""
    by_role = bp.hosts_by_role()
    nodes, targets = by_role["gpu_client"], by_role.get("storage_target", [])
    pairs = [(f"rail{rail}", f"{node}@{nodes[(i + 1) % len(nodes)]}")
             for rail in range(bp.compute.rails.value) for i, node in enumerate(nodes)]
    pairs += [(f"rail{rail}", f"{node}@{targets[0]}") for rail in bp.storage_fabric.client_rails.value
              for node in nodes] if targets else []
    for rail, name in pairs:
        if hosts is not None and name.split("@")[0] not in hosts:
            continue
        (root / "ib_write_bw" / rail).mkdir(parents=True, exist_ok=True)
        shutil.copy(RDMA / f"lab-ib_write_bw-rail{int(rail[4:]) % 2}.client.txt", root / "ib_write_bw" / rail /
                    f"{name}.txt")
    return root


def test_rdma_rule_takes_the_slowest_rail(tmp_path: Path) -> None:
    rails_results(tmp_path / "lab", blueprint("lab"))
    values = [parse_perftest_bw((RDMA / f"lab-ib_write_bw-rail{r}.client.txt").read_text(), "x").average_gbit
              for r in (0, 1)]
    lab = judged(blueprint("lab"), tmp_path / "lab", "rdma.write_bw")
    assert lab.measured == min(v for v in values if v is not None) and lab.status == "info"
    assert len(lab.details) == 8
    assert lab.coverage_shown == "4 of 4 compute rail measurements, 4 of 4 storage rail measurements"
    prod = two_node_blueprint(tmp_path)
    got = judged(prod, rails_results(tmp_path / "prod", prod), "rdma.write_bw")
    threshold = next(c.threshold for c in prod.acceptance.checks if c.id == "rdma.write_bw")
    assert got.status == "fail" and f"expected >= {threshold:.4g} Gb/s" in got.message


def test_rdma_misses_a_host_or_rail_and_refuses_server_output(tmp_path: Path) -> None:
    root = rails_results(tmp_path, blueprint("lab"), ["client-1"])  # client-2 ran no pair of its own
    shutil.copy(RDMA / "lab-ib_write_bw-rail0.server.txt", root / "ib_write_bw" / "rail0" / "client-2@client-1.txt")
    got = judged(blueprint("lab"), root, "rdma.write_bw")
    # client-2 is the server of client-1's compute pairs, so its compute rails are measured; its storage NICs not
    assert got.status == "setup_error" and "4 of 4 compute rail measurements" in got.coverage_shown
    assert "2 of 4 storage rail measurements" in got.message
    assert "missing: rail0 client-2, rail1 client-2" in got.message
    assert any("perftest server output, not a measurement" in n and "rail0/client-2@client-1.txt" in n
               for n in got.notes)


def test_rdma_a_gpu_node_measured_twice_on_one_rail_is_a_duplicate(tmp_path: Path) -> None:
    """Two files for one client on one rail (copies under two peer names): never two votes for one NIC."""
    root = rails_results(tmp_path, blueprint("lab"))
    shutil.copy(root / "ib_write_bw" / "rail0" / "client-1@client-2.txt", root / "ib_write_bw" / "rail0" /
                "client-1.txt")
    got = judged(blueprint("lab"), root, "rdma.write_bw")
    assert got.status == "setup_error" and "reported more than once: rail0 client-1" in got.message


def test_a_perftest_error_fails_the_rail_in_its_own_words(tmp_path: Path) -> None:
    """dev-ib_write_bw-no-device.txt: ib_write_bw on a machine without an RDMA device (real output)."""
    out = parse_perftest_bw((RDMA / "dev-ib_write_bw-no-device.txt").read_text(), "x")
    assert out.rows == () and out.average_gbit is None
    assert out.errors == ("Did not detect devices", "Unable to find the Infiniband/RoCE device")
    root = rails_results(tmp_path, blueprint("lab"))
    shutil.copy(RDMA / "dev-ib_write_bw-no-device.txt", root / "ib_write_bw" / "rail1" / "client-2@client-1.txt")
    got = judged(blueprint("lab"), root, "rdma.write_bw")
    assert got.status == "fail" and "rail1/client-2@client-1.txt: Did not detect devices; Unable to find the " \
        "Infiniband/RoCE device" in got.message


def test_list_subsys_of_nvme_cli_2() -> None:
    listing = parse_list_subsys((NVME / "lab-list-subsys.json").read_text(), "x")
    sub = listing.subsystems[0]
    assert (sub.name, sub.nqn, sub.fabrics) == ("nvme-subsys0", "nqn.2026-11.io.clustersmith:lab:record", True)
    assert [(p.name, p.address["traddr"], p.state) for p in sub.paths] == \
        [("nvme0", "10.77.0.1", "live"), ("nvme1", "10.77.1.1", "live")]


def nvme_results(root: Path, listing: str, policy: str) -> Path:
    """client-1's recording filed for client-1, and client-2 with both paths live (gate_inputs.nvme_results)."""
    bp = blueprint("lab")
    planned_nvme_results(root, bp, NVME / "lab-list-subsys.json", "round-robin", ["client-2"])
    return planned_nvme_results(root, bp, NVME / listing, policy, ["client-1"])


def test_paths_cover_every_planned_host_and_subsystem(tmp_path: Path) -> None:
    """Issue 15: one host with one subsystem whose NQN is not in the plan passed for every planned path."""
    bp = blueprint("lab")
    (tmp_path / "nvme").mkdir()
    shutil.copy(NVME / "lab-list-subsys.json", tmp_path / "nvme" / "client-1.json")  # its recorded NQN, ...:record
    (tmp_path / "nvme" / "client-1.iopolicy.json").write_text(json.dumps({"nvme-subsys0": "round-robin"}))
    got = judged(bp, tmp_path, "nvmeof.paths")
    assert bp.storage.nvmeof is not None
    own = {s.owner: s.nqn for s in bp.storage.nvmeof.subsystems}
    assert got.status == "setup_error", got.message
    assert "1 of 2 hosts in the result; missing: client-2" in got.message
    assert f"missing: client-1 {own['client-1']}, client-2 {own['client-2']}" in got.message
    assert "not in the Blueprint: client-1 nqn.2026-11.io.clustersmith:lab:record" in got.message
    good = nvme_results(tmp_path / "good", "lab-list-subsys.json", "round-robin")
    assert judged(bp, good, "nvmeof.paths").coverage_shown == "2 of 2 hosts, 2 of 2 subsystems, 4 of 4 paths"


def test_a_host_attached_to_another_hosts_namespace_is_caught(tmp_path: Path) -> None:
    """Every namespace has one owner: client-2 seeing client-1's namespace (as well as its own) is a setup error
    naming it, not a pass."""
    bp = blueprint("lab")
    assert bp.storage.nvmeof is not None
    own = {s.owner: s.nqn for s in bp.storage.nvmeof.subsystems}
    root = nvme_results(tmp_path, "lab-list-subsys.json", "round-robin")
    listing = json.loads((root / "nvme" / "client-2.json").read_text())
    theirs = json.loads(json.dumps(listing[0]["Subsystems"][0]).replace(own["client-2"], own["client-1"]))
    listing[0]["Subsystems"].append(theirs | {"Name": "nvme-subsys1"})
    (root / "nvme" / "client-2.json").write_text(json.dumps(listing))
    got = judged(bp, root, "nvmeof.paths")
    assert got.status == "setup_error", got.message
    assert f"not in the Blueprint: client-2 {own['client-1']}" in got.message


def test_both_paths_live_with_the_planned_policy_pass(tmp_path: Path) -> None:
    policy = (NVME / "lab-iopolicy.txt").read_text().strip()
    got = judged(blueprint("lab"), nvme_results(tmp_path, "lab-list-subsys.json", policy), "nvmeof.paths")
    assert got.status == "pass" and got.measured == 2 and got.notes == ()


def test_a_host_connected_under_another_host_nqn_fails(tmp_path: Path) -> None:
    """The target lets in only the host NQNs the Blueprint assigns: a client whose paths are up under another NQN
    (here the guest's random one, as recorded before the plan assigned NQNs) means a target that lets any host in."""
    bp = blueprint("lab")
    policy = (NVME / "lab-iopolicy.txt").read_text().strip()
    root = nvme_results(tmp_path, "lab-list-subsys.json", policy)
    recorded = json.loads((NVME / "lab-list-subsys.json").read_text())[0]["HostNQN"]
    planned = bp.storage.nvmeof.host("client-1").nqn if bp.storage.nvmeof else ""
    listing = root / "nvme" / "client-1.json"
    listing.write_text(listing.read_text().replace(planned, recorded))
    got = judged(bp, root, "nvmeof.paths")
    assert got.status == "fail" and f"client-1: connects as host NQN {recorded}, planned {planned}" in got.message
    assert "client-2" not in got.message


def test_a_cut_rail_is_reported_as_a_degraded_path(tmp_path: Path) -> None:
    got = judged(blueprint("lab"), nvme_results(tmp_path, "lab-list-subsys.rail0-cut.json", "round-robin"),
                 "nvmeof.paths")
    assert got.status == "fail" and got.measured == 1 and "3 of 4 paths" in got.coverage_shown
    assert "client-1 nvme-subsys0: 1 of 2 planned paths live" in got.message  # the host is named
    assert got.notes == ("degraded: client-1 nvme-subsys0 path nvme0 (10.77.0.1) is connecting",)


def test_a_wrong_iopolicy_fails_even_with_every_path_live(tmp_path: Path) -> None:
    got = judged(blueprint("lab"), nvme_results(tmp_path, "lab-list-subsys.rail0-back.json", "numa"), "nvmeof.paths")
    assert got.status == "fail" and got.measured == 2
    assert "client-1 nvme-subsys0: iopolicy numa, planned round-robin" in got.message


@pytest.mark.parametrize(("text", "field", "message"), [
    ("not json", "(line 1)", "invalid JSON"),
    ('[{"Subsystems": {"Name": "x"}}]', "0.Subsystems", "expected a list of subsystems"),
    ('[{"Subsystems": [{"Name": "nvme-subsys0", "NQN": "n", "Paths": [{"Name": "nvme0"}]}]}]',
     "0.Subsystems.0.Paths.0", "expected a path with Name, Transport, Address and State"),
])
def test_bad_list_subsys(text: str, field: str, message: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_list_subsys(text, "bad.json")
    assert err.value.problems[0].path == field and message in err.value.problems[0].message


def test_a_warning_inside_the_table_is_kept_and_the_row_read(tmp_path: Path) -> None:
    """NVIDIA/deepops' RoCE guide (see the README): perftest printed its CPU frequency warning between the header and
    the row. The row is read, the warning kept; the check notes it."""
    src = RDMA / "deepops-roce-cpufreq-warning.client.txt"
    out = parse_perftest_bw_file(src)
    assert [(r.bytes, r.iterations, r.average_gbit) for r in out.rows] == [(65536, 5000, 92.40)]
    assert out.warnings == ("Conflicting CPU frequency values detected: 1200.535000 != 1251.336000. CPU Frequency "
                            "is not max.",)
    assert out.banner.test == "RDMA_Write BW Test" and out.banner.link_type == "Ethernet" and out.errors == ()
    root = tmp_path
    for rail in ("rail0", "rail1"):
        (root / "ib_write_bw" / rail).mkdir(parents=True)
        for client in ("client-1@client-2", "client-1@storage-1", "client-2@storage-1"):
            shutil.copy(src, root / "ib_write_bw" / rail / f"{client}.txt")
    got = judged(blueprint("lab"), root, "rdma.write_bw")
    # 92.40 Gb/s of a 100 GbE run read against the lab's 10 Gb/s rails is not the lab's wire: named, not judged
    assert got.status == "setup_error" and got.measured is None, got
    assert "rail0/client-1@client-2.txt: 92.4 Gb/s is more than the wire can carry (10 Gb/s planned" in got.message
    assert any("perftest warned: Conflicting CPU frequency" in n for n in got.notes), got


@pytest.mark.parametrize(("name", "described"), [
    ("lab-ib_write_bw-rail0.client.txt", "RDMA_Write BW (one direction)"),
    ("deepops-roce-cpufreq-warning.client.txt", "RDMA_Write BW (one direction)"),
    ("rocm-ib_write_bw-bidirectional-loopback.client.txt", "RDMA_Write BW (both directions added)"),
    ("lab-ib_write_bw-rail0.post-list.edited.txt", "RDMA_Write BW (one direction, post list 8)"),
    ("superbench-ib_loopback-8M.first-run.txt", "RDMA_Write BW (one direction)"),
])
def test_the_banner_names_the_test_its_direction_and_post_list(name: str, described: str) -> None:
    assert parse_perftest_bw_file(RDMA / name).banner.describe() == described
    lat = parse_perftest_lat((RDMA / "lab-ib_read_lat-rail0.client.txt").read_text(), "x").banner
    assert (lat.verb, lat.kind, lat.bidirectional) == ("RDMA_Read", "Latency", False)


def lab_pairs(root: Path, source: Path, odd: str | None = None, odd_pair: str = "rail0/client-1@client-2") -> Path:
    """The lab's six ib_write_bw client outputs, all ``source`` but ``odd_pair``'s (``odd``)."""
    for rail in ("rail0", "rail1"):
        (root / "ib_write_bw" / rail).mkdir(parents=True)
        for pair in ("client-1@client-2", "client-1@storage-1", "client-2@storage-1"):
            chosen = odd if odd is not None and f"{rail}/{pair}" == odd_pair else source.name
            shutil.copy(RDMA / chosen, root / "ib_write_bw" / rail / f"{pair}.txt")
    return root


@pytest.mark.parametrize(("odd", "got_test"), [
    ("rocm-ib_write_bw-bidirectional-loopback.client.txt", "RDMA_Write BW (both directions added)"),
    ("lab-ib_write_bw-rail0.post-list.edited.txt", "RDMA_Write BW (one direction, post list 8)"),
])
def test_a_run_of_another_test_is_named_and_not_judged(tmp_path: Path, odd: str, got_test: str) -> None:
    """One pair's file holds another perftest run (AMD's bidirectional loopback, a post list run): the check names the
    file and the test it ran, leaves the pair uncovered and does not pass; the five planned runs are still read."""
    root = lab_pairs(tmp_path, RDMA / "lab-ib_write_bw-rail0.client.txt", odd)
    got = judged(blueprint("lab"), root, "rdma.write_bw")
    assert got.status == "setup_error", got
    assert f"rail0/client-1@client-2.txt: ran {got_test}, not the planned RDMA_Write BW (one direction): not " \
           "judged" in got.message
    # the compute pair measures both its nodes' rail 0: both uncovered
    assert got.coverage_shown == "2 of 4 compute rail measurements, 4 of 4 storage rail measurements"
    assert len(got.details) == 5


def test_a_figure_above_the_line_rate_is_named_not_judged(tmp_path: Path) -> None:
    """SuperBench's HDR loopback (8 MiB messages, 201.8 Gb/s) against a plan of 8 MiB messages on 200 Gb/s NICs: more
    than the wire carries. The same file against 400 Gb/s NICs is an ordinary measurement; against the default plan
    (64 KiB messages) it has no row of the planned size."""
    from blueprints.blueprint.check_args import PerftestArgs
    from blueprints.units import Size
    from validators.checks.network import write_bw
    from validators.coverage import Planned

    bp = blueprint("lab")
    planned_check = next(c for c in bp.acceptance.checks if c.id == "rdma.write_bw")
    check = planned_check.model_copy(update={"args": PerftestArgs(size=Size.parse("8MiB"))})
    root = lab_pairs(tmp_path, RDMA / "superbench-ib_loopback-8M.first-run.txt")
    at = Planned.of(bp).model_copy(update={"rail_gbit": 200.0, "storage_nic_gbit": 200.0})
    got = write_bw(check, Results(root), at)
    assert got.setup_error is not None and got.details == ()
    assert "rail1/client-2@storage-1.txt: 201.802 Gb/s is more than the wire can carry (200 Gb/s planned for this " \
           "NIC): wrong test, wrong file, or a loopback; not judged" in got.setup_error
    fits = write_bw(check, Results(root), at.model_copy(update={"rail_gbit": 400.0, "storage_nic_gbit": 400.0}))
    assert fits.setup_error is None and fits.value == pytest.approx(201.802, abs=1e-3)
    other_size = write_bw(planned_check, Results(root), at)
    assert other_size.setup_error is not None and other_size.details == ()
    assert "rail0/client-1@client-2.txt: measured 8388608 B messages, none of the planned 65536 B (-s 65536): not " \
           "judged" in other_size.setup_error


@pytest.mark.parametrize(("name", "line"), [("superbench-ib_loopback-all-sizes.log.txt", "line 11"),
                                            ("superbench-ib_loopback-8M.log.txt", "line 23")])
def test_two_runs_in_one_file_are_named_with_the_line_the_second_begins(name: str, line: str) -> None:
    """SuperBench's ib_loopback logs: a server and a client of one port written into one file (interleaved, or one after
    the other). Refused with the cause, never read as one run."""
    with pytest.raises(ParseError) as err:
        parse_perftest_bw_file(RDMA / name)
    problem = err.value.problems[0]
    assert problem.path == line and "expected one perftest run per file" in problem.message
    assert "two runs or two processes went into one file" in problem.message


def test_a_cut_rail_fails_even_where_another_hosts_listing_is_missing(tmp_path: Path) -> None:
    """Issue 37 item 4: what could be read shows a path down on client-1; client-2's listing is missing. The path
    down is a failure of the cluster and fails the check (exit 1); the missing host stands beside it, named."""
    root = nvme_results(tmp_path, "lab-list-subsys.rail0-cut.json", "round-robin")
    (root / "nvme" / "client-2.json").unlink()
    got = judged(blueprint("lab"), root, "nvmeof.paths")
    assert got.status == "fail", got.message
    assert got.message.startswith("client-1 nvme-subsys0: 1 of 2 planned paths live")
    assert "and the result does not cover the plan: 1 of 2 hosts in the result; missing: client-2" in got.message
    assert exit_code([got]) == 1
