"""A command's Ctrl-C: noted, held while DuckDB's module loads, raised where Python would
otherwise drop it, and told apart from other errors (:func:`evalstore.cli.common.command`)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

#: what the command of this process saw of a Ctrl-C: whether one came (``signalled``),
#: whether its line was printed (``told``), whether the command had finished (``finished``)
INTERRUPTS = {"signalled": False, "told": False, "finished": False}


def _on_sigint(signum: int, frame: Any) -> None:
    INTERRUPTS["signalled"] = True
    held = signal.getsignal(signal.SIGINT) is not _on_sigint  # the alarm, in held_interrupts
    if held or (frame is not None and frame.f_code.co_filename.startswith("<frozen importlib")):
        # Python prints and drops an exception raised in a callback of its import machinery
        # (the weakref callback of a module lock): the command would run on. Raise it 10 ms
        # later, from the code that comes next (SIGALRM, which no other code here arms).
        signal.signal(signal.SIGALRM, _on_sigint)
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        return
    raise KeyboardInterrupt


def watch_interrupts() -> None:
    """Note every SIGINT of the command in :data:`INTERRUPTS` (Python's handler otherwise: a
    KeyboardInterrupt). Where SIGINT is ignored, it stays ignored."""
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        signal.signal(signal.SIGINT, _on_sigint)


@contextlib.contextmanager
def held_interrupts() -> Iterator[None]:
    """Hold a Ctrl-C that comes inside the block until it ends, then raise it: DuckDB's
    extension module, a nanobind one, aborts the process (SIGABRT, a "Critical nanobind
    error") when a KeyboardInterrupt is raised while it loads. Only where the command's own
    handler is in place (not where SIGINT is ignored, nor off the main thread)."""
    if signal.getsignal(signal.SIGINT) is not _on_sigint:
        yield
        return
    came: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, _on_sigint)
    if came:
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
