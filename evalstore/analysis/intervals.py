"""The interval of one run's value (``evalstore eval --ci``): a seeded percentile bootstrap,
resampling what ``compare`` resamples.

- A run value that is the mean over lists: the lists, with at least
  :data:`~evalstore.analysis.statistics.MIN_LISTS` of them (``ci_unit = lists``: the mean of
  ``L`` lists drawn with replacement); with fewer, for ranking metrics, the items within each
  list, stratified by label (``items``: AP and fpr95 reweight the run's fixed order,
  :mod:`~evalstore.analysis.reweighting`; the others are recomputed by their twin,
  :mod:`~evalstore.analysis.resampling`); a metric that reads a sample's rows in every list
  together (the single-label metrics, :func:`reads_samples`) resamples whole items instead,
  as below. A detection run's lists are resampled by category, never by item; keypoints and
  outcomes always by list.
- A run value that is not such a mean (``overall = "run row"``, or a single value of the
  whole run, as ``iou_micro`` or ``ece``): the run's items, each with all its rows,
  recomputed by the metric's twin (``items``, :mod:`~evalstore.analysis.run_draws`).

The interval is the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the replicates
(linear interpolation, :func:`~evalstore.analysis.statistics.percentile_interval`), so it
never leaves the range the replicates take. docs/statistics.md gives the scheme and the
simulations that check its coverage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstore.analysis import run_draws
from evalstore.analysis.pairing import RESAMPLING, by_category, run_items
from evalstore.analysis.resampling import item_replicates
from evalstore.analysis.reweighting import fast, reweighted_replicates
from evalstore.analysis.statistics import CHUNK, MIN_LISTS, percentile_interval
from evalstore.errors import InvalidInput
from evalstore.metrics import protocols
from evalstore.metrics.registry import Metric, Params

if TYPE_CHECKING:
    from evalstore.store.facade import Store

__all__ = [
    "CI", "CI_COLUMNS", "FEW_LISTS", "Interval", "attach", "few_lists", "interval",
    "mean_replicates", "reads_samples", "twin_params",
]  # fmt: skip

#: The columns ``evaluate(..., ci=...)`` adds to its frame, after the others.
CI_COLUMNS = ["ci_low", "ci_high", "ci_level", "ci_unit", "replicates", "seed"]
#: An interval from fewer lists than this reflects the items' sampling only: a warning says so.
FEW_LISTS = 5


@dataclass(frozen=True)
class CI:
    """What ``evaluate(..., ci=CI())`` computes: the interval's ``level``, its bootstrap
    ``replicates``, the ``seed`` of its generator and what it resamples (``resample``:
    ``auto``, ``lists`` or ``items``, as ``compare``'s ``--resample``).

    Raises:
        InvalidInput: a level outside (0, 1), fewer than 10 replicates, an unknown
            ``resample``.
    """

    level: float = 0.95
    replicates: int = 1000
    seed: int = 0
    resample: str = "auto"

    def __post_init__(self) -> None:
        if not 0 < self.level < 1:
            raise InvalidInput(f"--ci-level {self.level}: give a level between 0 and 1")
        if self.replicates < 10:
            raise InvalidInput(f"--n-boot {self.replicates}: give at least 10 replicates")
        if self.resample not in RESAMPLING:
            raise InvalidInput(f"--resample {self.resample!r}: use {', '.join(RESAMPLING)}")


@dataclass(frozen=True)
class Interval:
    """One value's interval: its bounds (NaN without a value), what was resampled
    (``lists`` or ``items``) and from how many lists."""

    low: float
    high: float
    unit: str
    n_lists: int


def twin_params(metric: Metric, params: str) -> tuple[Params, bool]:
    """The twin's parameters of a stored ``params`` text, and whether lists without positives
    count 0 (a protocol's rule)."""
    given = json.loads(params)
    at = None if metric.sweep is None else [float(given[metric.sweep.column])]
    proto = given.get("protocol")
    pose = None if proto is None else protocols.get(proto).pose
    call = Params(ties=given.get("ties", "grouped"), k=given.get("k"), at=at, pose=pose)
    return call, proto is not None and protocols.get(proto).no_positives == "zero"


def _bounds(replicates: np.ndarray, level: float) -> tuple[float, float]:
    kept = replicates[~np.isnan(replicates)]
    if kept.size == 0:
        return float("nan"), float("nan")
    return percentile_interval(kept, level)


def mean_replicates(values: np.ndarray, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """(n_boot,) the mean of ``L`` of ``values`` drawn with replacement (uniform indices, as
    :func:`~evalstore.analysis.statistics.paired_stats` draws them)."""
    n = values.size
    out = np.empty(n_boot)
    step = max(1, CHUNK // max(1, n))
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        out[start:stop] = values[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    return out


def interval(store: Store, run_id: int, task: str, metric: Metric, params: str, ci: CI) -> Interval:
    """The interval of run ``run_id``'s value of ``metric`` (stored under ``params``).

    Raises:
        InvalidInput: ``resample="items"`` for a detection run; a run value of a detection
            run that is not a mean over lists (TIDE's).
    """
    rng = np.random.default_rng(ci.seed)
    call, zero = twin_params(metric, params)
    keys = {"runs": [run_id], "task": task, "metric": metric.name, "params": params}
    stored = store.query("compare/unit_lists", keys)
    lists = stored["group_id"].to_list()
    values = stored["value"].fill_null(np.nan).to_numpy().astype(np.float64)
    if metric.overall == "run row" or run_draws.one_value(store, run_id, task, metric, lists):
        return _whole_items(store, run_id, task, metric, call, rng, ci)
    if task == "detection" and metric.source == "scores":
        lists, matrix = by_category(lists, values[None, :])
        values = matrix[0]
    kept = ~np.isnan(values)
    n = int(kept.sum())
    if ci.resample == "items" and task == "detection":
        raise InvalidInput(
            "--resample items: a detection run's lists hold its own detections, which are not "
            "resampled; resample lists (categories)"
        )
    by_items = metric.source == "scores" and task != "detection" and n > 0
    by_items &= ci.resample == "items" or (ci.resample == "auto" and n < MIN_LISTS)
    if not by_items:
        reps = mean_replicates(values[kept], rng, ci.replicates) if n else np.full(1, np.nan)
        return Interval(*_bounds(reps, ci.level), "lists", n)
    if reads_samples(metric):  # a sample's rows in every list together
        return _whole_items(store, run_id, task, metric, call, rng, ci)
    wanted = [g for g, k in zip(lists, kept, strict=True) if k]
    reweighted = fast(metric, call)
    items = run_items(
        store, [run_id], task, wanted, as_given=reweighted,
        ids=not reweighted or call.ties == "docid",
    )  # fmt: skip
    replicate = reweighted_replicates if reweighted else item_replicates
    reps = replicate(metric, items, call, rng, ci.replicates, zero)[0]
    return Interval(*_bounds(reps, ci.level), "items", n)


def reads_samples(metric: Metric) -> bool:
    """Whether ``metric`` reads each item's rows in every list together (a single-label
    metric reads a sample's scores for every class: the metrics that check their samples
    before they are computed), so that resampling each list's items apart breaks its input."""
    return bool(metric.checks)


def _whole_items(
    store: Store,
    run_id: int,
    task: str,
    metric: Metric,
    call: Params,
    rng: np.random.Generator,
    ci: CI,
) -> Interval:
    """The interval of the run's value recomputed by the metric's twin on resamples of the
    run's items, each with all its rows (:mod:`~evalstore.analysis.run_draws`); a single-label
    run's from its samples' summaries (the same replicates)."""
    if run_draws.single_label(metric):
        s = run_draws.read_samples(store, run_id, task)
        reps = run_draws.sample_replicates(metric, s, call, rng, ci.replicates)
        return Interval(*_bounds(reps, ci.level), "items", int(s.classes.size))
    inputs = run_draws.read_inputs(store, run_id, task, metric)
    reps = run_draws.value_replicates(metric, inputs, call, rng, ci.replicates)
    return Interval(*_bounds(reps, ci.level), "items", _n_lists(inputs))


def _n_lists(inputs: Any) -> int:
    """The lists (pairs, groups) of a run's inputs."""
    group = getattr(inputs, "group", None)
    if group is None:
        return int(inputs.pairs.size)
    return len(set(group.tolist()))


def attach(
    store: Store, frame: pl.DataFrame, metric: Metric, ci: CI
) -> tuple[pl.DataFrame, list[tuple[str, str, int, str]]]:
    """``frame`` (rows of :func:`~evalstore.analysis.evaluate.evaluate` for ``metric``) with
    the :data:`CI_COLUMNS`: the interval of each run's value (slice ``""``); NULL on the
    slices' rows. Also the (run, metric, lists, unit) of the intervals from fewer than
    :data:`FEW_LISTS` lists (:func:`few_lists` says so in one line)."""
    low: list[float | None] = []
    high: list[float | None] = []
    unit: list[str | None] = []
    few: list[tuple[str, str, int, str]] = []
    for row in frame.iter_rows(named=True):
        if row["slice"] != "":
            low.append(None)
            high.append(None)
            unit.append(None)
            continue
        got = interval(store, int(row["run_id"]), row["task"], metric, row["params"], ci)
        low.append(got.low)
        high.append(got.high)
        unit.append(got.unit)
        if got.n_lists < FEW_LISTS:
            few.append((str(row["run"]), str(row["metric"]), got.n_lists, got.unit))
    shown = [u is not None for u in unit]
    out = frame.with_columns(
        ci_low=pl.Series(low, dtype=pl.Float64),
        ci_high=pl.Series(high, dtype=pl.Float64),
        ci_level=pl.Series([ci.level if s else None for s in shown], dtype=pl.Float64),
        ci_unit=pl.Series(unit, dtype=pl.String),
        replicates=pl.Series([ci.replicates if s else None for s in shown], dtype=pl.Int64),
        seed=pl.Series([ci.seed if s else None for s in shown], dtype=pl.Int64),
    )
    return out, few


def few_lists(found: list[tuple[str, str, int, str]]) -> str:
    """One line naming the (run, metric, lists, unit) whose interval comes from fewer than
    :data:`FEW_LISTS` lists."""
    named = "; ".join(
        f"{run} {metric} ({n} list{'' if n == 1 else 's'}, over {unit})"
        for run, metric, n, unit in found
    )
    return (
        f"intervals from fewer than {FEW_LISTS} lists reflect the items' sampling only, not the "
        f"lists' (over lists, they say next to nothing): {named}"
    )
