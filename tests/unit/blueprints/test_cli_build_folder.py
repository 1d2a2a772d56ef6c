"""`clustersmith build -o DIR` as a user and a later step meet it: real subprocesses, real signals, files on disk.

Issue 16 item 1: build replaces only a folder it wrote; what users and later steps write there survives a rebuild;
a kill at any step leaves the old or the new generated tree and the next build cleans up; SIGINT 130, SIGTERM 143.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from blueprints.errors import ClusterSmithError
from blueprints.render import GENERATED, MARKER, PAUSE_ENV, editable, generated_tree
from tests.conftest import default_sigint

REPO = Path(__file__).resolve().parents[3]
LAB = REPO / "examples" / "lab.yaml"
CANONICAL = REPO / "examples" / "cv-training-500tb.yaml"
ENV = {"COLUMNS": "200", "PATH": "/usr/bin:/bin",
       "CLUSTERSMITH_SECRETS_DIR": os.environ["CLUSTERSMITH_SECRETS_DIR"]}  # tests/conftest.py: a session folder


def cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "blueprints", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={**ENV, **(env or {})})


def spec(tmp_path: Path, name: str, description: str, source: Path = LAB) -> Path:
    data = yaml.safe_load(source.read_text())
    data["metadata"] = {"name": name, "description": description}
    path = tmp_path / f"{name}-{abs(hash(description))}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def snapshot(root: Path) -> dict[str, str]:
    """Every file under root (links not followed) with its content's hash, every link with its target."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def described(folder: Path) -> str:
    return str(yaml.safe_load((folder / "blueprint.yaml").read_text())["target"]["description"])


def assert_whole(folder: Path, description: str) -> None:
    """The generated tree seen through the folder's links is one build's, every link resolves, nothing half."""
    assert described(folder) == description
    tree = generated_tree(folder)
    for path in [*folder.iterdir(), *(c for d in folder.iterdir() if d.is_dir() and not d.is_symlink()
                                      for c in d.iterdir())]:
        if path.is_symlink() and GENERATED in os.readlink(path):
            assert path.exists(), f"dangling link {path} -> {os.readlink(path)}"
            assert path.resolve().is_relative_to(tree)


def leftovers(folder: Path) -> list[str]:
    current = os.readlink(folder / GENERATED / "current")
    return sorted(p.name for p in (folder / GENERATED).iterdir()
                  if p.name not in ("lock", "current", editable.RECORD, current))


def test_a_spec_named_roles_into_a_copy_of_the_repository_is_refused(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "roles", clone / "roles")
    before = snapshot(clone)
    r = cli("build", spec(tmp_path, "roles", "hostile"), "-o", clone)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert f"{clone / 'roles'} holds files and no {MARKER}" in r.stderr
    assert "choose another -o, or move that folder away" in r.stderr
    assert snapshot(clone) == before


def test_a_refused_build_leaves_no_secrets_file_behind(tmp_path: Path) -> None:
    """Bad input writes nothing: the output folder is refused before the cluster's secrets file is made."""
    clone = tmp_path / "clone"
    (clone / "unsafe").mkdir(parents=True)
    (clone / "unsafe" / "mine.txt").write_text("mine")
    secrets = tmp_path / "secrets"
    r = cli("build", spec(tmp_path, "unsafe", "refused"), "-o", clone, env={"CLUSTERSMITH_SECRETS_DIR": str(secrets)})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{clone / 'unsafe'} holds files and no {MARKER}" in r.stderr
    assert not secrets.exists() or not any(secrets.iterdir()), sorted(secrets.iterdir())


@pytest.mark.parametrize("output", ["/dev/null/out", "/proc/clustersmith-out"])
def test_a_build_that_cannot_write_leaves_no_secrets_file_behind(tmp_path: Path, output: str) -> None:
    """Issue 43 item 4: a build refused because it cannot write (even root cannot write under /dev/null or /proc,
    as it cannot on a full disk) still created the cluster's secrets file; it is now made just before the swap."""
    secrets = tmp_path / "secrets"
    r = cli("build", spec(tmp_path, "unwritable", "refused"), "-o", output,
            env={"CLUSTERSMITH_SECRETS_DIR": str(secrets)})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "cannot write the build folder" in r.stderr
    assert not secrets.exists() or not any(secrets.iterdir()), sorted(secrets.iterdir())


def test_a_system_file_as_secrets_is_refused_as_not_a_secrets_file(tmp_path: Path) -> None:
    """It advised to `chmod 600` the file: /etc/passwd's mode was the only thing it saw wrong."""
    r = cli("build", spec(tmp_path, "lab", "passwd"), "-o", tmp_path / "out", "--secrets", "/etc/passwd")
    said = " ".join(r.stderr.split())
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "is not a clustersmith secrets file (no 'kind: ClusterSecrets')" in said and "chmod" not in said
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("marker", "why"), [
    ("name: other\nformat: 1\n", "naming Blueprint 'other', not 'lab'"),
    ("name: lab\nformat: 99\n", "of layout format 99; this clustersmith writes format 1"),
])
def test_a_marker_of_another_blueprint_or_layout_is_refused(tmp_path: Path, marker: str, why: str) -> None:
    folder = tmp_path / "out" / "lab"
    folder.mkdir(parents=True)
    (folder / MARKER).write_text(marker)
    (folder / "notes.txt").write_text("mine")
    before = snapshot(folder)
    r = cli("build", LAB, "-o", folder.parent)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert why in r.stderr
    assert snapshot(folder) == before


def test_output_under_a_regular_file_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    r = cli("build", LAB, "-o", tmp_path / "file" / "out")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "-o/--output: cannot write the build folder" in r.stderr
    assert (tmp_path / "file").read_text() == "x"


def test_a_rebuild_keeps_what_users_and_later_steps_wrote(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli("build", spec(tmp_path, "lab", "first"), "-o", out).returncode == 0
    folder = out / "lab"
    mine = {
        "ansible/host_vars/client-1.yml": "rdma_extra: 1\n",
        "ansible/inventory.yml": "# Written by `clustersmith lab up`\nall: {}\n",
        "acceptance/runs/20250101T000000Z/results.json": "{}\n",
        "acceptance/report/index.html": "<html></html>\n",
        "deploy/state.json": "{}\n",
        "lab/state.json": "{}\n",
    }
    for rel, text in mine.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    lab_inode = (folder / "lab").stat().st_ino
    sock = socket.socket(socket.AF_UNIX)  # a running VM's rail socket: it must stay where it is, bound
    sock.bind(str(folder / "lab" / "rail0.sock"))
    try:
        r = cli("build", spec(tmp_path, "lab", "second"), "-o", out)
        assert r.returncode == 0, r.stderr
        assert_whole(folder, "second")
        assert {rel: (folder / rel).read_text() for rel in mine} == mine
        assert (folder / "lab").stat().st_ino == lab_inode
        assert (folder / "lab" / "rail0.sock").is_socket()
        assert leftovers(folder) == []
    finally:
        sock.close()


def test_the_inventory_deploy_writes_replaces_the_copy_and_survives(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli("build", CANONICAL, "-o", out).returncode == 0
    inventory = out / "cv-training-500tb" / "ansible" / "inventory.yml"
    assert not inventory.is_symlink() and "CHANGE_ME" in inventory.read_text()
    tmp = inventory.with_suffix(".yml.tmp")  # a new file renamed over it, as blueprints.atomic writes for those steps
    tmp.write_text("# Written by `clustersmith inventory --from-stack`\nall: {}\n")
    os.replace(tmp, inventory)
    r = cli("build", CANONICAL, "-o", out)
    assert r.returncode == 0, r.stderr
    assert inventory.read_text().startswith("# Written by `clustersmith inventory --from-stack`")
    assert f"kept {inventory}: yours (edited since build wrote it, or written by another step); this build's " \
           "version is .generated/current/ansible/inventory.yml" in " ".join(r.stdout.split())


EDITED = {"ansible/inventory.yml": "ansible_host: CHANGE_ME", "pulumi/machines.yaml": "address: CHANGE_ME",
          "pulumi/Pulumi.cv-training-500tb.yaml": "machinesFile"}


def test_the_files_a_user_is_told_to_edit_are_theirs(tmp_path: Path) -> None:
    """Issue 43 item 4: each is a real file; a rebuild keeps an edited one (and says where its own version is),
    replaces one the user left alone, and writes a deleted one again."""
    out = tmp_path / "out"
    r = cli("build", CANONICAL, "-o", out)
    assert r.returncode == 0, r.stderr
    folder = out / "cv-training-500tb"
    for rel, needle in EDITED.items():
        path = folder / rel
        assert path.is_file() and not path.is_symlink() and needle in path.read_text(), rel
        assert f"wrote {path}: yours to edit" in " ".join(r.stdout.split())
    mine = folder / "ansible" / "inventory.yml"
    mine.write_text(mine.read_text().replace("CHANGE_ME", "10.0.0.7"))
    (folder / "pulumi" / "machines.yaml").unlink()
    untouched = folder / "pulumi" / "Pulumi.cv-training-500tb.yaml"
    edited_text = mine.read_text()
    changed = CANONICAL.read_text().replace("  gpus: 512\n", "  gpus: 256\n")
    assert changed != CANONICAL.read_text()
    (tmp_path / "c.yaml").write_text(changed)
    r = cli("build", tmp_path / "c.yaml", "-o", out)
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stdout.split())
    assert mine.read_text() == edited_text
    assert f"kept {mine}: yours" in said
    assert "gpu-64:" not in generated_tree(folder).joinpath("ansible", "inventory.yml").read_text()  # 32 nodes
    assert "gpu-64:" in mine.read_text()  # the user's file still names the old plan's hosts: theirs to merge
    assert "CHANGE_ME" in (folder / "pulumi" / "machines.yaml").read_text()
    assert f"wrote {folder / 'pulumi' / 'machines.yaml'}" in said
    assert untouched.read_bytes() == generated_tree(folder).joinpath("pulumi", untouched.name).read_bytes()
    assert f"updated {untouched}: you had not edited it since the last build" in said
    mine.write_text(generated_tree(folder).joinpath("ansible", "inventory.yml").read_text())  # the user takes it
    machines = folder / "pulumi" / "machines.yaml"
    r = cli("build", CANONICAL, "-o", out)  # back to 512 GPUs: the files nobody edited follow the plan
    said = " ".join(r.stdout.split())
    assert r.returncode == 0 and f"kept {mine}" in said and f"updated {machines}" in said, said
    assert "name: gpu-64\n" in machines.read_text()


def test_the_steps_after_build_replace_only_what_clustersmith_wrote(tmp_path: Path) -> None:
    """Issue 43 item 4: `inventory --from-stack`, deploy's inventory step and `lab up` replaced the inventory a user
    had filled in. They take build's unedited version, a link of build's and a file a step wrote (its header), and
    refuse the user's own, naming it (editable.claim)."""
    out = tmp_path / "out"
    assert cli("build", CANONICAL, "-o", out).returncode == 0
    folder = out / "cv-training-500tb"
    inventory = folder / "ansible" / "inventory.yml"
    assert editable.claim(folder, "ansible/inventory.yml", "a step") == inventory  # build's, unedited
    inventory.write_text(f"{editable.STEP_MARK}inventory --from-stack` from the aws stack\nall: {{}}\n")
    assert editable.claim(folder, "ansible/inventory.yml", "a step") == inventory  # a step's own
    inventory.unlink()
    assert editable.claim(folder, "ansible/inventory.yml", "a step") == inventory  # none
    inventory.symlink_to("../.generated/current/ansible/inventory.yml")  # the layout before
    assert editable.claim(folder, "ansible/inventory.yml", "a step") == inventory
    inventory.unlink()
    mine = generated_tree(folder).joinpath("ansible", "inventory.yml").read_text().replace("CHANGE_ME", "10.0.0.7")
    for make in (lambda: inventory.write_text(mine), lambda: inventory.mkdir(),
                 lambda: inventory.symlink_to(tmp_path / "elsewhere.yml")):
        make()
        with pytest.raises(ClusterSmithError) as refused:
            editable.claim(folder, "ansible/inventory.yml", "lab up")
        said = " ".join(str(refused.value).split())
        assert str(inventory) in said and "is yours" in said and "which lab up would replace" in said
        assert "Move it aside (e.g. to inventory.mine.yml) and run again" in said
        inventory.rmdir() if inventory.is_dir() and not inventory.is_symlink() else inventory.unlink()


def test_lab_up_refuses_a_users_inventory_before_anything_boots(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli("build", LAB, "-o", out).returncode == 0
    inventory = out / "lab" / "ansible" / "inventory.yml"
    inventory.write_text("# mine\nall: {hosts: {client-1: {ansible_host: 10.0.0.7}}}\n")
    r = cli("lab", "up", out / "lab")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert str(inventory) in " ".join(r.stderr.split()) and "is yours" in r.stderr
    assert inventory.read_text().startswith("# mine") and not (out / "lab" / "lab" / "state.json").exists()


def test_an_edit_made_through_an_old_layouts_link_survives(tmp_path: Path) -> None:
    """The layout before made the inventory a link into .generated/current/: an edit through it landed in the
    generated tree, and the next build replaced it without a word."""
    out = tmp_path / "out"
    assert cli("build", CANONICAL, "-o", out).returncode == 0
    folder = out / "cv-training-500tb"
    inventory = folder / "ansible" / "inventory.yml"
    inventory.unlink()
    inventory.symlink_to("../.generated/current/ansible/inventory.yml")  # as the older clustersmith left it
    edited = inventory.read_text().replace("CHANGE_ME", "10.0.0.7")
    inventory.write_text(edited)  # an editor writing through the link
    r = cli("build", CANONICAL, "-o", out)
    assert r.returncode == 0, r.stderr
    assert not inventory.is_symlink() and inventory.read_text() == edited
    assert f"kept {inventory}: it was a link into the generated tree" in " ".join(r.stdout.split())
    assert "CHANGE_ME" in generated_tree(folder).joinpath("ansible", "inventory.yml").read_text()


def _paused_build(spec_file: Path, out: Path, step: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "blueprints", "build", str(spec_file), "-o", str(out)],
                            cwd=REPO, env={**ENV, PAUSE_ENV: step}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert line == f"build paused at {step}\n", line + proc.stderr.read()
    return proc


@pytest.fixture(scope="module")
def first_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One lab build of description "old", with files a user and the lab added, copied by each kill case."""
    root = tmp_path_factory.mktemp("first")
    assert cli("build", spec(root, "lab", "old"), "-o", root / "out").returncode == 0
    (root / "out" / "lab" / "ansible" / "host_vars").mkdir()
    (root / "out" / "lab" / "ansible" / "host_vars" / "client-1.yml").write_text("x: 1\n")
    (root / "out" / "lab" / "lab").mkdir()
    (root / "out" / "lab" / "lab" / "state.json").write_text("{}\n")
    return root / "out"


KILLS = [(step, signal.SIGKILL) for step in ("locked", "staged", "linked", "swapped")] + [
    ("staged", signal.SIGINT), ("linked", signal.SIGTERM), ("swapped", signal.SIGTERM)]
EXIT = {signal.SIGKILL: -9, signal.SIGINT: 130, signal.SIGTERM: 143}


@pytest.mark.parametrize(("step", "sig"), KILLS, ids=[f"{s}-{g.name}" for s, g in KILLS])
def test_a_kill_at_any_step_leaves_the_old_or_the_new_tree(first_build: Path, tmp_path: Path, step: str,
                                                           sig: signal.Signals) -> None:
    out = tmp_path / "out"
    shutil.copytree(first_build, out, symlinks=True)
    folder = out / "lab"
    mine = {p: p.read_text() for p in (folder / "ansible/host_vars/client-1.yml", folder / "lab/state.json")}
    proc = _paused_build(spec(tmp_path, "lab", "new"), out, step)
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == EXIT[sig]
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert "Traceback" not in err
    if sig != signal.SIGKILL:
        assert err.strip().splitlines()[-1] == ("aborted" if sig == signal.SIGINT else "terminated")
    assert_whole(folder, "new" if step == "swapped" else "old")
    assert {p: p.read_text() for p in mine} == mine
    r = cli("build", spec(tmp_path, "lab", "newer"), "-o", out)
    assert r.returncode == 0, r.stderr
    assert_whole(folder, "newer")
    assert leftovers(folder) == [] and {p: p.read_text() for p in mine} == mine


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_first_build_killed_leaves_nothing_or_is_finished_by_the_next(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "out"
    proc = _paused_build(LAB, out, "linked")
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == EXIT[sig]
    if sig == signal.SIGTERM:  # handled: the first build takes back the folder it made
        assert not (out / "lab").exists()
    r = cli("build", LAB, "-o", out)  # after SIGKILL, the half-made folder carries the marker: the next build takes it
    assert r.returncode == 0, r.stderr
    assert_whole(out / "lab", "Local lab, two rails")
    assert leftovers(out / "lab") == []


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has installed its SIGTERM handler (blueprints.signals): the kernel's SigCgt mask."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_start_up_exits_cleanly(tmp_path: Path, sig: signal.Signals, code: int, said: str) -> None:
    """Signalled as soon as the project's first code runs, while the CLI's imports are under way (before that the
    interpreter is still starting, and no program can handle a signal there). The imports hold the signal
    (blueprints.signals.held): raised inside them it was at times wrapped by pydantic-core (a traceback, exit 1) or
    ended the process by SIGINT instead of 130 (CI, 2026-12-05: rc 0, stderr ending 'KeyboardInterrupt:')."""
    proc = subprocess.Popen([sys.executable, "-m", "blueprints", "build", str(LAB), "-o", str(tmp_path / "o")],
                            cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    deadline = time.monotonic() + 30
    while not _catches_sigterm(proc.pid):
        assert proc.poll() is None and time.monotonic() < deadline, "the handler was never installed"
        time.sleep(0.001)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err.strip().splitlines()[-1:]) in ((code, [said]), (code, ["aborted"]))
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists(), "signalled during start-up, the build wrote nothing"
