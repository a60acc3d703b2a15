"""The checks of the rows an import has just inserted (inside its transaction, before it
commits): what ``ingest`` and ``evalstore log`` refuse is refused here too, with one line
naming the file, the run and an example, so that a hand-edited or damaged export cannot bring
in a run that no ingest could have made. The checks of ranked items, matches, outcomes,
detections and logged values are SQL (sql/export/import.sql, import_detections.sql, mirroring
ingest's own checks); the runs row
and logged metric names are checked by the functions ingest and ``evalstore log`` use
(:func:`evalstore.runs.registry.parse_params`, :func:`evalstore.runs.logged.check_name`).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow.parquet as pq

from evalstore.db import queries
from evalstore.db.schema import ROW_TABLES
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.ingest.lists import check_unlisted
from evalstore.ingest.outcomes import MAX_COUNT
from evalstore.runs.logged import check_name
from evalstore.runs.registry import parse_params
from evalstore.scale.layout import partition_path

if TYPE_CHECKING:
    from evalstore.store.facade import Store

__all__ = [
    "check_added_positives",
    "check_detections",
    "check_distinct_ids",
    "check_items",
    "check_listed_groups",
    "check_logged",
    "check_rows",
    "check_run_row",
    "check_score_type",
    "unreadable_stream",
]

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
    one a value may be logged under (:func:`evalstore.runs.logged.check_name`)."""
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
    "truth": "no finite ground truth (none stored, no homography of the pair that maps "
    "the match to a finite point, and no cameras of the pair)",
    "unpaired_cameras": "cameras of a pair without a pairs row",
    "unpaired_poses": "pose estimates of a pair without cameras",
    "match_seq": "a seq (the input position) negative or twice in the run",
    "pair_no": "a pair number twice in the run",
    "count": "a negative TP, FP or FN count",
    "count_big": f"a TP, FP or FN count above {MAX_COUNT:,} (2^53)",
    "count_sum": f"tp + fp + fn above {MAX_COUNT:,} (2^53), the most a group's counts may add "
    "up to",
    "outcome_twice": "the same group twice",
}
_ROW_TABLES = {
    "pair_no": "pairs",
    "unpaired_cameras": "pair_cameras",
    "unpaired_poses": "pose_estimates",
    "count": "outcomes",
    "count_big": "outcomes",
    "count_sum": "outcomes",
    "outcome_twice": "outcomes",
}
#: The types a score column of an export may have: each value stored as it is (ingest
#: refuses what a float64 does not hold exactly, evalstore/ingest/exact.py).
_SCORE_TYPES = frozenset({"DOUBLE", "FLOAT"})


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
    found = queries.fetch_rows(
        con, "export/imported_row_problems", {"run_id": run_id, "max_count": MAX_COUNT}
    )
    if found:
        problem, n, group = found[0]
        table = _ROW_TABLES.get(problem, "matches")
        part = partition_path(root, table, entry["run_id"])
        raise EvalstoreError(
            f"{part}: run {entry['experiment']}/{entry['name']}: {n:,} row(s) with "
            f"{_ROW_PROBLEMS[problem]} "
            f"(e.g. {group!r}); the export is damaged, nothing was imported"
        )


def check_score_type(where: Path, columns: list[dict[str, Any]]) -> None:
    """Refuse a manifest whose scores are of a type other than DOUBLE or FLOAT (an export
    writes DOUBLE): an integer beyond 2^53, a decimal or a text would be rounded into the
    store's float, and rounding can make distinct scores ties (what ingest refuses)."""
    kind = next((str(c["type"]) for c in columns if c["name"] == "score"), "DOUBLE")
    if kind.upper() not in _SCORE_TYPES:
        raise EvalstoreError(
            f"{where}: column scores.score is {kind}; an export's scores are DOUBLE or FLOAT, "
            f"which the store holds exactly (another type would be rounded, and distinct "
            f"scores could become ties); {_DAMAGED}"
        )


def check_listed_groups(con: duckdb.DuckDBPyConnection, part: Path, ref: str) -> None:
    """Refuse groups rows (``_import_ids``: their list_id and group_id) whose list id is no
    list of the run's scores: ingest refuses a groups row of no list
    (export/groups_of_no_list)."""
    n, list_id, group_id = queries.fetch_rows(con, "export/groups_of_no_list")[0]
    if n:
        raise EvalstoreError(
            f"{part}: run {ref}: {n:,} groups row(s) of no list of the run's scores (e.g. list "
            f"id {list_id}, group_id {group_id!r}); each groups row describes a list; "
            f"{_DAMAGED}"
        )


def check_added_positives(
    con: duckdb.DuckDBPyConnection, root: Path, entry: Mapping[str, Any], run_id: int
) -> None:
    """Refuse n_positives overrides that add more positives beyond the lists' +1 labels than
    ingest accepts (:func:`evalstore.ingest.lists.check_unlisted`, run once the imported
    lists are indexed), per task as ingest checks them."""
    part = partition_path(root, "groups", entry["run_id"])
    ref = f"{entry['experiment']}/{entry['name']}"
    for (task,) in queries.fetch_rows(con, "store/run_tasks", {"run_id": run_id}):
        try:
            check_unlisted(con, run_id, task, f"{part}: run {ref}")
        except InvalidInput as exc:
            raise EvalstoreError(f"{exc}; {_DAMAGED}") from None


_DETECTION_PROBLEMS = {
    "image": "an image the run lacks (no det_images row of the run; e.g. image {example!r})",
    "category": "a category the run lacks (no det_categories row of the run; e.g. category "
    "{example!r})",
    "position": "an x or y that is NaN or infinite (e.g. {example})",
    "side": "a w or h that is NaN, infinite or negative (e.g. {example})",
    "score": "a NaN score (e.g. det_id {example})",
    "det_id": "a det_id (the input position, 0 to n-1) out of range or twice (e.g. {example})",
    "corners": "corners x1, y1, x2, y2 given in part or other than the box x, y, w, h (e.g. "
    "row {example!r})",
}
#: The id column of the detection tables whose ids the readers give once per run.
_DISTINCT_IDS = {"det_images": "image_id", "det_categories": "category_id"}


def check_distinct_ids(con: duckdb.DuckDBPyConnection, part: Path, ref: str, table: str) -> None:
    """Refuse a det_images or det_categories partition (before it is inserted)
    that holds an id twice: each reader refuses a repeated image or category id."""
    column = _DISTINCT_IDS.get(table)
    if column is None:
        return
    con.register("_import_ids", pq.read_table(part, columns=[column]))  # one id per image
    try:
        text = queries.template(
            "export/imported_duplicate_ids", id=queries.quote_ident(column, {column})
        )
        n, example, times = con.execute(text).fetchall()[0]
    finally:
        with contextlib.suppress(duckdb.Error):  # fails in an aborted transaction
            con.unregister("_import_ids")
    if n:
        raise EvalstoreError(
            f"{part}: run {ref}: {column} {example!r} {times} times ({n:,} id(s) repeated); "
            f"each id is given once; {_DAMAGED}"
        )


def check_detections(
    con: duckdb.DuckDBPyConnection, root: Path, entry: Mapping[str, Any], run_id: int
) -> None:
    """Refuse the import when the run's ground-truth boxes or detections are what the
    detection readers refuse (sql/export/import_detections.sql)."""
    rows = entry["rows"]
    if not int(rows.get("det_truth", 0)) and not int(rows.get("det_boxes", 0)):
        return
    found = queries.fetch_rows(con, "export/imported_detection_problems", {"run_id": run_id})
    if found:
        problem, table, n, example = found[0]
        part = partition_path(root, table, entry["run_id"])
        what = _DETECTION_PROBLEMS[problem].format(example=example)
        raise EvalstoreError(
            f"{part}: run {entry['experiment']}/{entry['name']}: {n:,} row(s) with {what}; "
            f"{_DAMAGED}"
        )
