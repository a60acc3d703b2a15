"""The checks of the rows an import has just inserted (inside its transaction, before it
commits): what ``ingest`` and ``evalstore log`` refuse is refused here too, with one line
naming the file, the run and an example, so that a hand-edited or damaged export cannot bring
in a run that no ingest could have made. The checks of ranked items, matches, outcomes and
logged values are SQL (sql/export/import.sql, mirroring ingest's own checks); the runs row
and logged metric names are checked by the functions ingest and ``evalstore log`` use
(:func:`evalstore.runs.parse_params`, :func:`evalstore.logged.check_name`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from evalstore import queries
from evalstore.errors import EvalstoreError
from evalstore.logged import check_name
from evalstore.runs import parse_params
from evalstore.scale.layout import partition_path
from evalstore.schema import ROW_TABLES

if TYPE_CHECKING:
    from evalstore.store import Store

__all__ = ["check_items", "check_logged", "check_rows", "check_run_row", "unreadable_stream"]

_DAMAGED = "the export is damaged, nothing was imported"


def unreadable_stream(part: Path, exc: Exception) -> EvalstoreError | None:
    """The one line for a Parquet file that failed while it was read, where DuckDB wraps
    the reader's exception with its Python traceback (``... failed: <cause>. Detail: Python
    exception: Traceback ...``), or an Arrow error raised directly; None for other errors."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    wrapped = re.search(
        r"reading the stream registered as '[^']*' failed: (.*?)(?:\. Detail:|$)", first
    )
    if wrapped is None and isinstance(exc, duckdb.Error):
        return None
    cause = wrapped.group(1) if wrapped else first
    return EvalstoreError(f"{part}: not a readable Parquet file ({cause}); {_DAMAGED}")


def check_run_row(con: duckdb.DuckDBPyConnection, part: Path, ref: str, run_id: int) -> None:
    """Refuse a runs row that ingest could not have written: an empty experiment or name,
    params that are not a JSON object of names ingest accepts, an empty or repeated tag."""
    experiment, name, params, tags = queries.fetch_rows(
        con, "export/imported_run_meta", {"run_id": run_id}
    )[0]

    def bad(what: str) -> EvalstoreError:
        return EvalstoreError(f"{part}: run {ref}: {what}; {_DAMAGED}")

    if not experiment or not name or not name.strip():
        raise bad(f"experiment {experiment!r} and name {name!r} are not a run name")
    decoded = json.loads(params)
    if not isinstance(decoded, dict):
        raise bad(f"params {params:.60} are not a JSON object of names and values")
    try:
        parse_params(decoded)
    except EvalstoreError as exc:
        raise bad(str(exc)) from None
    if any(not t or not t.strip() for t in tags) or len(set(tags)) != len(tags):
        raise bad(f"tags {tags!r:.60} hold an empty or repeated tag")


def check_logged(store: Store, root: Path, entry: Mapping[str, Any], run_id: int) -> None:
    """Refuse the run's logged values where ``evalstore log`` would refuse them: a value
    that is not finite, a metric logged both with and without steps, a name that is not
    one a value may be logged under (:func:`evalstore.logged.check_name`)."""
    if not int(entry["rows"].get("logged_values", 0)):
        return
    part = partition_path(root, "logged_values", entry["run_id"])
    ref = f"{entry['experiment']}/{entry['name']}"
    found = queries.fetch_rows(store.con, "export/imported_logged_problems", {"run_id": run_id})
    if found:
        problem, n, metric, value = found[0]
        what = "a value that is not finite" if problem == "value" else "steps and no steps"
        raise EvalstoreError(
            f"{part}: run {ref}: {n:,} logged value(s) of {metric} with {what} ({value}); "
            f"{_DAMAGED}"
        )
    for (metric,) in queries.fetch_rows(
        store.con, "export/imported_logged_names", {"run_id": run_id}
    ):
        try:
            check_name(store, metric)
        except EvalstoreError as exc:
            raise EvalstoreError(f"{part}: run {ref}: {exc}; {_DAMAGED}") from None


_ITEM_PROBLEMS = {
    "score": "score {value} (NaN and +inf are refused; -inf is not retrieved)",
    "label": "label {value} (labels are -1, 0, 1)",
    "duplicate": "item {item!r} {value} times in one list",
    "unlisted": "a list that has no groups row (lists of the scores partition must be in the "
    "groups partition)",
    "gain": "gain {value} (gains are relevance grades, finite numbers >= 0)",
    "gains": "no gain where other items of the task have one ({value})",
    "seq": "seq {value} (the input position, >= 0)",
    "seq_twice": "seq {value} twice in one list (the input position orders ties)",
    "n_positives": "n_positives {value} positive labels (n_positives may only add positives "
    "not retrieved)",
}
#: The problems of groups rows rather than of the items (the message names groups' file).
_GROUP_PROBLEMS = frozenset({"n_positives"})
_ROW_PROBLEMS = {
    "match": "a match coordinate that is NaN or infinite, or a NaN score",
    "unpaired": "matches of a pair without a pairs row",
    "truth": "no finite ground truth (none stored, and no homography of the pair that maps "
    "the match to a finite point)",
    "match_seq": "a seq (the input position) negative or twice in the run",
    "pair_no": "a pair number twice in the run",
    "count": "a negative TP, FP or FN count",
    "outcome_twice": "the same group twice",
}
_ROW_TABLES = {"pair_no": "pairs", "count": "outcomes", "outcome_twice": "outcomes"}


def check_items(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    entry: Mapping[str, Any],
    table: str,
    run_id: int,
    first: int,
    n_lists: int,
) -> None:
    """Refuse the import when the run's ranked items are what ingest refuses."""
    text = queries.template(
        "export/imported_item_problems", table=queries.quote_ident(table, ROW_TABLES)
    )
    params = {"run_id": run_id, "first": first, "last": first + n_lists - 1}
    found = con.execute(text, queries.bind(text, params)).fetchall()
    if found:
        problem, n, group, item, value = found[0]
        what = _ITEM_PROBLEMS[problem].format(value=value, item=item)
        shown = [f"list {group!r}"] if group is not None else []
        shown += [f"item {item!r}"] if item is not None and group is not None else []
        where = f" ({', '.join(shown)})" if shown else ""
        part = partition_path(
            root, "groups" if problem in _GROUP_PROBLEMS else "scores", entry["run_id"]
        )
        raise EvalstoreError(
            f"{part}: run {entry['experiment']}/{entry['name']}: {n:,} row(s) with {what}"
            f"{where}; the export is damaged, nothing was imported"
        )


def check_rows(
    con: duckdb.DuckDBPyConnection, root: Path, entry: Mapping[str, Any], run_id: int
) -> None:
    """Refuse the import when the run's matches or outcomes are what ingest refuses."""
    found = queries.fetch_rows(con, "export/imported_row_problems", {"run_id": run_id})
    if found:
        problem, n, group = found[0]
        table = _ROW_TABLES.get(problem, "matches")
        part = partition_path(root, table, entry["run_id"])
        raise EvalstoreError(
            f"{part}: run {entry['experiment']}/{entry['name']}: {n:,} row(s) with "
            f"{_ROW_PROBLEMS[problem]} "
            f"(e.g. {group!r}); the export is damaged, nothing was imported"
        )
