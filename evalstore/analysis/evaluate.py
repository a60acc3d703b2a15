"""Computing metrics: run the metric SQL over raw rows, cache the values, read them back."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

import polars as pl

from evalstore.analysis import det_lists, det_matching, intervals, step_runs
from evalstore.analysis.eval_plan import (
    DEFAULT_K,
    RESULT_COLUMNS,
    param_sets,
    pending_runs,
    plan,
    resolve_ties,
    run_ids,
    sweep_values,
)
from evalstore.analysis.eval_store import sql_bind, store_values
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics import protocols, user
from evalstore.metrics.registry import LIST_NOUN, METRICS, Metric, get
from evalstore.runs.logged import latest_values, split_logged


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
    parameter set per value of its sweep, all from one query): make what its SQL reads on
    first use, compute a user's metric in the sandbox or hand it to ``engine``, then
    :func:`~evalstore.analysis.eval_store.store_values`."""
    bind = sql_bind(metric, run_ids, task, ties=ties, k=k, at=at, protocol=protocol)
    now = datetime.now(timezone.utc).replace(tzinfo=None)

    def prepare() -> None:  # the estimates, matches and lists its SQL reads, made on first use
        det_matching.ensure_derived(store, metric, run_ids, protocol=protocol)
        if task == "detection" and metric.source == "scores":
            det_lists.ensure_lists(store, run_ids, needed_by=metric.name)

    remote = None if engine is None else engine(metric, task, run_ids, bind).to_arrow()
    if engine is None and metric.path is not None:  # a user's SQL: in the sandbox
        with store.transaction():
            prepare()
        remote = user.compute(store.con, metric, run_ids, bind)
    store_values(
        store,
        metric,
        task,
        run_ids,
        ties=ties,
        k=k,
        at=at,
        protocol=protocol,
        engine="duckdb" if engine is None else engine.name,
        remote=remote,
        now=now,
        # with the values, in one transaction: a Ctrl-C leaves neither or both
        prepare=prepare if engine is None and metric.path is None else None,
    )


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
    ci: intervals.CI | bool | None = None,
    warn: Callable[[str], None] | None = None,
    step: int | None = None,
    by_step: bool = False,
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
        ci: the interval of each run's value (:class:`~evalstore.analysis.intervals.CI`;
            True: 95%, 1,000 replicates, seed 0, ``resample="auto"``): the frame gains the
            columns :data:`~evalstore.analysis.intervals.CI_COLUMNS` (NULL on slices' rows).
        warn: called with one line naming the intervals that come from fewer than 5 lists.
        step: a run with evaluations at training steps (``Store.log_lists``) is valued at
            its last step; ``step`` chooses another (every run named must have it).
        by_step: the value at every step of each run named that has steps (the others are
            left out), one row per step.

    Returns:
        One row per (run, task, metric, slice) with the columns of :data:`RESULT_COLUMNS`;
        ``slice`` is ``""`` for the mean over all lists of the run (for a metric of
        ``overall = "run row"``, TIDE's, the run's own value, which is not that mean). When
        a run with steps is involved, a last column ``step``: the step a run's value is at
        (NULL for runs without steps); the run's own values then mirror its last step's
        (:mod:`~evalstore.analysis.step_runs`).

    Raises:
        InvalidInput: ``ci`` with another ``engine`` (the interval resamples this store's
            rows), or as :func:`~evalstore.analysis.intervals.interval` raises.
    """
    if ci is True:
        ci = intervals.CI()
    if ci and engine is not None:
        raise InvalidInput(f"--ci resamples this store's rows: not with --engine {engine.name}")
    if by_step:
        if step is not None:
            raise InvalidInput("--step and --by step exclude each other")
        every = step_runs.all_steps(store, run_ids(store, runs, all_runs))
        if not every:
            raise InvalidInput("none of these runs has evaluations at training steps")
        subs = [s for _, _, s in every]
        frame = evaluate(store, subs, metrics=metrics, ties=ties, k=k, by=by,
                         recompute=recompute, sweeps=sweeps, engine=engine, progress=progress,
                         protocol=protocol, ci=ci, warn=warn)  # fmt: skip
        frame = step_runs.relabel(store, frame, subs)
        return frame.sort(["run", "task", "metric", "params", "slice", "step"], maintain_order=True)
    chosen = plan(
        store,
        runs,
        table=METRICS,
        metrics=metrics,
        ties=ties,
        k=k,
        by=by,
        all_runs=all_runs,
        protocol=protocol,
        step=step,
    )
    if chosen is None:
        columns = [*RESULT_COLUMNS, *(intervals.CI_COLUMNS if ci else [])]
        return pl.DataFrame(schema=dict.fromkeys(columns, pl.String))
    frames = []
    few: list[tuple[str, str, int, str]] = []  # intervals from fewer than 5 lists
    engine_name = "duckdb" if engine is None else engine.name
    for done, (task, metric, named) in enumerate(chosen.steps):
        ids = chosen.real(named)  # a run with steps: its step run (step_runs)
        at = sweep_values(metric, sweeps or {}, chosen.protocol)
        sets = param_sets(metric, chosen, at)
        todo = pending_runs(store, task, metric, ids, sets, engine_name, recompute)
        if todo:
            k_of = chosen.k_for(metric)
            _compute(store, metric, task, todo, chosen.ties, k_of, at, engine, chosen.protocol)
        for params in sets:
            for key in by:
                if key not in (*LIST_NOUN.values(), "list"):  # another task's noun: not a slice
                    _slices(store, metric, task, ids, params, key)
            if values:
                part = _read(store, ids, task, metric, params, by)
                if isinstance(ci, intervals.CI):
                    part, found = intervals.attach(store, part, metric, ci)
                    few += found
                if chosen.stepped:
                    part = step_runs.relabel(store, part, list(chosen.stepped.values()))
                frames.append(part)
        if step is None:  # a run's own value is its last step's
            mirrored = {i: chosen.stepped[i] for i in named if i in chosen.stepped}
            step_runs.mirror(store, mirrored, task, metric.name, sets)
        if progress is not None:
            progress(f"{metric.name} {task}", done + 1, len(chosen.steps))
    if few and warn is not None:
        warn(intervals.few_lists(few))
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()


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
    ids = run_ids(store, runs, all_runs)
    shas = {name: m.sha for name, m in METRICS.items() if m.kind == "per_list"}
    logged, metrics = split_logged(store, metrics)  # (evalstore.runs.logged: rows of their own)
    # a metric or the name of its mean, in any case (`-m map`, `-m mAP`: the stored ap means)
    names = None if metrics is None else list(dict.fromkeys(get(n).name for n in metrics))
    frame = store.query("eval/results", {"runs": ids, "metrics": names})
    frame = frame.with_columns(
        stale=pl.col("definition_sha") != pl.col("metric").replace_strict(shas, default=""),
        metric=pl.col("label"),
    )
    frame = with_protocol(frame).select(RESULT_COLUMNS)
    frame = frame.sort(["run_id", "task", "metric", "params", "slice"])
    extra = latest_values(store, ids, logged).select(RESULT_COLUMNS)
    return pl.concat([frame, extra], how="vertical_relaxed").sort("run_id", maintain_order=True)


def with_protocol(frame: pl.DataFrame) -> pl.DataFrame:
    """The ``protocol`` column: the official protocol a value was computed under (recorded in
    its params), or ``default``."""
    named = pl.col("params").str.json_path_match("$.protocol").fill_null("default")
    return frame.with_columns(protocol=named)
