"""Runs: naming, metadata, listing, tagging and removal.

The run-metadata value :class:`~evalstore.runs.meta.RunMeta` and its checks live in
:mod:`evalstore.runs.meta`; they are named here too.
"""

from __future__ import annotations

import difflib
import json
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evalstore.db import queries
from evalstore.db.schema import ROW_TABLES, refresh_views, refresh_views_for_run, rows_sql
from evalstore.errors import InvalidInput, RunExists, RunNotFound, option
from evalstore.runs.liveness import shown_status
from evalstore.runs.meta import (
    DEFAULT_EXPERIMENT,
    RunMeta,
    current_commit,
    parse_params,
    parse_time,
    split_ref,
)

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = [
    "DEFAULT_EXPERIMENT",
    "ID_PREFIX",
    "RunMeta",
    "RunRef",
    "check_key_spellings",
    "current_commit",
    "delete_runs",
    "get_run",
    "open_run",
    "parse_params",
    "parse_time",
    "ref_text",
    "remove_run",
    "resolve",
    "run_exists",
    "split_ref",
    "tag_run",
]

RunRef = str | int
"""A run: ``NAME``, ``EXPERIMENT/NAME``, or its numeric id (``id:12``, an ``int``, or ``12``
when no run is named ``12``): see :func:`resolve`."""

ID_PREFIX = "id:"
"""A reference that names a run by its id only: ``id:12``."""


def open_run(
    con: Any,
    meta: RunMeta,
    *,
    replace: bool,
    append: bool,
    has_task: Callable[[int], bool],
    task: str,
    keep_tags: bool | None = None,
) -> tuple[int, bool]:
    """Inside the caller's transaction: create the run (or replace it, or reopen it to append
    a task). Returns (run_id, replaced).

    A replaced run keeps its id: its rows, derived values, step runs (with their links) and
    state go as :func:`delete_runs` deletes them, and its ``runs`` row takes ``meta``'s params,
    notes, commit and time. Its tags are kept, ``meta``'s added after them, unless
    ``keep_tags`` (default ``meta.keep_tags``) is false (then they are ``meta``'s alone).

    Raises:
        RunExists: the run exists and neither replace nor append applies.
    """
    ref = f"{meta.experiment}/{meta.name}"
    existing = queries.fetch_rows(
        con, "store/run_by_name", {"experiment": meta.experiment, "name": meta.name}
    )
    if existing and append:
        run_id = int(existing[0][0])
        if has_task(run_id):
            raise RunExists(f"run {ref} already has {task} rows; use {option('replace', True)}")
        return run_id, False
    if existing and not replace:
        raise run_exists(meta.experiment, meta.name)
    fields = {
        "experiment": meta.experiment,
        "name": meta.name,
        "created_at": meta.created_at,
        "git_commit": meta.git_commit,
        "params": json.dumps(meta.params),
        "tags": list(meta.tags),
        "notes": meta.notes,
    }
    if existing:  # the run whole but for its runs row: step runs, links and state go too
        run_id = int(existing[0][0])
        old = queries.fetch_rows(con, "store/run_tags", {"run_id": run_id})
        keep = meta.keep_tags if keep_tags is None else keep_tags
        if keep and old and old[0][0]:
            fields["tags"] = list(dict.fromkeys([*old[0][0], *meta.tags]))
        delete_runs(con, [run_id], keep=run_id)
        queries.run(con, "store/set_run_params", {"run_id": run_id, "params": "{}"})
        if meta.params:  # (a run without parameters: no name to compare)
            in_use = [k for (k,) in queries.fetch_rows(con, "store/param_keys")]
            check_key_case(meta.params, in_use)
        queries.run(con, "store/update_run", {"run_id": run_id, **fields})
        refresh_views(con)  # its old parameters may have gone from the views
        return run_id, True
    if meta.params:  # (a run without parameters: no name to compare)
        check_key_case(meta.params, [k for (k,) in queries.fetch_rows(con, "store/param_keys")])
    row = queries.fetch_rows(con, "store/insert_run", fields)
    run_id = int(row[0][0])
    refresh_views_for_run(con, run_id, bool(meta.params))
    return run_id, False


def run_exists(experiment: str, name: str) -> RunExists:
    """The error of an ingest into a run that exists, without replace or append."""
    return RunExists(
        f"run {experiment}/{name} exists; use {option('replace', True)} to overwrite it or "
        f"{option('append', True)} to add a task"
    )


def resolve(store: Database, ref: RunRef) -> int:
    """Return the run id of ``ref``, by one rule for every command:

    - ``id:N`` (or an ``int``) is the run with id N, and only that;
    - ``EXPERIMENT/NAME`` is that run (a name holding ``/`` is reached this way);
    - a bare ``NAME`` is the run of that name, which must be unique across experiments;
    - a bare number is the run with that id when no run is named so. A number that is both
      a run's name and another run's id is refused as ambiguous, naming both runs: a
      command never picks one of them for the user (``rm 2`` deleting the wrong run).

    Raises:
        RunNotFound: nothing matches, or the reference is ambiguous (a name of runs in
            several experiments, a number that is a name and another run's id).
    """
    return resolve_many(store, [ref])[0]


def ref_text(ref: RunRef) -> str:
    """The text of a reference: an integer (a run id from Python) as ``id:N``."""
    if isinstance(ref, numbers.Integral) and not isinstance(ref, bool):
        return f"{ID_PREFIX}{int(ref)}"
    return str(ref)


def resolve_many(store: Database, refs: Sequence[RunRef]) -> list[int]:
    """The run id of each of ``refs``, in order, by the rules of :func:`resolve`, in one
    query."""
    texts = [ref_text(ref) for ref in refs]
    found: dict[str, list[tuple[Any, ...]]] = {text: [] for text in texts}
    for row in queries.fetch_rows(store.con, "store/find_runs", {"refs": list(found)}):
        found[row[0]].append(row[1:])
    ids = []
    for text in texts:
        ids.append(_pick(store, text, found[text]))
    return ids


def _pick(store: Database, text: str, rows: list[tuple[Any, ...]]) -> int:
    if text.startswith(ID_PREFIX):  # explicit: the id, never a run named "id:N"
        rows = [r for r in rows if r[3] == "id"]
    by_id = [r for r in rows if r[3] == "id"]
    for how in ("path", "name", "id"):
        hits = [r for r in rows if r[3] == how]
        if len(hits) == 1:
            if how == "name" and by_id:  # a number: one run's name, another run's id
                named, numbered = hits[0], by_id[0]
                raise RunNotFound(
                    f"run {text!r} is ambiguous: the run named {named[1]}/{named[2]} "
                    f"(id {named[0]}) and the run with id {numbered[0]} "
                    f"({numbered[1]}/{numbered[2]}); write {named[1]}/{named[2]} or "
                    f"{ID_PREFIX}{numbered[0]}"
                )
            return int(hits[0][0])
        if len(hits) > 1:
            names = ", ".join(f"{r[1]}/{r[2]}" for r in hits)
            also = (
                f" (and id {by_id[0][0]} is {by_id[0][1]}/{by_id[0][2]}: write "
                f"{ID_PREFIX}{by_id[0][0]})"
                if how == "name" and by_id
                else ""
            )
            raise RunNotFound(
                f"run {text!r} is ambiguous: {names}; name it as EXPERIMENT/NAME{also}"
            )
    refs = [f"{e}/{n}" for e, n in queries.fetch_rows(store.con, "store/run_names")]
    close = difflib.get_close_matches(text, refs, n=3, cutoff=0.6) or difflib.get_close_matches(
        text, [r.split("/", 1)[1] for r in refs], n=3, cutoff=0.6
    )
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise RunNotFound(f"no run {text!r} in {store.path}{hint}")


def get_run(store: Database, ref: RunRef) -> dict[str, Any]:
    """One run as a dict: metadata, ``params`` decoded, ``tasks`` with row/list counts,
    ``status`` (running, finished, failed or crashed: :mod:`evalstore.runs.liveness`), the
    ``pid`` and ``host`` of the process that opened it, ``started_at``, ``heartbeat_at`` and
    ``finished_at`` (None for a run made by an ingest), and ``steps`` (how many step
    evaluations it has)."""
    run_id = resolve(store, ref)
    row = store.query("store/get_run", {"run_id": run_id}).to_dicts()[0]
    row["params"] = json.loads(row["params"]) if row["params"] else {}
    row["tasks"] = row["tasks"] or []
    row["status"] = shown_status(row["status"], row["pid"], row["host"], row["heartbeat_at"])
    return row


def remove_run(store: Database, ref: RunRef) -> dict[str, Any]:
    """Delete a run and all rows recorded for it, with its step runs, in one transaction
    (:func:`delete_runs`)."""
    info = get_run(store, ref)
    with store.transaction() as con:
        delete_runs(con, [info["run_id"]])
        refresh_views(con)
    return info


def delete_runs(con: Any, run_ids: Sequence[int], *, keep: int | None = None) -> list[int]:
    """Inside the caller's transaction: delete the runs ``run_ids`` whole (rows, ``runs``
    row, ``run_state`` row) with their step runs and ``run_steps`` links. A step run deleted
    without its run also deletes that run's stored values (``metric_values``,
    ``list_values``), which held its last step's: ``evaluate`` computes them again. The run
    ``keep`` (a replaced run) loses all that but its ``runs`` row. Returns the ids deleted,
    step runs included."""
    ids = list(dict.fromkeys(int(r) for r in run_ids))
    steps = queries.fetch_rows(con, "store/step_runs_of", {"runs": ids})
    ids += [int(s) for (s,) in steps if int(s) not in ids]
    parents = queries.fetch_rows(con, "store/step_parents", {"runs": ids})
    for (parent,) in parents:
        if int(parent) not in ids:
            for name in ("store/delete_run_metric_values", "store/delete_run_list_values"):
                queries.run(con, name, {"run_id": int(parent)})
    for run_id in ids:
        delete_run_rows(con, run_id)
        if run_id != keep:
            queries.run(con, "store/delete_run", {"run_id": run_id})
    queries.run(con, "store/remove_step_links", {"runs": ids})
    queries.run(con, "store/remove_run_states", {"runs": ids})
    return ids


def delete_run_rows(con: Any, run_id: int) -> None:
    """Delete every raw and derived row of a run, leaving its ``runs`` row."""
    for table in sorted(ROW_TABLES):  # found through the run's groups rows, deleted below
        text = rows_sql("store/delete_list_rows", table)
        con.execute(text, queries.bind(text, {"run_id": run_id}))
    for name in ("store/delete_index_stats", "store/delete_index_ranks"):  # the list index
        queries.run(con, name, {"run_id": run_id})
    for name in queries.names_with_prefix("store/delete_run_"):
        queries.run(con, name, {"run_id": run_id})


def tag_run(
    store: Database, ref: RunRef, tags: Sequence[str], *, remove: bool = False
) -> list[str]:
    """Add tags to a run (or remove them); returns the tags afterwards, in order."""
    info = get_run(store, ref)
    for t in tags:
        if not t or not t.strip():
            raise InvalidInput("a tag cannot be empty")
    current: list[str] = list(info["tags"])
    if remove:
        missing = [t for t in tags if t not in current]
        if missing:
            raise InvalidInput(f"run {info['experiment']}/{info['name']} has no tag {missing[0]!r}")
        new = [t for t in current if t not in set(tags)]
    else:
        new = current + [t for t in dict.fromkeys(tags) if t not in current]
    with store.transaction() as con:
        queries.run(con, "store/set_tags", {"run_id": info["run_id"], "tags": new})
    return new


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def check_key_case(params: Mapping[str, Any], in_use: Iterable[str]) -> None:
    """Refuse a new run's parameter name that differs only in ASCII case from another one
    (of this run, or in use in the store): DuckDB matches column names regardless of ASCII
    case, so ``v_runs`` cannot hold both ``param_lr`` and ``param_LR``.

    Raises:
        InvalidInput: naming both spellings.
    """
    spellings: dict[str, set[str]] = {}
    for key in [*in_use, *params]:
        spellings.setdefault(key.translate(_ASCII_LOWER), set()).add(key)
    for key in params:
        others = sorted(spellings[key.translate(_ASCII_LOWER)] - {key})
        if others:
            raise InvalidInput(
                f"param name {key!r} differs only in case from the param name {others[0]!r} "
                "(v_runs column names ignore case); spell both the same way"
            )


def check_key_spellings(con: Any, where: str) -> None:
    """Refuse a store whose parameter names include two that differ only in ASCII case (an
    import can bring them in; ingest refuses them one run at a time).

    Raises:
        InvalidInput: naming both spellings and ``where`` they came from.
    """
    spellings: dict[str, set[str]] = {}
    for (key,) in queries.fetch_rows(con, "store/param_keys"):
        spellings.setdefault(key.translate(_ASCII_LOWER), set()).add(key)
    for names in spellings.values():
        if len(names) > 1:
            first, second = sorted(names)[:2]
            raise InvalidInput(
                f"{where}: param names {first!r} and {second!r} differ only in case "
                "(v_runs column names ignore case); nothing was imported"
            )
