"""Which runs: the filters of ``evalstore runs`` and :meth:`Store.runs` (experiment, tag,
git commit, a ``--where`` predicate over ``v_runs``), their order and limit; and the check of
the slice keys that ``eval --by`` names.

A ``--where`` predicate is the user's own SQL: it runs in the sandbox of ``evalstore sql``
(:mod:`evalstore.db.sandbox`) as ``select run_id from v_runs where (PREDICATE)``, one read-only
statement that reads the store alone, so the store it filters must be opened read-only and
is a sandbox from then on.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from evalstore.db import queries, sandbox
from evalstore.errors import InvalidInput, option
from evalstore.runs.liveness import shown_status, this_host, utc_now

if TYPE_CHECKING:
    import polars as pl

    from evalstore.db.connection import Database

__all__ = ["SORT_KEYS", "check_slice_keys", "list_run_rows", "list_runs", "run_ids_where"]

SORT_KEYS = ("created_at", "name", "id")
#: the columns of store/list_runs that tell a crashed run, dropped once it is told
_STATE = ("status", "state_pid", "state_host", "state_heartbeat")
_NO_FILTER: dict[str, Any] = {"experiment": None, "tag": None, "commit": None, "where": None,
                              "sort": "created_at", "limit": None, "step_runs": True}  # fmt: skip


def run_ids_where(store: Database, predicate: str) -> list[int]:
    """The ids of the runs of ``v_runs`` where ``predicate`` holds (e.g. ``param_lr > 0.01``).

    Raises:
        InvalidInput: the store is writable (the sandbox needs it read-only), or the
            predicate is refused or fails: one line.
    """
    if not store.read_only and not sandbox.is_locked(store.con):
        raise InvalidInput(
            f"{option('where')} runs in the sandbox of `evalstore sql`: open the store read-only"
        )
    sandbox.lock_down(store.con)
    text = queries.template("store/runs_where", predicate=predicate)
    try:
        found = sandbox.run_query(store.con, text, where=option("where"))
    except InvalidInput as exc:
        raise InvalidInput(f"{exc} (predicate: {predicate!r})") from None
    return [int(v) for v in found.frame["run_id"].to_list()]


def _filters(store: Database, given: dict[str, Any]) -> dict[str, Any]:
    filters = {**_NO_FILTER, **given}
    sort, limit = filters["sort"], filters["limit"]
    if sort not in SORT_KEYS:
        raise InvalidInput(f"unknown sort key {sort!r}; use one of {', '.join(SORT_KEYS)}")
    if limit is not None and limit < 0:
        raise InvalidInput(f"{option('limit')} must be >= 0, got {limit}")
    where = filters.pop("where", None)
    filters["ids"] = run_ids_where(store, where) if where else None
    return filters


def list_runs(
    store: Database,
    *,
    experiment: str | None = None,
    tag: str | None = None,
    commit: str | None = None,
    where: str | None = None,
    sort: str = "created_at",
    limit: int | None = None,
    step_runs: bool = True,
) -> pl.DataFrame:
    """Runs with their metadata, row counts, ``status`` (running, finished, failed or
    crashed: :mod:`evalstore.runs.liveness`) and ``steps`` (how many step evaluations a run
    has); the step runs themselves (``NAME@STEP``) are left out.

    Args:
        experiment: only this experiment.
        tag: only runs carrying this tag.
        commit: only runs of this git commit (a prefix of it, as ``git`` abbreviates).
        where: only runs where this SQL predicate over ``v_runs`` holds (read-only stores).
        sort: ``created_at`` (newest first), ``name`` or ``id``.
        limit: at most this many rows.
        step_runs: include the step runs (``NAME@STEP``, a run's evaluations at training
            steps); ``evalstore runs`` and :meth:`Store.runs` leave them out.
    """
    values = {"experiment": experiment, "tag": tag, "commit": commit, "where": where,
              "sort": sort, "limit": limit, "step_runs": step_runs}  # fmt: skip
    import polars as pl  # loaded with the store's frames already; not by list_run_rows

    frame = store.query("store/list_runs", _filters(store, values))
    status = _statuses(frame.select(_STATE).rows())
    return frame.with_columns(pl.Series("status", status, pl.String)).drop(_STATE[1:])


def _statuses(rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """The shown status of each row of (status, pid, host, heartbeat_at)."""
    now, here = utc_now(), this_host()
    return [shown_status(*row, now=now, here=here) if row[0] == "running" else str(row[0])
            for row in rows]  # fmt: skip


def list_run_rows(
    store: Database,
    *,
    experiment: str | None = None,
    tag: str | None = None,
    commit: str | None = None,
    where: str | None = None,
    sort: str = "created_at",
    limit: int | None = None,
    step_runs: bool = True,
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """:func:`list_runs` (the same keywords) as column names and rows, without polars."""
    values = {"experiment": experiment, "tag": tag, "commit": commit, "where": where,
              "sort": sort, "limit": limit, "step_runs": step_runs}  # fmt: skip
    columns, rows = queries.fetch_columns(store.con, "store/list_runs", _filters(store, values))
    at = [columns.index(c) for c in _STATE]
    status = _statuses([tuple(row[i] for i in at) for row in rows])
    kept = [i for i, c in enumerate(columns) if c not in _STATE[1:]]
    rows = [
        tuple(s if i == at[0] else row[i] for i in kept)
        for row, s in zip(rows, status, strict=True)
    ]
    return [columns[i] for i in kept], rows


def check_slice_keys(
    store: Database, run_ids: list[int], by: Sequence[str], nouns: Collection[str]
) -> None:
    """Refuse a ``--by`` key that is neither one of ``nouns`` (class, query, list...) nor a
    slice key of any of the runs' lists: it would give the overall values alone, silently.

    Raises:
        InvalidInput: naming the key, the closest known ones and every key there is.
    """
    unknown = [k for k in by if k not in nouns]
    if not unknown:
        return
    keys = {k for (k,) in queries.fetch_rows(store.con, "eval/slice_keys", {"runs": run_ids})}
    for key in unknown:
        if key not in keys:
            known = sorted(keys | set(nouns))
            close = difflib.get_close_matches(key, known, n=2, cutoff=0.6)
            hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
            raise InvalidInput(
                f"{option('by', key)}: no list of these runs has that slice key; {hint}"
                f"known: {', '.join(known)}"
            )
