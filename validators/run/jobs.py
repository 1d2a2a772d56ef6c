"""Host jobs: one step's work on every host it concerns in two calls per host, whatever the step and the host count.

``playbooks/job.yml`` starts the step's job on each host (``playbooks/files/accept_job.sh`` with the step's body,
``files/job_<body>.sh``, and the host's values: its *spec*) and returns at once; the job runs in the background,
writes what its tool said under its own folder's ``out/`` at the path the results folder gives it, and records what
failed in Ansible's words. The second call waits for the job and prints its folder once, as a gzip'd tar in base64
between two marker lines, which the runner unpacks here: only the files the step declared (``Job.outputs``) land in
the results folder, so a host cannot write anywhere else. Neither call runs a module on the host (``raw``: a shell
and the tools), and a start returns at once, so a bounded number of forks starts thousands of hosts, and every job
can begin at a common start (``Job.aligned``: the controller's time, handed to each host as a delay).
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import glob
import io
import re
import shlex
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

FILES = Path(__file__).resolve().parent.parent / "playbooks" / "files"
BEGIN, END = "clustersmith-accept-results-begin", "clustersmith-accept-results-end"
MAX_FILE_BYTES = 64 << 20  # one output file; a fio json+ report is tens of KB
NAME = re.compile(r"[a-z_][a-z0-9_]*")

SpecValue = str | int | float


def script(body: str) -> str:
    """job.sh for a step: its body (functions only) first, then the runner's commands (``accept_job.sh``)."""
    return (FILES / f"job_{body}.sh").read_text(encoding="utf-8") + "\n" + \
        (FILES / "accept_job.sh").read_text(encoding="utf-8")


def spec_text(values: Mapping[str, SpecValue]) -> str:
    """A host's values as shell assignments, each quoted, for the job to source."""
    lines = []
    for name, value in values.items():
        if not NAME.fullmatch(name):
            raise ValueError(f"job spec name {name!r} is not a shell variable name")
        lines.append(f"{name}={shlex.quote(str(value))}")
    return "\n".join(lines) + "\n"


def argv_text(argv: list[str]) -> str:
    """A command line the job runs with ``eval "set -- $value"``: each word quoted."""
    return " ".join(shlex.quote(a) for a in argv)


@dataclass(frozen=True)
class Job:
    """One step's host job. ``specs``: each host's values (``job_limit_s`` is added: how long the job may run from
    its start); ``outputs``: the results paths it may write (fnmatch patterns, ``{host}`` for the host's name);
    ``aligned``: whether every host's job begins at the common start the runner sets; ``short``: a job of a moment
    (reading or removing a few files), started and collected in one call (``playbooks/job_now.yml``), which holds a
    fork for as long as it runs."""

    step: str
    body: str
    specs: Mapping[str, Mapping[str, SpecValue]]
    outputs: tuple[str, ...]
    limit_s: int
    aligned: bool = False
    short: bool = False
    slot_s: float = 0.0  # a perftest job's slot per wave (shown in the step timings)

    def __post_init__(self) -> None:
        if self.short and self.aligned:
            raise ValueError(f"job {self.step}: a short job is collected as it ends, it cannot wait for a common start")


@dataclass
class Record:
    kind: str  # failed, retried, note
    key: str  # "-" for the host, else what the step keys by (a pair, a run)
    words: str


def records(text: str) -> list[Record]:
    """meta/records: ``<kind><TAB><key><TAB><words>`` per line; anything else is ignored."""
    found = []
    for line in text.splitlines():
        parts = line.split("\t", 2)
        if len(parts) == 3 and parts[0] in ("failed", "retried", "note"):
            found.append(Record(parts[0], parts[1], parts[2].strip()))
    return found


def payload(stdout: str) -> bytes | None:
    """The archive between the marker lines of the collect call's output (a pty may have added carriage returns);
    None when there is none or it is not base64."""
    lines = [line.strip() for line in stdout.replace("\r", "").split("\n")]
    if BEGIN not in lines or END not in lines:
        return None
    start = lines.index(BEGIN) + 1
    end = lines.index(END, start) if END in lines[start:] else -1
    if end < 0:
        return None
    try:
        return base64.b64decode("".join(lines[start:end]), validate=True)
    except (binascii.Error, ValueError):
        return None


@dataclass
class Collected:
    """What one host's archive held: the files written into the results folder, its records, and what was refused."""

    written: list[Path] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    status: str | None = None
    last_words: str = ""  # the job shell's own last line of stderr (meta/log)


def allowed(rel: str, host: str, outputs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(rel, pattern.replace("{host}", glob.escape(host))) for pattern in outputs)


def unpack(archive: bytes, host: str, results: Path, outputs: tuple[str, ...]) -> Collected:
    """Write the archive's ``out/`` files that the step declared into ``results`` (regular files only, no path that
    leaves it), and read its ``meta/`` records and status."""
    got = Collected()
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            for member in tar.getmembers():
                _take(tar, member, host, results, outputs, got)
    except (tarfile.TarError, OSError, EOFError) as exc:
        got.refused.append(f"the archive is damaged: {exc}")
    return got


def _take(tar: tarfile.TarFile, member: tarfile.TarInfo, host: str, results: Path, outputs: tuple[str, ...],
          got: Collected) -> None:
    """One member of a host's archive: a record, its status, or a declared output written into ``results``."""
    path = PurePosixPath(member.name)
    if member.isdir():
        return
    if not member.isfile() or path.is_absolute() or ".." in path.parts or member.size > MAX_FILE_BYTES:
        got.refused.append(member.name)
        return
    parts = path.parts[1:] if path.parts[:1] == (".",) else path.parts
    extracted = tar.extractfile(member)
    data = extracted.read() if extracted is not None else b""
    if parts == ("meta", "records"):
        got.records = records(data.decode("utf-8", errors="replace"))
    elif parts == ("meta", "status"):
        got.status = data.decode("utf-8", errors="replace").strip()
    elif parts == ("meta", "log"):
        said = [line.strip() for line in data.decode("utf-8", errors="replace").splitlines() if line.strip()]
        got.last_words = said[-1] if said else ""
    elif parts[:1] == ("out",) and len(parts) > 1:
        rel = "/".join(parts[1:])
        if not allowed(rel, host, outputs):
            got.refused.append(rel)
            return
        dest = results.joinpath(*parts[1:])
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        got.written.append(dest)
