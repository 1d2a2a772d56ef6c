"""The monitoring role's target-file tasks (roles/monitoring/tasks/targets.yml), run by real ansible-core on this
machine against a folder standing in for the monitoring host's /etc/prometheus: they install the file_sd target
files the build wrote, change nothing on a second run, put back a file someone edited, remove a target file the
build no longer writes (and nothing that is not a target file), and leave a configuration promtool reads whole.

The play imports the task file itself rather than the role, so its own ``Reload Prometheus`` handler (a message)
stands in for the role's, which would reload this machine's Prometheus; the lab tier's molecule verify runs the role's
tasks on the lab's monitoring host."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from blueprints.render.monitoring import render
from tests.conftest import BIN, REPO, require_tool
from tests.promtool.support import EXAMPLES, blueprint

PLAY = [{
    "name": "Install the target files",
    "hosts": "localhost",
    "connection": "local",
    "gather_facts": False,
    "tasks": [{"name": "Install them", "ansible.builtin.import_tasks": str(REPO / "roles" / "monitoring" / "tasks" /
                                                                         "targets.yml")}],
    "handlers": [{"name": "Reload Prometheus", "ansible.builtin.debug": {"msg": "reload notified"}}],
}]


def _run(tmp_path: Path, build: Path, host: Path) -> tuple[int, str]:
    """The play once; the loop items it changed (a copied or a removed file) and its output."""
    (tmp_path / "play.yml").write_text(yaml.safe_dump(PLAY, sort_keys=False))
    done = subprocess.run(
        [BIN / "ansible-playbook", "-i", "localhost,", tmp_path / "play.yml",
         "-e", f"monitoring_config_dir={build}", "-e", f"__monitoring_targets_dir={host / 'targets'}",
         "-e", f"ansible_python_interpreter={BIN / 'python'}"],
        capture_output=True, text=True, timeout=300, check=False, cwd=REPO,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    recap = re.search(r"^localhost\s+: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0", output, re.M)
    assert recap is not None, output[-6000:]
    items = len(re.findall(r"^changed: \[localhost\] => \(item=", output, re.M))
    assert (int(recap[1]) == 0) == (items == 0), output[-6000:]
    return items, output


def test_the_role_installs_the_build_target_files_idempotently_and_removes_stale_ones(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    render(blueprint(next(e for e in EXAMPLES if e.stem == "lab")), tmp_path / "build")
    build = tmp_path / "build" / "monitoring"
    host = tmp_path / "etc-prometheus"
    built = sorted(p.name for p in (build / "targets").glob("*.json"))
    assert "node-gpu_client.json" in built

    changed, output = _run(tmp_path, build, host)
    assert changed == len(built), output[-6000:]
    assert "reload notified" in output
    assert sorted(p.name for p in (host / "targets").iterdir()) == built
    for name in built:
        assert (host / "targets" / name).read_bytes() == (build / "targets" / name).read_bytes()
        assert (host / "targets" / name).stat().st_mode & 0o777 == 0o644

    changed, output = _run(tmp_path, build, host)
    assert changed == 0, output[-6000:]
    assert "reload notified" not in output

    (host / "targets" / "node-gone.json").write_text('[{"labels": {"role": "gpu_client"}, "targets": ["gone-1:9100"]}]')
    (host / "targets" / "node-gpu_client.json").write_text("[]")
    (host / "targets" / "README").write_text("not a target file: kept\n")
    changed, output = _run(tmp_path, build, host)
    assert changed == 2, output[-6000:]  # the edited file put back, the stale one removed (README is no target)
    assert "item=node-gone.json" in output
    assert "reload notified" in output
    assert sorted(p.name for p in (host / "targets").iterdir()) == sorted([*built, "README"])
    assert (host / "targets" / "node-gpu_client.json").read_bytes() == (build / "targets" / "node-gpu_client.json") \
        .read_bytes()

    # prometheus.yml and its rules where the role puts them: promtool finds every target file it names
    shutil.copy(build / "prometheus.yml", host / "prometheus.yml")
    shutil.copytree(build / "rules", host / "rules")
    checked = subprocess.run([promtool, "check", "config", str(host / "prometheus.yml")], capture_output=True,
                             text=True, timeout=120, check=False)
    assert checked.returncode == 0 and "WARNING" not in checked.stdout, checked.stdout + checked.stderr
