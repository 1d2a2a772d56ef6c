#!/usr/bin/env python3
"""Write a cluster secrets file of the shared schema (blueprints/secrets.py, ClusterSecrets) for this scenario,
when no build named one: `write_test_secrets.py PATH CLUSTER [USERNAME]`. Keeps an existing file. The folder is
0700 and the file 0600 from its first byte; the bcrypt hash comes from the bcrypt package or, without it,
crypt(3) (libxcrypt's $2b$)."""

from __future__ import annotations

import os
import secrets
import sys
import warnings
from pathlib import Path


def bcrypt_hash(password: str) -> str:
    try:
        import bcrypt
    except ImportError:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt
        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()


def main() -> None:
    path, cluster = Path(sys.argv[1]), sys.argv[2]
    username = sys.argv[3] if len(sys.argv) > 3 else "clustersmith"
    if path.exists():
        return
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    password = secrets.token_urlsafe(24)
    text = (f"# Written by clustersmith's monitoring scenario for cluster {cluster}; keep it 0600.\n"
            f"kind: ClusterSecrets\ncluster: {cluster}\nnvme_dhchap: {{hosts: {{}}, controllers: {{}}}}\n"
            f"monitoring:\n  username: {username}\n  password: {password}\n"
            f"  password_bcrypt: '{bcrypt_hash(password)}'\n")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


if __name__ == "__main__":
    main()
