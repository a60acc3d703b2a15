"""Dashboard comparison panels (pure): per-list differences of a run against a baseline.

:func:`comparison_figure` draws, per (run, baseline, task, metric, params), the sorted per-list
differences with their mean and its 95% bootstrap interval, computed by
:func:`evalstore.compare.paired_stats` exactly as ``evalstore compare`` does.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import polars as pl

from evalstore.compare import paired_stats
from evalstore.dashboards.grid import axis_titles, cell, grid_layout, make_grid, rows_where
from evalstore.dashboards.specs import Panel
from evalstore.dashboards.text import esc, plot_values
from evalstore.metrics import METRICS

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["comparison_figure"]


def comparison_figure(panel: Panel, frame: pl.DataFrame) -> go.Figure:
    """Per-list differences (run - baseline) sorted, with the mean and its 95% bootstrap
    interval (:func:`evalstore.compare.paired_stats`, seed 0: the numbers of
    ``evalstore compare``); bars green where the run is better in the metric's direction."""
    import plotly.graph_objects as go

    keys = ["run", "baseline", "task", "metric", "params"]
    groups = frame.select(keys).unique(maintain_order=True).rows()
    titles = []
    stats = []
    for run, baseline, task, metric, params in groups:
        part = frame
        for key, value in zip(keys, (run, baseline, task, metric, params), strict=True):
            part = rows_where(part, key, value)
        # resampled in group_id order, as `evalstore compare` does: the same interval
        in_order = part.sort("group_id", nulls_last=True)["diff"].cast(pl.Float64).to_numpy()
        s = paired_stats(in_order, n_boot=1000, seed=0)
        part = part.sort("diff", "group_id", nulls_last=True)
        higher = METRICS[metric].higher_is_better if metric in METRICS else True
        wins, losses = (s.positive, s.negative) if higher else (s.negative, s.positive)
        shown = _short_params(params)
        titles.append(
            f"{esc(run)} vs {esc(baseline)}<br>{esc(task)} · {esc(metric)}{esc(shown)}: "
            f"mean {s.mean:+.4f} [{s.ci_low:+.4f}, {s.ci_high:+.4f}], p={s.p_value:.3g}, "
            f"better/worse {wins}/{losses}"
        )
        stats.append((part, s, higher))
    lay = grid_layout(panel, len(groups), titled=True)
    fig = make_grid(lay, titles)
    cols = lay.cols
    for index, (part, s, higher) in enumerate(stats):
        row, col = cell(index, cols)
        n = part.height
        ranks = list(range(1, n + 1))
        diffs = plot_values(part["diff"])
        good, bad, even = "#2ca02c", "#d62728", "#7f7f7f"
        hues = [
            even if d == 0 or d is None else (good if (d > 0) == higher else bad) for d in diffs
        ]
        fig.add_trace(
            go.Bar(
                x=ranks,
                y=diffs,
                marker={"color": hues},
                name="per-list difference",
                legendgroup="diff",
                showlegend=index == 0,
                customdata=list(
                    zip(
                        plot_values(part["group_id"]),
                        plot_values(part["value"]),
                        plot_values(part["baseline_value"]),
                        strict=True,
                    )
                ),
                hovertemplate="list %{customdata[0]}<br>run %{customdata[1]:.4f}<br>"
                "baseline %{customdata[2]:.4f}<br>difference %{y:+.4f}<extra></extra>",
            ),
            row=row,
            col=col,
        )
        if s.n:
            lo, hi = s.ci_low, s.ci_high
            fig.add_trace(
                go.Scatter(
                    x=[0.5, n + 0.5, n + 0.5, 0.5, 0.5],
                    y=[lo, lo, hi, hi, lo],
                    fill="toself",
                    mode="lines",
                    line={"width": 0},
                    fillcolor="rgba(31, 119, 180, 0.2)",
                    name="95% interval of the mean",
                    legendgroup="ci",
                    showlegend=index == 0,
                    hovertemplate=f"95% interval [{lo:+.4f}, {hi:+.4f}]<extra></extra>",
                ),
                row=row,
                col=col,
            )
            fig.add_trace(
                go.Scatter(
                    x=[0.5, n + 0.5],
                    y=[s.mean, s.mean],
                    mode="lines",
                    line={"color": "#1f77b4", "dash": "dash"},
                    name="mean difference",
                    legendgroup="mean",
                    showlegend=index == 0,
                    hovertemplate=f"mean difference {s.mean:+.4f}<extra></extra>",
                ),
                row=row,
                col=col,
            )
    fig.update_yaxes(zeroline=True)
    fig.update_annotations(font={"size": 12})
    axis_titles(fig, len(groups), cols, "lists, sorted by difference", "run - baseline")
    return fig


def _short_params(params: Any) -> str:
    try:
        items = json.loads(params or "{}")
    except (TypeError, ValueError):
        return f" {params}"
    shown = [f"{k}={v}" for k, v in items.items() if (k, v) != ("ties", "grouped")]
    return f" ({', '.join(shown)})" if shown else ""
