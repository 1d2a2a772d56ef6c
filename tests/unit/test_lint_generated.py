"""tests/lint_generated.py (run by `make lint`): it finds every generated YAML file through the build folder's links
and its two linters fail on what they should, naming the file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lint_generated", REPO / "tests" / "lint_generated.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["lint_generated"] = module
    spec.loader.exec_module(module)
    return module


def test_every_generated_yaml_file_is_found_through_the_links_and_a_bad_one_fails(tmp_path: Path) -> None:
    lint = _script()
    folder = lint.build(REPO / "examples" / "lab.yaml", tmp_path)
    files = lint.generated_yaml(folder)
    names = {f.relative_to(folder).as_posix() for f in files}
    # group_vars is a link into .generated/current: read through it, the tree behind it not a second time
    assert {"ansible/site.yml", "ansible/group_vars/all/rdma.yml", "blueprint.yaml",
            "monitoring/prometheus.yml"} <= names
    assert not any(".generated" in f.parts for f in files)
    assert lint.yamllint(files).returncode == 0
    bad = tmp_path / "bad.yml"
    bad.write_text("---\nkey:  value \nlist:\n- a\n  - b\n")
    done = lint.yamllint([bad])
    assert done.returncode != 0 and f"{bad}:2:" in done.stdout, done.stdout


def test_ansible_lint_production_refuses_a_task_without_a_name(tmp_path: Path) -> None:
    lint = _script()
    play = tmp_path / "play.yml"
    play.write_text("---\n- name: A play\n  hosts: all\n  tasks:\n    - ansible.builtin.command: \"true\"\n")
    done = lint.ansible_lint([play])
    assert done.returncode != 0 and "name[missing]" in done.stdout + done.stderr, done.stdout + done.stderr
