"""pfc_dcqcn's decision module against recorded real ``dcb`` output and a sysfs tree laid out like mlx5's."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from blueprints.blueprint import Blueprint
from blueprints.loader import load_requirements
from blueprints.planner import plan
from blueprints.rolevars.pfc_dcqcn import pfc_dcqcn_vars

REPO = Path(__file__).resolve().parents[4]
DCB = REPO / "tests" / "fixtures" / "dcb"
LAYOUT = REPO / "tests" / "fixtures" / "mlx5_sysfs" / "layout.txt"
MLX5 = "ens1f0np0"


def _load_module() -> ModuleType:
    path = REPO / "roles" / "pfc_dcqcn" / "library" / "pfc_dcqcn_qos.py"
    spec = importlib.util.spec_from_file_location("pfc_dcqcn_qos", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pfc_dcqcn_qos"] = module
    spec.loader.exec_module(module)
    return module


M = _load_module()


def build_sysfs(root: Path) -> Path:
    """Lay out tests/fixtures/mlx5_sysfs/layout.txt under ``root``."""
    for line in LAYOUT.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if " -> " in line:
            path, target = line.split(" -> ")
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).symlink_to(target)
        else:
            path, value = line.split(" ")
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(value + "\n")
    return root


def recorded(name: str) -> tuple[int, str, str]:
    return (int((DCB / f"{name}.rc").read_text()), (DCB / f"{name}.stdout").read_text(),
            (DCB / f"{name}.stderr").read_text())


class ReplayHost(M.Host):  # type: ignore[name-defined,misc]
    """Reads sysfs for real (a fake tree); ``dcb`` answers come from the fixtures, commands are recorded."""

    def __init__(self, root: Path, answers: dict[tuple[str, str], tuple[int, str, str]]) -> None:
        super().__init__(str(root), "dcb")
        self.answers = answers
        self.ran: list[list[str]] = []

    def dcb_show(self, obj: str, ifname: str) -> tuple[int, str, str]:
        return self.answers[(obj, ifname)]

    def run(self, argv: list[str]) -> None:
        self.ran.append(argv)


def _bp(example: str) -> Blueprint:
    spec = REPO / "examples" / f"{example}.yaml"
    return plan(load_requirements(spec), spec_file=str(spec))


def desired(example: str = "cv-training-500tb", **override: Any) -> Any:
    rv = pfc_dcqcn_vars(_bp(example)).model_dump(mode="json")
    params = {
        "trust": rv["pfc_dcqcn_trust"], "dscp_map": rv["pfc_dcqcn_dscp_map"],
        "pfc_priorities": rv["pfc_dcqcn_pfc_priorities"], "ets": rv["pfc_dcqcn_ets"],
        "ecn_priorities": rv["pfc_dcqcn_ecn_priorities"], "cnp_dscp": rv["pfc_dcqcn_cnp_dscp"],
        "cnp_priority": rv["pfc_dcqcn_cnp_priority"], "rp_params": rv["pfc_dcqcn_reaction_point"],
        "np_params": rv["pfc_dcqcn_notification_point"],
    }
    params.update(override)
    return M.Desired.from_params(params)


MANPAGE = {("pfc", MLX5): (0, (DCB / "manpage-pfc.json").read_text(), ""),
           ("app", MLX5): (0, (DCB / "manpage-app.json").read_text(), ""),
           ("ets", MLX5): (0, (DCB / "manpage-ets.json").read_text(), "")}
VIRTIO = {("pfc", "eth0"): recorded("virtio_net-pfc"), ("app", "eth0"): recorded("virtio_net-app")}


# parsers ----------------------------------------------------------------------------------------


def test_parse_pfc_reads_the_eight_booleans() -> None:
    assert M.parse_pfc((DCB / "manpage-pfc.json").read_text()) == [False] * 6 + [True, True]


def test_parse_pfc_refuses_a_short_vector() -> None:
    with pytest.raises(ValueError, match="prio_pfc has 3 entries, expected 8"):
        M.parse_pfc('{"prio_pfc":[true,false,true]}')


def test_parse_app_reads_published_pairs_with_the_old_trailing_element() -> None:
    assert M.parse_app_dscp((DCB / "published-app-dscp_prio.json").read_text()) == {8: [0], 16: [1]}
    assert M.parse_app_dscp((DCB / "manpage-app.json").read_text()) == {0: [0], 24: [4], 48: [6]}
    assert M.parse_app_dscp("{}") == {}


def test_parse_ets() -> None:
    ets = M.parse_ets((DCB / "manpage-ets.json").read_text())
    assert ets["tc_bw"] == [33, 33, 34, 0, 0, 0, 0, 0] and ets["tc_tsa"][3] == "strict"


@pytest.mark.parametrize(("fixture", "kind"), [("virtio_net-pfc", "unsupported"), ("virtio_net-app", "unsupported"),
                                                ("veth-pfc", "unsupported"), ("nosuchdev-pfc", "missing")])
def test_recorded_dcb_failures_are_classified(fixture: str, kind: str) -> None:
    rc, _, err = recorded(fixture)
    assert rc != 0
    assert M.classify_dcb_failure(err) == kind


# capability detection ---------------------------------------------------------------------------


def test_virtio_nic_stops_the_play_naming_the_nic(tmp_path: Path) -> None:
    host = ReplayHost(build_sysfs(tmp_path), VIRTIO)
    with pytest.raises(M.QosError) as info:
        M.survey(host, ["eth0"], desired(), lab=False)
    msg = str(info.value)
    assert "NIC eth0 (virtio_net) cannot do PFC/DCQCN" in msg
    assert "Operation not supported" in msg and "plan the target as the lab" in msg


def test_virtio_nic_on_the_lab_is_recorded_as_unsupported(tmp_path: Path) -> None:
    host = ReplayHost(build_sysfs(tmp_path), VIRTIO)
    out = M.survey(host, ["eth0"], desired("lab"), lab=True)
    assert out.plans == [] and out.batch == []
    assert out.support["eth0"]["pfc"] == "unsupported" and out.support["eth0"]["dcqcn"] == "unsupported"
    assert "Attribute read: Operation not supported" in out.support["eth0"]["reason"]
    changed, _ = M.apply(host, out, tmp_path / "etc", check_mode=False)
    assert changed is False and not (tmp_path / "etc").exists()


def test_missing_netdev_stops_the_play_even_on_the_lab(tmp_path: Path) -> None:
    host = ReplayHost(build_sysfs(tmp_path), {})
    with pytest.raises(M.QosError, match="rail9 does not exist on this host"):
        M.survey(host, ["rail9"], desired("lab"), lab=True)


def test_real_dcb_on_loopback_reports_no_dcb() -> None:
    """The real dcb binary, the real /sys: loopback has no DCB, like the lab's virtio rails."""
    with pytest.raises(M.QosError, match=r"NIC lo \(unknown driver\) cannot do PFC/DCQCN: dcb pfc show: "
                                         r"Attribute read: Operation not supported"):
        M.survey(M.Host(), ["lo"], desired(), lab=False)


# mlx5: the plan ---------------------------------------------------------------------------------


def test_mlx5_from_firmware_defaults_gets_exactly_the_planned_changes(tmp_path: Path) -> None:
    bp = _bp("cv-training-500tb")
    prio, dscp = bp.qos.roce_priority.value, bp.qos.dscp.value
    host = ReplayHost(build_sysfs(tmp_path), MANPAGE)
    out = M.survey(host, [MLX5], desired(), lab=False)
    [p] = out.plans
    pfc = [f"{i}:{'on' if i == prio else 'off'}" for i in range(8)]
    assert p.commands == [
        ["dcb", "pfc", "set", "dev", MLX5, "prio-pfc", *pfc],
        ["dcb", "app", "replace", "dev", MLX5, "dscp-prio", f"{dscp}:{prio}"],
    ]
    # firmware enables congestion control on all eight priorities; the plan keeps only the RoCE one
    off = [i for i in range(8) if i != prio]
    assert sorted(p.writes) == sorted([(f"{side}/enable/{i}", "0") for side in ("roce_np", "roce_rp") for i in off])
    assert p.before["prio-pfc"].endswith("6:on 7:on") and f"{prio}:on" in p.after["prio-pfc"]
    assert out.support[MLX5] == {"driver": "mlx5_core", "pfc": "supported", "dcqcn": "supported"}


def test_apply_writes_sysfs_and_replay_files_then_is_idempotent(tmp_path: Path) -> None:
    root = build_sysfs(tmp_path / "sys")
    host = ReplayHost(root, MANPAGE)
    want = desired()
    state = tmp_path / "etc"
    changed, diffs = M.apply(host, M.survey(host, [MLX5], want, lab=False), state, check_mode=False)
    assert changed is True and len(host.ran) == 2
    assert (root / f"class/net/{MLX5}/ecn/roce_np/enable/0").read_text() == "0\n"
    batch = (state / "pfc_dcqcn.dcb").read_text().splitlines()
    assert batch[0] == f"pfc set dev {MLX5} prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off"
    assert batch[1] == f"app replace dev {MLX5} dscp-prio 26:3 48:6"
    sysfs = (state / "pfc_dcqcn.sysfs").read_text().splitlines()
    assert f"class/net/{MLX5}/ecn/roce_np/cnp_dscp 48" in sysfs and f"class/net/{MLX5}/ecn/roce_rp/rpg_gd 11" in sysfs
    assert any(d["after_header"] == MLX5 + " (after)" for d in diffs)

    # second run: the NIC now answers what the plan set (as dcb would print it)
    pfc_now = {"prio_pfc": want.pfc_vector()}
    app_now = {"dscp_prio": [[0, 0], [24, 4], [26, 3], [48, 6]]}
    host2 = ReplayHost(root, {("pfc", MLX5): (0, json.dumps(pfc_now), ""), ("app", MLX5): (0, json.dumps(app_now), "")})
    again = M.survey(host2, [MLX5], want, lab=False)
    assert [p.changed for p in again.plans] == [False]
    assert M.apply(host2, again, state, check_mode=False) == (False, [])
    assert host2.ran == []


def test_check_mode_reports_without_touching(tmp_path: Path) -> None:
    root = build_sysfs(tmp_path / "sys")
    host = ReplayHost(root, MANPAGE)
    changed, diffs = M.apply(host, M.survey(host, [MLX5], desired(), lab=False), tmp_path / "etc", check_mode=True)
    assert changed is True and diffs
    assert host.ran == [] and not (tmp_path / "etc").exists()
    assert (root / f"class/net/{MLX5}/ecn/roce_np/enable/0").read_text() == "1\n"


def test_stray_dscp_on_the_lossless_priority_is_removed(tmp_path: Path) -> None:
    app = {"dscp_prio": [[26, 3], [27, 3], [48, 6], [24, 4]]}
    answers = dict(MANPAGE)
    answers[("app", MLX5)] = (0, json.dumps(app), "")
    out = M.survey(ReplayHost(build_sysfs(tmp_path), answers), [MLX5], desired(), lab=False)
    assert ["dcb", "app", "del", "dev", MLX5, "dscp-prio", "27:3"] in out.plans[0].commands
    assert not any(c[2] == "replace" for c in out.plans[0].commands)


def test_pcp_trust_removes_every_dscp_entry(tmp_path: Path) -> None:
    out = M.survey(ReplayHost(build_sysfs(tmp_path), MANPAGE), [MLX5], desired(trust="pcp"), lab=False)
    assert ["dcb", "app", "del", "dev", MLX5, "dscp-prio", "0:0", "24:4", "48:6"] in out.plans[0].commands


def test_ets_is_set_only_when_planned_and_different(tmp_path: Path) -> None:
    ets_doc = json.loads((DCB / "manpage-ets.json").read_text())
    same = desired(ets=ets_doc)
    out = M.survey(ReplayHost(build_sysfs(tmp_path / "a"), MANPAGE), [MLX5], same, lab=False)
    assert not any(c[1] == "ets" for c in out.plans[0].commands)
    other = dict(ets_doc, tc_bw=[50, 50, 0, 0, 0, 0, 0, 0])
    out = M.survey(ReplayHost(build_sysfs(tmp_path / "b"), MANPAGE), [MLX5], desired(ets=other), lab=False)
    [ets_cmd] = [c for c in out.plans[0].commands if c[1] == "ets"]
    assert "tc-bw" in ets_cmd and "0:50" in ets_cmd
    assert any(line.startswith(f"ets set dev {MLX5} prio-tc") for line in out.batch)


def test_a_missing_ecn_file_stops_the_play_naming_it(tmp_path: Path) -> None:
    root = build_sysfs(tmp_path)
    (root / f"class/net/{MLX5}/ecn/roce_rp/rpg_gd").unlink()
    with pytest.raises(M.QosError, match=rf"NIC {MLX5} lacks ecn files roce_rp/rpg_gd"):
        M.survey(ReplayHost(root, MANPAGE), [MLX5], desired(), lab=False)
