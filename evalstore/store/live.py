"""A run opened from a training loop: :func:`init` (``evalstore.init``) and :class:`Run`.

::

    with evalstore.init("mnist/lr-0.1", params={"lr": 0.1}) as run:
        for step in range(1000):
            run.log({"loss": loss, "lr": lr}, step=step)

The run is made at once, running, with its params, tags, notes, git commit and time
(:func:`evalstore.runs.live.open_live_run`); leaving the ``with`` block (or
:meth:`Run.finish`) marks it finished, or failed on an exception. :meth:`Run.log` checks each
value where it is called, in Python, and keeps it in a buffer: a daemon thread writes the
buffer every ``flush_every`` seconds (default 2), one transaction a batch, and a heartbeat
every ``heartbeat_every`` seconds (default 30) when there is nothing to write. The Run never
holds the store open between two writes, so other processes (``evalstore eval``, the UI)
get in while it trains; a write that finds the store locked leaves the values in the buffer
for the next one, and ``log`` never waits.

The end of the process finishes a run still open: at exit (``atexit``) it is flushed and
marked ``finished``, or ``failed`` when the interpreter exits on an uncaught exception, on
``sys.exit`` with a non-zero code or on SIGTERM (while a run is open, and if SIGTERM had
Python's default action, a handler raises ``SystemExit(143)`` so the exit runs). A plain
``raise SystemExit(1)`` is not seen, and ends the run ``finished``. A SIGKILL loses the values
of the last ``flush_every`` seconds, no more, and the run shows as crashed
(:mod:`evalstore.runs.liveness`).

:meth:`Run.finish` waits up to ``lock_timeout`` seconds (default 60) for the store; if it
stays locked, the values and the finish are kept in a file beside the store and one line on
stderr says where (:func:`evalstore.runs.live.write_pending`): the next :func:`init`,
``evalstore run new``, ``evalstore log`` or ``evalstore run flush`` on that store writes them
in. A value that :meth:`Run.log` accepted is never lost otherwise.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from evalstore.db.connection import Database, default_path
from evalstore.errors import InvalidInput
from evalstore.runs.live import (
    Batch,
    Opened,
    load_pending,
    open_live_run,
    pending_note,
    write_batch,
    write_pending,
)
from evalstore.runs.liveness import this_host
from evalstore.runs.logged import check_case, check_plain_name, check_step, check_value
from evalstore.runs.meta import Params, RunMeta
from evalstore.store import exits
from evalstore.store.staged import write_store
from evalstore.store.steps import RunSteps

__all__ = ["FLUSH_EVERY", "HEARTBEAT_EVERY", "Run", "init", "start_run"]

#: Seconds between two writes of a Run's buffer (its daemon thread).
FLUSH_EVERY = 2.0
#: Seconds between two heartbeats of a Run that logs nothing meanwhile.
HEARTBEAT_EVERY = 30.0


class Run(RunSteps):
    """A run opened for logging: made by :func:`init` or :meth:`Store.start_run`, not
    directly. Besides scalars (:meth:`log`), it stores its evaluations at training steps:
    ``run.log_lists(frame, task="classification", step=epoch)`` and ``log_keypoints``,
    ``log_outcomes``, ``log_detections`` (:class:`~evalstore.store.steps.RunSteps`).

    Attributes:
        run_id: the run's id.
        ref: ``EXPERIMENT/NAME``.
        path: the store's file.
        status: ``running``, then ``finished`` or ``failed``.
        resumed: whether it was reopened (``resume=True``).
        error: the last error a background write met (the values stayed in the buffer).
    """

    def __init__(
        self,
        path: Path,
        opened: Opened,
        *,
        pid: int,
        host: str,
        flush_every: float = FLUSH_EVERY,
        heartbeat_every: float = HEARTBEAT_EVERY,
        lock_timeout: float = 60.0,
    ) -> None:
        if not flush_every > 0 or not heartbeat_every > 0:
            raise InvalidInput("flush_every and heartbeat_every must be > 0 seconds")
        self.run_id, self.ref, self.path = opened.run_id, opened.ref, path
        self.resumed = opened.resumed
        self.status = "running"
        self.error: BaseException | None = None
        self.lock_timeout = lock_timeout
        self._pid, self._host = pid, host
        self._names, self._without_steps = opened.names, opened.without_steps
        self._ok: set[str] = set()  # names checked once: a loop logs the same names
        self._step = opened.last_step
        self._buffer: dict[tuple[str, int], float] = {}
        self._lock = threading.Lock()  # the buffer and the step counter
        self._writing = threading.Lock()  # one write at a time
        self._flush_every, self._heartbeat_every = flush_every, heartbeat_every
        self._last_write = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"evalstore run {self.ref}",
                                        daemon=True)  # fmt: skip
        exits.register(self)
        self._thread.start()

    def __repr__(self) -> str:
        return f"Run({self.ref!r}, id={self.run_id}, {self.status})"

    # -- logging ---------------------------------------------------------------------------

    def log(self, values: Mapping[str, float], step: int | None = None) -> None:
        """Log scalars at ``step``: ``run.log({"loss": 0.3, "lr": 1e-3}, step=100)``. The
        values of one call land together. ``step`` None: the step after the last one this
        run logged (0 for the first), as W&B counts. The same (metric, step) again replaces
        the value (the last one wins).

        Raises:
            InvalidInput: the run is finished; a name that is not a plain identifier, is a
                computed metric's, differs only in case from a logged one or was logged
                by this run without a step; a value that is not a finite number (naming the
                metric and the step); a step that is not an integer >= 0. Nothing of the
                call is kept.
        """
        if self.status != "running":
            raise InvalidInput(f"run {self.ref} is {self.status}: it logs nothing more")
        at = self._step + 1 if step is None else cast(int, check_step(f"run {self.ref}", step))
        checked = []
        for name, value in values.items():
            if name not in self._ok:
                self._check_name(name)
            if not (isinstance(value, float) and math.isfinite(value)):
                try:
                    value = check_value(name, value)
                except InvalidInput as exc:
                    raise InvalidInput(f"{exc} (step {at} of run {self.ref})") from None
            checked.append((name, value))
        with self._lock:
            for name, value in checked:
                self._buffer[name, at] = value
            if at > self._step:
                self._step = at

    def _check_name(self, name: object) -> None:
        checked = check_plain_name(name)
        check_case(checked, [*self._names, *self._ok])
        if checked in self._without_steps:
            raise InvalidInput(
                f"run {self.ref} logged {checked} without a step; a Run logs at steps: log "
                "it under another name"
            )
        self._ok.add(checked)

    # -- per-step evaluations ----------------------------------------------------------------
    # log_lists, log_keypoints, log_outcomes and log_detections come from steps.RunSteps: each
    # opens the store for the call (waiting up to lock_timeout) and stores the step's rows as
    # Store.log_lists does.

    # -- writing -----------------------------------------------------------------------------

    def flush(self) -> int:
        """Write the buffered values now, waiting up to ``lock_timeout`` seconds for the
        store; returns how many were written.

        Raises:
            StoreLocked: the store stayed locked (the values stay in the buffer).
        """
        return self._write(self.lock_timeout)

    def _write(self, lock_timeout: float, finish: str | None = None) -> int:
        with self._writing:
            with self._lock:
                taken, self._buffer = self._buffer, {}
            batch = Batch([m for m, _ in taken], [s for _, s in taken], list(taken.values()))
            try:
                # quiet: a wait is no news in a training loop (nor a notice a CLI set)
                with Database(self.path, lock_timeout=lock_timeout, create=False,
                              on_wait=_quiet) as store:  # fmt: skip
                    written = write_batch(store, self.run_id, batch, finish=finish)
            except BaseException:
                with self._lock:  # back in the buffer, behind what was logged meanwhile
                    self._buffer = {**taken, **self._buffer}
                raise
            self._last_write = time.monotonic()
            return written

    def _loop(self) -> None:
        while not self._stop.wait(self._flush_every):
            due = time.monotonic() - self._last_write >= self._heartbeat_every
            if not (self._buffer or due):
                continue
            try:
                self._write(0.0)
            except Exception as exc:  # locked (or worse): the values wait for the next tick
                self.error = exc

    # -- the end -----------------------------------------------------------------------------

    def finish(self, status: str = "finished") -> None:
        """Write what is buffered and mark the run ``status`` (``finished`` or ``failed``),
        waiting up to ``lock_timeout`` seconds for the store; when it stays locked, keep both
        in a file beside the store and say so in one line on stderr (module docstring).
        Finishing a finished run does nothing."""
        if status not in ("finished", "failed"):
            raise InvalidInput(f"a run finishes as finished or failed, not {status!r}")
        if self.status != "running":
            return
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
        try:
            self._write(self.lock_timeout, finish=status)
        except Exception:  # the store stayed locked (or cannot be written): keep it all
            with self._lock:
                taken, self._buffer = self._buffer, {}
            batch = Batch([m for m, _ in taken], [s for _, s in taken], list(taken.values()))
            file = write_pending(self.path, self.run_id, self.ref, batch, pid=self._pid,
                                 host=self._host, finish=status)  # fmt: skip
            sys.stderr.write(pending_note(file, len(batch)) + "\n")
        finally:
            self.status = status
            exits.unregister(self)

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.finish("failed" if kind is not None else "finished")


def _quiet(message: str) -> None:
    """Told of a wait for the store's lock: nothing to say."""


def _open(
    path: Path,
    action: Any,
    *,
    flush_every: float,
    heartbeat_every: float,
    lock_timeout: float,
) -> Run:
    if not flush_every > 0 or not heartbeat_every > 0:  # refused before the run is made
        raise InvalidInput("flush_every and heartbeat_every must be > 0 seconds")
    opened = action()
    return Run(path, opened, pid=os.getpid(), host=this_host(), flush_every=flush_every,
               heartbeat_every=heartbeat_every, lock_timeout=lock_timeout)  # fmt: skip


def init(
    run: str,
    *,
    experiment: str | None = None,
    params: Params = None,
    tags: Iterable[str] = (),
    notes: str | None = None,
    git_commit: str | bool | None = True,
    db: str | os.PathLike[str] | None = None,
    resume: bool = False,
    flush_every: float = FLUSH_EVERY,
    heartbeat_every: float = HEARTBEAT_EVERY,
    lock_timeout: float = 60.0,
) -> Run:
    """Open a run for logging from a training loop, as ``wandb.init`` / ``mlflow.start_run``:
    the run ``EXPERIMENT/NAME`` is made at once (the store too, when ``db`` does not exist),
    running, with ``params``, ``tags``, ``notes``, the git commit (``True``: the current
    directory's) and the time. ``resume``: reopen the run of that name (running again, same
    id; params and tags given are added). Values kept beside the store by a process that
    could not write them are written in first.

    Raises:
        RunExists: the run exists and not ``resume``.
        InvalidInput: as :class:`~evalstore.RunMeta`.
        StoreLocked: the store stayed locked for ``lock_timeout`` seconds.
    """
    meta = RunMeta(run, experiment=experiment, params=params, tags=tags, notes=notes,
                   git_commit=git_commit)  # fmt: skip
    path = Path(db) if db is not None else default_path()
    pid, host = os.getpid(), this_host()

    def opened(store: Database) -> Opened:
        load_pending(store)
        return open_live_run(store, meta, pid=pid, host=host, resume=resume)

    return _open(path, lambda: write_store(path, opened, lock_timeout=lock_timeout),
                 flush_every=flush_every, heartbeat_every=heartbeat_every,
                 lock_timeout=lock_timeout)  # fmt: skip


def start_run(
    store: Database,
    meta: RunMeta,
    *,
    resume: bool = False,
    flush_every: float = FLUSH_EVERY,
    heartbeat_every: float = HEARTBEAT_EVERY,
    lock_timeout: float = 60.0,
) -> Run:
    """:func:`init` on a store held open (:meth:`Store.start_run`): the run is made through
    ``store``; the Run writes through connections of its own (DuckDB shares the database
    within a process).

    Raises:
        InvalidInput: ``store`` is read-only; as :func:`init`.
    """
    if store.read_only:
        raise InvalidInput(f"{store.path} is open read-only: a run cannot be started in it")

    def opened() -> Opened:
        load_pending(store)
        return open_live_run(store, meta, pid=os.getpid(), host=this_host(), resume=resume)

    return _open(store.path, opened, flush_every=flush_every, heartbeat_every=heartbeat_every,
                 lock_timeout=lock_timeout)  # fmt: skip
