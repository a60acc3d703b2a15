"""The leaderboard: configurations (or runs) x the headline metrics of each task, the pivot
``evalstore leaderboard`` prints and the overview dashboard shows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from evalstore.analysis.configurations import groups
from evalstore.analysis.evaluate import resolve_ties
from evalstore.errors import InvalidInput
from evalstore.metrics import protocols
from evalstore.metrics.registry import HEADLINE, METRICS, get
from evalstore.runs.logged import LOGGED_TASK, higher_is_better, latest_values, logged_names

if TYPE_CHECKING:
    from evalstore.store.facade import Store

__all__ = ["Leaderboard", "leaderboard", "pivot"]

_SWEEPS = ("sigma", "threshold", "eps")  # a sweep value is shown as @value


@dataclass(frozen=True)
class Leaderboard:
    """Configurations (or runs) x headline metrics.

    Attributes:
        long: one row per (row, column): experiment, group, n_runs, column, task, metric,
            params, mean, sd, higher_is_better.
        columns: the metric columns in order (``verification map``, ``keypoints mma@3``).
        higher: each column's direction.
        protocol: the protocol of the values (None = the default).
    """

    long: pl.DataFrame
    columns: list[str]
    higher: dict[str, bool]
    protocol: str | None

    def wide(self) -> pl.DataFrame:
        """One row per configuration: experiment, group, n_runs, then per column its mean and
        ``<column> sd`` (None for one run); ranked by the first column, best first."""
        base = self.long.select("experiment", "group", "n_runs").unique(maintain_order=True)
        out = base
        for col in self.columns:
            part = self.long.filter(pl.col("column") == col).select(
                "experiment", "group", pl.col("mean").alias(col), pl.col("sd").alias(f"{col} sd")
            )
            out = out.join(part, on=["experiment", "group"], how="left")
        first = self.columns[0]
        return out.sort(
            ["experiment", first], descending=[False, self.higher[first]], nulls_last=True
        )

    def best(self) -> dict[str, set[tuple[str, str]]]:
        """Per column, the (experiment, group) rows holding its best mean in each
        experiment."""
        out: dict[str, set[tuple[str, str]]] = {}
        for col in self.columns:
            part = self.long.filter((pl.col("column") == col) & pl.col("mean").is_not_null())
            agg = pl.col("mean").max() if self.higher[col] else pl.col("mean").min()
            tops = part.join(part.group_by("experiment").agg(top=agg), on="experiment")
            tops = tops.filter(pl.col("mean") == pl.col("top"))
            out[col] = {(e, g) for e, g in zip(tops["experiment"], tops["group"], strict=True)}
        return out


def leaderboard(
    store: Store,
    *,
    experiment: str | None = None,
    seed_param: str = "seed",
    group_by: Sequence[str] | None = None,
    runs: bool = False,
    protocol: str | None = None,
    metrics: Sequence[str] = (),
    logged: Sequence[str] = (),
) -> Leaderboard:
    """The headline metrics (:data:`evalstore.metrics.registry.HEADLINE`) of every
    configuration (or, with ``runs``, of every run), computing what is missing; then a column
    ``logged NAME`` per name of ``logged``: the mean and sd of the runs' latest logged values
    (:mod:`evalstore.runs.logged`).

    ``metrics`` (``leaderboard -m``) names the columns instead of the headline: a registered
    metric or the name of its mean (``map``, ``ndcg_at_k``) is a column of each task it
    applies to, in the order given (the first ranks the rows), at every value of its sweep;
    a name that runs have logged is a ``logged NAME`` column, as in ``logged``. Given only
    logged names, the headline columns stay.

    Raises:
        InvalidInput: no runs, none with a value of the columns, a name of ``metrics`` that is
            neither a metric nor logged, a curve (``pr_curve``), or a name of ``logged`` that
            no run has logged.
    """
    known = logged_names(store)
    computed = [n for n in metrics if n not in known]
    logged = [*logged, *(n for n in metrics if n in known)]
    unknown = [n for n in logged if n not in known]
    if unknown:
        raise InvalidInput(
            f"no run has logged values of {unknown[0]!r} (logged: {', '.join(known) or 'none'}); "
            "the leaderboard's computed columns are the headline metrics"
        )
    columns = _columns(computed, known) if computed else _protocol_columns(protocol)
    wanted = sorted({m for specs in columns.values() for m, _ in specs})
    frame = groups(
        store,
        experiment=experiment,
        metrics=wanted,
        seed_param=seed_param,
        group_by=group_by,
        protocol=protocol,
    )
    if runs:  # every run its own row: group on nothing but the run itself
        frame = _per_run(store, frame)
    ties = resolve_ties(None, None if protocol is None else protocols.get(protocol))
    frame = frame.with_columns(_p=pl.col("params").str.json_decode(_PARAMS))
    frame = frame.filter(pl.col("_p").struct.field("ties").fill_null(ties) == ties)
    keep = []
    for task, specs in columns.items():
        for name, at in specs:
            sweep = METRICS[name].sweep
            part = frame.filter((pl.col("task") == task) & (pl.col("base_metric") == name))
            if sweep is not None and sweep.column in _SWEPT:
                value = pl.col("_p").struct.field(sweep.column)
                part = (
                    part.filter(value == at)
                    if at is not None
                    else part.sort(value, maintain_order=True)
                )
            keep.append(part)
    chosen = pl.concat(keep).drop("_p") if keep else frame.clear()
    if chosen.height == 0:
        what = ", ".join(computed) or "a headline value (map, map_voc07, precision_at_sigma, ...)"
        raise InvalidInput(f"no run has {'values of ' if computed else ''}{what}")
    board = pivot(chosen, protocol)
    return _with_logged(store, board, chosen, list(dict.fromkeys(logged))) if logged else board


def _columns(
    names: Sequence[str], logged: Sequence[str]
) -> dict[str, tuple[tuple[str, float | None], ...]]:
    """The columns of ``leaderboard -m NAME...``: per task (in :data:`HEADLINE`'s order),
    the metrics named that apply to it, in the order named, at every sweep value (None).

    Raises:
        InvalidInput: a name that is neither a metric nor logged, or a curve.
    """
    chosen = []
    for name in names:
        try:
            metric = get(name)
        except InvalidInput as exc:
            shown = ", ".join(logged) or "none"
            raise InvalidInput(
                f"{exc}; nor has any run logged {name!r} (logged: {shown})"
            ) from None
        if metric.kind != "per_list":
            raise InvalidInput(
                f"{metric.name} is a curve, not a column; query it with `evalstore sql`"
            )
        if metric not in chosen:
            chosen.append(metric)
    per_task = {task: tuple((m.name, None) for m in chosen if task in m.tasks) for task in HEADLINE}
    return {task: specs for task, specs in per_task.items() if specs}


def _protocol_columns(protocol: str | None) -> dict[str, tuple[tuple[str, float | None], ...]]:
    """The leaderboard's columns of each task without ``-m`` (metric, sweep value or None):
    the headline metrics (:data:`HEADLINE`); under a protocol those it reports, or where it
    reports none of a task's headline metrics, or shows its whole table
    (:attr:`~evalstore.metrics.protocols.Protocol.table`), every metric it reports for the
    task."""
    if protocol is None:
        return dict(HEADLINE)
    chosen = protocols.get(protocol)
    out = {}
    for task, specs in HEADLINE.items():
        reported = chosen.metrics.get(task, ())
        headline = () if chosen.table else tuple(s for s in specs if s[0] in reported)
        out[task] = headline or tuple((m, None) for m in reported)
    return out


def _with_logged(
    store: Store, board: Leaderboard, chosen: pl.DataFrame, names: list[str]
) -> Leaderboard:
    """``board`` with a column per logged metric: per row, the mean and sd (None for one
    value) of its runs' latest logged values."""
    ids = pl.col("run_ids") if "run_ids" in chosen.columns else pl.concat_list("run_id")
    rows = chosen.select("experiment", "group", "n_runs", ids.alias("run_id"))
    rows = rows.unique(["experiment", "group"], maintain_order=True).explode("run_id")
    values = latest_values(store, None, names).select("run_id", "metric", "value")
    found = rows.join(values, on="run_id").group_by(
        ["experiment", "group", "n_runs", "metric"], maintain_order=True
    ).agg(
        mean=pl.col("value").mean(),
        sd=pl.when(pl.len() > 1).then(pl.col("value").std()),
    )  # fmt: skip
    long = found.select(
        "experiment", "group", "n_runs",
        column=pl.lit(f"{LOGGED_TASK} ") + pl.col("metric"), task=pl.lit(LOGGED_TASK),
        metric="metric", params=pl.lit("{}"), mean="mean", sd="sd",
        higher_is_better=pl.col("metric").map_elements(higher_is_better, return_dtype=pl.Boolean),
    ).cast(board.long.schema)  # fmt: skip
    columns = [f"{LOGGED_TASK} {n}" for n in names if n in set(found["metric"])]
    higher = {f"{LOGGED_TASK} {n}": higher_is_better(n) for n in names}
    return Leaderboard(
        pl.concat([board.long, long]),
        [*board.columns, *columns],
        {**board.higher, **{c: higher[c] for c in columns}},
        board.protocol,
    )


def _suffix(params: str) -> str:
    """What a column adds to ``task metric``: the sweep value (``@3``) or other parameters
    (``k=10``); the tie policy and protocol are the table's, not the column's."""
    shown = {k: v for k, v in json.loads(params).items() if k not in ("ties", "protocol")}
    at = "".join(f"@{v:g}" for k, v in shown.items() if k in _SWEEPS)
    rest = {k: v for k, v in shown.items() if k not in _SWEEPS}
    told = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in rest.items())
    return at + (f" ({told})" if rest else "")


def pivot(frame: pl.DataFrame, protocol: str | None = None) -> Leaderboard:
    """The configurations x metrics table of a :func:`groups` frame (the columns in the
    frame's order of tasks and metrics)."""
    rows = []
    for r in frame.iter_rows(named=True):
        metric = METRICS[r["base_metric"]]
        rows.append(
            {
                "experiment": r["experiment"],
                "group": r["group"],
                "n_runs": r["n_runs"],
                "column": f"{r['task']} {r['metric']}{_suffix(r['params'])}",
                "task": r["task"],
                "metric": r["metric"],
                "params": r["params"],
                "mean": r["mean"],
                "sd": r["sd"],
                "higher_is_better": metric.higher_is_better,
            }
        )
    long = pl.DataFrame(
        rows,
        schema={
            "experiment": pl.String,
            "group": pl.String,
            "n_runs": pl.Int64,
            "column": pl.String,
            "task": pl.String,
            "metric": pl.String,
            "params": pl.String,
            "mean": pl.Float64,
            "sd": pl.Float64,
            "higher_is_better": pl.Boolean,
        },
    )
    columns = list(dict.fromkeys(long["column"]))
    higher = dict(zip(long["column"], long["higher_is_better"], strict=True))
    return Leaderboard(long, columns, higher, protocol)


#: the sweeps whose values a column is chosen by, and sorted by as numbers (5 before 10)
_SWEPT = ("sigma", "threshold", "eps", "bins")
_PARAMS = pl.Struct({"ties": pl.String, **dict.fromkeys(_SWEPT, pl.Float64), "protocol": pl.String})


def _per_run(store: Store, frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with each configuration split into its runs (one row per run)."""
    values = store.query("compare/overall_all", {})
    exploded = frame.select(
        "experiment", "task", "metric", "base_metric", "params", "run_ids"
    ).explode("run_ids")
    exploded = exploded.rename({"run_ids": "run_id"}).join(
        values, on=["run_id", "task", "metric", "params"]
    )
    return exploded.with_columns(n_runs=pl.lit(1), sd=pl.lit(None, dtype=pl.Float64)).rename(
        {"run": "group", "value": "mean"}
    )
