"""Run against run: differences with paired bootstrap intervals and randomisation tests.

Two runs are compared list by list (query, class, image pair): the per-list values come from
``list_values`` (SQL pairs them), and the resampling is done here with a seeded generator:
the percentile bootstrap of the mean paired difference (lists resampled with replacement)
and a paired sign-flip randomisation test (exact for up to 16 lists). A list whose values differ
by at most :data:`TIE_TOLERANCE` is a tie.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstore import protocols, queries
from evalstore.errors import InvalidInput
from evalstore.evaluate import evaluate, resolve_ties, with_protocol
from evalstore.metrics import METRICS, get

if TYPE_CHECKING:
    from evalstore.database import Progress
    from evalstore.runs import RunRef
    from evalstore.store import Store

__all__ = [
    "COMPARE_COLUMNS",
    "TIE_TOLERANCE",
    "Stats",
    "check",
    "compare",
    "history",
    "paired_lists",
    "paired_stats",
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
    "wins",
    "ties",
    "losses",
    "n_lists",
    "higher_is_better",
]
EXACT_UP_TO = 16
#: A per-list difference ``|b - a| <= 1e-12`` is a tie, neither a win nor a loss: metric values
#: are bit-identical for identical rows (docs/metrics.md, "Determinism"), but values that agree
#: only to rounding (one run computed on Spark, the other on DuckDB) are no win either.
TIE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Stats:
    """Paired statistics of per-list differences ``b - a``: ``positive``, ``zero`` and
    ``negative`` count the differences above :data:`TIE_TOLERANCE`, within it of 0 (ties) and
    below ``-TIE_TOLERANCE``."""

    n: int
    mean: float
    ci_low: float
    ci_high: float
    p_value: float
    positive: int
    zero: int
    negative: int


def paired_stats(
    diffs: np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    n_perm: int = 10_000,
    level: float = 0.95,
) -> Stats:
    """Bootstrap interval and sign-flip p-value of the mean of paired differences.

    Args:
        diffs: per-list differences (NaN = a list without a value in one run: left out).
        n_boot: bootstrap resamples of the lists (percentile interval).
        seed: seed of the generator (results are reproducible).
        n_perm: random sign flips when there are more than 16 lists (else all 2^n).
        level: the interval's coverage.

    Returns:
        A :class:`Stats`; with no list every field is NaN/0. The p-value counts sign
        assignments whose mean is at least as far from 0 as the observed one, the observed
        included: identical runs give p = 1.
    """
    d = np.asarray(diffs, dtype=np.float64)
    d = d[~np.isnan(d)]
    n = d.size
    if n == 0:
        nan = float("nan")
        return Stats(0, nan, nan, nan, nan, 0, 0, 0)
    mean = float(d.mean())
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    step = max(1, 2_000_000 // n)  # bounded memory: resample in chunks
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = d[idx].mean(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    observed = abs(mean)
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    if n <= EXACT_UP_TO:
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        flipped = np.abs((signs * d).mean(axis=1))
        p = float(np.mean(flipped >= observed - tol))
    else:
        hits = 0
        done = 0
        while done < n_perm:
            m = min(n_perm - done, step)
            signs = rng.choice(np.array([-1.0, 1.0]), size=(m, n))
            hits += int(np.sum(np.abs((signs * d).mean(axis=1)) >= observed - tol))
            done += m
        p = (hits + 1) / (n_perm + 1)
    return Stats(
        n,
        mean,
        float(low),
        float(high),
        p,
        int((d > TIE_TOLERANCE).sum()),
        int((np.abs(d) <= TIE_TOLERANCE).sum()),
        int((d < -TIE_TOLERANCE).sum()),
    )


def paired_lists(
    store: Store, run_a: int, run_b: int, task: str, metric: str, params: str
) -> pl.DataFrame:
    """Per-list values of two runs side by side: group_id, a, b, diff (= b - a).

    Raises:
        InvalidInput: the runs were scored on different lists (says how many differ).
    """
    keys = {"a": run_a, "b": run_b, "task": task, "metric": metric, "params": params}
    only_a, only_b = queries.fetch_rows(store.con, "compare/unmatched_lists", keys)[0]
    if only_a or only_b:
        raise InvalidInput(
            f"runs {_name(store, run_a)} and {_name(store, run_b)} were scored on different "
            f"{task} lists for {metric}: {only_a} list(s) only in the first, {only_b} only in "
            "the second"
        )
    return store.query("compare/paired_lists", keys)


def _name(store: Store, run_id: int) -> str:
    info = store.run(run_id)
    return f"{info['experiment']}/{info['name']}"


def compare(
    store: Store,
    runs: Sequence[RunRef],
    *,
    metrics: Sequence[str] | None = None,
    ties: str | None = None,
    k: int | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    progress: Progress | None = None,
    protocol: str | None = None,
) -> pl.DataFrame:
    """Compare runs with the first as baseline, metric by metric.

    Values are paired by (task, metric, parameters): values of another tie policy or
    ``protocol`` (recorded in the parameters) are never compared with these. Without
    ``protocol`` only values computed without one are compared.

    Metrics are computed first where missing (see :func:`evalstore.evaluate.evaluate`). For
    each other run and each metric (task, parameters) both runs have: both means, their
    difference, a 95% paired bootstrap interval of it, a paired randomisation p-value and the
    win/tie/loss counts over lists (a win = the run is better on that list than the baseline,
    in the metric's direction, by more than :data:`TIE_TOLERANCE`; within it, a tie).

    Returns:
        One row per (run, task, metric, params) with :data:`COMPARE_COLUMNS`.

    Raises:
        InvalidInput: fewer than two runs, or runs scored on different lists.
    """
    if len(runs) < 2:
        raise InvalidInput("compare needs at least two runs (the first is the baseline)")
    if n_boot < 100:
        raise InvalidInput(f"--n-boot must be >= 100, got {n_boot}")
    ids = list(dict.fromkeys(store.resolve(r) for r in runs))
    if len(ids) < 2:
        raise InvalidInput("compare needs two different runs")
    evaluate(store, ids, metrics=metrics, ties=ties, k=k, progress=progress, protocol=protocol)
    ties = resolve_ties(ties, None if protocol is None else protocols.get(protocol))
    overall = store.query("compare/overall", {"runs": ids})
    names = {i: _name(store, i) for i in ids}
    base = ids[0]
    wanted = {METRICS[m].name if m in METRICS else m for m in metrics} if metrics else None
    rows = []
    base_rows = overall.filter(pl.col("run_id") == base)
    for other in ids[1:]:
        mine = overall.filter(pl.col("run_id") == other)
        joined = base_rows.join(mine, on=["task", "metric", "params"], suffix="_b")
        for r in joined.iter_rows(named=True):
            metric = METRICS[r["metric"]]
            if wanted is not None and metric.name not in wanted and r["label"] not in wanted:
                continue
            if not _is_default(r, ties, protocol, metrics is None):
                continue
            lists = paired_lists(store, base, other, r["task"], r["metric"], r["params"])
            stats = paired_stats(
                lists["diff"].to_numpy().astype(np.float64), n_boot=n_boot, seed=seed
            )
            better, worse = (
                (stats.positive, stats.negative)
                if metric.higher_is_better
                else (stats.negative, stats.positive)
            )
            rows.append(
                {
                    "run": names[other],
                    "baseline": names[base],
                    "task": r["task"],
                    "metric": r["label"],
                    "params": r["params"],
                    "baseline_value": r["value"],
                    "value": r["value_b"],
                    "diff": None
                    if r["value"] is None or r["value_b"] is None
                    else r["value_b"] - r["value"],
                    "ci_low": stats.ci_low,
                    "ci_high": stats.ci_high,
                    "p_value": stats.p_value,
                    "wins": better,
                    "ties": stats.zero,
                    "losses": worse,
                    "n_lists": stats.n,
                    "higher_is_better": metric.higher_is_better,
                }
            )
    if not rows:
        raise InvalidInput("these runs share no metric to compare (different tasks?)")
    return pl.DataFrame(
        rows,
        schema_overrides={"diff": pl.Float64, "value": pl.Float64, "baseline_value": pl.Float64},
    )


def _is_default(row: dict[str, Any], ties: str, protocol: str | None, only_ties: bool) -> bool:
    """Values of the requested protocol (or of none) only; without --metric, also only those
    of the requested tie policy (other stored parameter sets, e.g. earlier --ties runs, are
    left out)."""
    params = json.loads(row["params"])
    if params.get("protocol") != protocol:
        return False
    return not only_ties or params.get("ties", ties) == ties


def check(
    store: Store,
    run: RunRef,
    baseline: RunRef,
    *,
    metrics: Sequence[str] | None = None,
    min_effect: float = 0.0,
    n_boot: int = 1000,
    seed: int = 0,
    protocol: str | None = None,
) -> tuple[bool, list[str], pl.DataFrame]:
    """Regression gate: is ``run`` worse than ``baseline``?

    A metric regresses when it is worse (in its direction) by more than ``min_effect`` and
    the 95% bootstrap interval of the difference excludes zero.

    Returns:
        (regressed, one line per metric saying why, the comparison frame).
    """
    if min_effect < 0:
        raise InvalidInput(f"--min-effect must be >= 0, got {min_effect}")
    frame = compare(
        store, [baseline, run], metrics=metrics, n_boot=n_boot, seed=seed, protocol=protocol
    )
    lines = []
    regressed = False
    for r in frame.iter_rows(named=True):
        sign = 1.0 if r["higher_is_better"] else -1.0
        worse_by = -sign * (r["diff"] if r["diff"] is not None else float("nan"))
        excludes_zero = (r["ci_high"] < 0) if sign > 0 else (r["ci_low"] > 0)
        bad = bool(worse_by > min_effect and excludes_zero)
        regressed |= bad
        what = f"{r['task']} {r['metric']}" + (
            "" if r["params"] in ("{}", '{"ties":"grouped"}') else f" {r['params']}"
        )
        ci = f"95% CI [{r['ci_low']:+.4g}, {r['ci_high']:+.4g}]"
        values = f"{r['baseline_value']:.4g} -> {r['value']:.4g} ({r['diff']:+.4g}, {ci})"
        if bad:
            why = (
                f"REGRESSION {what}: {values}; worse by more than {min_effect:g} "
                "and the interval excludes 0"
            )
        elif worse_by > min_effect:
            why = f"ok {what}: {values}; worse, but the interval includes 0"
        elif worse_by > 0:
            why = f"ok {what}: {values}; worse by at most {min_effect:g}"
        else:
            why = f"ok {what}: {values}; not worse"
        lines.append(why)
    return regressed, lines, frame


def history(
    store: Store, metric: str, *, experiment: str | None = None, protocol: str | None = None
) -> pl.DataFrame:
    """A metric over time (``created_at``) for the runs of an experiment (or all), computing
    missing values first, with the best value so far in the metric's direction.

    Returns:
        run, run_id, experiment, created_at, task, metric, params, value, n_lists, best_so_far.
    """
    registered = get(metric)
    ids = [
        int(r[0])
        for r in queries.fetch_rows(
            store.con, "compare/experiment_runs", {"experiment": experiment}
        )
    ]
    if not ids:
        raise InvalidInput(
            f"no runs in experiment {experiment!r}" if experiment else "no runs in the store"
        )
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
