"""What changed between two runs: the lists whose value moved most (``evalstore diff A B``),
and within one list the items whose rank moved (``--items GROUP``; of detection runs, the
objects of a category found by one run and not the other, :mod:`~evalstore.analysis.det_items`).

The per-list values are the cached ones (:func:`evalstore.analysis.evaluate.evaluate` computes those
missing, so the store must be writable for a run not evaluated yet); both runs must hold the
task. The ranks of ``--items`` are the runs' own orders: 1 + the number of items scored
higher, a tie sharing its best rank.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import polars as pl

from evalstore.analysis.det_items import object_moves
from evalstore.analysis.evaluate import evaluate
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics.registry import DEFAULTS, get
from evalstore.runs.registry import RunRef, resolve_many

if TYPE_CHECKING:
    from evalstore.store.facade import Store

__all__ = ["diff_items", "diff_lists"]


def _task_of(frame: pl.DataFrame, task: str | None, refs: tuple[RunRef, RunRef]) -> str:
    tasks = sorted(set(frame["task"].to_list()))
    if task is not None:
        if task not in tasks:
            raise InvalidInput(f"runs {refs[0]} and {refs[1]} have no {task} values in common")
        return task
    if len(tasks) != 1:
        raise InvalidInput(
            f"the runs share several tasks ({', '.join(tasks)}): choose one with --task"
        )
    return tasks[0]


def diff_lists(
    store: Store,
    a: RunRef,
    b: RunRef,
    *,
    task: str | None = None,
    metric: str | None = None,
    limit: int = 20,
) -> pl.DataFrame:
    """The lists of the runs ``a`` and ``b`` whose ``metric`` (default: the task's first
    standard metric) moved most: group_id, value_a, value_b, diff (b - a), largest |diff|
    first; with the task, metric and params of the values.

    Raises:
        InvalidInput: the runs share no task (or several and none is chosen), or the metric
            is not per list.
    """
    if limit < 1:
        raise InvalidInput(f"--limit must be >= 1, got {limit}")
    ids = resolve_many(store, [a, b])
    chosen = [get(metric).name] if metric else None
    values = evaluate(store, ids, metrics=chosen)
    if values.height == 0:
        raise InvalidInput(f"runs {a} and {b} have no values to compare")
    both = (
        values.group_by("task").agg(pl.col("run_id").n_unique().alias("n")).filter(pl.col("n") == 2)
    )
    t = _task_of(values.filter(pl.col("task").is_in(both["task"].to_list())), task, (a, b))
    name = chosen[0] if chosen else DEFAULTS[t][0]
    rows = values.filter((pl.col("task") == t) & (pl.col("slice") == ""))
    params = rows.filter(pl.col("metric") == get(name).mean_name)["params"].to_list()
    if not params:
        raise InvalidInput(f"{name} has no per-list values for {t} runs")
    moves = queries.fetch(
        store.con,
        "compare/list_moves",
        {"a": ids[0], "b": ids[1], "task": t, "metric": name, "params": params[0], "limit": limit},
    )
    return moves.with_columns(task=pl.lit(t), metric=pl.lit(name), params=pl.lit(params[0]))


def diff_items(
    store: Store,
    a: RunRef,
    b: RunRef,
    group: str,
    *,
    task: str | None = None,
    limit: int = 20,
    iou: float | None = None,
) -> pl.DataFrame:
    """The items of list ``group`` whose rank moved most between the runs ``a`` and ``b``:
    item_id, rank_a, rank_b, moved (rank_b - rank_a), labels and scores in each run. For
    detection runs, ``group`` is a category and the items are its objects, found at IoU
    ``iou`` (default 0.5) or not (:func:`evalstore.analysis.det_items.object_moves`).

    Raises:
        InvalidInput: neither run has that list, or the task is ambiguous.
    """
    if limit < 1:
        raise InvalidInput(f"--limit must be >= 1, got {limit}")
    ids = resolve_many(store, [a, b])
    tasks = [r[0] for r in queries.fetch_rows(store.con, "store/run_tasks", {"run_id": ids[0]})]
    boxes = queries.fetch_rows(store.con, "eval/runs_with_detections", {"runs": ids})
    if not tasks and task in (None, "detection") and len(boxes) == 2:
        return object_moves(store, ids[0], ids[1], group, iou=0.5 if iou is None else iou,
                            limit=limit)  # fmt: skip
    if not tasks and task is None:
        raise InvalidInput(
            f"run {a} has no ranked lists for --items to look inside"
            + (f" (and {b} is not a detection run)" if boxes else "")
        )
    if iou is not None:
        raise InvalidInput("--iou applies to detection runs (--items CATEGORY)")
    t = task or (tasks[0] if len(tasks) == 1 else None)
    if t is None:
        raise InvalidInput(
            f"run {a} has several tasks ({', '.join(tasks)}): choose one with --task"
        )
    params = {"a": ids[0], "b": ids[1], "task": t, "group": group}
    ((n,),) = queries.fetch_rows(store.con, "compare/list_exists", params)
    if n == 0:
        raise InvalidInput(f"neither {a} nor {b} has a {t} list {json.dumps(group)}")
    return queries.fetch(store.con, "compare/item_moves", {**params, "limit": limit})
