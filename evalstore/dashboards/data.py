"""Dashboard data: the selected runs and each panel's query, run against a store.

Every query gets the parameters ``$experiments`` (varchar[]) and ``$runs`` (integer[]), NULL
meaning all, so that one filter applies to every panel; :func:`panel_data` adds the panel's
``params``, checks that the result has the columns its chart needs and returns a polars frame
(for ``pr_curve`` panels, the points from ``dashboards/pr_points``; for ``comparison`` panels,
with the statistics of :func:`evalstore.analysis.compare.compare` for each pair of runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from evalstore.analysis.compare import UNTESTED, compare
from evalstore.analysis.evaluate import evaluate
from evalstore.dashboards.board import BOARD_COLUMNS
from evalstore.dashboards.confusion import COLUMNS as CONFUSION_COLUMNS
from evalstore.dashboards.specs import AXES, Panel
from evalstore.db import queries, sandbox
from evalstore.errors import InvalidInput
from evalstore.runs.registry import resolve_many

if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.runs.registry import RunRef
    from evalstore.store.facade import Store

__all__ = [
    "STAT_COLUMNS",
    "compare_stats",
    "evaluate_selected",
    "panel_data",
    "query_filters",
    "selected_run_ids",
]

# Kinds whose query must return fixed columns (the chart's columns are implied).
_FIXED_COLUMNS = {
    "pr_curve": ("run_id", "run", "task"),
    "comparison": ("run_id", "run", "baseline_id", "baseline", "task", "metric", "params",
                   "group_id", "value", "baseline_value", "diff"),
    "leaderboard": BOARD_COLUMNS,
    "confusion": CONFUSION_COLUMNS,
}  # fmt: skip
#: What a comparison panel's frame gains from :func:`evalstore.analysis.compare.compare`, per
#: pair of runs, task, metric and params (``note``: why compare refused the pair or gave no
#: interval, else NULL).
STAT_COLUMNS = {"mean_diff": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
                "p_value": pl.Float64, "wins": pl.Int64, "losses": pl.Int64,
                "resampled": pl.String, "note": pl.String}  # fmt: skip


def selected_run_ids(
    store: Store, experiments: Sequence[str] = (), runs: Sequence[RunRef] = ()
) -> list[int]:
    """The ids of the runs that pass the filters (every run when both are empty).

    Raises:
        RunNotFound: a run reference matches no run.
        InvalidInput: an experiment has no run.
    """
    return store.query("dashboards/selected_runs", query_filters(store, experiments, runs))[
        "run_id"
    ].to_list()


def query_filters(
    store: Store,
    experiments: Sequence[str],
    runs: Sequence[RunRef],
    *,
    baseline: RunRef | None = None,
) -> dict[str, Any]:
    """The ``$experiments`` and ``$runs`` parameters of every dashboard query (NULL = all),
    without duplicates, and ``$baseline``: the id of the run every selected run is compared
    against (NULL: none given).

    Raises:
        RunNotFound: a run reference matches no run.
        InvalidInput: an experiment has no run.
    """
    known = set(store.query("dashboards/experiments")["experiment"].to_list())
    missing = [e for e in experiments if e not in known]
    if missing:
        raise InvalidInput(
            f"no runs in experiment(s) {', '.join(map(repr, missing))}; "
            f"experiments: {', '.join(sorted(known)) or '(none)'}"
        )
    ids = list(dict.fromkeys(resolve_many(store, runs)))
    return {
        "experiments": list(dict.fromkeys(experiments)) or None,
        "runs": ids or None,
        "baseline": None if baseline is None else resolve_many(store, [baseline])[0],
    }


def evaluate_selected(
    store: Store,
    experiments: Sequence[str] = (),
    runs: Sequence[RunRef] = (),
    progress: Progress | None = None,
) -> None:
    """Compute the standard metrics of the selected runs where they are missing or stale
    (the dashboards draw stored values). Needs a writable store."""
    if not experiments and not runs:
        # every run: one query for their ids, not one look-up per run id (1,000 runs: seconds)
        evaluate(store, None, all_runs=True, progress=progress, values=False)
        return
    ids = selected_run_ids(store, experiments, runs)
    if ids:
        evaluate(store, ids, progress=progress, values=False)


def panel_data(store: Store, panel: Panel, filters: Mapping[str, Any]) -> pl.DataFrame:
    """Run a panel's query with the filters and the panel's ``params``; check its columns.

    For ``pr_curve`` panels the query lists (run_id, run, task) and the curves come from
    ``dashboards/pr_points``: the result has run, task, recall, precision, n_lists and
    n_task (the task's runs in the selection, when the query gives it: more than are drawn
    where it caps them).

    Raises:
        InvalidInput: the query failed, is not a single SELECT, or lacks a named column.
    """
    # filters without a baseline (from before --baseline) mean none given
    values = {"baseline": None, **filters, **dict(panel.params)}
    if panel.sql is not None:
        # the spec's own SQL: in the sandbox (one read-only statement, nothing outside the
        # store, settings locked), which write_dashboards set up
        frame = sandbox.run_query(
            store.con,
            panel.sql,
            queries.bind(panel.sql, values),
            max_rows=sandbox.DEFAULT_MAX_ROWS,
            where=f"{panel.where}: `sql`",
            failed="the query failed",
        ).frame
    else:
        try:
            frame = queries.fetch(store.con, panel.query or "", values)
        except duckdb.Error as exc:
            raise InvalidInput(f"{panel.where}: the query failed: {_first_line(exc)}") from None
    needed = [getattr(panel, a) for a in AXES if getattr(panel, a)]
    needed += [*panel.columns, *panel.hover, *_FIXED_COLUMNS.get(panel.kind, ())]
    if panel.best_so_far and not {"base_metric", "metric"} & set(frame.columns):
        needed.append("base_metric")
    for column in dict.fromkeys(needed):
        if column not in frame.columns:
            raise InvalidInput(
                f"{panel.where}: column {column!r} is not in the query result "
                f"(columns: {', '.join(frame.columns) or 'none'})"
            )
    if panel.kind == "pr_curve":
        frame = _pr_points(store, frame, str(dict(panel.params).get("ties", "grouped")))
    if panel.kind == "comparison":
        frame = compare_stats(store, frame)
    return frame


def compare_stats(store: Store, frame: pl.DataFrame) -> pl.DataFrame:
    """A comparison panel's rows with, per (run, baseline, task, metric, params), the numbers
    of ``evalstore compare BASELINE RUN --metric METRIC``: the difference of the runs' values
    (``mean_diff``), its 95% interval, p-value, better/worse counts and what was resampled
    (lists, or items within lists below 10 lists). Where compare refuses the pair (the runs
    were scored on different lists), ``note`` says why and the statistics are NULL. Rows
    without a baseline (an experiment with no run tagged ``baseline``) stay as they are.

    Raises:
        InvalidInput: values are missing or stale and the store is read-only.
    """
    keys = ["run_id", "baseline_id", "task", "metric", "params"]
    frame = frame.cast({"run_id": pl.Int64, "baseline_id": pl.Int64})
    # a run without a baseline (its experiment has none tagged) has nothing to compare
    unpaired = frame.filter(pl.col("baseline_id").is_null())
    frame = frame.filter(pl.col("baseline_id").is_not_null())
    schema = {**dict.fromkeys(keys[2:], pl.String), **STAT_COLUMNS}
    found = [pl.DataFrame(schema={"run_id": pl.Int64, "baseline_id": pl.Int64, **schema})]
    for (run_id, baseline_id, metric), part in frame.group_by(
        ["run_id", "baseline_id", "metric"], maintain_order=True
    ):
        try:
            result = compare(store, [baseline_id, run_id], metrics=[metric]).select(
                "task", "params", pl.col("diff").alias("mean_diff"), "ci_low", "ci_high",
                "p_value", "wins", "losses", "resampled",
                note=pl.when(pl.col("resampled").is_in(UNTESTED)).then(pl.col("resampled")),
            )  # fmt: skip
        except InvalidInput as exc:  # e.g. the runs were scored on different lists
            result = part.select("task", "params").unique(maintain_order=True)
            result = result.with_columns(note=pl.lit(str(exc)))
        except duckdb.Error as exc:  # a read-only store cannot compute missing values
            raise InvalidInput(
                f"comparing run ids {baseline_id} and {run_id} on {metric} needs values this "
                f"store lacks and cannot compute: {_first_line(exc)} (run evalstore eval, or "
                "evalstore dashboard without --no-eval, first)"
            ) from None
        pair = {"run_id": run_id, "baseline_id": baseline_id, "metric": metric}
        found.append(result.with_columns(**{k: pl.lit(v) for k, v in pair.items()}))
    stats = pl.concat(found, how="diagonal_relaxed").cast({k: v for k, v in schema.items()})
    joined = frame.join(stats, on=keys, how="left", maintain_order="left")
    return pl.concat([joined, unpaired], how="diagonal_relaxed")


def _pr_points(store: Store, runs: pl.DataFrame, ties: str) -> pl.DataFrame:
    frames = []
    for task in dict.fromkeys(runs["task"].to_list()):
        chosen = runs.filter(pl.col("task") == task).select("run_id", "run")
        points = store.query(
            "dashboards/pr_points",
            {"runs": chosen["run_id"].to_list(), "task": task, "ties": ties},
        )
        joined = chosen.join(points, on="run_id", how="inner", maintain_order="left")
        total = (
            runs.filter(pl.col("task") == task)["n_task"].max()
            if "n_task" in runs.columns
            else None
        )
        frames.append(joined.with_columns(task=pl.lit(task), n_task=pl.lit(total, pl.Int64)))
    if not frames:
        schema = {"run": pl.String, "task": pl.String, "recall": pl.Float64,
                  "precision": pl.Float64, "n_lists": pl.Int64, "n_task": pl.Int64}  # fmt: skip
        return pl.DataFrame(schema=schema)
    return pl.concat(frames, how="vertical_relaxed").select(
        "run", "task", "recall", "precision", "n_lists", "n_task"
    )


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
