"""A command's Ctrl-C: noted, held while DuckDB's module loads, raised where Python would
otherwise drop it, and told apart from other errors (:func:`evalstore.cli.common.command`)."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

#: what the command of this process saw of a Ctrl-C: whether one came (``signalled``),
#: whether its line was printed (``told``), whether the command had finished (``finished``)
INTERRUPTS = {"signalled": False, "told": False, "finished": False}

#: the Ctrl-Cs that came inside :func:`held_interrupts`, raised when it ends
_HELD: list[int] = []

#: the ``sys.unraisablehook`` that :func:`_unraisable` replaced, which it calls for the rest
_PREVIOUS_HOOK: list[Any] = [sys.__unraisablehook__]


def _on_sigint(signum: int, frame: Any) -> None:
    INTERRUPTS["signalled"] = True
    raise KeyboardInterrupt


def _hold(signum: int, frame: Any) -> None:
    _HELD.append(signum)


def _on_alarm(signum: int, frame: Any) -> None:
    """A Ctrl-C that Python dropped (:func:`_unraisable`), raised again: where the command's
    handler is in place; kept for the end of a held block; forgotten once the command is over
    (``evalstore.__main__`` ignores SIGINT then)."""
    handler = signal.getsignal(signal.SIGINT)
    if handler is _on_sigint:
        raise KeyboardInterrupt
    if handler is _hold:
        _HELD.append(signal.SIGINT)


def _unraisable(unraisable: Any) -> None:
    """``sys.unraisablehook``: a KeyboardInterrupt of the command raised where Python prints
    and drops exceptions (a weakref callback such as a module lock's, a generator closed by
    the garbage collector, a ``__del__``), where the command would otherwise run on after an
    "Exception ignored" traceback, is raised again 10 ms later from the code that runs then
    (SIGALRM, which nothing else here arms). Other exceptions go to Python's hook."""
    if (
        isinstance(unraisable.exc_value, KeyboardInterrupt)
        and INTERRUPTS["signalled"]
        and threading.current_thread() is threading.main_thread()
    ):
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        return
    _PREVIOUS_HOOK[0](unraisable)


def watch_interrupts() -> None:
    """Note every SIGINT of the command in :data:`INTERRUPTS` (Python's handler otherwise: a
    KeyboardInterrupt), and raise one that Python would drop (:func:`_unraisable`). Where
    SIGINT is ignored, it stays ignored."""
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        signal.signal(signal.SIGINT, _on_sigint)
        if sys.unraisablehook is not _unraisable:
            _PREVIOUS_HOOK[0] = sys.unraisablehook
            sys.unraisablehook = _unraisable


def stop_watching() -> None:
    """The command is over: a Ctrl-C raised again later (:func:`_unraisable`) is dropped, so
    that no alarm is left for Python's shutdown, which restores SIGALRM's default (to end
    the process)."""
    if threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)


@contextlib.contextmanager
def held_interrupts() -> Iterator[None]:
    """Hold a Ctrl-C that comes inside the block until it ends, then raise it: DuckDB's
    extension module, a nanobind one, aborts the process (SIGABRT, a "Critical nanobind
    error") when a KeyboardInterrupt is raised while it loads. Only where the command's own
    handler is in place (not where SIGINT is ignored, nor off the main thread)."""
    if signal.getsignal(signal.SIGINT) is not _on_sigint:
        yield
        return
    _HELD.clear()
    signal.signal(signal.SIGINT, _hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, _on_sigint)
    if _HELD:
        _HELD.clear()
        INTERRUPTS["signalled"] = True
        raise KeyboardInterrupt


def interrupted(exc: BaseException) -> bool:
    """Ctrl-C: Python's KeyboardInterrupt, or DuckDB's InterruptException (or RuntimeError)
    when it came in a query (told apart by name: importing DuckDB here would slow every
    command's start)."""
    kind = type(exc)
    return (
        isinstance(exc, KeyboardInterrupt)
        or (
            kind.__name__ == "InterruptException"
            and kind.__module__.lstrip("_").startswith("duckdb")
        )
        # what DuckDB raises when the signal stops a statement run for a registered frame
        or (kind is RuntimeError and str(exc) == "Query interrupted")
    )
