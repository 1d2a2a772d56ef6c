"""blueprints.signals in this process, with real signals sent to it: ``held`` keeps a signal out of the code it wraps
and raises it at the end; ``signalled`` names the signal behind an error that a library made of it. The command-line
view of the same (exit 130/143, one line, nothing written) is tests/unit/blueprints/test_cli_build_folder.py's."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest
from pydantic import BaseModel, field_serializer

from blueprints.signals import INTERRUPTED, TERMINATED, Terminated, held, install, signalled


@pytest.fixture(autouse=True)
def _handlers() -> Iterator[None]:
    """The test's own handlers for SIGINT and SIGTERM, put back afterwards (pytest's are in place before)."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    install()
    yield
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _to_main_thread(sig: signal.Signals) -> None:
    """``sig`` to this thread (the main one). The CLI's process has no other thread while it holds signals; a test
    worker has (pytest-xdist's), and the kernel hands a signal sent to the process to a thread that does not block it,
    whose handler then runs in the main thread at once: the one case ``held`` cannot cover (its docstring)."""
    signal.pthread_kill(threading.main_thread().ident or 0, sig)


def _work() -> int:
    """Bytecode enough for a pending Python handler to run, if one is pending."""
    return sum(range(10_000))


@pytest.mark.parametrize(("sig", "raised"), [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)])
def test_a_held_signal_is_raised_at_the_blocks_end_not_inside_it(sig: signal.Signals, raised: type) -> None:
    reached = []
    with pytest.raises(raised), held():
        _to_main_thread(sig)
        _work()
        reached.append("end of block")
    assert reached == ["end of block"]
    assert sig not in signal.pthread_sigmask(signal.SIG_BLOCK, []), "the mask is put back"


def test_without_a_signal_held_changes_nothing() -> None:
    with held():
        assert signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        value = _work()
    assert value == sum(range(10_000))
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


class _Model(BaseModel):
    x: int = 1

    @field_serializer("x")
    def _interrupted_while_serialising(self, value: int) -> int:
        os.kill(os.getpid(), signal.SIGINT)
        _work()
        return value


def test_a_signal_that_pydantic_wrapped_in_its_own_error_is_still_named() -> None:
    """pydantic-core calls the serializer from Rust and turns the KeyboardInterrupt raised in it into a
    PydanticSerializationError (an Exception: `except KeyboardInterrupt` misses it, a traceback and exit 1 followed)."""
    with pytest.raises(Exception) as info:
        _Model().model_dump()
    assert not isinstance(info.value, KeyboardInterrupt) and "KeyboardInterrupt" in str(info.value)
    assert signalled(info.value) == INTERRUPTED


def test_errors_are_signals_only_after_a_signal() -> None:
    assert signalled(KeyboardInterrupt()) == INTERRUPTED and signalled(Terminated()) == TERMINATED
    assert signalled(ValueError("bad")) is None, "no signal arrived: an error stays an error"
    assert signalled(SystemExit(2)) is None
    with pytest.raises(Terminated):
        os.kill(os.getpid(), signal.SIGTERM)
        _work()
    assert signalled(ValueError("wrapped")) == TERMINATED
    install()  # a new command line starts a new record
    assert signalled(ValueError("bad")) is None


def test_an_ignored_ctrl_c_stays_ignored() -> None:
    """A background job starts with SIGINT ignored; clustersmith keeps it so."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    install()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    os.kill(os.getpid(), signal.SIGINT)
    assert _work() == sum(range(10_000))
