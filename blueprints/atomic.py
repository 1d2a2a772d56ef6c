"""Writing a file whole or not at all, for every file clustersmith writes in place of another: a temporary file
beside it (created new, never reused, mode given at creation), then a rename over the old one. A reader never sees
half a file; a write interrupted (Ctrl-C, a full disk) leaves the old file as it was and no temporary one."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

_SERIAL = itertools.count()


def write(path: Path, data: str | bytes, mode: int = 0o666) -> None:
    """Replace ``path`` with ``data`` (str as UTF-8), created with ``mode`` less the umask (0o600 for a secret)."""
    body = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{next(_SERIAL)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
