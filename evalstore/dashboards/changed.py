"""The "what changed" page's figures (pure): two runs, the lists whose value moved most and
the items of one list whose rank moved; the frames of :func:`evalstore.analysis.diff.diff_lists` and
:func:`evalstore.analysis.diff.diff_items` (``evalstore diff A B`` and ``--items G``).

:func:`lists_figure` draws each list's value in both runs joined by a line (a dumbbell) next
to the difference as a bar, the lists sorted by the difference; :func:`items_figure` draws each
item's rank in run a and in run b joined by a line (a slope chart), rank 1 at the top.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from evalstore.dashboards.plot import Figure, template, trace
from evalstore.dashboards.text import esc, plain, plot_values

__all__ = ["BETTER", "EVEN", "WORSE", "items_figure", "lists_figure"]

BETTER, WORSE, EVEN = "#2ca02c", "#d62728", "#7f7f7f"
RUN_COLOURS = ("#1f77b4", "#ff7f0e")  # run a, run b


def _hue(change: float | None, higher: bool) -> str:
    if change is None or change == 0:
        return EVEN
    return BETTER if (change > 0) == higher else WORSE


def lists_figure(frame: pl.DataFrame, a: str, b: str, *, higher: bool = True) -> Figure:
    """The lists of a ``diff_lists`` frame (``group_id, value_a, value_b, diff``, with its
    ``metric``): on the left each list's value in run ``a`` and run ``b`` joined by a line, on
    the right the difference b - a, green where b is better in the metric's direction
    (``higher``: higher is better). The largest rise at the top, the largest fall at the
    bottom."""
    part = frame.sort("diff", "group_id", nulls_last=True, descending=[False, False])
    metric = esc(plain(frame["metric"][0])) if "metric" in frame.columns and frame.height else ""
    names = [esc(plain(g)) for g in part["group_id"].to_list()]
    va, vb = plot_values(part["value_a"]), plot_values(part["value_b"])
    diffs = plot_values(part["diff"])
    fig = Figure.grid(
        1,
        2,
        titles=[f"{metric} in each run", "difference (b - a)"],
        horizontal_spacing=0.06,
        title_font={"size": 13},
    )
    xs: list[Any] = []
    ys: list[Any] = []
    for name, x0, x1 in zip(names, va, vb, strict=True):
        if x0 is not None and x1 is not None:
            xs += [x0, x1, None]
            ys += [name, name, None]
    fig.add_trace(
        trace(
            "scatter",
            x=xs,
            y=ys,
            mode="lines",
            line={"color": "#bbbbbb", "width": 3},
            hoverinfo="skip",
            showlegend=False,
            name="moved",
        ),
        row=1,
        col=1,
    )
    for label, values, colour in ((a, va, RUN_COLOURS[0]), (b, vb, RUN_COLOURS[1])):
        fig.add_trace(
            trace(
                "scatter",
                x=values,
                y=names,
                mode="markers",
                marker={"color": colour, "size": 9},
                name=f"{'a' if colour == RUN_COLOURS[0] else 'b'}: {esc(label)}",
                hovertemplate=f"{esc(label)}<br>list %{{y}}<br>%{{x:.4f}}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        trace(
            "bar",
            x=diffs,
            y=names,
            orientation="h",
            marker={"color": [_hue(d, higher) for d in diffs]},
            name="b - a",
            showlegend=False,
            customdata=list(zip(va, vb, strict=True)),
            hovertemplate="list %{y}<br>a %{customdata[0]:.4f}<br>b %{customdata[1]:.4f}"
            "<br>b - a %{x:+.4f}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    fig.update_yaxes(type="category", automargin=True)
    fig.update_yaxes(row=1, col=2, showticklabels=False, matches="y")
    fig.update_xaxes(row=1, col=2, zeroline=True, zerolinecolor="#444")
    fig.update_layout(
        template=template(),
        height=max(320, 90 + 24 * len(names)),
        margin={"l": 10, "r": 20, "t": 50, "b": 70},
        legend={"orientation": "h", "yanchor": "top", "y": -40 / max(230, 24 * len(names)), "x": 0},
        hoverlabel={"namelength": -1},
    )
    return fig


def items_figure(frame: pl.DataFrame, a: str, b: str) -> Figure:
    """The items of a ``diff_items`` frame (``item_id, rank_a, rank_b, moved, label_*,
    score_*``): each item's rank in run ``a`` and in run ``b`` joined by a line, green where
    it rose (a smaller rank), red where it fell; rank 1 at the top. An item ranked in one run
    only is a single point."""
    fig = Figure()
    ends = [esc(f"a: {a}"), esc(f"b: {b}")]
    for row in frame.iter_rows(named=True):
        item = esc(plain(row["item_id"]))
        moved = row["moved"]
        colour = _hue(None if moved is None else -moved, higher=True)
        info = [
            [plain(row["label_a"]), plain(row["score_a"])],
            [plain(row["label_b"]), plain(row["score_b"])],
        ]
        fig.add_trace(
            trace(
                "scatter",
                x=ends,
                y=[row["rank_a"], row["rank_b"]],
                mode="lines+markers+text",
                text=[item, item],
                textposition=["middle left", "middle right"],
                line={"color": colour, "width": 2},
                marker={"color": colour, "size": 8},
                name=item,
                customdata=[[esc(v) for v in pair] for pair in info],
                hovertemplate=f"{item}<br>rank %{{y}}<br>label %{{customdata[0]}}"
                "<br>score %{customdata[1]}<extra></extra>",
                showlegend=False,
            )
        )
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=ends)
    fig.update_yaxes(autorange="reversed", title={"text": "rank"})
    ranks = [r for r in (*frame["rank_a"].to_list(), *frame["rank_b"].to_list()) if r is not None]
    if max(ranks, default=0) <= 25:  # every rank labelled while they fit
        fig.update_yaxes(dtick=1)
    fig.update_layout(
        template=template(),
        height=max(320, 60 + 22 * frame.height),
        margin={"l": 160, "r": 160, "t": 30, "b": 40},
        hoverlabel={"namelength": -1},
    )
    return fig
