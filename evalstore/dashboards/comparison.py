"""Dashboard comparison panels (pure): per-list differences of a run against a baseline.

:func:`comparison_figure` draws, per (run, baseline, task, metric, params), the sorted per-list
differences with the mean difference, its 95% interval, the p-value and the better/worse
counts that :func:`evalstore.analysis.compare.compare` gives for the pair (the columns
:func:`evalstore.dashboards.data.compare_stats` adds): the numbers of ``evalstore compare``,
which resamples lists, or items within lists when a run has fewer than 10 lists.

A run's baseline is chosen, never guessed (``dashboards/list_differences``): the run given
with ``--baseline``, the first of ``--runs``, or the run of its experiment tagged
``baseline``. A row with no baseline (its experiment has none tagged) is not drawn:
:func:`paired` leaves it out and :func:`missing_baselines` says how to choose one.
"""

from __future__ import annotations

import json
import math
from typing import Any

import polars as pl

from evalstore.dashboards.axes import FEW_LISTS, clipped, value_range
from evalstore.dashboards.grid import axis_titles, cell, grid_layout, make_grid, rows_where
from evalstore.dashboards.plot import Figure, trace
from evalstore.dashboards.specs import Panel
from evalstore.dashboards.text import esc, plot_values
from evalstore.metrics.registry import METRICS

__all__ = ["BASELINE_HINT", "comparison_figure", "missing_baselines", "paired"]

#: How to choose a baseline, for the page's notes and empty message.
BASELINE_HINT = (
    "tag the experiment's baseline run (evalstore tag RUN baseline), or pass "
    "--baseline RUN (every selected run against RUN) or -r BASELINE -r RUN (the first run "
    "given is the baseline)"
)


def paired(frame: pl.DataFrame) -> pl.DataFrame:
    """The rows that have a baseline (``baseline_id`` not NULL)."""
    if "baseline_id" not in frame.columns:
        return frame
    return frame.filter(pl.col("baseline_id").is_not_null())


def missing_baselines(frame: pl.DataFrame) -> list[str]:
    """One note per run left without a baseline (its experiment has no run tagged
    ``baseline``), saying how to choose one."""
    if "baseline_id" not in frame.columns:
        return []
    runs = _runs_of(frame.filter(pl.col("baseline_id").is_null()))
    return [
        f"Experiment {run.partition('/')[0]} has no run tagged baseline, so its newest run "
        f"{run} is not compared: {BASELINE_HINT}."
        for run in runs
    ]


def _runs_of(frame: pl.DataFrame) -> list[str]:
    """The frame's runs, once each, in order."""
    return [str(r) for r in dict.fromkeys(frame["run"].to_list()) if r is not None]


def comparison_figure(panel: Panel, frame: pl.DataFrame) -> Figure:
    """Per-list differences (run - baseline) sorted, with the mean difference and its 95%
    interval as ``evalstore compare`` computes them (``mean_diff``, ``ci_low``, ``ci_high``,
    ``p_value``, ``wins``, ``losses``, ``resampled`` of each row's pair; without them, or
    with a ``note``, no interval); bars green where the run is better in the metric's
    direction. Every row must have a baseline: :func:`~evalstore.dashboards.figures.
    panel_figure` leaves the others out first (:func:`paired`, :func:`missing_baselines`)."""
    keys = ["run", "baseline", "task", "metric", "params"]
    groups = frame.select(keys).unique(maintain_order=True).rows()
    titles = []
    stats = []
    for run, baseline, task, metric, params in groups:
        part = frame
        for key, value in zip(keys, (run, baseline, task, metric, params), strict=True):
            part = rows_where(part, key, value)
        part = part.sort("diff", "group_id", nulls_last=True)
        higher = METRICS[metric].higher_is_better if metric in METRICS else True
        s = _stats(part)
        if s is not None:  # a difference of two values in 0..1 lies in -1..1
            bounds = value_range(metric)
            width = None if bounds is None else bounds[1] - bounds[0]
            lo, hi, cut = clipped(s["ci_low"], s["ci_high"], None if width is None
                                  else (-width, width))  # fmt: skip
            s = {**s, "ci_low": lo, "ci_high": hi, "clipped": cut}
        shown = esc(_short_params(params))
        head = f"{esc(run)} vs {esc(baseline)}<br>{esc(task)} · {esc(metric)}{shown}"
        if s is None:
            note = part["note"][0] if "note" in part.columns else None
            titles.append(f"{head}: no interval ({esc(note or 'not compared')})")
        else:
            caveats = []
            if s["clipped"]:
                caveats.append("interval clipped to the metric's range")
            if part.height < FEW_LISTS:
                caveats.append(
                    f"\u26a0 {part.height} list(s): interval unreliable below {FEW_LISTS}"
                )
            titles.append(
                f"{head}: mean {s['mean_diff']:+.4f} [{s['ci_low']:+.4f}, {s['ci_high']:+.4f}] "
                f"({esc(s['resampled'])}), p={_p(s['p_value'])}, "
                f"better/worse {s['wins']}/{s['losses']}" + "".join(f"<br>{c}" for c in caveats)
            )
        stats.append((part, s, higher))
    lay = grid_layout(panel, len(groups), titled=True)
    fig = make_grid(lay, titles, title_px=12)
    cols = lay.cols
    first = next((i for i, (_, s, _) in enumerate(stats) if s is not None), None)
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
            trace(
                "bar",
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
        if s is not None:
            lo, hi, mean = s["ci_low"], s["ci_high"], s["mean_diff"]
            fig.add_trace(
                trace(
                    "scatter",
                    x=[0.5, n + 0.5, n + 0.5, 0.5, 0.5],
                    y=[lo, lo, hi, hi, lo],
                    fill="toself",
                    mode="lines",
                    line={"width": 0},
                    fillcolor="rgba(31, 119, 180, 0.2)",
                    name="95% interval of the mean",
                    legendgroup="ci",
                    showlegend=index == first,
                    hovertemplate=f"95% interval [{lo:+.4f}, {hi:+.4f}]<extra></extra>",
                ),
                row=row,
                col=col,
            )
            fig.add_trace(
                trace(
                    "scatter",
                    x=[0.5, n + 0.5],
                    y=[mean, mean],
                    mode="lines",
                    line={"color": "#1f77b4", "dash": "dash"},
                    name="mean difference",
                    legendgroup="mean",
                    showlegend=index == first,
                    hovertemplate=f"mean difference {mean:+.4f}<extra></extra>",
                ),
                row=row,
                col=col,
            )
    fig.update_yaxes(zeroline=True)
    fig.update_xaxes(tick0=1, dtick=1 if max((p.height for p, _, _ in stats), default=0) <= 20
                     else None)  # fmt: skip
    axis_titles(fig, len(groups), cols, "lists, sorted by difference", "run - baseline")
    return fig


def _stats(part: pl.DataFrame) -> dict[str, Any] | None:
    """The pair's statistics from compare (the same on each of its rows), None without an
    interval."""
    names = ("mean_diff", "ci_low", "ci_high", "p_value", "wins", "losses", "resampled")
    if part.height == 0 or any(n not in part.columns for n in names):
        return None
    row = part.select(names).row(0, named=True)
    bounds = (row["mean_diff"], row["ci_low"], row["ci_high"])
    if any(v is None or not math.isfinite(v) for v in bounds):
        return None
    return row


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _short_params(params: Any) -> str:
    try:
        items = json.loads(params or "{}")
    except (TypeError, ValueError):
        return f" {params}"
    shown = [f"{k}={v}" for k, v in items.items() if (k, v) != ("ties", "grouped")]
    return f" ({', '.join(shown)})" if shown else ""
