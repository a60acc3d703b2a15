"""Runs with evaluations at training steps, as evaluation sees them.

A run's evaluation at a step is its *step run* ``NAME@STEP`` (:mod:`evalstore.store.steps`).
A run that has steps is valued at its last step: :func:`step_map` gives, for the runs named,
the step run to read in their place (the last one, or the one at a given step), evaluation
computes on it, shows the result under the run's name with a ``step`` column
(:func:`relabel`), and :func:`mirror` copies its stored values under the run's own id, so
that what reads ``metric_values`` or ``list_values`` by run (compare, check, groups,
leaderboard, the dashboards) sees the run at its last step. A new step drops the mirrored
values (:mod:`evalstore.store.steps`); the next evaluation mirrors them again.

It imports neither polars nor NumPy (``evalstore eval``'s light path plans with it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evalstore.db import queries
from evalstore.errors import InvalidInput

if TYPE_CHECKING:
    import polars as pl

    from evalstore.db.connection import Database

__all__ = ["STEP", "all_steps", "mirror", "relabel", "step_map", "with_steps"]

#: the column a result gains when a run with steps is involved
STEP = "step"


def step_map(store: Database, ids: Sequence[int], step: int | None = None) -> dict[int, int]:
    """For each run of ``ids`` that has steps: run id -> the id of its step run at ``step``
    (default: its last step).

    Raises:
        InvalidInput: ``step`` given and a run of ``ids`` has no evaluation at that step (or
            no steps at all).
    """
    if step is None:
        rows = queries.fetch_rows(store.con, "steps/last_steps", {"runs": list(ids)})
        return {int(r[0]): int(r[2]) for r in rows}
    if isinstance(step, bool) or step < 0:
        raise InvalidInput(f"--step must be a whole number >= 0, got {step!r}")
    rows = queries.fetch_rows(store.con, "steps/at_step", {"runs": list(ids), "step": step})
    found = {int(r[0]): int(r[2]) for r in rows}
    missing = [i for i in ids if i not in found]
    if missing:
        name = queries.fetch_rows(store.con, "steps/run_ref", {"run_id": missing[0]})
        ref = name[0][0] if name else f"id:{missing[0]}"
        have = queries.fetch_rows(store.con, "steps/all_steps", {"runs": [missing[0]]})
        steps = ", ".join(str(r[1]) for r in have[:10]) or "none"
        raise InvalidInput(f"run {ref} has no evaluation at step {step} (its steps: {steps})")
    return found


def all_steps(store: Database, ids: Sequence[int]) -> list[tuple[int, int, int]]:
    """Every (run id, step, step run id) of the runs ``ids``, by run and step."""
    rows = queries.fetch_rows(store.con, "steps/all_steps", {"runs": list(ids)})
    return [(int(a), int(b), int(c)) for a, b, c in rows]


def with_steps(store: Database, ids: Sequence[int]) -> list[int]:
    """The runs of ``ids`` that have steps."""
    rows = queries.fetch_rows(store.con, "steps/runs_with_steps", {"runs": list(ids)})
    have = {int(r[0]) for r in rows}
    return [i for i in ids if i in have]


def relabel(store: Database, frame: pl.DataFrame, step_runs: Sequence[int]) -> pl.DataFrame:
    """``frame`` (results with ``run``, ``run_id`` and ``experiment``) with the rows of the
    step runs ``step_runs`` shown as their runs', and a ``step`` column: the step of those
    rows, NULL on the others."""
    import polars as pl

    rows = queries.fetch_rows(store.con, "steps/labels", {"runs": list(step_runs)})
    labels = pl.DataFrame(
        [(int(r[0]), int(r[1]), r[2], r[3], int(r[4])) for r in rows],
        schema={
            "_sid": pl.Int64,
            "_rid": pl.Int64,
            "_run": pl.String,
            "_exp": pl.String,
            STEP: pl.Int64,
        },
        orient="row",
    )
    if frame.height == 0:
        return frame.with_columns(pl.lit(None, pl.Int64).alias(STEP))
    order = frame.columns
    joined = frame.with_columns(pl.col("run_id").cast(pl.Int64).alias("_sid")).join(
        labels, on="_sid", how="left"
    )
    kind = frame.schema["run_id"]
    joined = joined.with_columns(
        run=pl.coalesce("_run", "run"),
        run_id=pl.coalesce("_rid", pl.col("run_id").cast(pl.Int64)).cast(kind),
        experiment=pl.coalesce("_exp", "experiment"),
    )
    return joined.select(*[c for c in order if c != STEP], STEP)


def mirror(
    store: Database, runs: Mapping[int, int], task: str, metric: str, params: Sequence[str]
) -> None:
    """Copy the values of ``metric`` for ``task`` under ``params`` (every slice, and per
    list) of each step run of ``runs`` (run id -> step run id) under the run's id, replacing
    the run's; one transaction."""
    if not runs:
        return
    keys: dict[str, Any] = {
        "runs": list(runs),
        "step_runs": list(runs.values()),
        "task": task,
        "metric": metric,
        "params": list(params),
    }
    with store.transaction() as con:
        for name in ("unmirror_metric", "unmirror_list_metric", "mirror_values",
                     "mirror_list_values"):  # fmt: skip
            queries.run(con, f"steps/{name}", keys)
