"""Lab guests only: keep the bytecode Python compiles for modules imported from zip archives.

Ansible sends each task's module and its module_utils to the host as a zip that Python imports with zipimport,
which never caches bytecode: every task compiles ansible.module_utils.basic and its imports afresh, about 4 s of
a 6 s task under QEMU's TCG. This keeps that compiled code in CACHE, keyed by the SHA-256 of the source, so the
same source runs the same code and only the compile is skipped. Loaded at interpreter start by
clustersmith-lab-pycache.pth; it changes nothing for imports from the file system.
"""

import _imp
import hashlib
import marshal
import os
import zipimport
from types import CodeType

CACHE = "/var/cache/clustersmith-pyc"
# CPython's private hooks, which typeshed leaves out: the guest's Python is Debian bookworm's 3.11, pinned by the image.
_compile_source = zipimport._compile_source  # type: ignore[attr-defined]


def _cached_compile(pathname: str, source: bytes) -> CodeType:
    key = hashlib.sha256(source).hexdigest()
    path = os.path.join(CACHE, key)
    try:
        with open(path, "rb") as f:
            code: CodeType = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        code = _compile_source(pathname, source)
        try:
            os.makedirs(CACHE, exist_ok=True)
            tmp = f"{path}.{os.getpid()}"
            with open(tmp, "wb") as f:
                marshal.dump(code, f)
            os.replace(tmp, path)
        except OSError:
            pass
        return code
    _imp._fix_co_filename(code, pathname)  # type: ignore[attr-defined]
    return code


zipimport._compile_source = _cached_compile  # type: ignore[attr-defined]
