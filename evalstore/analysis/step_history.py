"""A metric over the training steps of runs, and runs compared at a step they share.

``history --by step`` (:func:`history_by_step`): the value of a metric at each step of a run
(or of every run of an experiment that has steps), computed from each step's rows
(:func:`~evalstore.analysis.evaluate.evaluate` with ``by_step``), or the values of a logged
scalar (a training loss) at their steps; with the best so far in the metric's direction.
``compare A B`` of runs with steps (:func:`compare_at_step`): the runs' step runs at the last
step they all evaluated (or a step given), compared as any runs are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from evalstore.analysis.compare import compare, history
from evalstore.analysis.evaluate import evaluate
from evalstore.analysis.step_runs import all_steps
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics.registry import get
from evalstore.runs.logged import LOGGED_TASK, higher_is_better, split_logged

if TYPE_CHECKING:
    from evalstore.runs.registry import RunRef
    from evalstore.store.facade import Store

__all__ = ["HISTORY_COLUMNS", "compare_at_step", "history_by_step", "history_of"]

#: the columns of :func:`history_by_step`
HISTORY_COLUMNS = ["run", "step", "task", "metric", "value", "best_so_far"]


def history_of(
    store: Store,
    metric: str,
    *,
    by: str = "time",
    run: RunRef | None = None,
    experiment: str | None = None,
    protocol: str | None = None,
) -> pl.DataFrame:
    """``evalstore history``: :func:`~evalstore.analysis.compare.history` (``by="time"``) or
    :func:`history_by_step` (``by="step"``; ``run`` goes with it alone)."""
    if by not in ("time", "step"):
        raise InvalidInput(f"--by must be time or step, got {by!r}")
    if by == "time":
        if run is not None:
            raise InvalidInput("--run goes with --by step")
        return history(store, metric, experiment=experiment, protocol=protocol)
    return history_by_step(store, metric, run=run, experiment=experiment, protocol=protocol)


def history_by_step(
    store: Store,
    metric: str,
    *,
    run: RunRef | None = None,
    experiment: str | None = None,
    protocol: str | None = None,
) -> pl.DataFrame:
    """``metric`` at every step of ``run``, or of every run of ``experiment`` (default: of
    every experiment) that has steps, computing missing values first; a logged metric
    (``Run.log``, ``evalstore log``) at each step it was logged at.

    Returns:
        :data:`HISTORY_COLUMNS`, by run and step; ``best_so_far`` in the metric's direction,
        per run and task.

    Raises:
        InvalidInput: no such run has values of ``metric`` at steps; ``protocol`` of a logged
            metric.
    """
    where = f"run {run}" if run is not None else f"run of {experiment}" if experiment else "run"
    ids = None if run is None else [store.resolve(run)]
    if split_logged(store, [metric])[0]:
        if protocol is not None:
            raise InvalidInput(f"{metric} is a logged value: it has no --protocol")
        if ids is None:
            keys = {"experiment": experiment, "metric": metric}
            ids = [int(r[0]) for r in queries.fetch_rows(store.con, "steps/logged_runs", keys)]
        frame = store.query("steps/logged_by_step", {"runs": ids, "metric": metric})
        frame = frame.with_columns(task=pl.lit(LOGGED_TASK))
        higher = higher_is_better(metric)
    else:
        registered = get(metric)
        if ids is None:
            rows = queries.fetch_rows(
                store.con, "steps/experiment_runs", {"experiment": experiment}
            )
            ids = [int(r[0]) for r in rows]
        if not all_steps(store, ids):
            raise InvalidInput(f"no {where} has evaluations at training steps")
        frame = evaluate(store, ids, metrics=[registered.name], protocol=protocol, by_step=True)
        frame = frame.filter(pl.col("slice") == "")
        higher = registered.higher_is_better
    if frame.height == 0:
        raise InvalidInput(f"no {where} has values of {metric} at steps")
    frame = frame.sort(["run", "task", "step"], maintain_order=True)
    best = pl.col("value").cum_max() if higher else pl.col("value").cum_min()
    return frame.with_columns(best_so_far=best.over(["run", "task"])).select(HISTORY_COLUMNS)


def compare_at_step(
    store: Store, runs: Sequence[RunRef], *, step: int | None = None, **options: Any
) -> tuple[pl.DataFrame, int] | None:
    """:func:`~evalstore.analysis.compare.compare` of ``runs`` at a step they all evaluated:
    ``step``, else the last one they share; the rows name the runs (not their step runs) and
    gain a ``step`` column. None when none of ``runs`` has steps (and no ``step``): compare
    them as they are. ``options``: :func:`~evalstore.analysis.compare.compare`'s.

    Returns:
        The comparison and the step it is at.

    Raises:
        InvalidInput: a run without steps among runs with steps, no step they all evaluated,
            or ``step`` not evaluated by them all.
    """
    ids = [store.resolve(r) for r in runs]
    steps: dict[int, dict[int, int]] = {i: {} for i in ids}
    for run_id, at, sub in all_steps(store, ids):
        steps[run_id][at] = sub
    if step is None and not any(steps.values()):
        return None
    names = {i: _ref(store, i) for i in ids}
    bare = [names[i] for i in ids if not steps[i]]
    if bare:
        raise InvalidInput(
            f"run {bare[0]} has no evaluations at training steps; the others have: compare "
            "runs with steps with each other (or a step run, NAME@STEP, by name)"
        )
    shared = set.intersection(*(set(s) for s in steps.values()))
    if step is not None and step not in shared:
        raise InvalidInput(
            f"not every run evaluated step {step}; the steps they share: "
            + (", ".join(str(s) for s in sorted(shared)[-10:]) or "none")
        )
    if not shared:
        raise InvalidInput(f"runs {' and '.join(names.values())} share no step")
    at = max(shared) if step is None else step
    subs = [steps[i][at] for i in ids]
    frame = compare(store, subs, **options)
    relabel = {_ref(store, s): names[i] for i, s in zip(ids, subs, strict=True)}
    frame = frame.with_columns(
        pl.col(c).replace(relabel) for c in ("run", "baseline") if c in frame.columns
    )
    return frame.with_columns(step=pl.lit(at, pl.Int64)), at


def _ref(store: Store, run_id: int) -> str:
    info = store.run(run_id)
    return f"{info['experiment']}/{info['name']}"
