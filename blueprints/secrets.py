"""The cluster's secrets store: one 0600 YAML file per cluster, outside the repository and every build folder.

It holds the NVMe-oF DH-CHAP secret of every host that attaches subsystems and of every storage target (the
controller's, for bidirectional authentication), the monitoring stack's basic-auth credentials and, where the
Blueprint plans Ceph, the cluster's fsid and the cephx keys the ceph role installs (:func:`ceph_entities`).
``clustersmith build`` calls :func:`ensure`: a file clustersmith wrote (its first line is :data:`HEADER_MARK`) gains
entries for new hosts and keeps every existing one; a file without that header is the user's, read and never
written, and a missing entry is bad input; an absent file is generated whole. The build gets only the file's
absolute path (``ansible/group_vars/all/secrets.yml``: ``clustersmith_secrets_file``); the roles read the file on
the controller.

Where: ``--secrets FILE``; else the file the build folder already names, while it exists (a rebuild keeps the store
its deployed hosts hold, whatever its name); else ``<cluster>-<key>.yml`` in ``$CLUSTERSMITH_SECRETS_DIR``, else in
``$XDG_CONFIG_HOME/clustersmith/secrets/`` (``~/.config`` when XDG_CONFIG_HOME is unset). ``<key>`` is the first 10
hex digits of the sha256 of the build folder's absolute path: one store per design and per checkout, so two clones
building a design of the same name never share, grow or prune each other's secrets (issue 43). Entries for hosts a
plan no longer has are kept and counted; ``build --prune-secrets`` removes them, and says how many.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import secrets
import stat
import struct
import time
import uuid
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import bcrypt
import yaml
from pydantic import Field, ValidationError, field_validator

from blueprints import atomic
from blueprints.blueprint import Blueprint
from blueprints.errors import ClusterSmithError, Problem
from blueprints.model import Strict

DIR_ENV = "CLUSTERSMITH_SECRETS_DIR"
HEADER_MARK = "# Written by clustersmith for cluster "
MAX_BYTES = 16 << 20  # 16 MiB: 100,000 hosts' secrets are about 10 MiB
DHCHAP_KEY_BYTES = 32  # a 256-bit secret, the size nvme gen-dhchap-key makes for hmac(sha256)
MONITORING_USER = "clustersmith"
REPO = Path(__file__).resolve().parent.parent
_DHCHAP = re.compile(r"^DHHC-1:0[0-3]:([A-Za-z0-9+/]+={0,2}):$")
CEPHX_AES = 1  # CEPH_CRYPTO_AES, the only key type cephx uses (src/include/ceph_fs.h)
CEPHX_SECRET_BYTES = 16  # AES-128, what ceph-authtool --gen-key makes
_OPTION = "--secrets"


def _each(entries: dict[str, str], check: Callable[[str], str]) -> dict[str, str]:
    """``entries`` with every value passing ``check``; the first that does not names its entry."""
    for name, value in entries.items():
        try:
            check(value)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
    return entries


def _check_dhchap(value: str) -> str:
    """A DH-HMAC-CHAP secret in the NVMe representation: ``DHHC-1:<hash>:<base64 of key and its CRC-32>:``."""
    found = _DHCHAP.match(value)
    if found is None:
        raise ValueError("expected a DH-CHAP secret DHHC-1:00:<base64>: (as nvme gen-dhchap-key prints it)")
    raw = base64.b64decode(found.group(1))
    key, crc = raw[:-4], raw[-4:]
    if len(key) not in (32, 48, 64):
        raise ValueError(f"the secret holds {len(key)} key bytes; expected 32, 48 or 64")
    if zlib.crc32(key).to_bytes(4, "little") != crc:
        raise ValueError("the secret's CRC-32 does not match its key (a truncated or edited secret?)")
    return value


class DhchapSecrets(Strict):
    hosts: dict[str, str] = Field(default_factory=dict, description="Host name -> its DH-CHAP secret")
    controllers: dict[str, str] = Field(
        default_factory=dict, description="Storage target name -> its controller's secret (bidirectional auth)")

    @field_validator("hosts", "controllers")
    @classmethod
    def _secrets(cls, value: dict[str, str]) -> dict[str, str]:
        return _each(value, _check_dhchap)


class MonitoringSecrets(Strict):
    username: str = Field(min_length=1, description="Basic-auth user of Prometheus, Alertmanager and the exporters")
    password: str = Field(min_length=16, description="Its password (random, URL-safe)")
    password_bcrypt: str = Field(pattern=r"^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$",
                                 description="bcrypt hash of the password, for the exporters' web config")


def _check_cephx(value: str) -> str:
    """A cephx key as a keyring holds it: base64 of CryptoKey's encoding (src/auth/Crypto.cc): type u16 (1, AES),
    created (u32 seconds, u32 nanoseconds), length u16 (16), then the 16 secret bytes; all little-endian."""
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        raise ValueError("expected a cephx key (base64, as ceph-authtool --gen-key prints it)") from None
    if len(raw) != 12 + CEPHX_SECRET_BYTES:
        raise ValueError(f"the key decodes to {len(raw)} bytes; expected {12 + CEPHX_SECRET_BYTES} (a cephx AES key)")
    kind, _, _, length = struct.unpack("<HIIH", raw[:12])
    if kind != CEPHX_AES or length != CEPHX_SECRET_BYTES:
        raise ValueError(f"key type {kind}, length {length}; expected type {CEPHX_AES} (AES), length 16")
    return value


class CephSecrets(Strict):
    fsid: uuid.UUID = Field(description="The Ceph cluster's fsid, made once and kept")
    keys: dict[str, str] = Field(default_factory=dict, description="cephx entity (mon., client.admin, mgr.<host>, "
                                 "...) -> its key")

    @field_validator("keys")
    @classmethod
    def _keys(cls, value: dict[str, str]) -> dict[str, str]:
        return _each(value, _check_cephx)


class ClusterSecrets(Strict):
    kind: Literal["ClusterSecrets"]
    cluster: str
    nvme_dhchap: DhchapSecrets
    monitoring: MonitoringSecrets
    ceph: CephSecrets | None = Field(default=None, description="Where the Blueprint plans a Ceph cluster")


def cephx_key() -> str:
    """A new cephx key, encoded as ceph-authtool --gen-key encodes it (see ``_check_cephx``)."""
    now = time.time_ns()
    head = struct.pack("<HIIH", CEPHX_AES, now // 10**9, now % 10**9, CEPHX_SECRET_BYTES)
    return base64.b64encode(head + secrets.token_bytes(CEPHX_SECRET_BYTES)).decode()


def ceph_entities(bp: Blueprint) -> list[str]:
    """The cephx entities whose keys clustersmith makes: the monitors' shared mon. key, client.admin, the OSD
    bootstrap key (ceph-volume makes each OSD's own key with it), one key per manager and MDS host, and one CephFS
    client key per GPU node (client.fs-<host>, so one node's key can be revoked alone)."""
    ceph = bp.storage.ceph
    if ceph is None:
        return []
    return ["mon.", "client.admin", "client.bootstrap-osd", *(f"mgr.{h}" for h in ceph.daemons.manager_hosts),
            *(f"mds.{h}" for h in ceph.daemons.mds_hosts),
            *(f"client.fs-{h}" for h in bp.hosts_by_role().get("gpu_client", []))]


def _grown_ceph(store: CephSecrets | None, entities: list[str]) -> CephSecrets | None:
    """``store`` with a key for every entity it lacks (a new store, new fsid, when there was none)."""
    if not entities:
        return store
    have = store.keys if store else {}
    return CephSecrets(fsid=store.fsid if store else uuid.uuid4(),
                       keys={**have, **{e: cephx_key() for e in entities if e not in have}})


def dhchap_key() -> str:
    """A new DH-CHAP secret: 32 random bytes, untransformed (hash indicator 00), as nvme gen-dhchap-key makes it."""
    key = secrets.token_bytes(DHCHAP_KEY_BYTES)
    return "DHHC-1:00:" + base64.b64encode(key + zlib.crc32(key).to_bytes(4, "little")).decode() + ":"


def new_monitoring() -> MonitoringSecrets:
    password = secrets.token_urlsafe(24)
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()
    return MonitoringSecrets(username=MONITORING_USER, password=password, password_bcrypt=hashed)


def store_folder() -> Path:
    folder = os.environ.get(DIR_ENV)
    if folder:
        return Path(folder)
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "clustersmith" / "secrets"


def default_path(cluster: str, build_folder: Path) -> Path:
    """The store a build folder gets when nothing names one: per design and per checkout (module doc)."""
    key = hashlib.sha256(str(build_folder.resolve()).encode()).hexdigest()[:10]
    return store_folder() / f"{cluster}-{key}.yml"


REFERENCE = Path("ansible") / "group_vars" / "all" / "secrets.yml"  # in a build folder: the store's path alone
REFERENCE_KEY = "clustersmith_secrets_file"  # its one variable, which the roles read


def recorded(build_folder: Path) -> Path | None:
    """The secrets file an earlier build of ``build_folder`` named, when it names one that exists."""
    try:
        data = yaml.safe_load((build_folder / REFERENCE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    named = data.get(REFERENCE_KEY) if isinstance(data, dict) else None
    if not isinstance(named, str) or not Path(named).is_absolute():
        return None
    path = Path(named)
    return path if path.exists() or path.is_symlink() else None


def chosen(bp: Blueprint, build_folder: Path, path: Path | None) -> Path:
    """The absolute path of the secrets file of this build (where: module doc)."""
    found = path or recorded(build_folder) or default_path(bp.name, build_folder)
    return found.expanduser().absolute()


def needed(bp: Blueprint) -> tuple[list[str], list[str]]:
    """Names that need a DH-CHAP secret: the hosts that attach subsystems, and the storage targets serving them."""
    plan = bp.storage.nvmeof
    hosts = [h.name for h in bp.nvmeof_hosts()]
    targets = list(dict.fromkeys(s.served_by for s in plan.subsystems)) if plan else []
    return hosts, targets


def header(cluster: str) -> str:
    return (f"{HEADER_MARK}{cluster}: NVMe-oF DH-CHAP secrets, the monitoring password, Ceph's fsid and keys.\n"
            f"# Keep it mode 0600, outside the repository and every build folder. clustersmith build adds entries for\n"
            f"# new hosts and keeps every existing one; to rotate one, delete its entry, rebuild and rerun site.yml.\n")


def _bad(path: Path, message: str, where: str = "", value: str | None = None) -> ClusterSmithError:
    return ClusterSmithError([Problem(where, message, value=value)], str(path), "bad secrets file")


def _inside(path: Path, folder: Path) -> bool:
    return folder == path or folder in path.parents


def _check_place(path: Path, build_folder: Path) -> None:
    for folder, what in ((REPO, "the clustersmith repository"), (build_folder, "the build folder")):
        if _inside(path, folder.resolve()):
            raise ClusterSmithError([Problem(_OPTION, f"the secrets file is inside {what} ({folder}); expected a "
                                             f"path outside it, so no secret is committed or copied with a build",
                                             value=str(path))], title="bad secrets file")


def _read(path: Path) -> tuple[str, os.stat_result]:
    try:
        st = path.stat()
    except OSError as exc:
        raise _bad(path, f"cannot read it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _bad(path, "is not a regular file; expected the cluster's secrets YAML file")
    if st.st_mode & 0o177 and st.st_size <= MAX_BYTES and not _looks_like_secrets(path):
        raise _bad(path, "is not a clustersmith secrets file (no 'kind: ClusterSecrets'); expected the cluster's "
                         "secrets file, or a path where none exists yet for build to create")
    if st.st_mode & 0o177:
        raise _bad(path, f"mode {stat.S_IMODE(st.st_mode):04o} lets others read or run it; expected 0600 "
                         f"(chmod 600 {path})", value=f"{stat.S_IMODE(st.st_mode):04o}")
    if st.st_size > MAX_BYTES:
        raise _bad(path, f"is {st.st_size} bytes; expected at most {MAX_BYTES}")
    try:
        return path.read_text(encoding="utf-8"), st
    except (OSError, UnicodeDecodeError) as exc:
        raise _bad(path, f"cannot read it as UTF-8 text: {exc}") from None


def _looks_like_secrets(path: Path) -> bool:
    """Whether the file says it is one (a ``kind: ClusterSecrets`` line), read before judging its mode: advice to
    chmod a system file a user named by mistake would be wrong. An unreadable file is left to the read's error."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    return any(line.strip() == "kind: ClusterSecrets" for line in text.splitlines())


class _NoAliases(yaml.SafeLoader):
    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("aliases (*name) are not allowed in a secrets file")
        return super().compose_node(parent, index)


def parse(text: str, path: Path, cluster: str) -> ClusterSecrets:
    try:
        data = yaml.load(text, Loader=_NoAliases)
    except yaml.YAMLError as exc:
        raise _bad(path, f"is not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise _bad(path, f"holds {type(data).__name__}; expected a mapping with kind: ClusterSecrets")
    if data.get("kind") != "ClusterSecrets":
        raise _bad(path, "expected kind: ClusterSecrets", "kind", str(data.get("kind")))
    if data.get("cluster") != cluster:
        raise _bad(path, f"belongs to another cluster; expected cluster: {cluster} (metadata.name of the spec)",
                   "cluster", str(data.get("cluster")))
    try:
        return ClusterSecrets.model_validate(data)
    except ValidationError as exc:
        problems = [Problem(".".join(str(p) for p in e["loc"]), str(e["msg"]).removeprefix("Value error, "))
                    for e in exc.errors()]
        raise ClusterSmithError(problems, str(path), "bad secrets file") from None


def _missing(store: ClusterSecrets, hosts: Iterable[str], targets: Iterable[str],
             entities: Iterable[str] = ()) -> list[Problem]:
    problems = [Problem(f"nvme_dhchap.hosts.{h}", "no DH-CHAP secret for this host, which attaches NVMe-oF "
                        "subsystems; expected a DHHC-1 secret (nvme gen-dhchap-key)") for h in hosts
                if h not in store.nvme_dhchap.hosts]
    problems += [Problem(f"nvme_dhchap.controllers.{t}", "no DH-CHAP controller secret for this storage target; "
                         "expected a DHHC-1 secret (nvme gen-dhchap-key)") for t in targets
                 if t not in store.nvme_dhchap.controllers]
    have = store.ceph.keys if store.ceph else {}
    problems += [Problem(f"ceph.keys.{e}", "no cephx key for this Ceph entity; expected a key as ceph-authtool "
                         "--gen-key prints it") for e in entities if e not in have]
    if store.ceph is None and entities:
        problems.insert(0, Problem("ceph.fsid", "no Ceph fsid; expected the cluster's UUID (the Blueprint plans Ceph)"))
    return problems


def _write(path: Path, store: ClusterSecrets) -> None:
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True)
    body = yaml.safe_dump(store.model_dump(mode="json"), sort_keys=False, width=200)
    atomic.write(path, header(store.cluster) + body, mode=0o600)


def locate(bp: Blueprint, build_folder: Path, path: Path | None = None, prune: bool = False) -> Path:
    """The absolute path of ``bp``'s secrets file after every check that reads only: its place, and an existing
    file's kind, cluster, mode and (for a user's own file) entries, and that ``prune`` may write it. Writes nothing,
    so a build refused later has not made or changed it; ``ensure`` then writes."""
    path = chosen(bp, build_folder, path)
    _check_place(path, build_folder)
    if path.exists() or path.is_symlink():
        text, _ = _read(path)
        store = parse(text, path, bp.name)
        missing = _missing(store, *needed(bp), ceph_entities(bp))
        if missing and not text.startswith(HEADER_MARK):
            raise ClusterSmithError(missing, str(path), "secrets file (yours, read only) lacks entries")
        if prune and not text.startswith(HEADER_MARK) and _unplanned(store, *needed(bp), ceph_entities(bp)):
            raise _not_prunable(path)
    return path


def _not_prunable(path: Path) -> ClusterSmithError:
    return _bad(path, "is yours (no clustersmith header), which build only reads; expected a file build wrote for "
                      "--prune-secrets, or remove the entries of hosts this plan no longer has yourself",
                "--prune-secrets")


def _some(names: list[str], shown: int = 5) -> str:
    """The first ``shown`` of ``names``, and how many more."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _unplanned(store: ClusterSecrets, hosts: Iterable[str], targets: Iterable[str], entities: Iterable[str]) -> int:
    """How many entries name hosts, targets and Ceph entities this plan no longer has (a larger design's, built
    before)."""
    return len(_pruned(store, hosts, targets, entities).stale)


@dataclass(frozen=True)
class _Pruned:
    store: ClusterSecrets  # with only the entries the plan has
    stale: list[str]  # what went: dotted entry names


def _pruned(store: ClusterSecrets, hosts: Iterable[str], targets: Iterable[str], entities: Iterable[str]) -> _Pruned:
    keep_hosts, keep_targets, keep_entities = set(hosts), set(targets), set(entities)
    stale = [f"nvme_dhchap.hosts.{h}" for h in store.nvme_dhchap.hosts if h not in keep_hosts]
    stale += [f"nvme_dhchap.controllers.{t}" for t in store.nvme_dhchap.controllers if t not in keep_targets]
    keys = store.ceph.keys if store.ceph else {}
    stale += [f"ceph.keys.{e}" for e in keys if e not in keep_entities]
    dhchap = DhchapSecrets(
        hosts={h: v for h, v in store.nvme_dhchap.hosts.items() if h in keep_hosts},
        controllers={t: v for t, v in store.nvme_dhchap.controllers.items() if t in keep_targets})
    ceph = store.ceph.model_copy(update={"keys": {e: v for e, v in keys.items() if e in keep_entities}}) \
        if store.ceph else None
    return _Pruned(store.model_copy(update={"nvme_dhchap": dhchap, "ceph": ceph}), stale)


def ensure(bp: Blueprint, build_folder: Path, path: Path | None = None,
           notice: Callable[[str], None] = lambda _: None, prune: bool = False) -> Path:
    """Load, complete or create the secrets file of ``bp``'s cluster; returns its absolute path (rules: module
    doc) and tells ``notice`` what it did: created, added entries, pruned, or read. Entries that name hosts the plan
    no longer has are kept and counted unless ``prune`` (``build --prune-secrets``) removes them: a rebuild never
    takes a secret away on its own. Bad input (a bad file, a user's file without an entry the Blueprint needs or
    asked to be pruned) raises ClusterSmithError."""
    path = chosen(bp, build_folder, path)
    _check_place(path, build_folder)
    hosts, targets = needed(bp)
    entities = ceph_entities(bp)
    if not path.exists() and not path.is_symlink():
        try:
            _write(path, ClusterSecrets(
                kind="ClusterSecrets", cluster=bp.name, monitoring=new_monitoring(),
                nvme_dhchap=DhchapSecrets(hosts={h: dhchap_key() for h in hosts},
                                          controllers={t: dhchap_key() for t in targets}),
                ceph=_grown_ceph(None, entities)))
        except OSError as exc:
            raise _bad(path, f"cannot write it: {exc.strerror or exc}; expected a folder this user can write") from None
        notice(f"secrets: created {path} (mode 0600); keep it, outside the repository: every rebuild of this build "
               "folder reads it, and the deployed hosts hold its keys")
        return path
    text, _ = _read(path)
    store = parse(text, path, bp.name)
    missing = _missing(store, hosts, targets, entities)
    pruned = _pruned(store, hosts, targets, entities)
    ours = text.startswith(HEADER_MARK)
    if missing and not ours:
        raise ClusterSmithError(missing, str(path), "secrets file (yours, read only) lacks entries")
    if pruned.stale and prune and not ours:
        raise _not_prunable(path)
    if pruned.stale and not prune:
        notice(f"secrets: {path} holds {len(pruned.stale)} entries for hosts this plan no longer has; kept (a rebuild "
               "never removes a secret on its own): build --prune-secrets removes them")
    if not missing and not (prune and pruned.stale):
        notice(f"secrets: read {path}")
        return path
    kept = pruned.store if prune else store
    grown = kept.model_copy(update={"nvme_dhchap": DhchapSecrets(
        hosts={**kept.nvme_dhchap.hosts, **{h: dhchap_key() for h in hosts if h not in kept.nvme_dhchap.hosts}},
        controllers={**kept.nvme_dhchap.controllers,
                     **{t: dhchap_key() for t in targets if t not in kept.nvme_dhchap.controllers}}),
        "ceph": _grown_ceph(kept.ceph, entities)})
    try:
        _write(path, grown)
    except OSError as exc:
        raise _bad(path, f"cannot write it: {exc.strerror or exc}") from None
    if missing:
        notice(f"secrets: added {len(missing)} entries for new hosts to {path}")
    if prune and pruned.stale:
        notice(f"secrets: pruned {len(pruned.stale)} entries for hosts this plan no longer has from {path}: "
               + _some(pruned.stale))
    return path
