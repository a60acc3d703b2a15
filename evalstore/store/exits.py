"""The end of a process with runs still open (:class:`evalstore.store.live.Run`): each is
finished at exit (``atexit``), ``finished``, or ``failed`` when the interpreter exits on an
uncaught exception (``sys.excepthook``, chained), on ``sys.exit`` with a non-zero code
(``sys.exit`` wrapped) or on SIGTERM (when SIGTERM had Python's default action and the run was
opened in the main thread, a handler raises ``SystemExit(143)`` so the exit runs). The hooks
are installed when the first run opens and put back when the last one is finished. A
child forked from the process (a data loader's worker) finishes none of its parent's runs.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from types import TracebackType
from typing import Any, NoReturn, Protocol

__all__ = ["Finishing", "register", "unregister"]


class Finishing(Protocol):
    """A run the end of the process finishes."""

    ref: str

    def finish(self, status: str = "finished") -> None: ...


_OPEN: list[Finishing] = []
_HOOKS: dict[str, Any] = {"failed": False}


def register(run: Finishing) -> None:
    """Finish ``run`` at the end of the process unless it is finished before."""
    with _HOOKS_LOCK:
        if not _OPEN:
            _install()
        _OPEN.append(run)


def unregister(run: Finishing) -> None:
    """``run`` is finished: the process's end has nothing to do for it."""
    with _HOOKS_LOCK:
        if run in _OPEN:
            _OPEN.remove(run)
            if not _OPEN:
                _uninstall()


_HOOKS_LOCK = threading.RLock()


def _install() -> None:
    _HOOKS.update(failed=False, excepthook=sys.excepthook, exit=sys.exit, sigterm=None)
    atexit.register(_at_exit)
    sys.excepthook = _excepthook
    sys.exit = _exit
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)
        _HOOKS["sigterm"] = signal.SIG_DFL


def _uninstall() -> None:
    atexit.unregister(_at_exit)
    if sys.excepthook is _excepthook:
        sys.excepthook = _HOOKS["excepthook"]
    if sys.exit is _exit:
        sys.exit = _HOOKS["exit"]
    main = threading.current_thread() is threading.main_thread()
    if main and _HOOKS["sigterm"] is not None and signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, _HOOKS["sigterm"])


def _excepthook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    _HOOKS["failed"] = True
    _HOOKS["excepthook"](kind, exc, tb)


def _exit(code: object = None) -> NoReturn:
    if code not in (None, 0):
        _HOOKS["failed"] = True
    _HOOKS["exit"](code)
    raise SystemExit(code)  # not reached: the saved sys.exit raised


def _on_sigterm(signum: int, frame: object) -> None:
    _HOOKS["failed"] = True
    raise SystemExit(128 + signum)


def _at_exit() -> None:
    status = "failed" if _HOOKS["failed"] else "finished"
    for run in list(_OPEN):
        try:
            run.finish(status)
        except Exception as exc:  # the process ends: say it rather than lose it silently
            sys.stderr.write(f"evalstore: run {run.ref} could not be finished: {exc}\n")


def _forget() -> None:
    """In a child forked from a process with runs open: they are the parent's to finish."""
    with _HOOKS_LOCK:
        if _OPEN:
            _OPEN.clear()
            _uninstall()


os.register_at_fork(after_in_child=_forget)
