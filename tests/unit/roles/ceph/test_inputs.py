"""The ceph role's input rules, run by real ansible-core on this machine: the scenario's own negative cases
(roles/ceph/molecule/default/negative.yml) against the group variables `clustersmith build examples/lab.yaml`
writes, with an inventory shaped as `lab up` writes it. Only the role's validate.yml runs (``negative_tasks_from``),
which asserts on the controller and touches no host; the lab tier runs the same cases in the scenario's verify."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import BIN, REPO

RAILS = [{"index": i, "name": f"rail{i}", "netdev": f"rail{i}", "address": f"10.77.{i}.1", "prefix": 24,
          "cidr": f"10.77.{i}.0/24", "mtu": 4200, "mac": f"52:54:00:00:0{i}:01"} for i in (0, 1)]


def lab_build(tmp_path: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "blueprints", "build", REPO / "examples" / "lab.yaml", "-o", tmp_path],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    ansible = tmp_path / "lab" / "ansible"
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    storage = {**local, "rails": RAILS, "disks": {f"osd{i}": f"/dev/vd{'bcde'[i]}" for i in range(4)}}
    clients = {name: {**local, "rails": RAILS} for name in ("client-1", "client-2")}
    inventory = {"all": {"children": {"storage_targets": {"hosts": {"storage-1": storage}},
                                      "gpu_clients": {"hosts": clients}}}}
    (ansible / "inputs-inventory.yml").write_text(yaml.safe_dump(inventory))
    return ansible


def test_the_ceph_role_refuses_each_broken_input_with_its_message(tmp_path: Path) -> None:
    ansible = lab_build(tmp_path)
    done = subprocess.run(
        [BIN / "ansible-playbook", "-i", ansible / "inputs-inventory.yml",
         REPO / "roles" / "ceph" / "molecule" / "default" / "negative.yml", "-e", "negative_tasks_from=validate"],
        capture_output=True, text=True, timeout=300, check=False, cwd=REPO,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    cases = re.findall(r"^TASK \[(A[n]? [^\]]*)\]", output, re.M)
    recap = re.search(r"^storage-1\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0\s+skipped=\d+\s+rescued=(\d+)",
                      output, re.M)
    # every case ran and was refused (each refusal is a rescue), among them the public rail no monitor has: the
    # monitors' addresses were once computed with map('first'), a template error instead of this message
    assert recap is not None and int(recap[1]) == len(cases) == 4, output[-6000:]
    assert "A public rail no monitor has" in cases
