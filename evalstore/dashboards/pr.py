"""Dashboard PR charts (pure): what each task's chart of precision-recall curves says.

:func:`pr_facets` titles each task's chart with what it leaves out (``the 8 newest of 11
runs``: the query caps the runs of a task) and zooms its precision axis where every curve
stays high (good models, whose curves would be one line along the top), saying so.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from evalstore.dashboards.grid import distinct

__all__ = ["pr_facets"]

#: A PR chart's precision axis is zoomed to the curves up to this recall (past it, the
#: curves of good models fall to their last precision, which the zoom need not show).
_PR_ZOOM_RECALL = 0.9


def pr_facets(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[float]]:
    """PR curves by task, each task titled with what its chart leaves out (``the 8 newest
    of 11 runs``) and its precision axis zoomed where every curve stays high (good models:
    curves near 1 would be one line), saying so; and the low end of each chart's y axis."""
    titles: dict[Any, str] = {}
    lows: list[float] = []
    for task in distinct(frame["task"]):
        part = frame.filter(pl.col("task") == task)
        said = [str(task)]
        drawn = part["run"].n_unique()
        total = part["n_task"].max() if "n_task" in part.columns else None
        if isinstance(total, int) and total > drawn:
            said.append(f"the {drawn} newest of {total} runs")
        lowest = part.filter(pl.col("recall") <= _PR_ZOOM_RECALL)["precision"].min()
        low = 0.0
        if isinstance(lowest, float) and lowest >= 0.5:
            low = math.floor((lowest - 0.01) * 20) / 20
            said.append(f"precision from {low:.2f}")
        titles[task] = said[0] + (f" ({'; '.join(said[1:])})" if len(said) > 1 else "")
        lows.append(low)
    renamed = frame.with_columns(task=pl.col("task").replace_strict(titles, return_dtype=pl.String))
    return renamed, lows
