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
from evalstore.errors import InvalidInput

if TYPE_CHECKING:
    import polars as pl

    from evalstore.db.connection import Database

__all__ = ["SORT_KEYS", "check_slice_keys", "list_run_rows", "list_runs", "run_ids_where"]

SORT_KEYS = ("created_at", "name", "id")
_NO_FILTER: dict[str, Any] = {"experiment": None, "tag": None, "commit": None, "where": None,
                              "sort": "created_at", "limit": None}  # fmt: skip


def run_ids_where(store: Database, predicate: str) -> list[int]:
    """The ids of the runs of ``v_runs`` where ``predicate`` holds (e.g. ``param_lr > 0.01``).

    Raises:
        InvalidInput: the store is writable (the sandbox needs it read-only), or the
            predicate is refused or fails: one line.
    """
    if not store.read_only and not sandbox.is_locked(store.con):
        raise InvalidInput(
            "--where runs in the sandbox of `evalstore sql`: open the store read-only"
        )
    sandbox.lock_down(store.con)
    text = queries.template("store/runs_where", predicate=predicate)
    try:
        found = sandbox.run_query(store.con, text, where="--where")
    except InvalidInput as exc:
        raise InvalidInput(f"{exc} (predicate: {predicate!r})") from None
    return [int(v) for v in found.frame["run_id"].to_list()]


def _filters(store: Database, given: dict[str, Any]) -> dict[str, Any]:
    filters = {**_NO_FILTER, **given}
    sort, limit = filters["sort"], filters["limit"]
    if sort not in SORT_KEYS:
        raise InvalidInput(f"unknown sort key {sort!r}; use one of {', '.join(SORT_KEYS)}")
    if limit is not None and limit < 0:
        raise InvalidInput(f"--limit must be >= 0, got {limit}")
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
) -> pl.DataFrame:
    """Runs with their metadata and row counts.

    Args:
        experiment: only this experiment.
        tag: only runs carrying this tag.
        commit: only runs of this git commit (a prefix of it, as ``git`` abbreviates).
        where: only runs where this SQL predicate over ``v_runs`` holds (read-only stores).
        sort: ``created_at`` (newest first), ``name`` or ``id``.
        limit: at most this many rows.
    """
    values = {"experiment": experiment, "tag": tag, "commit": commit, "where": where,
              "sort": sort, "limit": limit}  # fmt: skip
    return store.query("store/list_runs", _filters(store, values))


def list_run_rows(
    store: Database,
    *,
    experiment: str | None = None,
    tag: str | None = None,
    commit: str | None = None,
    where: str | None = None,
    sort: str = "created_at",
    limit: int | None = None,
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """:func:`list_runs` (the same keywords) as column names and rows, without polars."""
    values = {"experiment": experiment, "tag": tag, "commit": commit, "where": where,
              "sort": sort, "limit": limit}  # fmt: skip
    return queries.fetch_columns(store.con, "store/list_runs", _filters(store, values))


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
                f"--by {key!r}: no list of these runs has that slice key; {hint}"
                f"known: {', '.join(known)}"
            )
