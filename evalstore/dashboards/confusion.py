"""Confusion matrices (pure): one heatmap per classification run, rows the actual class,
columns the predicted one, each cell printing its count.

The frame is ``dashboards/confusion``'s (the view ``v_confusion`` over every cell of the
class grid): run, actual, predicted, n, share. The colour is the **row-normalised** share,
``n`` over the samples of the actual class (the recall of a class on the diagonal, where its
samples went off it), on one scale from 0 to 1 for every run, so that runs of different
sizes read alike; the count is printed in every cell, readable without hovering. Classes
keep the query's order (the run's list order), the first at the top left. A run's chart
narrows the columns of charts so that a cell stays at least :data:`CELL_PX` wide.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from evalstore.dashboards.grid import (
    axis_titles,
    category_rows,
    cell,
    distinct,
    grid_layout,
    make_grid,
    row_tick_room,
    split,
    tick_room,
)
from evalstore.dashboards.plot import Figure, trace
from evalstore.dashboards.specs import Panel
from evalstore.dashboards.text import cut_label, esc, plain

__all__ = ["CELL_PX", "COLOUR_TITLE", "COLUMNS", "SCALE", "confusion_figure"]

#: The columns the figure reads.
COLUMNS = ("run", "actual", "predicted", "n", "share")
#: What the colour is, on the colour bar.
COLOUR_TITLE = "share of the actual class's samples (row-normalised)"
#: The narrowest cell, in pixels of a 1100 px wide page, that a count is printed in.
CELL_PX = 26
#: White (no sample of the row) to dark blue (every one): the cells where a class's samples
#: go stand out, and the printed counts keep their contrast (Plotly turns them white on dark).
SCALE = [[0.0, "#f7fbff"], [0.25, "#c6dbef"], [0.5, "#6baed6"], [0.75, "#2171b5"],
         [1.0, "#08306b"]]  # fmt: skip
_PAGE_PX = 1100
_BAR_PX = 90


def confusion_figure(panel: Panel, frame: pl.DataFrame) -> Figure:
    """One heatmap per run (its own axes: its own classes), colour the row-normalised share
    on one 0-1 scale with one colour bar, each cell's count printed; classes in the frame's
    order, actual down the side, predicted along the bottom."""
    runs = distinct(frame["run"])
    parts = split(frame, "run", runs)
    classes = [distinct(p["actual"]) for p in parts]
    widest = max(len(c) for c in classes)
    fit = max(1, int((_PAGE_PX - _BAR_PX) // (CELL_PX * widest + 80)))
    cols = max(1, min(len(runs), panel.facet_cols, fit))
    panel = replace(panel, facet_cols=cols)
    heights = [max(140, 24 * max(len(c) for c in classes[start : start + cols]) + 20)
               for start in range(0, len(parts), cols)]  # fmt: skip
    ticks = [tick_room([plain(v) for v in c], cols) for c in classes]
    row_ticks = row_tick_room(ticks, cols)
    labels = [plain(v) for c in classes for v in c]
    left_px = 60 + 7 * max(len(cut_label(v)) for v in labels)
    lay = grid_layout(panel, len(runs), titled=True, row_px=heights, tick_px=row_ticks,
                      left_px=left_px, bar_px=_BAR_PX)  # fmt: skip
    fig = make_grid(lay, [esc(plain(r)) for r in runs])
    for index, (part, names) in enumerate(zip(parts, classes, strict=True)):
        row, col = cell(index, cols)
        counts = {(a, p): n for a, p, n in part.select("actual", "predicted", "n").iter_rows()}
        shares = {(a, p): s for a, p, s in part.select("actual", "predicted", "share").iter_rows()}
        shown = [esc(plain(v)) for v in names]
        fig.add_trace(
            trace(
                "heatmap",
                x=shown,
                y=shown,
                z=[[shares.get((a, p)) for p in names] for a in names],
                text=[[str(counts.get((a, p), 0)) for p in names] for a in names],
                texttemplate="%{text}",
                textfont={"size": 11 if len(names) <= 12 else 9},
                zmin=0.0,
                zmax=1.0,
                colorscale=SCALE,
                showscale=index == 0,
                colorbar={
                    "title": {"text": COLOUR_TITLE, "side": "right", "font": {"size": 11}},
                    "x": 1.0 + 6 / _PAGE_PX,
                    "xanchor": "left",
                    "xref": "paper",
                    "len": 1.0,
                    "thickness": 12,
                    "tickformat": ".0%",
                    "tickfont": {"size": 10},
                }
                if index == 0
                else None,
                hovertemplate="actual %{y}<br>predicted %{x}<br>n = %{text}"
                "<br>share of the actual class = %{z:.1%}<extra></extra>",
                xgap=1,
                ygap=1,
            ),
            row=row,
            col=col,
        )
        fig.update_xaxes(row=row, col=col, type="category", **ticks[index][1])
        category_rows(fig, row, col, [plain(v) for v in names])
    axis_titles(fig, len(runs), cols, "predicted", "actual")
    return fig
