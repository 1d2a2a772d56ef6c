"""The lab guests' bytecode cache for zip imports (stacks/lab/guest/clustersmith_lab_pycache.py), on this host's
Python: a module imported from a zip is compiled once, then served from the cache with its own file name."""

from __future__ import annotations

import marshal
import subprocess
import sys
import zipfile
from pathlib import Path

GUEST = Path(__file__).resolve().parents[4] / "stacks" / "lab" / "guest"

PROBE = """
import sys, traceback
sys.path.insert(0, {guest!r})
import clustersmith_lab_pycache
clustersmith_lab_pycache.CACHE = {cache!r}
sys.path.insert(0, {zip!r})
import probe_mod
print(probe_mod.answer())
try:
    probe_mod.boom()
except ZeroDivisionError:
    print(traceback.extract_tb(sys.exc_info()[2])[-1].filename)
"""


def run_probe(tmp_path: Path, archive: Path) -> list[str]:
    code = PROBE.format(guest=str(GUEST), cache=str(tmp_path / "cache"), zip=str(archive))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def make_zip(path: Path, body: str) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("probe_mod.py", body)
    return path


def test_zip_imports_compile_once_and_keep_their_file_name(tmp_path: Path) -> None:
    body = "def answer():\n    return 42\n\ndef boom():\n    return 1 / 0\n"
    first = make_zip(tmp_path / "a.zip", body)
    assert run_probe(tmp_path, first) == ["42", str(first / "probe_mod.py")]
    cached = list((tmp_path / "cache").iterdir())
    assert len(cached) == 1
    # the same source in another zip (Ansible's next task) is served from the cache, under its new path: swap the
    # cached code for other code and the import runs that, so the cache, not a compile, served it
    cached[0].write_bytes(marshal.dumps(compile(body.replace("42", "7"), "elsewhere.py", "exec")))
    second = make_zip(tmp_path / "b.zip", body)
    assert run_probe(tmp_path, second) == ["7", str(second / "probe_mod.py")]
    assert list((tmp_path / "cache").iterdir()) == cached


def test_changed_source_is_compiled_anew(tmp_path: Path) -> None:
    run_probe(tmp_path, make_zip(tmp_path / "a.zip", "def answer():\n    return 1\n\ndef boom():\n    1 / 0\n"))
    lines = run_probe(tmp_path, make_zip(tmp_path / "b.zip", "def answer():\n    return 2\n\ndef boom():\n    1 / 0\n"))
    assert lines[0] == "2"
    assert len(list((tmp_path / "cache").iterdir())) == 2
