"""The UI's data: the runs a view selects, their headline values, the configurations they
form (mean ± sd across seeds), and the units a comparison names.

Everything here reads a store opened read-only; nothing computes a metric (the UI shows what
``evalstore eval`` stored, and says where values are missing).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from evalstore.analysis.configurations import (
    Unit,
    config_unit,
    configs,
    holds_params,
    label,
    run_unit,
)
from evalstore.metrics.registry import METRICS
from evalstore.runs.selection import list_runs
from evalstore.ui.view import GROUP, unit_token

if TYPE_CHECKING:
    from evalstore.store.facade import Store
    from evalstore.ui.view import View

__all__ = [
    "BASELINE_TAG",
    "META_COLUMNS",
    "StepHistory",
    "config_table",
    "filtered_runs",
    "run_table",
    "step_history",
    "units",
]

#: The tag that marks an experiment's baseline run (the comparison's default baseline).
BASELINE_TAG = "baseline"
#: The columns of a run besides its params and values, as the runs page names them.
META_COLUMNS = ("run", "created_at", "tags", "git_commit", "tasks", "n_rows", "notes")


def filtered_runs(store: Store, view: View) -> pl.DataFrame:
    """The runs the view's filters keep (experiments, every tag, params, ``where``), newest
    first: run_id, run (``experiment/name``), the columns of :func:`list_runs` and
    ``param_map`` (the params as a dict). Step runs (a run's evaluations at training steps)
    are left out: the History page draws them over the steps of their run.

    Raises:
        InvalidInput: a bad ``param`` filter or ``where`` predicate (one line).
    """
    wanted = view.params
    frame = list_runs(store, where=view.where or None)
    steps = store.query("ui/step_run_ids")["step_run_id"]
    frame = frame.filter(~pl.col("run_id").is_in(steps.to_list()))
    if view.experiment:
        frame = frame.filter(pl.col("experiment").is_in(list(view.experiment)))
    for tag in view.tag:
        frame = frame.filter(pl.col("tags").list.contains(tag))
    params = [_params(p) for p in frame["params"].to_list()]
    if wanted:
        keep = [holds_params(p, wanted) for p in params]
        frame = frame.filter(pl.Series(keep, dtype=pl.Boolean))
        params = [p for p, k in zip(params, keep, strict=True) if k]
    return frame.with_columns(
        run=pl.col("experiment") + "/" + pl.col("name"),
        param_map=pl.Series(params, dtype=pl.Object),
    )


def _params(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        loaded = json.loads(value)
        return loaded if isinstance(loaded, dict) else {}
    return dict(value) if isinstance(value, dict) else {}


def _values(store: Store, ids: list[int]) -> pl.DataFrame:
    return store.query("ui/run_values", {"runs": ids})


def run_table(store: Store, runs: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, bool]]:
    """One row per run: run_id, the :data:`META_COLUMNS`, ``params`` as text, a column per
    parameter key (``p:lr``) and per headline value (``retrieval map``), and the direction
    of each value column (True: higher is better)."""
    values = _values(store, runs["run_id"].to_list())
    higher = _directions(values)
    table = runs.select(
        "run_id",
        *[c for c in META_COLUMNS if c != "run"],
        run=pl.col("run"),
        params=pl.Series(
            [json.dumps(p, sort_keys=True) for p in runs["param_map"].to_list()], dtype=pl.String
        ),
    )
    keys = sorted({k for p in runs["param_map"].to_list() for k in p})
    table = table.with_columns(
        [
            pl.Series(
                f"p:{k}",
                [_param_text(p.get(k)) for p in runs["param_map"].to_list()],
                dtype=pl.String,
            )
            for k in keys
        ]
    )
    if values.height:
        wide = values.pivot(on="column", index="run_id", values="value", aggregate_function="first")
        table = table.join(wide, on="run_id", how="left", maintain_order="left")
    rest = [c for c in table.columns if c not in ("run_id", "run")]
    return table.select("run_id", "run", *rest), higher


def _param_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _directions(values: pl.DataFrame) -> dict[str, bool]:
    """The direction of each value column; none for a metric this process does not know (a
    user's metric whose folder is not loaded: its values are shown, not ranked)."""
    pairs = values.select("column", "base_metric").unique(maintain_order=True).rows()
    return {c: METRICS[m].higher_is_better for c, m in pairs if m in METRICS}


def config_table(store: Store, runs: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, bool]]:
    """One row per configuration of the runs (the runs of an experiment equal but for their
    ``seed``): ``unit`` (``g:`` and its newest run, ``g:exp/name``), configuration (its
    label), experiment, config, n_runs, runs, created_at (of the newest run), and per
    headline value column its mean and ``<col> sd`` across the configuration's runs (sd None
    for one run)."""
    ids = runs["run_id"].to_list()
    members = configs(store).filter(pl.col("run_id").is_in(ids))
    values = _values(store, ids)
    higher = _directions(values)
    keys = ["experiment", "config_key"]
    heads = (
        members.sort("created_at", "run_id", descending=True)
        .group_by(keys, maintain_order=True)
        .agg(
            pl.col("run").first().alias("newest"),
            pl.col("config").first(),
            pl.col("name").sort().alias("names"),
            pl.col("run").sort().alias("runs"),
            pl.len().alias("n_runs"),
            pl.col("created_at").max().alias("created_at"),
        )
    )
    labels = [
        label(e, n, c)
        for e, n, c in zip(heads["experiment"], heads["names"], heads["config"], strict=True)
    ]
    table = heads.select(
        unit=pl.lit(GROUP) + pl.col("newest"),
        configuration=pl.Series(labels, dtype=pl.String),
        experiment="experiment",
        config="config",
        n_runs="n_runs",
        runs=pl.col("runs").list.join(", "),
        created_at="created_at",
        _key="config_key",
    )
    if values.height:
        joined = values.join(members.select("run_id", *keys), on="run_id")
        stats = joined.group_by([*keys, "column"], maintain_order=True).agg(
            pl.col("value").sort_by("run_id").mean().alias("mean"),
            pl.col("value").sort_by("run_id").std().alias("sd"),
        )
        for column in dict.fromkeys(values["column"].to_list()):
            part = stats.filter(pl.col("column") == column).select(
                pl.col("experiment"),
                pl.col("config_key").alias("_key"),
                pl.col("mean").alias(column),
                pl.col("sd").alias(f"{column} sd"),
            )
            table = table.join(part, on=["experiment", "_key"], how="left", maintain_order="left")
    return table.drop("_key"), higher


def units(store: Store, view: View) -> list[tuple[str, Unit]]:
    """The comparison's units with the URL's token of each (by name, ``exp/name`` or
    ``g:exp/name``, whatever the URL said: an id of an older link), the baseline first: the view's
    ``baseline``; else a picked run tagged ``baseline``; else the unit of the oldest run.

    Units that share a run are refused by the comparison itself
    (:func:`evalstore.analysis.compare.compare_units`). A step run (a run's evaluation at a
    training step) is a unit of its own, never a configuration.

    Raises:
        RunNotFound: an unknown run (name or id).
    """
    steps = set(store.query("ui/step_run_ids")["step_run_id"].to_list())  # no configuration
    found: list[tuple[str, Unit]] = []
    for u in view.units:
        run_id = store.resolve(u.ref)
        group = u.group and run_id not in steps
        unit = config_unit(store, run_id) if group else run_unit(store, run_id)
        named = unit_token(_run_name(store, run_id), group=group)
        if all(named != token for token, _ in found):  # the baseline and its tick
            found.append((named, unit))
    if view.baseline or len(found) < 2:
        return found
    ids = [i for _, unit in found for i in unit.run_ids]
    info = list_runs(store).filter(pl.col("run_id").is_in(ids))
    tagged = set(info.filter(pl.col("tags").list.contains(BASELINE_TAG))["run_id"].to_list())
    born = dict(zip(info["run_id"].to_list(), info["created_at"].to_list(), strict=True))

    def rank(pair: tuple[str, Unit]) -> tuple[bool, Any, int]:
        ids = pair[1].run_ids
        return (not tagged & set(ids), min(born[r] for r in ids), min(ids))

    base = min(found, key=rank)
    return [base, *[p for p in found if p is not base]]


def _run_name(store: Store, run_id: int) -> str:
    info = store.run(run_id)
    return f"{info['experiment']}/{info['name']}"


@dataclass(frozen=True)
class StepHistory:
    """The values of runs over their training steps (the History page's step chart).

    Attributes:
        values: series, run, run_id, step, value, source: each stored overall value of a
            step run at its step (``source`` ``evaluated``; ``series`` as the overview's
            metric history names it, ``retrieval · map``) and each value logged with a step
            (``logged``, series ``logged · NAME``), by source, series, run and step.
        missing: the step runs of these runs without a stored value (``EXP/NAME@STEP``), by
            run and step: the app computes no metric, ``evalstore eval`` does.
    """

    values: pl.DataFrame
    missing: list[str]


def step_history(
    store: Store, runs: Sequence[int] | None, experiments: Sequence[str] = ()
) -> StepHistory:
    """The values over training steps of the runs ``runs`` (None: every run) of
    ``experiments`` (empty: every experiment) that have steps: step runs (``run_steps``) or
    values logged with a step. Reads what is stored (the store may be read-only)."""
    found = store.query(
        "ui/runs_with_steps",
        {"runs": None if runs is None else list(runs), "experiments": list(experiments) or None},
    )
    ids = found["run_id"].to_list()
    steps = store.query("ui/step_runs", {"runs": ids})
    return StepHistory(
        values=store.query("ui/step_values", {"runs": ids}),
        missing=steps.filter(~pl.col("evaluated"))["step_run"].to_list(),
    )
