"""Dashboard heatmaps (pure): one heatmap per facet, each on its own axes and colour bar.

Facets differ in what they show (VOC's 20 classes, HPatches' image pairs, the runs of one
task): :func:`heatmap_figure` gives each facet only the x and y categories present in it, its
own colour range and its own colour bar beside it, titled with the facet's metric. A metric
whose lower values are better (``fpr95``, ``reprojection_error``: the registry's
``higher_is_better``, read from a ``base_metric`` column when the query gives one) gets the
reversed colour scale, so that "better" is the same colour (yellow) in every facet, and its
colour bar says "lower is better". Cells print their values only when they are wide enough to
read; the hover always gives them.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from evalstore.dashboards.axes import value_range
from evalstore.dashboards.grid import (
    axis_titles,
    category_rows,
    cell,
    distinct,
    grid_layout,
    make_grid,
    row_tick_room,
    rows_where,
    tick_room,
)
from evalstore.dashboards.plot import Figure, trace
from evalstore.dashboards.specs import Panel
from evalstore.dashboards.text import cut_label, esc, plain, plot_values
from evalstore.errors import EvalstoreError
from evalstore.metrics.registry import get

__all__ = ["CELL_TEXT_PX", "colour_bar_title", "heatmap_figure"]

#: The narrowest cell (in pixels of a 1100 px wide page) that prints its value.
CELL_TEXT_PX = 44
_BAR_PX = 90  # a colour bar, its tick labels and its title written along it
_PAGE_PX = 1100


def colour_bar_title(metric: str | None, z: str) -> tuple[str, bool]:
    """The colour bar's title and whether higher values are better: the metric's name and
    its direction when ``metric`` is registered, else ``z`` (higher taken as better)."""
    if metric is None:
        return z, True
    try:
        higher = get(metric).higher_is_better
    except EvalstoreError:
        return metric, True
    return f"{metric} ({'higher' if higher else 'lower'} is better)", higher


def _facet_metric(part: pl.DataFrame) -> str | None:
    if "base_metric" not in part.columns:
        return None
    names = [n for n in distinct(part["base_metric"]) if n is not None]
    return str(names[0]) if len(names) == 1 else None


def _by_lists(panel: Panel, frame: pl.DataFrame) -> tuple[list[Any], list[pl.DataFrame]]:
    """The facets and their rows; a facet whose runs (``y``) have different lists (``x``),
    e.g. wine's class0..2 and synth's c0..c4, becomes one chart per set of lists, titled with
    its runs' experiments (else its first run): never one grid with empty quadrants."""
    x, y = panel.x or "", panel.y or ""
    facets = distinct(frame[panel.facet]) if panel.facet else [None]
    titles: list[Any] = []
    parts: list[pl.DataFrame] = []
    for facet in facets:
        part = rows_where(frame, panel.facet, facet)
        lists: dict[tuple[Any, ...], list[Any]] = {}
        for run, xs in part.group_by(y, maintain_order=True).agg(pl.col(x).unique().sort()).rows():
            lists.setdefault(tuple(xs), []).append(run)
        if len(lists) == 1:
            titles.append(facet)
            parts.append(part)
            continue
        for runs in lists.values():
            rows = part.filter(pl.col(y).is_in(runs))
            who = distinct(rows["experiment"]) if "experiment" in rows.columns else runs[:1]
            titles.append(f"{plain(facet)} · {', '.join(plain(w) for w in who)}")
            parts.append(rows)
    return titles, parts


def _scales(parts: list[pl.DataFrame], z: str) -> list[tuple[float | None, float | None]]:
    """Each chart's colour range: its metric's range (0..1 for AP) or, for a metric without
    one, the range of that metric over every chart, so a value has one colour everywhere."""
    spans: dict[str | None, tuple[float, float]] = {}
    for part in parts:
        metric = _facet_metric(part)
        values = [v for v in plot_values(part[z]) if isinstance(v, (int, float))]
        if values:
            low, high = spans.get(metric, (min(values), max(values)))
            spans[metric] = (min(low, *values), max(high, *values))
    scales: list[tuple[float | None, float | None]] = []
    for part in parts:
        metric = _facet_metric(part)
        fixed = value_range(metric)
        if fixed is not None and math.isfinite(fixed[1]):  # pixels: the values' span
            scales.append(fixed)
        else:
            scales.append(spans.get(metric, (None, None)))
    return scales


def heatmap_figure(panel: Panel, frame: pl.DataFrame) -> Figure:
    """One heatmap per facet on its own axes (only the facet's own x and y values), with its
    own colour range and colour bar (reversed for lower-is-better metrics); values printed in
    cells at least :data:`CELL_TEXT_PX` wide."""
    x, y, z = panel.x or "", panel.y or "", panel.z or ""
    facets, parts = _by_lists(panel, frame)
    scales = _scales(parts, z)
    cols = max(1, min(len(facets), panel.facet_cols))
    heights = []
    for start in range(0, len(parts), cols):
        tallest = max(len(distinct(p[y])) for p in parts[start : start + cols])
        heights.append(max(120, 26 * tallest + 20))
    y_labels = [plain(v) for v in distinct(frame[y])]
    left_px = 40 + 7 * max(len(cut_label(v)) for v in y_labels)
    # the labels under each chart share its width with its row labels and colour bar
    reserved = left_px + _BAR_PX
    ticks = [tick_room([plain(v) for v in distinct(p[x])], cols, reserved) for p in parts]
    row_ticks = row_tick_room(ticks, cols)
    lay = grid_layout(panel, len(facets), titled=panel.facet is not None, row_px=heights,
                      tick_px=row_ticks, left_px=left_px, bar_px=_BAR_PX)  # fmt: skip
    fig = make_grid(lay, [esc(plain(f)) for f in facets] if panel.facet else None)
    spacing = (left_px + _BAR_PX + 10) if cols > 1 else 0
    chart_px = (_PAGE_PX - _BAR_PX - spacing * (cols - 1)) / cols
    for f_index, part in enumerate(parts):
        xs, ys = distinct(part[x]), distinct(part[y])
        cells: dict[tuple[Any, Any], Any] = {}
        for xv, yv, zv in zip(part[x].to_list(), part[y].to_list(), plot_values(part[z]),
                              strict=True):  # fmt: skip
            cells.setdefault((xv, yv), zv)
        row, col = cell(f_index, cols)
        x_dom, y_dom = fig.domain(row, col)
        title, higher = colour_bar_title(_facet_metric(part), z)
        zmin, zmax = scales[f_index]
        wide = chart_px / max(1, len(xs)) >= CELL_TEXT_PX
        fig.add_trace(
            trace(
                "heatmap",
                x=[esc(plain(v)) for v in xs],
                y=[esc(plain(v)) for v in ys],
                z=[[cells.get((xv, yv)) for xv in xs] for yv in ys],
                colorscale="Viridis",
                zmin=zmin,
                zmax=zmax,
                reversescale=not higher,
                showscale=True,
                colorbar={
                    "title": {"text": esc(title), "side": "right", "font": {"size": 11}},
                    "x": x_dom[1] + 6 / _PAGE_PX,
                    "xanchor": "left",
                    "xref": "paper",
                    "y": (y_dom[0] + y_dom[1]) / 2,
                    "yanchor": "middle",
                    "yref": "paper",
                    "len": y_dom[1] - y_dom[0],
                    "lenmode": "fraction",
                    "thickness": 12,
                    "tickfont": {"size": 10},
                },
                texttemplate="%{z:.3f}" if wide else None,
                textfont={"size": 11} if wide else None,
                hovertemplate=f"{esc(y)}=%{{y}}<br>{esc(x)}=%{{x}}<br>{esc(z)}=%{{z:.4f}}"
                "<extra></extra>",
                xgap=1,
                ygap=1,
            ),
            row=row,
            col=col,
        )
        fig.update_xaxes(row=row, col=col, type="category", **ticks[f_index][1])
        category_rows(fig, row, col, [plain(v) for v in ys])
    axis_titles(fig, len(facets), cols, esc(panel.x_title or x), esc(panel.y_title or y))
    return fig
