"""nvidia-smi topo -m, nvidia-smi --query-gpu CSV and kernel Xid lines, on published outputs (tests/fixtures/gpu,
each cited in its README): values asserted by hand from the files, malformed input refused with its line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from validators.errors import ParseError
from validators.gpu_query import parse_query_gpu, parse_query_gpu_file
from validators.gpu_topo import parse_topo, parse_topo_file
from validators.xid import parse_xid, parse_xid_file, xid_action, xid_catalogue

REPO = Path(__file__).resolve().parents[3]
GPU = REPO / "tests" / "fixtures" / "gpu"


# --- nvidia-smi topo -m -------------------------------------------------------------------------------------------

def test_topo_8x_h100_each_gpu_pix_to_its_own_nic() -> None:
    t = parse_topo_file(GPU / "topo-sglang30401-8xh100-8nic.txt")
    assert t.devices == (*(f"GPU{i}" for i in range(8)), *(f"NIC{i}" for i in range(8)))
    assert t.nics["NIC5"] == "mlx5_5" and len(t.nics) == 8
    assert [t.link(i, f"mlx5_{i}") for i in range(8)] == ["PIX"] * 8
    assert (t.link(0, "mlx5_3"), t.link(0, "NIC4"), t.link(7, "mlx5_0")) == ("NODE", "SYS", "SYS")
    assert t.links["GPU2"]["GPU5"] == "NV18" and t.links["NIC3"]["GPU3"] == "PIX"
    assert (t.gpus[0].cpu_affinity, t.gpus[0].numa_affinity, t.gpus[0].gpu_numa_id) == ("0-47,96-143", "0", None)
    assert (t.gpus[7].cpu_affinity, t.gpus[7].numa_affinity) == ("48-95,144-191", "1")


def test_topo_nics_at_node_and_sys_to_every_gpu() -> None:
    t = parse_topo_file(GPU / "topo-stelline-asus-esc8000a-e12-4x-rtx6000ada-4nic.txt")
    assert [t.link(0, f"mlx5_{n}") for n in range(4)] == ["NODE", "NODE", "SYS", "SYS"]
    assert [t.link(3, f"mlx5_{n}") for n in range(4)] == ["SYS", "SYS", "NODE", "NODE"]
    assert t.links["NIC0"]["NIC1"] == "PIX" and t.links["GPU0"]["GPU2"] == "SYS"
    assert [(g.cpu_affinity, g.numa_affinity) for g in t.gpus] == [("0-31", "0"), ("0-31", "0"), ("32-63", "1"),
                                                                    ("32-63", "1")]


def test_topo_phb_pair_and_a_kvm_guest_with_one_nic() -> None:
    puget = parse_topo_file(GPU / "topo-stelline-puget-wrx90-2gpu-2nic.txt")
    assert puget.links["GPU0"]["GPU1"] == "PHB" and puget.link(1, "mlx5_1") == "NODE"
    kvm = parse_topo_file(GPU / "topo-sglang24413-h100-pcie-kvm-1nic.txt")
    assert kvm.devices == ("GPU0", "NIC0") and kvm.link(0, "mlx5_0") == "PHB"
    assert kvm.gpus[0].cpu_affinity == "0-251"


def test_topo_without_nics_tab_separated_and_numa_na() -> None:
    t = parse_topo_file(GPU / "topo-trp64-2x-rtx4090-no-nic-tabs.txt")
    assert t.devices == ("GPU0", "GPU1") and t.nics == {}
    assert t.links["GPU1"]["GPU0"] == "SYS"
    assert [(g.index, g.cpu_affinity, g.numa_affinity) for g in t.gpus] == [(0, "0-127", None), (1, "0-127", None)]
    with pytest.raises(KeyError, match="no NIC 'mlx5_0' in the matrix; its NICs: none"):
        t.link(0, "mlx5_0")


def test_topo_link_names_what_the_matrix_has() -> None:
    t = parse_topo_file(GPU / "topo-stelline-puget-wrx90-2gpu-2nic.txt")
    with pytest.raises(KeyError, match=r"NIC0 \(mlx5_0\), NIC1 \(mlx5_1\)"):
        t.link(0, "mlx5_7")
    with pytest.raises(KeyError, match="no GPU5 in the matrix; its GPUs: GPU0, GPU1"):
        t.link(5, "mlx5_0")


REAL_TOPO = (GPU / "topo-stelline-puget-wrx90-2gpu-2nic.txt").read_text()


@pytest.mark.parametrize(("text", "where", "message"), [
    ("", "(document)", "expected the matrix header"),
    (REAL_TOPO.replace("GPU0     X      PHB", "GPU0     X      PCI"), "line 2", "GPU0 to GPU1: expected a link type"),
    (REAL_TOPO.replace("GPU1    PHB      X ", "GPU1    PHB      PHB"), "line 3", "expected X on the diagonal only"),
    (REAL_TOPO.replace("NIC1    NODE    NODE    PIX      X\n", ""), "(matrix)", "no row for NIC1"),
    (REAL_TOPO.replace("0-23    0 ", "0-23 "), "line 2", "expected 4 link cells and 3 attribute values"),
    (REAL_TOPO.replace("  NIC1: mlx5_1", "  NIC9: mlx5_9"), "NIC Legend", "names a NIC the matrix has no column"),
])
def test_topo_refuses_malformed_matrices(text: str, where: str, message: str) -> None:
    with pytest.raises(ParseError) as exc:
        parse_topo(text, "topo.txt")
    shown = str(exc.value)
    assert f"topo.txt: {where}: " in shown and message in shown


# --- nvidia-smi --query-gpu ----------------------------------------------------------------------------------------

def test_query_gpu_columns_units_and_rows() -> None:
    q = parse_query_gpu_file(GPU / "query-gpu-hxs1-2x-rtx4070tis.csv")
    assert q.columns == ("index", "name", "pci.bus_id", "driver_version", "memory.total")
    assert q.units == {"memory.total": "MiB"}
    assert [(g.index, g.pci_bus_id, g.driver_version) for g in q.gpus] == [
        (0, "00000000:02:00.0", "580.173.02"), (1, "00000000:81:00.0", "580.173.02")]
    assert q.gpus[1].name == "NVIDIA GeForce RTX 4070 Ti SUPER" and q.gpus[1].other == {"memory.total": "16376"}
    assert q.gpus[0].ecc_uncorrected_volatile is None  # not queried


def test_query_gpu_unavailable_values_read_as_none() -> None:
    # The recorded file with its driver_version cells edited to the three words nvidia-smi prints for "no value".
    rows = (GPU / "query-gpu-hxs1-2x-rtx4070tis.csv").read_text().splitlines()
    edited = "\n".join([rows[0], rows[1].replace("580.173.02", "[N/A]"), rows[2].replace("580.173.02", "N/A")])
    q = parse_query_gpu(edited)
    assert [g.driver_version for g in q.gpus] == [None, None]
    q = parse_query_gpu(edited.replace("16376 MiB", "[Not Supported]"))
    assert [g.other["memory.total"] for g in q.gpus] == [None, None]


REAL_QUERY = (GPU / "query-gpu-hxs1-2x-rtx4070tis.csv").read_text()


@pytest.mark.parametrize(("text", "where", "message"), [
    ("", "(document)", "expected a header and one row per GPU"),
    (REAL_QUERY.split("\n", 1)[1], "line 1", "expected the header of property names"),  # --format=csv,noheader
    (REAL_QUERY.replace("16376 MiB\n1,", "16376 MiB, 7\n1,", 1), "line 2", "expected 5 values as the header names"),
    (REAL_QUERY.replace("\n0,", "\nzero,"), "line 2: index", "expected a whole number"),
    (REAL_QUERY.replace("driver_version", "index"), "line 1", "a property named twice"),
])
def test_query_gpu_refuses_malformed_csv(text: str, where: str, message: str) -> None:
    with pytest.raises(ParseError) as exc:
        parse_query_gpu(text, "q.csv")
    assert f"{where}: {message}" in str(exc.value)


# --- kernel Xid / SXid -----------------------------------------------------------------------------------------------

def test_xid_lines_with_pid_and_name() -> None:
    log = parse_xid_file(GPU / "xid-gpud-dmesg-ctime-13-109-31.txt")
    assert log.lines == 10 and log.sxids == ()
    assert [(x.line, x.xid) for x in log.xids] == [(2, 13), (3, 13), (4, 13), (5, 109), (6, 31), (9, 109)]
    first, ctx = log.xids[0], log.xids[3]
    assert (first.bus_id, first.pid, first.process, first.prefix) == ("0000:cb:00", "<unknown>", "<unknown>",
                                                                     "[Fri Aug 30 11:43:09 2024]")
    assert first.text == "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"
    assert (ctx.pid, ctx.process) == ("1797828", "pt_main_thread")
    assert ctx.text == "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005"


def test_xid_79_and_nvswitch_sxids() -> None:
    log = parse_xid_file(GPU / "xid-gpud-xid79-sxid20034.txt")
    assert [(x.bus_id, x.xid, x.text) for x in log.xids] == [("0000:91:00", 79, "GPU has fallen off the bus.")]
    assert len(log.sxids) == 8 and {s.sxid for s in log.sxids} == {20034}
    s = log.sxids[0]
    assert (s.switch, s.bus_id, s.text, s.prefix) == ("nvidia-nvswitch1", "0000:06:00.0",
                                                      "Fatal, Link 48 LTSSM Fault Up", "[6781753.400584]")


def test_xid_in_a_journal_line_and_a_log_without_xid() -> None:
    x = parse_xid_file(GPU / "xid-t450s-journal-xid79.txt").xids[0]
    assert (x.prefix, x.bus_id, x.xid) == ("Mar 21 20:18:56 pc kernel: [   65.315783]", "0000:01:00", 79)
    none = parse_xid_file(GPU / "xid-hxs1-journal-no-xid.txt")  # "XID 64a" of an r8169 NIC is no Xid
    assert none.lines == 3 and none.xids == () and none.sxids == ()


def test_xid_without_pid() -> None:
    # The older form, as quoted in NVIDIA/NVSentinel issue 155 (no log file of it was found: see the README).
    x = parse_xid("NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus").xids[0]
    assert (x.bus_id, x.xid, x.pid, x.process, x.text) == ("0000:44:00", 79, None, None,
                                                           "GPU has fallen off the bus")


@pytest.mark.parametrize(("line", "message"), [
    ("NVRM: Xid (PCI:0000:cb:00) 13, pid=1", "expected 'NVRM: Xid (PCI:dddd:bb:dd): <number>, <message>'"),
    ("NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828 name=x", "expected 'pid=<pid>, name=<name>, <message>'"),
    ("nvidia-nvswitch1: SXid (PCI:0000:06:00): 20034, Fatal", "expected 'nvidia-nvswitchN: SXid"),
])
def test_xid_refuses_a_changed_format(line: str, message: str) -> None:
    with pytest.raises(ParseError) as exc:
        parse_xid(f"first line\n{line}\n", "kern.log")
    assert f"line 2: {message}" in str(exc.value)


def test_xid_catalogue_classifies_only_what_the_documentation_says() -> None:
    cat = xid_catalogue()
    assert cat.source == "https://docs.nvidia.com/deploy/xid-errors/"
    assert {13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 154} <= set(cat.xids)
    assert all(e.page and e.says for e in cat.xids.values() if e.action != "unknown")
    assert (xid_action(63), xid_action(8), xid_action(79), xid_action(12345)) == \
        ("reset_or_service", "application", "reset_or_service", "unknown")
    # NVIDIA's own mapping (NVSentinel's xiderrorsmapping.csv): the bucket quoted, the class read from it
    assert (xid_action(13), xid_action(94), xid_action(95), xid_action(92), xid_action(45), xid_action(154)) == (
        "application", "application", "reset_or_service", "no_action", "unknown", "unknown")
    assert cat.xids[79].says == "79,ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS,RESTART_BM,FATAL"


# --- clustersmith parse ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("tool", "fixture", "check"), [
    ("nvidia-smi-topo", "topo-sglang30401-8xh100-8nic.txt", lambda d: d["links"]["GPU3"]["NIC3"] == "PIX"),
    ("nvidia-smi-query-gpu", "query-gpu-hxs1-2x-rtx4070tis.csv", lambda d: d["gpus"][1]["index"] == 1),
    ("kernel-xid", "xid-gpud-xid79-sxid20034.txt", lambda d: d["xids"][0]["xid"] == 79),
])
def test_clustersmith_parse(tool: str, fixture: str, check: object) -> None:
    r = subprocess.run([sys.executable, "-m", "validators", "parse", tool, str(GPU / fixture)], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert callable(check) and check(json.loads(r.stdout))


def test_clustersmith_parse_refuses_the_wrong_file() -> None:
    r = subprocess.run([sys.executable, "-m", "validators", "parse", "nvidia-smi-topo",
                        str(GPU / "query-gpu-hxs1-2x-rtx4070tis.csv")], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "expected the matrix header" in r.stderr and "Traceback" not in r.stderr
