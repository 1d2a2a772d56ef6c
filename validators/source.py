"""Reading tool output files: regular files only, UTF-8 text, line by line or as one bounded document.

Every failure is a ``ParseError`` that names the file (exit 2, no traceback): a path that cannot be opened
(missing, permission denied, a symlink loop), anything but a regular file (a directory, a FIFO, a device: a FIFO
is refused before it is opened, so nothing blocks), a NUL byte (binary data), bytes that are not UTF-8, a line
longer than ``MAX_LINE``, a document larger than its bound.

Text formats (nccl-tests, perftest, fio bandwidth logs) are read a line at a time, so memory stays flat however
long the log (NCCL_DEBUG=INFO from thousands of ranks runs to gigabytes). JSON is parsed whole, so a JSON file is
read only up to a stated bound (``MAX_JSON``): fio's report is some hundred KB per job even in json+ form.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Generator
from pathlib import Path
from typing import Any, BinaryIO

from blueprints.errors import Problem
from validators.errors import ParseError

# An integer longer than Python's int-string limit (4300 digits) raised a ValueError from inside the JSON
# decoder, a traceback (issue 43). No tool counter comes near it; such a number is read as a float, which overflows
# to inf, and every parsed model refuses inf as "not a finite number" with the field named.
_INT_DIGITS = 4000


def _json_int(text: str) -> int | float:
    return int(text) if len(text) <= _INT_DIGITS else float(text)


JSON = json.JSONDecoder(parse_int=_json_int)  # every tool-output JSON document is decoded with this one


def json_loads(text: str) -> Any:
    """``json.loads`` with ``JSON``'s bounded integers."""
    return JSON.decode(text)


MAX_LINE = 1 << 20  # 1 MiB: the longest line a text tool output may have (NCCL INFO lines are ~200 bytes)
MAX_JSON = 64 << 20  # 64 MiB: fio json+ of 64 jobs with all three directions is under 10 MiB
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFDIR: "a directory"}


def file_error(path: Path | str, message: str) -> ParseError:
    return ParseError([Problem("(file)", message)], str(path), "cannot read the file")


def _os_error(path: Path | str, exc: OSError) -> ParseError:
    if exc.errno == errno.ELOOP:
        return file_error(path, "a symlink loop (too many levels of symbolic links)")
    return file_error(path, f"cannot open it: {exc.strerror or exc}")


def _not_regular(path: Path | str, mode: int) -> ParseError:
    kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
    return file_error(path, f"is {kind}, expected a regular file of tool output")


def open_file(path: Path) -> BinaryIO:
    """``path`` opened for reading, after checking (before and after opening) that it is a regular file."""
    try:
        if not stat.S_ISREG(mode := os.stat(path).st_mode):
            raise _not_regular(path, mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _os_error(path, exc) from None
    if not stat.S_ISREG(mode := os.fstat(fd).st_mode):  # replaced between the two calls
        os.close(fd)
        raise _not_regular(path, mode)
    return os.fdopen(fd, "rb")


def _decode(path: Path | str, raw: bytes, first_line: int = 1) -> str:
    """``raw`` as UTF-8 text; ``first_line`` is the line it starts on, for the message."""
    if (nul := raw.find(b"\0")) != -1:
        line = first_line + raw.count(b"\n", 0, nul)
        raise file_error(path, f"binary data (a NUL byte on line {line}), expected text")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + raw.count(b"\n", 0, exc.start)
        raise file_error(path, f"not UTF-8 text: byte 0x{raw[exc.start]:02x} on line {line}") from None


def lines(path: Path) -> Generator[str, None, None]:
    """The file's lines without their line ends, read one at a time."""
    with open_file(path) as f:
        n = 0
        while raw := f.readline(MAX_LINE + 1):
            n += 1
            if len(raw) > MAX_LINE:
                raise file_error(path, f"line {n} is longer than {MAX_LINE >> 20} MiB; expected text tool output")
            yield _decode(path, raw, n).rstrip("\r\n")


def document(path: Path, what: str, limit: int = MAX_JSON) -> str:
    """The whole file as text, refused above ``limit`` bytes."""
    with open_file(path) as f:
        raw = f.read(limit + 1)
    if len(raw) > limit:
        raise file_error(path, f"larger than {limit >> 20} MiB, the bound on {what} (it is read whole)")
    return _decode(path, raw)
