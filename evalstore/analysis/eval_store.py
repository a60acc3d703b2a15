"""Storing a metric's values in the cache (``metric_values``, ``list_values``): its SQL run
over the raw rows (or the per-list values another engine or the sandbox computed), cut per
sweep value, under a protocol's rules, written in one transaction.

It imports neither polars nor NumPy: ``evalstore eval`` of a built-in metric of ranked lists
or counted outcomes computes through it alone (``evalstore/cli/cached_eval.py``);
:func:`evalstore.analysis.evaluate.evaluate` first makes what a metric reads on first use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import duckdb

from evalstore.analysis.eval_plan import params_text
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics.catalogue import Metric
from evalstore.metrics.pose_catalogue import RULED
from evalstore.metrics.protocols import pose_rules
from evalstore.metrics.single_label_catalogue import PROBABILITY_CHECK

if TYPE_CHECKING:
    from evalstore.db.connection import Database
    from evalstore.metrics.protocols import Protocol

__all__ = ["LIGHT_SOURCES", "check", "computes_alone", "store_values"]

#: The sources whose built-in metrics read only what ingest wrote (nothing made on first use).
LIGHT_SOURCES = frozenset({"scores", "outcomes"})


def computes_alone(metric: Metric, task: str) -> bool:
    """Whether :func:`store_values` alone computes ``metric`` for ``task`` (no engine): a
    built-in metric of ranked lists or counted outcomes, not of detection runs (whose lists,
    matches and estimates are made on first use)."""
    return metric.path is None and metric.source in LIGHT_SOURCES and task != "detection"


def check(store: Database, metric: Metric, task: str, run_ids: Sequence[int]) -> None:
    """Run the metric's checks (:attr:`~evalstore.metrics.catalogue.Metric.checks`) over the
    rows of ``run_ids``.

    Raises:
        InvalidInput: the first sample of a single-label metric's runs without exactly one +1
            label, missing from a class's list, or (ece) with a score that is no probability.
    """
    for name in metric.checks:
        rows = queries.fetch_rows(store.con, name, {"runs": list(run_ids), "task": task})
        if not rows:
            continue
        run, sample, *rest = rows[0]
        if name == PROBABILITY_CHECK:
            raise InvalidInput(
                f"{metric.name}: run {run}: sample {sample!r}: score {rest[1]} of class "
                f"{rest[0]!r} is not a probability in [0, 1] ({metric.name} reads the scores "
                "as probabilities)"
            )
        n_pos, n_rows, n_lists = rest
        problem = (
            f"has {n_pos} positive labels (+1); a single-label metric needs exactly one"
            if n_pos != 1
            else f"is in {n_rows} of the run's {n_lists} class lists; it needs a row in each"
        )
        raise InvalidInput(f"{metric.name}: run {run}: sample {sample!r} {problem}")


def sql_bind(
    metric: Metric,
    run_ids: list[int],
    task: str,
    *,
    ties: str,
    k: int,
    at: Sequence[float],
    protocol: Protocol | None,
) -> dict[str, Any]:
    """The values of ``metric``'s SQL ``$parameters`` for ``run_ids`` of ``task``: the tie
    policy, cut-off, sweep values and, for the pose metrics, the protocol's estimation
    setting and AUC code."""
    bind: dict[str, Any] = {"runs": run_ids, "task": task, "ties": ties, "k": k}
    if metric.sweep is not None:
        bind[metric.sweep.param] = list(at)
    if metric.name in RULED:
        bind.update(pose_rules(protocol).binds())
    return bind


def store_values(
    store: Database,
    metric: Metric,
    task: str,
    run_ids: Sequence[int],
    *,
    ties: str,
    k: int,
    at: Sequence[float],
    protocol: Protocol | None,
    engine: str = "duckdb",
    remote: Any = None,
    now: datetime | None = None,
    prepare: Callable[[], None] | None = None,
) -> None:
    """Compute ``metric`` for ``run_ids`` of ``task`` and replace their cached values (one
    parameter set per value of its sweep, all from one query). The run's value is the mean
    over its lists, or for a metric of ``overall = "run row"`` its SQL's row of group NULL.
    ``remote``: the per-list values computed elsewhere (an Arrow table; ``engine`` names
    where), else the metric's SQL file runs here. ``prepare``: what must be made before the
    SQL reads it (estimates, matches, lists made on first use), in the same transaction as
    the values, so that a Ctrl-C leaves the store as it was or with both."""
    con = store.con
    run_ids = list(run_ids)
    bind = sql_bind(metric, run_ids, task, ties=ties, k=k, at=at, protocol=protocol)
    text = metric.query_for(ties).text  # the registry names each tie policy's SQL file
    now = datetime.now(timezone.utc).replace(tzinfo=None) if now is None else now
    with store.transaction():
        if prepare is not None:
            prepare()
        check(store, metric, task, run_ids)
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
                params = params_text(
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
                    "engine": engine,
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
