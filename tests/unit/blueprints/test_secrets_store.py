"""The cluster secrets store (blueprints/secrets.py) through the real `clustersmith build`: generated once, kept across
rebuilds, grown for new hosts, a user's file read only, bad files exit 2 naming the file, nothing of it in the build."""

from __future__ import annotations

import base64
import os
import stat
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import bcrypt
import pytest
import yaml

from blueprints.secrets import HEADER_MARK, ClusterSecrets, cephx_key, dhchap_key

REPO = Path(__file__).resolve().parents[3]
LAB = REPO / "examples" / "lab.yaml"


def build(spec: Path, out: Path, secrets_dir: Path, *extra: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "blueprints", "build", str(spec), "-o", str(out), *map(str, extra)],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "CLUSTERSMITH_SECRETS_DIR": str(secrets_dir)})


def lab_spec(tmp_path: Path, clients: int) -> Path:
    data = yaml.safe_load(LAB.read_text())
    data["target"]["clients"] = clients
    path = tmp_path / f"lab-{clients}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def store_of(build_folder: Path) -> Path:
    """The secrets file a build folder names (its group_vars/all/secrets.yml), as the roles find it."""
    named = yaml.safe_load((build_folder / "ansible" / "group_vars" / "all" / "secrets.yml").read_text())
    return Path(named["clustersmith_secrets_file"])


def load(path: Path) -> ClusterSecrets:
    return ClusterSecrets.model_validate(yaml.safe_load(path.read_text()))


def test_first_build_generates_the_whole_file_0600_and_names_only_its_path(tmp_path: Path) -> None:
    secrets_dir = tmp_path / "secrets"
    done = build(LAB, tmp_path / "out", secrets_dir)
    assert done.returncode == 0, done.stderr
    path = store_of(tmp_path / "out" / "lab")
    assert path.parent == secrets_dir and path.name.startswith("lab-") and path.suffix == ".yml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(secrets_dir.stat().st_mode) == 0o700
    text = path.read_text()
    assert text.startswith(HEADER_MARK + "lab:")
    store = load(path)
    assert sorted(store.nvme_dhchap.hosts) == ["client-1", "client-2"]
    assert sorted(store.nvme_dhchap.controllers) == ["storage-1"]
    for secret in [*store.nvme_dhchap.hosts.values(), *store.nvme_dhchap.controllers.values()]:
        raw = base64.b64decode(secret.split(":")[2])
        assert secret.startswith("DHHC-1:00:") and len(raw) == 36
        assert zlib.crc32(raw[:32]).to_bytes(4, "little") == raw[32:]  # what the kernel checks (nvme_auth_extract_key)
    assert len(set(store.nvme_dhchap.hosts.values())) == 2
    assert store.monitoring.username == "clustersmith"
    assert bcrypt.checkpw(store.monitoring.password.encode(), store.monitoring.password_bcrypt.encode())
    all_yml = yaml.safe_load((tmp_path / "out" / "lab" / "ansible" / "group_vars" / "all" / "secrets.yml").read_text())
    assert all_yml == {"clustersmith_secrets_file": str(path)}
    # nothing of the store is in the rendered tree (grep every file through the build's links)
    values = [*store.nvme_dhchap.hosts.values(), *store.nvme_dhchap.controllers.values(), store.monitoring.password,
              store.monitoring.password_bcrypt]
    found = grep(tmp_path / "out" / "lab", values)
    assert found == [], f"secrets in the build: {found}"


def grep(root: Path, needles: list[str]) -> list[str]:
    hits = []
    for here, _, files in os.walk(root, followlinks=True):
        for name in files:
            data = Path(here, name).read_bytes()
            hits += [f"{Path(here, name)}" for n in needles if n.encode() in data]
    return hits


def test_rebuild_keeps_every_entry_and_adds_new_hosts(tmp_path: Path) -> None:
    secrets_dir = tmp_path / "secrets"
    assert build(LAB, tmp_path / "out", secrets_dir).returncode == 0
    path = store_of(tmp_path / "out" / "lab")
    first = load(path)
    assert build(LAB, tmp_path / "out", secrets_dir).returncode == 0
    assert load(path) == first
    grown = build(lab_spec(tmp_path, clients=3), tmp_path / "out", secrets_dir)
    assert grown.returncode == 0, grown.stderr
    after = load(path)
    assert sorted(after.nvme_dhchap.hosts) == ["client-1", "client-2", "client-3"]
    assert {k: after.nvme_dhchap.hosts[k] for k in first.nvme_dhchap.hosts} == first.nvme_dhchap.hosts
    assert after.nvme_dhchap.controllers == first.nvme_dhchap.controllers
    assert after.monitoring == first.monitoring
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


LAB_CEPH_ENTITIES = ("mon.", "client.admin", "client.bootstrap-osd", "mgr.storage-1", "mds.storage-1",
                     "client.fs-client-1", "client.fs-client-2")


def test_ceph_fsid_and_keys_are_made_once_kept_and_grown(tmp_path: Path) -> None:
    """The lab plans Ceph: one fsid, cephx keys for the monitors, admin, OSD bootstrap, each manager and MDS host and
    each GPU node's CephFS client; a rebuild keeps them, a third client gets its own key and the rest stay."""
    secrets_dir = tmp_path / "secrets"
    assert build(LAB, tmp_path / "out", secrets_dir).returncode == 0
    path = store_of(tmp_path / "out" / "lab")
    first = load(path).ceph
    assert first is not None and tuple(first.keys) == LAB_CEPH_ENTITIES
    grown = build(lab_spec(tmp_path, clients=3), tmp_path / "out", secrets_dir)
    assert grown.returncode == 0, grown.stderr
    after = load(path).ceph
    assert after is not None and after.fsid == first.fsid
    assert after.keys == {**first.keys, "client.fs-client-3": after.keys["client.fs-client-3"]}
    assert not any(key in p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file()
                   for key in after.keys.values())


def test_a_cephx_key_is_encoded_as_ceph_authtool_encodes_it() -> None:
    """AQD4DA9rlwbXCxAAM/x3owQ7YMr0I413DW1dcA== is the client.admin key ceph-authtool --gen-key (Ceph 16.2.15) made
    for the throw-away loopback cluster of tests/fixtures/ceph/record.sh (destroyed after the recording): type 1,
    created, length 16, 16 bytes. A key made here has the same layout."""
    real = base64.b64decode("AQD4DA9rlwbXCxAAM/x3owQ7YMr0I413DW1dcA==")
    made = base64.b64decode(cephx_key())
    for raw in (real, made):
        kind, _, _, length = struct.unpack("<HIIH", raw[:12])
        assert (len(raw), kind, length) == (28, 1, 16)
    ClusterSecrets.model_validate({"kind": "ClusterSecrets", "cluster": "x", "nvme_dhchap": {},
                                   "monitoring": {"username": "u", "password": "p" * 16,
                                                  "password_bcrypt": "$2b$04$" + "a" * 53},
                                   "ceph": {"fsid": "6f1c9a64-3a6e-4d7e-9a57-1d2a4f0c5b11",
                                            "keys": {"client.admin": "AQD4DA9rlwbXCxAAM/x3owQ7YMr0I413DW1dcA=="}}})


def user_file(path: Path, hosts: dict[str, str], mode: int = 0o600) -> str:
    hashed = bcrypt.hashpw(b"a-user-chosen-password", bcrypt.gensalt(4)).decode()
    text = yaml.safe_dump({"kind": "ClusterSecrets", "cluster": "lab",
                           "nvme_dhchap": {"hosts": hosts, "controllers": {"storage-1": dhchap_key()}},
                           "monitoring": {"username": "ops", "password": "a-user-chosen-password",
                                          "password_bcrypt": hashed},
                           "ceph": {"fsid": "6f1c9a64-3a6e-4d7e-9a57-1d2a4f0c5b11",
                                    "keys": {e: cephx_key() for e in LAB_CEPH_ENTITIES}}})
    path.write_text(text)
    path.chmod(mode)
    return text


def test_a_users_file_is_read_only_and_a_missing_entry_is_exit_2(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yml"
    text = user_file(mine, {"client-1": dhchap_key(), "client-2": dhchap_key()})
    done = build(LAB, tmp_path / "out", tmp_path / "unused", "--secrets", mine)
    assert done.returncode == 0, done.stderr
    assert mine.read_text() == text
    assert not (tmp_path / "unused").exists()
    text = user_file(mine, {"client-1": dhchap_key()})
    done = build(LAB, tmp_path / "out", tmp_path / "unused", "--secrets", mine)
    assert done.returncode == 2
    assert str(mine) in done.stderr and "nvme_dhchap.hosts.client-2" in done.stderr
    assert "Traceback" not in done.stderr
    assert mine.read_text() == text


@pytest.mark.parametrize(("content", "mode", "expected"), [
    ("kind: ClusterSecrets\ncluster: lab\n", 0o644, "mode 0644"),
    ("kind: Secrets\ncluster: lab\n", 0o600, "expected kind: ClusterSecrets"),
    ("kind: ClusterSecrets\ncluster: other\n", 0o600, "belongs to another cluster"),
    ("kind: [ClusterSecrets\n", 0o600, "is not YAML"),
    ("- just a list\n", 0o600, "expected a mapping"),
    ("a: &x [1]\nb: *x\n", 0o600, "aliases"),
    ("kind: ClusterSecrets\ncluster: lab\nnvme_dhchap: {hosts: {client-1: 'DHHC-1:00:AAAA:'}}\nmonitoring: {}\n",
     0o600, "nvme_dhchap.hosts"),
    ("kind: ClusterSecrets\ncluster: lab\nnvme_dhchap: {}\nmonitoring: {}\nceph: {fsid: 6f1c9a64-3a6e-4d7e-9a57-"
     "1d2a4f0c5b11, keys: {mon.: 'AAAA'}}\n", 0o600, "ceph.keys"),
], ids=["mode", "kind", "cluster", "not-yaml", "list", "alias", "bad-secret", "bad-cephx-key"])
def test_bad_file_is_exit_2_naming_it(tmp_path: Path, content: str, mode: int, expected: str) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(content)
    path.chmod(mode)
    done = build(LAB, tmp_path / "out", tmp_path / "unused", "--secrets", path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(path) in done.stderr and expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_file_inside_the_build_or_the_repository_is_refused(tmp_path: Path) -> None:
    for place in (tmp_path / "out" / "lab" / "secrets.yml", REPO / "lab-secrets.yml"):
        done = build(LAB, tmp_path / "out", tmp_path / "unused", "--secrets", place)
        assert done.returncode == 2 and "--secrets" in done.stderr and "expected a path outside" in done.stderr
        assert not place.exists()


def test_build_says_what_it_did_with_the_secrets_file_and_what_it_keeps(tmp_path: Path) -> None:
    """Issue 43 item 4: `build` never said it made or extended the store, nor that a larger design built before
    left entries a smaller one keeps; pruning is explicit (--prune-secrets) and said."""
    secrets_dir = tmp_path / "secrets"
    said = [" ".join(build(lab_spec(tmp_path, n), tmp_path / "out", secrets_dir).stdout.split()) for n in (2, 4, 2)]
    path = store_of(tmp_path / "out" / "lab")
    assert f"secrets: created {path} (mode 0600)" in said[0]
    assert f"secrets: added 4 entries for new hosts to {path}" in said[1]  # two DH-CHAP secrets, two cephx keys
    assert f"secrets: {path} holds 4 entries for hosts this plan no longer has; kept (a rebuild never removes a " \
           "secret on its own): build --prune-secrets removes them" in said[2] and f"secrets: read {path}" in said[2]
    assert sorted(load(path).nvme_dhchap.hosts) == ["client-1", "client-2", "client-3", "client-4"]
    assert "next: boot the lab and write its inventory: clustersmith lab up " in said[0]
    before = load(path)
    pruned = build(lab_spec(tmp_path, 2), tmp_path / "out", secrets_dir, "--prune-secrets")
    assert pruned.returncode == 0, pruned.stderr
    assert (f"secrets: pruned 4 entries for hosts this plan no longer has from {path}: nvme_dhchap.hosts.client-3, "
            "nvme_dhchap.hosts.client-4, ceph.keys.client.fs-client-3, ceph.keys.client.fs-client-4") \
        in " ".join(pruned.stdout.split())
    after = load(path)
    assert sorted(after.nvme_dhchap.hosts) == ["client-1", "client-2"]
    assert {h: before.nvme_dhchap.hosts[h] for h in after.nvme_dhchap.hosts} == after.nvme_dhchap.hosts
    assert after.monitoring == before.monitoring and after.ceph is not None and before.ceph is not None
    assert after.ceph.fsid == before.ceph.fsid and set(after.ceph.keys) == set(LAB_CEPH_ENTITIES)
    again = build(lab_spec(tmp_path, 2), tmp_path / "out", secrets_dir, "--prune-secrets")
    assert f"secrets: read {path}" in " ".join(again.stdout.split()) and load(path) == after


def test_each_build_folder_has_its_own_store_and_keeps_the_one_it_names(tmp_path: Path) -> None:
    """Issue 43 item 4: the store was keyed by the design's name alone, so every clone of a user building a design
    of that name shared (and grew) one file. Now one per build folder; a folder built before keeps the file it names,
    the old `<name>.yml` included, so hosts deployed from it keep their keys."""
    secrets_dir = tmp_path / "secrets"
    for clone in ("a", "b"):
        assert build(LAB, tmp_path / clone / "out", secrets_dir).returncode == 0
    first, second = store_of(tmp_path / "a" / "out" / "lab"), store_of(tmp_path / "b" / "out" / "lab")
    assert first != second and first.parent == second.parent == secrets_dir
    assert load(first).monitoring != load(second).monitoring
    old = secrets_dir / "lab.yml"  # the name of the layout before; an earlier build of folder a named it
    old.write_text(first.read_text())
    old.chmod(0o600)
    reference = tmp_path / "a" / "out" / "lab" / "ansible" / "group_vars" / "all" / "secrets.yml"
    current = reference.resolve()
    current.write_text(current.read_text().replace(str(first), str(old)))
    first.unlink()
    done = build(LAB, tmp_path / "a" / "out", secrets_dir)
    assert done.returncode == 0, done.stderr
    assert store_of(tmp_path / "a" / "out" / "lab") == old and f"secrets: read {old}" in done.stdout
    assert not first.exists()


def test_prune_of_a_users_file_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yml"
    text = user_file(mine, {"client-1": dhchap_key(), "client-2": dhchap_key(), "client-9": dhchap_key()})
    done = build(LAB, tmp_path / "out", tmp_path / "unused", "--secrets", mine, "--prune-secrets")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    said = " ".join(done.stderr.split())
    assert str(mine) in said and "--prune-secrets" in said and "is yours (no clustersmith header)" in said
    assert mine.read_text() == text and not (tmp_path / "out").exists()
