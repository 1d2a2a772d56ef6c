"""A minimal QMP client: one command at a time over QEMU's monitor socket.

QMP speaks JSON objects separated by CRLF. The server greets with ``{"QMP": ...}``; a client must
send ``qmp_capabilities`` before anything else. Asynchronous ``{"event": ...}`` messages may arrive
between a command and its ``return``/``error``; they are skipped here.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from stacks.lab.errors import LabError


class QmpError(LabError):
    """QEMU answered a command with an error, or the monitor went away."""


def encode(command: str, arguments: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"execute": command}
    if arguments:
        message["arguments"] = arguments
    return json.dumps(message).encode() + b"\r\n"


class QmpClient:
    def __init__(self, path: Path, timeout: float = 10.0) -> None:
        self.path = path
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._buffer = b""

    def __enter__(self) -> QmpClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.path))
        except OSError as err:
            sock.close()
            raise QmpError(f"cannot reach the QEMU monitor at {self.path}: {err}") from err
        self._sock = sock
        greeting = self._read_message()
        if "QMP" not in greeting:
            raise QmpError(f"unexpected QMP greeting from {self.path}: {greeting}")
        self.execute("qmp_capabilities")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def execute(self, command: str, arguments: dict[str, Any] | None = None) -> Any:
        """Send one command and return its ``return`` value; a QMP error raises ``QmpError``."""
        if self._sock is None:
            raise QmpError("QMP client is not connected")
        self._sock.sendall(encode(command, arguments))
        while True:
            reply = self._read_message()
            if "event" in reply:
                continue
            if "error" in reply:
                error = reply["error"]
                raise QmpError(f"QMP {command} failed: {error.get('class')}: {error.get('desc')}")
            if "return" in reply:
                return reply["return"]
            raise QmpError(f"unexpected QMP reply to {command}: {reply}")

    def _read_message(self) -> dict[str, Any]:
        assert self._sock is not None
        while b"\n" not in self._buffer:
            try:
                chunk = self._sock.recv(65536)
            except OSError as err:
                raise QmpError(f"QEMU monitor {self.path}: {err}") from err
            if not chunk:
                raise QmpError(f"QEMU monitor {self.path} closed the connection")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message = json.loads(line.decode())
        if not isinstance(message, dict):
            raise QmpError(f"QMP sent a non-object: {line!r}")
        return message
