"""Paired per-list scatter (pure): each list's value in a run against the baseline's.

:func:`scatter_figure` takes the frame of a comparison panel (run, baseline, task, metric,
params, group_id, value, baseline_value, diff) and draws one chart per (run, baseline, task,
metric, params): a point per list at (baseline's value, run's value), green above the
diagonal where the run is better in the metric's direction, red where worse, and the line
y = x (no change).
"""

from __future__ import annotations

import polars as pl

from evalstore.dashboards.grid import axis_titles, cell, grid_layout, make_grid, rows_where
from evalstore.dashboards.plot import Figure, trace
from evalstore.dashboards.specs import Panel
from evalstore.dashboards.text import esc, plain, plot_values
from evalstore.metrics.registry import METRICS

__all__ = ["scatter_figure"]

_GOOD, _BAD, _EVEN = "#2ca02c", "#d62728", "#7f7f7f"


def scatter_figure(panel: Panel, frame: pl.DataFrame) -> Figure:
    """One chart per pair of runs and metric: per list, the baseline's value (x) and the
    run's (y), with the diagonal; hover names the list."""
    keys = ["run", "baseline", "task", "metric", "params"]
    groups = frame.select(keys).unique(maintain_order=True).rows()
    titles = [f"{esc(r)} vs {esc(b)}<br>{esc(t)} · {esc(m)}" for r, b, t, m, _ in groups]
    lay = grid_layout(panel, len(groups), titled=True)
    fig = make_grid(lay, titles, title_px=12)
    for index, values in enumerate(groups):
        part = frame
        for key, value in zip(keys, values, strict=True):
            part = rows_where(part, key, value)
        metric = values[3]
        higher = METRICS[metric].higher_is_better if metric in METRICS else True
        x, y = plot_values(part["baseline_value"]), plot_values(part["value"])
        diffs = plot_values(part["diff"])
        hues = [_EVEN if d in (0, None) else (_GOOD if (d > 0) == higher else _BAD) for d in diffs]
        known = [v for v in (*x, *y) if v is not None]
        low, high = (min(known), max(known)) if known else (0.0, 1.0)
        row, col = cell(index, lay.cols)
        fig.add_trace(
            trace(
                "scatter",
                x=[low, high],
                y=[low, high],
                mode="lines",
                line={"color": "#999", "dash": "dot", "width": 1},
                name="no change (y = x)",
                legendgroup="diagonal",
                showlegend=index == 0,
                hoverinfo="skip",
            ),
            row=row,
            col=col,
        )
        fig.add_trace(
            trace(
                "scatter",
                x=x,
                y=y,
                mode="markers",
                marker={"color": hues, "size": 7, "opacity": 0.8},
                name="lists",
                showlegend=False,
                customdata=[esc(plain(g)) for g in part["group_id"].to_list()],
                hovertemplate="list %{customdata}<br>baseline %{x:.4f}<br>run %{y:.4f}"
                "<extra></extra>",
            ),
            row=row,
            col=col,
        )
    axis_titles(fig, len(groups), lay.cols, "baseline's value per list", "run's value per list")
    return fig
