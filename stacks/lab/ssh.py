"""SSH into the guests: a key generated per lab, through the forwarded loopback port only."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

from stacks.lab.errors import LabError

OPTIONS = (
    "-o",
    "BatchMode=yes",
    "-o",
    "StrictHostKeyChecking=no",
    "-o",
    "UserKnownHostsFile=/dev/null",
    "-o",
    "LogLevel=ERROR",
    "-o",
    "IdentitiesOnly=yes",
)
# The same options for Ansible (ansible_ssh_common_args).
COMMON_ARGS = " ".join(OPTIONS)


def ensure_key(directory: Path, comment: str) -> Path:
    """``directory/id_ed25519`` (made if missing, mode 0600); returns the private key's path."""
    key = directory / "id_ed25519"
    if key.is_file() and key.with_suffix(".pub").is_file():
        return key
    directory.mkdir(parents=True, exist_ok=True)
    key.unlink(missing_ok=True)
    key.with_suffix(".pub").unlink(missing_ok=True)
    done = subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(key)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise LabError(f"ssh-keygen failed: {done.stderr.strip()}")
    return key


def cmdline_key(private_key: Path) -> str:
    """The public key as one base64 word for the kernel command line (``cs.key=``)."""
    return base64.b64encode(private_key.with_suffix(".pub").read_bytes().strip()).decode()


def argv(port: int, private_key: Path, command: str, connect_timeout: int = 60) -> list[str]:
    # the key exchange alone can take half a minute in a TCG guest on a busy host
    return [
        "ssh",
        *OPTIONS,
        "-o",
        f"ConnectTimeout={connect_timeout}",
        "-i",
        str(private_key),
        "-p",
        str(port),
        "root@127.0.0.1",
        command,
    ]


def run(port: int, private_key: Path, command: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv(port, private_key, command),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def answers(port: int, private_key: Path) -> bool:
    """True once sshd accepts the lab key and runs a command."""
    try:
        return run(port, private_key, "true", timeout=90).returncode == 0
    except subprocess.TimeoutExpired:
        return False
