"""Run a command-line entry point in a forked child, for the fuzzers: the same ``main()`` a console script calls,
without starting Python and importing clustersmith again for every command (about 0.5 s of each command here).

A forked child gets fresh descriptors 1 and 2 (files), the case's environment, working folder and ``sys.argv``,
runs ``main`` and exits with its exit status; an exception that escapes ``main`` is printed as Python prints it
(``Traceback ...``) with exit 1, as the console script would end. The parent waits up to a timeout and kills the
child past it. Call it from a single-threaded process only (a pool worker, never a thread of one): ``fork`` copies
only the calling thread, and a lock another thread held stays held in the child.

The fuzzers keep their subprocess path too (``--subprocess``): the console script as users start it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

Outcome = tuple[int | str, str, str]  # exit code or "timeout", stdout, stderr


def _child(main: Callable[[], object], argv: list[str], cwd: Path, env: Mapping[str, str], out: int, err: int) -> None:
    code = 1
    try:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        # streams on the new descriptors as Python makes them for a file (the parent's may be another object, as
        # under pytest's capture): UTF-8, stderr with backslashreplace
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.argv = list(argv)
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # what the interpreter does with an uncaught exception: print it, exit 1
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed or full output: the exit code says the rest
                stream.flush()
    finally:
        os._exit(code)


def run_forked(main: Callable[[], object], argv: list[str], timeout: float, cwd: Path,
               env: Mapping[str, str]) -> Outcome:
    """``main`` as the command ``argv`` in a forked child (module doc)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # else the child inherits and writes out the parent's buffered text
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            _child(main, argv, cwd, env, out.fileno(), err.fileno())
        deadline = time.monotonic() + timeout
        status: int | None = None
        pause = 0.002
        while status is None:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = raw
            elif time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            else:
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if status is None:
        return "timeout", stdout, stderr
    return os.waitstatus_to_exitcode(status), stdout, stderr
