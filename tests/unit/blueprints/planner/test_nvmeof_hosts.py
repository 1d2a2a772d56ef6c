"""The planner gives every host that attaches NVMe-oF subsystems one deterministic host NQN and host ID, and says
which subsystems let which hosts in (issue 16 item 6): the roles and acceptance read both from the Blueprint."""

from __future__ import annotations

import uuid
from pathlib import Path

import yaml

from blueprints.cli import plan_file
from blueprints.loader import parse_requirements
from blueprints.planner import plan

REPO = Path(__file__).resolve().parents[4]


def test_every_attaching_host_gets_its_own_nqn_and_hostid_from_cluster_and_name() -> None:
    bp = plan_file(REPO / "examples" / "cv-training-500tb.yaml")
    nvmeof = bp.storage.nvmeof
    assert nvmeof is not None
    hosts = bp.nvmeof_hosts()
    gpu_nodes = bp.hosts_by_role()["gpu_client"]
    assert [h.name for h in hosts] == gpu_nodes
    assert hosts[0].nqn == "nqn.2026-11.io.clustersmith:cv-training-500tb:host:gpu-1"
    assert len({h.nqn for h in hosts}) == len({h.hostid for h in hosts}) == len(gpu_nodes)
    assert all(uuid.UUID(h.hostid).version == 5 for h in hosts)
    assert all(len(h.nqn.encode()) <= 223 for h in hosts)  # NVMe base spec: an NQN is at most 223 bytes
    assert [s.owner for s in nvmeof.subsystems] == gpu_nodes  # one namespace per GPU node, in host order
    for sub in nvmeof.subsystems:
        assert bp.nvmeof_allowed_hosts(sub) == [sub.owner]  # its owner alone
    assert not set(bp.hosts_by_role()["storage_target"]) & {h.name for h in hosts}
    assert nvmeof.auth.value == "dhchap" and nvmeof.auth.derived_from.spec == ("target.provider",)


def test_nqns_are_stable_across_plans_and_differ_between_clusters() -> None:
    text = (REPO / "examples" / "lab.yaml").read_text()
    first = plan(parse_requirements(text)).nvmeof_hosts()
    assert plan(parse_requirements(text)).nvmeof_hosts() == first
    other = yaml.safe_load(text)
    other["metadata"]["name"] = "lab-two"
    second = plan(parse_requirements(yaml.safe_dump(other))).nvmeof_hosts()
    assert [h.name for h in second] == [h.name for h in first] == ["client-1", "client-2"]
    assert not {h.nqn for h in first} & {h.nqn for h in second}
    assert not {h.hostid for h in first} & {h.hostid for h in second}


def test_the_example_labs_6_1_kernel_cannot_authenticate_so_it_plans_allowed_hosts_only() -> None:
    """examples/lab.yaml boots 6.1 (decision 0010), which has no CONFIG_NVME_TARGET_AUTH; a lab on 6.12, which has,
    plans DH-CHAP (tests/unit/stacks/lab/test_kernel_choice.py)."""
    bp = plan_file(REPO / "examples" / "lab.yaml")
    assert bp.storage.nvmeof is not None
    assert bp.storage.nvmeof.auth.value == "none"
    assert "CONFIG_NVME_TARGET_AUTH" in bp.storage.nvmeof.auth.derived_from.formula


def test_a_cloud_design_has_no_nvmeof_and_no_host_identities() -> None:
    bp = plan_file(REPO / "examples" / "llm-training-16k.yaml")  # aws: the managed Lustre serves storage
    assert bp.storage.nvmeof is None
    assert bp.nvmeof_hosts() == []
