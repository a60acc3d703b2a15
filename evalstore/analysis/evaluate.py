"""Computing metrics: run the metric SQL over raw rows, cache the values, read them back."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

import duckdb
import polars as pl

from evalstore.analysis import det_lists, det_matching
from evalstore.core.ranking import TIES
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics import protocols, user
from evalstore.metrics.registry import ALL_TASKS, LIST_NOUN, METRICS, Metric, get, metrics_for
from evalstore.runs.logged import latest_values, split_logged
from evalstore.runs.registry import resolve_many
from evalstore.runs.selection import check_slice_keys


class Engine(Protocol):
    """Computes a metric's per-list values outside DuckDB: called with (metric, task, run ids,
    the parameters the SQL binds), returns what the DuckDB query would."""

    name: str

    def __call__(
        self, metric: Metric, task: str, run_ids: Sequence[int], params: Mapping[str, Any]
    ) -> pl.DataFrame: ...


if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.runs.registry import RunRef
    from evalstore.store.facade import Store

__all__ = [
    "DEFAULT_K",
    "RESULT_COLUMNS",
    "Engine",
    "evaluate",
    "resolve_ties",
    "stored_metrics",
    "with_protocol",
]

DEFAULT_K = 10
RESULT_COLUMNS = [
    "run", "run_id", "experiment", "task", "metric", "slice", "value", "n_lists", "n_skipped",
    "params", "protocol", "definition_sha", "engine", "stale",
]  # fmt: skip


def _params(
    metric: Metric, ties: str, k: int, at: float | None = None, protocol: str | None = None
) -> str:
    values: dict[str, Any] = {} if protocol is None else {"protocol": protocol}
    if metric.source == "scores":
        values["ties"] = ties
    if "k" in metric.params:
        values["k"] = k
    if metric.sweep is not None:
        values[metric.sweep.column] = at
    return json.dumps(values, sort_keys=True, separators=(",", ":"))


def _run_ids(store: Store, runs: Sequence[RunRef] | None, all_runs: bool) -> list[int]:
    if all_runs:
        return [int(r[0]) for r in queries.fetch_rows(store.con, "eval/all_run_ids")]
    if not runs:
        raise InvalidInput("name at least one run, or pass --all")
    return list(dict.fromkeys(resolve_many(store, runs)))  # one query for all of them


def _compute(
    store: Store,
    metric: Metric,
    task: str,
    run_ids: list[int],
    ties: str,
    k: int,
    at: list[float],
    engine: Engine | None = None,
    protocol: protocols.Protocol | None = None,
) -> None:
    """Compute one metric for some runs of one task and replace their cached values (one
    parameter set per value of its sweep, all from one query). The run's value is the mean
    over its lists, or for a metric of ``overall = "run row"`` its SQL's row of group NULL."""
    con = store.con
    bind: dict[str, Any] = {"runs": run_ids, "task": task, "ties": ties, "k": k}
    if metric.sweep is not None:
        bind[metric.sweep.param] = at
    text = metric.query_for(ties).text  # the registry names each tie policy's SQL file
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    engine_name = "duckdb" if engine is None else engine.name
    if engine is None:  # the estimates, matches and lists its SQL reads, made on first use
        with store.transaction():
            det_matching.ensure_derived(store, metric, run_ids)
            if task == "detection" and metric.source == "scores":
                det_lists.ensure_lists(store, run_ids, needed_by=metric.name)
    remote = None if engine is None else engine(metric, task, run_ids, bind).to_arrow()
    if remote is None and metric.path is not None:  # a user's SQL: in the sandbox
        remote = user.compute(store.con, metric, run_ids, bind)
    with store.transaction():
        if remote is None:  # our own SQL file; values are bound, never spliced in
            stage = queries.template("eval/stage_raw", query=text)
            con.execute(stage, queries.bind(stage, bind))
        else:
            con.register("_remote", remote)
            try:
                queries.run(con, "eval/stage_remote")
            finally:
                # in a transaction that an error or a Ctrl-C aborted this fails too, and would
                # stand in for what stopped it
                with contextlib.suppress(duckdb.Error):
                    con.unregister("_remote")
        try:
            for value in at if metric.sweep is not None else [None]:
                params = _params(
                    metric, ties, k, value, None if protocol is None else protocol.name
                )
                keys = {
                    "runs": run_ids,
                    "task": task,
                    "metric": metric.name,
                    "params": params,
                    "sha": metric.sha,
                    "at": value,
                    "mean_name": metric.mean_name,
                    "engine": engine_name,
                }
                column = "" if metric.sweep is None else metric.sweep.column
                queries.run(con, "eval/select_sweep" if column else "eval/select_all", keys)
                if column:  # the sweep column's name comes from the registry, not the user
                    cut = queries.template(
                        "eval/stage_sweep_value", sweep=queries.quote_ident(column, {column})
                    )
                    con.execute(cut, {"at": value})
                if protocol is not None and protocol.no_positives == "zero":
                    queries.run(con, "eval/zero_without_positives")
                if protocol is not None and protocol.unretrieved == "left out":
                    queries.run(con, "eval/leave_out_unretrieved", {"task": task})
                for name in ("eval/clear_values", "eval/clear_list_values"):
                    queries.run(con, name, keys)
                given = "_given" if metric.overall == "run row" else ""  # TIDE's
                queries.run(con, f"eval/insert_list_values{given}", keys)
                queries.run(con, f"eval/insert_overall{given}", {**keys, "now": now})
        finally:
            queries.run(con, "eval/drop_raw")
            queries.run(con, "eval/drop_per_list")


def _sweep_values(metric: Metric, sweeps: Mapping[str, Sequence[float]]) -> list[float]:
    if metric.sweep is None:
        return []
    values = [float(v) for v in sweeps.get(metric.sweep.column, metric.sweep.default)]
    if not values or any(not math.isfinite(v) or v < 0 for v in values):
        raise InvalidInput(f"--{metric.sweep.column} needs finite values >= 0, got {values}")
    return sorted(set(values))


def _slices(
    store: Store, metric: Metric, task: str, run_ids: list[int], params: str, key: str
) -> None:
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    keys = {
        "runs": run_ids,
        "task": task,
        "metric": metric.name,
        "params": params,
        "key": key,
        "mean_name": metric.mean_name,
    }
    with store.transaction():
        queries.run(store.con, "eval/clear_slices", keys)
        queries.run(store.con, "eval/insert_slices", {**keys, "now": now})


def evaluate(
    store: Store,
    runs: Sequence[RunRef] | None,
    *,
    metrics: Sequence[str] | None = None,
    ties: str | None = None,
    k: int | None = None,
    by: Sequence[str] = (),
    recompute: bool = False,
    all_runs: bool = False,
    sweeps: Mapping[str, Sequence[float]] | None = None,
    engine: Engine | None = None,
    progress: Progress | None = None,
    protocol: str | None = None,
    values: bool = True,
) -> pl.DataFrame:
    """Compute (or reuse) metrics of runs and return them.

    For every task a run holds, the requested metrics (default: the task's standard ones, see
    :data:`evalstore.metrics.registry.DEFAULTS`) are computed in SQL over the raw rows, unless
    values computed by the same SQL (same definition SHA) and parameters are already stored.

    Args:
        store: an open, writable store.
        runs: run references; ignored with ``all_runs``.
        metrics: metric names (``ap``, ``ap_voc07``, ...; ``map`` is accepted for ``ap``).
        ties: ``grouped`` (default), ``optimistic``, ``pessimistic``, ``input`` or ``docid``;
            default the protocol's.
        k: the cut-off of ``precision_at_k`` / ``recall_at_k`` (default 10).
        by: slice keys: a key of the groups' slice metadata (``sequence``, ``difficulty``...)
            gives the mean per value; the task's list noun (``class``, ``query``, ``pair``,
            ``list``) gives one row per list.
        recompute: recompute even when up-to-date values are stored.
        all_runs: every run of the store.
        sweeps: values of a sweep parameter, e.g. ``{"sigma": [1, 2, 4]}`` for
            ``precision_at_sigma`` (defaults: sigma 3, 6, 9; threshold 1..10; eps 1, 3, 5).
        engine: computes the per-list values elsewhere (e.g. :class:`evalstore.scale.spark.
            SparkEngine` over a Parquet export); the values are stored here with the engine's
            name, and a value counts as cached only for the same engine.
        progress: called with ("metric task", done, total).
        protocol: an official protocol (:mod:`evalstore.metrics.protocols`: ``hpatches``, ``voc07``,
            ``trec``...): its metrics (unless ``metrics`` names some of them), its tie policy
            and averaging. The values record it in their ``params``.
        values: return the values; False computes only those missing or stale, and returns
            an empty frame (the dashboards, which read the values with their own queries).

    Returns:
        One row per (run, task, metric, slice) with the columns of :data:`RESULT_COLUMNS`;
        ``slice`` is ``""`` for the mean over all lists of the run (for a metric of
        ``overall = "run row"``, TIDE's, the run's own value, which is not that mean).
    """
    chosen = None if protocol is None else protocols.get(protocol)
    ties = resolve_ties(ties, chosen)
    if chosen is not None:
        k = chosen.k if k is None else k
    if ties not in TIES:
        raise InvalidInput(f"unknown --ties {ties!r}; use one of {', '.join(TIES)}")
    if k is not None and k < 1:
        raise InvalidInput(f"--k must be >= 1, got {k}")
    k = DEFAULT_K if k is None else k
    run_ids = _run_ids(store, runs, all_runs)
    if not run_ids:
        return pl.DataFrame(schema=dict.fromkeys(RESULT_COLUMNS, pl.String))
    check_slice_keys(store, run_ids, by, {*LIST_NOUN.values(), "list"})
    plan = []
    presence = {
        "scores": "eval/runs_with_task",
        "pairs": "eval/runs_with_pairs",
        "outcomes": "eval/runs_with_outcomes",
        "detections": "eval/runs_with_detections",
    }
    for task in ALL_TASKS:
        found: dict[str, list[int]] = {}
        for m in _candidates(task, metrics, chosen):
            # a detection run's ranked lists are made on first use (analysis/det_lists.py)
            source = "detections" if task == "detection" else m.source
            if source not in found:
                rows = queries.fetch_rows(
                    store.con, presence[source], {"runs": run_ids, "task": task}
                )
                found[source] = sorted(int(r[0]) for r in rows)
            if found[source]:
                plan.append((task, m, found[source]))
    if not plan:
        if chosen is not None:
            raise InvalidInput(
                f"--protocol {chosen.name} covers the tasks {', '.join(chosen.tasks)}; these "
                "runs have none of them (or not the requested metrics)"
            )
        raise InvalidInput("none of the requested metrics applies to the tasks of these runs")
    frames = []
    for step, (task, metric, ids) in enumerate(plan):
        at = _sweep_values(metric, sweeps or {})
        name = None if chosen is None else chosen.name
        param_sets = [_params(metric, ties, k, v, name) for v in ([*at] if at else [None])]
        todo = ids
        if not recompute:
            fresh = set(ids)
            for params in param_sets:
                keys = {
                    "runs": ids,
                    "task": task,
                    "metric": metric.name,
                    "params": params,
                    "sha": metric.sha,
                    "engine": "duckdb" if engine is None else engine.name,
                }
                fresh &= {
                    int(r[0]) for r in queries.fetch_rows(store.con, "eval/cached_overall", keys)
                }
            todo = [i for i in ids if i not in fresh]
        if todo:
            _compute(store, metric, task, todo, ties, k, at, engine, chosen)
        for params in param_sets:
            for key in by:
                if key not in (*LIST_NOUN.values(), "list"):  # another task's noun: not a slice
                    _slices(store, metric, task, ids, params, key)
            if values:
                frames.append(_read(store, ids, task, metric, params, by))
        if progress is not None:
            progress(f"{metric.name} {task}", step + 1, len(plan))
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()


def resolve_ties(ties: str | None, protocol: protocols.Protocol | None) -> str:
    """The tie policy of a call: the one given, else the protocol's, else ``grouped``.

    Raises:
        InvalidInput: a given policy that contradicts the protocol's.
    """
    if protocol is None:
        return "grouped" if ties is None else ties
    if ties is not None and ties != protocol.ties:
        raise InvalidInput(
            f"--ties {ties} contradicts --protocol {protocol.name}, which ranks ties "
            f"{protocol.ties!r}; leave --ties out"
        )
    return protocol.ties


def _candidates(
    task: str, metrics: Sequence[str] | None, protocol: protocols.Protocol | None
) -> list[Metric]:
    """The metrics to compute for ``task``: those named, else the protocol's, else the task's
    defaults; under a protocol, only metrics it reports."""
    own = () if protocol is None else protocol.metrics.get(task, ())
    if protocol is None or not metrics:
        return [] if protocol is not None and not own else metrics_for(task, list(metrics or own))
    named = metrics_for(task, list(metrics))
    every = {m for names in protocol.metrics.values() for m in names}
    foreign = [m.name for m in named if m.name not in every]
    if foreign:
        raise InvalidInput(
            f"--protocol {protocol.name} does not report {foreign[0]} (it reports "
            f"{', '.join(sorted(every))})"
        )
    return [m for m in named if m.name in own]


def _read(
    store: Store, ids: list[int], task: str, metric: Metric, params: str, by: Sequence[str]
) -> pl.DataFrame:
    stored = store.query("eval/results", {"runs": ids, "metrics": [metric.name]})
    stored = stored.filter((pl.col("task") == task) & (pl.col("params") == params))
    stored = stored.with_columns(
        stale=pl.col("definition_sha") != metric.sha, metric=pl.col("label")
    )
    keep = pl.col("slice") == ""
    for key in by:
        keep = keep | pl.col("slice").str.starts_with(f"{key}=")
    out = with_protocol(stored.filter(keep)).select(RESULT_COLUMNS)
    noun = LIST_NOUN[task]
    if noun in by or "list" in by:  # one row per list: the plain metric name (ap, not map)
        lists = store.query(
            "eval/per_list_results",
            {"runs": ids, "task": task, "metrics": [metric.name], "noun": noun},
        ).filter(pl.col("params") == params)
        lists = lists.with_columns(stale=pl.col("definition_sha") != metric.sha)
        lists = with_protocol(lists).select(RESULT_COLUMNS)
        out = pl.concat([out, lists], how="vertical_relaxed")
    return out


def stored_metrics(
    store: Store,
    runs: Sequence[RunRef] | None,
    *,
    all_runs: bool = False,
    metrics: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Every cached value of the runs (overall and slices), flagged ``stale`` when the metric's
    SQL has changed since it was computed; then their logged values (task ``logged``)."""
    run_ids = _run_ids(store, runs, all_runs)
    shas = {name: m.sha for name, m in METRICS.items() if m.kind == "per_list"}
    logged, metrics = split_logged(store, metrics)  # (evalstore.runs.logged: rows of their own)
    # a metric or the name of its mean, in any case (`-m map`, `-m mAP`: the stored ap means)
    names = None if metrics is None else list(dict.fromkeys(get(n).name for n in metrics))
    frame = store.query("eval/results", {"runs": run_ids, "metrics": names})
    frame = frame.with_columns(
        stale=pl.col("definition_sha") != pl.col("metric").replace_strict(shas, default=""),
        metric=pl.col("label"),
    )
    frame = with_protocol(frame).select(RESULT_COLUMNS)
    frame = frame.sort(["run_id", "task", "metric", "params", "slice"])
    extra = latest_values(store, run_ids, logged).select(RESULT_COLUMNS)
    return pl.concat([frame, extra], how="vertical_relaxed").sort("run_id", maintain_order=True)


def with_protocol(frame: pl.DataFrame) -> pl.DataFrame:
    """The ``protocol`` column: the official protocol a value was computed under (recorded in
    its params), or ``default``."""
    named = pl.col("params").str.json_path_match("$.protocol").fill_null("default")
    return frame.with_columns(protocol=named)
