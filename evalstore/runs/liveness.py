"""Whether a run opened from a training loop still runs: the status a run is shown with.

A run made by an ingest has no ``run_state`` row and is ``finished`` when made. A run opened
by :func:`evalstore.init`, :meth:`Store.start_run` or ``evalstore run new`` is ``running``
until it is finished (``finished``, or ``failed``); a ``running`` run whose process is gone
is shown as ``crashed``, as MLflow and W&B show a run whose process died:

- its process ran on this host (``host`` is this machine's name and ``pid`` is set): crashed
  when no process of that id is alive (``os.kill(pid, 0)``);
- its process ran on another host: crashed when it has given no sign of life (a flush of
  logged values, a heartbeat, an ``evalstore log``) for :data:`HEARTBEAT_LIMIT` seconds (a
  :class:`~evalstore.store.live.Run` writes a heartbeat every 30 s);
- no process (``evalstore run new`` without ``--pid``, a run of shell commands): running
  until ``evalstore run finish``, however long it is quiet (a shell script may log once an
  hour).

Nothing here reads the store: the status is told from a ``run_state`` row's columns.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timezone

__all__ = ["HEARTBEAT_LIMIT", "STATUSES", "pid_alive", "shown_status", "this_host", "utc_now"]

#: Seconds without a sign of life after which a running run of another host shows as crashed.
HEARTBEAT_LIMIT = 300.0
#: Every status a run is shown with.
STATUSES = ("running", "finished", "failed", "crashed")


def this_host() -> str:
    """This machine's name, as ``run_state.host`` records it."""
    return socket.gethostname()


def utc_now() -> datetime:
    """Now, as the store keeps times: naive UTC."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def pid_alive(pid: int) -> bool:
    """Whether a process of id ``pid`` exists on this machine (a zombie, killed but not yet
    reaped by its parent, still counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except OSError:
        return False
    return True


def shown_status(
    status: str | None,
    pid: int | None,
    host: str | None,
    heartbeat_at: datetime | None,
    *,
    now: datetime | None = None,
    here: str | None = None,
) -> str:
    """The status a run is shown with, from its ``run_state`` row (all None: no row, a run
    made by an ingest, ``finished``): the module docstring says how ``crashed`` is told.

    >>> shown_status(None, None, None, None)
    'finished'
    >>> shown_status("running", None, None, datetime(2020, 1, 1))
    'running'
    >>> shown_status("running", 1, "elsewhere", datetime(2020, 1, 1), here="this")
    'crashed'
    """
    if status is None:
        return "finished"
    if status != "running" or pid is None:
        return status
    if host == (here if here is not None else this_host()):
        return "running" if pid_alive(pid) else "crashed"
    if heartbeat_at is None:
        return "running"
    quiet = ((now or utc_now()) - heartbeat_at).total_seconds()
    return "crashed" if quiet > HEARTBEAT_LIMIT else "running"
