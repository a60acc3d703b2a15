"""Runs and configurations against a baseline: differences with intervals, p-values
corrected for multiple comparisons, and the regression gate.

A comparison pairs two *units*, each a run or a configuration (the runs of one setting that
differ only in their seed, :mod:`evalstore.analysis.configurations`), list by list (query,
class, image pair); :mod:`evalstore.analysis.pairing` computes each metric's interval and p-value,
choosing what to resample (lists, seeds and lists, or items within lists when there are few lists).
Every p-value of one call is then Holm-adjusted (``p_adj``) over all its metrics and units.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstore.analysis import pairing, run_value_pairs
from evalstore.analysis.configurations import Unit, experiment_run_ids, run_unit, select
from evalstore.analysis.evaluate import evaluate, resolve_ties, with_protocol
from evalstore.analysis.pairing import RESAMPLING, name, paired_lists
from evalstore.analysis.run_value_pairs import RUN_VALUE, UNTESTED
from evalstore.analysis.statistics import TIE_TOLERANCE, Stats, holm, paired_stats
from evalstore.errors import InvalidInput
from evalstore.metrics import protocols
from evalstore.metrics.registry import DEFAULTS, METRICS, get
from evalstore.runs.logged import (
    LOGGED_TASK,
    NO_TEST,
    higher_is_better,
    latest_values,
    logged_history,
    split_logged,
)

if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.runs.registry import RunRef
    from evalstore.store.facade import Store

__all__ = [
    "COMPARE_COLUMNS",
    "RESAMPLING",
    "RUN_VALUE",
    "TIE_TOLERANCE",
    "UNTESTED",
    "Stats",
    "compare",
    "compare_units",
    "history",
    "paired_lists",
    "paired_stats",
    "units",
]

COMPARE_COLUMNS = [
    "run",
    "baseline",
    "task",
    "metric",
    "params",
    "baseline_value",
    "value",
    "diff",
    "ci_low",
    "ci_high",
    "p_value",
    "p_adj",
    "effect_size",
    "wins",
    "ties",
    "losses",
    "n_lists",
    "n_runs",
    "baseline_runs",
    "resampled",
    "higher_is_better",
]


def units(
    store: Store,
    runs: Sequence[RunRef] = (),
    groups: Sequence[str] = (),
    *,
    experiment: str | None = None,
    seed_param: str = "seed",
) -> list[Unit]:
    """The units a comparison names: each run, then each group selector (``lr=0.01``), in
    that order (the first is the baseline).

    Raises:
        InvalidInput: a unit named twice, or two units sharing a run.
    """
    found = [run_unit(store, r, seed_param=seed_param) for r in runs]
    found += [select(store, g, experiment=experiment, seed_param=seed_param) for g in groups]
    _distinct(store, found)
    return found


def _distinct(store: Store, found: Sequence[Unit]) -> None:
    """Refuse units that share a run (a run cannot be compared with itself)."""
    seen: dict[int, str] = {}
    for unit in found:
        for run_id in unit.run_ids:
            if run_id in seen:
                other = seen[run_id]
                raise InvalidInput(
                    f"{unit.label} and {other} share the run {name(store, run_id)}"
                    if other != unit.label
                    else f"{unit.label} is named twice"
                )
            seen[run_id] = unit.label


def compare(
    store: Store,
    runs: Sequence[RunRef] = (),
    *,
    groups: Sequence[str] = (),
    experiment: str | None = None,
    seed_param: str = "seed",
    metrics: Sequence[str] | None = None,
    ties: str | None = None,
    k: int | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    progress: Progress | None = None,
    protocol: str | None = None,
    resample: str = "auto",
) -> pl.DataFrame:
    """Compare runs or configurations with the first as baseline, metric by metric.

    ``runs`` are run references and ``groups`` configuration selectors (``lr=0.01``: the runs
    whose params hold these values, differing only in ``seed_param``); the units are the runs
    then the groups, the first the baseline. A unit's value is the mean of its runs' values.

    Values are paired by (task, metric, parameters): values of another tie policy or
    ``protocol`` (recorded in the parameters) are never compared with these. Without
    ``metrics`` the task's standard metrics (or the protocol's) are compared, computed first
    where missing (see :func:`evalstore.analysis.evaluate.evaluate`), never just what was cached.

    For each other unit and metric: both values, their difference, a 95% interval of it, a
    p-value (module docstring), its Holm adjustment over every row of the call (``p_adj``),
    the effect size (Cohen's d_z of the per-list differences) and win/tie/loss counts over
    lists (a win = better than the baseline on that list, in the metric's direction, by more
    than :data:`TIE_TOLERANCE`).

    Returns:
        One row per (unit, task, metric, params) with :data:`COMPARE_COLUMNS`.

    Raises:
        InvalidInput: fewer than two units, units scored on different lists, or no shared
            metric.
    """
    found = units(store, runs, groups, experiment=experiment, seed_param=seed_param)
    return compare_units(
        store,
        found,
        metrics=metrics,
        ties=ties,
        k=k,
        n_boot=n_boot,
        seed=seed,
        progress=progress,
        protocol=protocol,
        resample=resample,
    )


def compare_units(
    store: Store,
    found: Sequence[Unit],
    *,
    metrics: Sequence[str] | None = None,
    ties: str | None = None,
    k: int | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    progress: Progress | None = None,
    protocol: str | None = None,
    resample: str = "auto",
) -> pl.DataFrame:
    """:func:`compare` of units already found (:func:`units`), the first the baseline."""
    if resample not in RESAMPLING:
        raise InvalidInput(f"--resample must be one of {', '.join(RESAMPLING)}, got {resample!r}")
    if n_boot < 100:
        raise InvalidInput(f"--n-boot must be >= 100, got {n_boot}")
    _distinct(store, found)
    if len(found) < 2:
        raise InvalidInput(
            "compare needs at least two runs or groups (the first is the baseline)"
            if found
            else "compare needs runs or -g groups to compare"
        )
    ids = [i for u in found for i in u.run_ids]
    logged, metrics = split_logged(store, metrics)  # logged values: no test (_logged_rows)
    computed = not logged or bool(metrics)
    if computed:
        evaluate(store, ids, metrics=metrics, ties=ties, k=k, progress=progress, protocol=protocol)
    proto = None if protocol is None else protocols.get(protocol)
    ties = resolve_ties(ties, proto)
    overall = store.query("compare/overall", {"runs": ids})
    wanted = {METRICS[m].name if m in METRICS else m for m in metrics} if metrics else None
    rows = []
    base = found[0]
    for other in found[1:]:
        rows += _logged_rows(store, base, other, logged or [])
        for key in _shared(overall, base, other) if computed else []:
            task, label, params = key
            metric = METRICS.get(_base_name(overall, key))
            if metric is None:  # a metric this process does not know (a user's, not loaded)
                continue
            if wanted is not None:
                if metric.name not in wanted and label not in wanted:
                    continue
            elif metric.name not in _standard(task, proto):
                continue
            if not _is_default(params, ties, protocol, metrics is None):
                continue
            stats = pairing.stats(store, base, other, task, metric, params, n_boot, resample, seed)
            if run_value_pairs.tests_run_value(metric, stats["resampled"]):
                stats |= run_value_pairs.stats(store, base, other, task, metric, params, n_boot,
                                               seed)  # fmt: skip
            value_a = _unit_value(overall, base, key)
            value_b = _unit_value(overall, other, key)
            better, worse = (
                (stats["positive"], stats["negative"])
                if metric.higher_is_better
                else (stats["negative"], stats["positive"])
            )
            rows.append(
                {
                    "run": other.label,
                    "baseline": base.label,
                    "task": task,
                    "metric": label,
                    "params": params,
                    "baseline_value": value_a,
                    "value": value_b,
                    "diff": None if value_a is None or value_b is None else value_b - value_a,
                    "ci_low": stats["ci_low"],
                    "ci_high": stats["ci_high"],
                    "p_value": stats["p_value"],
                    "p_adj": None,
                    "effect_size": stats["effect_size"],
                    "wins": better,
                    "ties": stats["zero"],
                    "losses": worse,
                    "n_lists": stats["n"],
                    "n_runs": len(other.run_ids),
                    "baseline_runs": len(base.run_ids),
                    "resampled": stats["resampled"],
                    "higher_is_better": metric.higher_is_better,
                }
            )
    if not rows:
        raise InvalidInput("these runs share no metric to compare (different tasks?)")
    adjusted = holm([np.nan if r["p_value"] is None else r["p_value"] for r in rows])
    for r, p in zip(rows, adjusted, strict=True):
        r["p_adj"] = None if np.isnan(p) else float(p)
    return pl.DataFrame(
        rows,
        schema_overrides={
            "diff": pl.Float64,
            "value": pl.Float64,
            "baseline_value": pl.Float64,
            "p_value": pl.Float64,
            "p_adj": pl.Float64,
            "effect_size": pl.Float64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
            **dict.fromkeys(("wins", "ties", "losses", "n_lists"), pl.Int64),
        },
    ).select(COMPARE_COLUMNS)


def _logged_rows(
    store: Store, base: Unit, other: Unit, names: Sequence[str]
) -> list[dict[str, Any]]:
    """Rows of logged values (each unit's value the mean of its runs' latest ones): both
    values and their difference, no interval, p-value or counts (no per-list values)."""
    ids = [*base.run_ids, *other.run_ids]
    values = latest_values(store, ids, names)
    rows: list[dict[str, Any]] = []
    for metric in names:
        part = values.filter(pl.col("metric") == metric)
        a, b = (
            part.filter(pl.col("run_id").is_in(list(u.run_ids)))["value"] for u in (base, other)
        )
        if a.len() == 0 or b.len() == 0:
            continue
        value_a, value_b = float(a.mean()), float(b.mean())  # type: ignore[arg-type]
        rows.append(
            dict.fromkeys(COMPARE_COLUMNS)
            | {
                "run": other.label,
                "baseline": base.label,
                "task": LOGGED_TASK,
                "metric": metric,
                "params": "{}",
                "baseline_value": value_a,
                "value": value_b,
                "diff": value_b - value_a,
                "n_runs": len(other.run_ids),
                "baseline_runs": len(base.run_ids),
                "resampled": NO_TEST,
                "higher_is_better": higher_is_better(metric),
            }
        )
    return rows


def _standard(task: str, proto: protocols.Protocol | None) -> tuple[str, ...]:
    """The metrics compared without ``--metric``: the protocol's for the task, else the
    task's standard ones."""
    if proto is not None:
        return tuple(proto.metrics.get(task, ()))
    return DEFAULTS.get(task, ())


def _shared(overall: pl.DataFrame, a: Unit, b: Unit) -> list[tuple[str, str, str]]:
    """The (task, metric label, params) every run of both units has a stored value of."""
    every = [*a.run_ids, *b.run_ids]
    part = overall.filter(pl.col("run_id").is_in(every))
    counts = part.group_by(["task", "label", "params"]).agg(n=pl.col("run_id").n_unique())
    counts = counts.filter(pl.col("n") == len(every)).sort(["task", "label", "params"])
    return [(r[0], r[1], r[2]) for r in counts.select("task", "label", "params").iter_rows()]


def _base_name(overall: pl.DataFrame, key: tuple[str, str, str]) -> str:
    task, label, params = key
    row = overall.filter(
        (pl.col("task") == task) & (pl.col("label") == label) & (pl.col("params") == params)
    )
    return str(row["metric"][0])


def _unit_value(overall: pl.DataFrame, unit: Unit, key: tuple[str, str, str]) -> float | None:
    """The unit's value: the mean of its runs' stored values (those that have one)."""
    task, label, params = key
    values = overall.filter(
        pl.col("run_id").is_in(list(unit.run_ids))
        & (pl.col("task") == task)
        & (pl.col("label") == label)
        & (pl.col("params") == params)
    )["value"].drop_nulls()
    return float(values.mean()) if values.len() else None  # type: ignore[arg-type]


def _is_default(params_text: str, ties: str, protocol: str | None, only_ties: bool) -> bool:
    """Values of the requested protocol (or of none); without --metric, also only those
    of the requested tie policy (other stored parameter sets, e.g. earlier --ties runs, are
    left out)."""
    params = json.loads(params_text)
    if params.get("protocol") != protocol:
        return False
    return not only_ties or params.get("ties", ties) == ties


def history(
    store: Store, metric: str, *, experiment: str | None = None, protocol: str | None = None
) -> pl.DataFrame:
    """A metric over time (``created_at``) for the runs of an experiment (or all), computing
    missing values first, with the best value so far in the metric's direction.

    Returns:
        run, run_id, experiment, created_at, task, metric, params, value, n_lists, best_so_far.
    """
    if split_logged(store, [metric])[0]:  # a value logged from outside: each run's latest
        if protocol is not None:
            raise InvalidInput(f"{metric} is a logged value: it has no --protocol")
        return logged_history(store, metric, experiment)
    registered = get(metric)
    ids = experiment_run_ids(store, experiment)
    with contextlib.suppress(InvalidInput):  # no run has the metric's task: reported below
        evaluate(store, ids, metrics=[registered.name], protocol=protocol)
    frame = store.query("compare/history", {"metric": metric, "experiment": experiment})
    frame = with_protocol(frame).filter(pl.col("protocol") == (protocol or "default"))
    if frame.height == 0:
        raise InvalidInput(
            f"no run{' of ' + experiment if experiment else ''} has values of {metric}"
        )
    best = pl.col("value").cum_max() if registered.higher_is_better else pl.col("value").cum_min()
    return frame.with_columns(best_so_far=best.over(["experiment", "task", "params"])).select(
        "run",
        "run_id",
        "experiment",
        "created_at",
        "task",
        "metric",
        "params",
        "value",
        "n_lists",
        "best_so_far",
    )
