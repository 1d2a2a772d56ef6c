"""QMP framing against a tiny fake monitor on a unix socket."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from stacks.lab.qmp import QmpClient, QmpError, encode


def test_encode_frames_one_command_per_line() -> None:
    assert encode("set_link", {"name": "rail0-nic", "up": False}) == (
        b'{"execute": "set_link", "arguments": {"name": "rail0-nic", "up": false}}\r\n'
    )
    assert encode("query-status") == b'{"execute": "query-status"}\r\n'


class FakeMonitor:
    """Greets, then answers each command from a script; records what it received."""

    def __init__(self, path: Path, replies: dict[str, list[dict[str, object]]]) -> None:
        self.path = path
        self.replies = replies
        self.received: list[dict[str, object]] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(1)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            conn.sendall(b'{"QMP": {"version": {}, "capabilities": []}}\r\n')
            buffer = b""
            while True:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    message = json.loads(line)
                    self.received.append(message)
                    for reply in self.replies.get(str(message["execute"]), [{"return": {}}]):
                        # replies arrive split across writes to exercise the client's buffering
                        data = json.dumps(reply).encode() + b"\r\n"
                        conn.sendall(data[:5])
                        conn.sendall(data[5:])


@pytest.fixture
def short_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="qmp-") as name:
        yield Path(name)


def test_execute_skips_events_and_returns_the_result(short_dir: Path) -> None:
    monitor = FakeMonitor(
        short_dir / "m.sock",
        {"query-status": [{"event": "NIC_RX_FILTER_CHANGED", "data": {}}, {"return": {"status": "running"}}]},
    )
    with QmpClient(monitor.path, timeout=5) as client:
        assert client.execute("query-status") == {"status": "running"}
        assert client.execute("set_link", {"name": "rail0-nic", "up": False}) == {}
    assert [m["execute"] for m in monitor.received] == ["qmp_capabilities", "query-status", "set_link"]
    assert monitor.received[2]["arguments"] == {"name": "rail0-nic", "up": False}


def test_qmp_error_names_the_command_and_the_class(short_dir: Path) -> None:
    monitor = FakeMonitor(
        short_dir / "m.sock",
        {"set_link": [{"error": {"class": "DeviceNotFound", "desc": "Device 'x' not found"}}]},
    )
    with QmpClient(monitor.path, timeout=5) as client, pytest.raises(QmpError, match=r"set_link.*DeviceNotFound"):
        client.execute("set_link", {"name": "x", "up": True})


def test_missing_socket_is_a_clear_error(short_dir: Path) -> None:
    with pytest.raises(QmpError, match="cannot reach the QEMU monitor"):
        QmpClient(short_dir / "absent.sock").connect()
