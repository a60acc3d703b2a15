"""Dashboard grids (pure): the facets of a panel and the grid of Plotly charts they fill.

:func:`distinct` lists a panel's facets (or series) in the query's order and
:func:`rows_where` picks the rows of one (:func:`split`: of each, in one pass);
:func:`grid_layout` sizes a grid of charts in pixels (:class:`Layout`) and :func:`make_grid`
makes the empty figure (a :class:`~evalstore.dashboards.plot.Figure`); :func:`tick_room`,
:func:`cell` and :func:`axis_titles` place the ticks, the charts and the axis titles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from evalstore.dashboards.axes import wrap_title
from evalstore.dashboards.plot import Figure, template
from evalstore.dashboards.specs import Panel
from evalstore.dashboards.text import cut_label, esc

__all__ = [
    "Layout",
    "axis_titles",
    "category_rows",
    "cell",
    "distinct",
    "grid_layout",
    "make_grid",
    "positions",
    "row_tick_room",
    "rows_where",
    "split",
    "tick_room",
]

_ROW_PX = 320
#: The width of the charts of a page in a window 800 px wide (titles fit their column there).
_NARROW_PX = 600


def rows_where(frame: pl.DataFrame, column: str | None, value: Any) -> pl.DataFrame:
    """The rows where ``column`` equals ``value`` (NULL matching NULL); all without a column."""
    return frame if column is None else frame.filter(pl.col(column).eq_missing(value))


def positions(frame: pl.DataFrame, column: str, values: Sequence[Any]) -> list[list[int]] | None:
    """The row numbers of each of ``values`` in ``column`` (:func:`rows_where`'s rows), in one
    pass, where the column's values are exact keys (text, integers, booleans, times); None
    for other types (floats: NaN matches NaN in rows_where)."""
    dtype = frame.schema[column]
    exact = dtype.is_integer() or dtype.is_temporal() or dtype in (pl.String, pl.Boolean)
    if not (exact or isinstance(dtype, (pl.Categorical, pl.Enum))):
        return None
    at: dict[Any, list[int]] = {}
    for i, key in enumerate(frame.get_column(column).to_list()):
        at.setdefault(key, []).append(i)
    return [at.get(v, []) for v in values]


def split(frame: pl.DataFrame, column: str | None, values: Sequence[Any]) -> list[pl.DataFrame]:
    """:func:`rows_where` of each of ``values``, in one pass over ``frame`` (not a filter per
    value) where :func:`positions` finds the rows."""
    if column is None:
        return [frame for _ in values]
    found = positions(frame, column, values)
    if found is None:
        return [rows_where(frame, column, v) for v in values]
    return [frame[rows] if rows else frame.clear() for rows in found]


def distinct(series: pl.Series) -> list[Any]:
    """Distinct values in order of first appearance (the query's ORDER BY decides)."""
    return list(dict.fromkeys(series.to_list()))


@dataclass(frozen=True)
class Layout:
    """Pixel sizes of a grid of charts: rows of heights ``row_px``, ``gap_px`` between rows
    (room for subplot titles and tick labels), ``bottom_px`` under the last row (x labels,
    the axis title and the legend), ``left_px`` for y labels (also kept between columns),
    ``bar_px`` right of each chart for its own colour bar (0: none); ``gaps_px``, when given,
    the gap under each row but the last instead of ``gap_px`` (rows whose tick labels need
    different room)."""

    n: int
    cols: int
    row_px: tuple[int, ...]
    gap_px: int
    top_px: int
    bottom_px: int
    left_px: int = 70
    bar_px: int = 0
    gaps_px: tuple[int, ...] = ()

    @property
    def gaps(self) -> tuple[int, ...]:
        """The gap under each row but the last, in pixels."""
        return self.gaps_px or (self.gap_px,) * (len(self.row_px) - 1)

    @property
    def plot_px(self) -> int:
        return sum(self.row_px) + sum(self.gaps)


def grid_layout(
    panel: Panel, n: int, *, titled: bool, row_px: Sequence[int] | None = None,
    tick_px: int | Sequence[int] = 0, left_px: int = 70, bar_px: int = 0,
) -> Layout:  # fmt: skip
    """The :class:`Layout` of ``n`` charts, ``panel.facet_cols`` to a row at most (``bar_px``:
    room for a colour bar right of each chart). ``tick_px`` is the room the x tick labels
    need under every row, or a sequence of it per row (each gap then fits its own row's)."""
    cols = max(1, min(n, panel.facet_cols))
    rows = math.ceil(n / cols)
    heights = tuple(row_px) if row_px else (_ROW_PX,) * rows
    top = 78 if titled else 24
    if isinstance(tick_px, int):
        return Layout(n, cols, heights, top + 40 + tick_px, top, 100 + tick_px, left_px, bar_px)
    per_row = list(tick_px)
    gaps = tuple(top + 40 + t for t in per_row[:-1])
    return Layout(n, cols, heights, max(gaps, default=top + 40), top, 100 + per_row[-1],
                  left_px, bar_px, gaps)  # fmt: skip


def make_grid(lay: Layout, titles: list[str] | None, title_px: int = 13) -> Figure:
    """An empty figure of subplots laid out as ``lay`` says, with the house style. Titles
    are wrapped to the width of a column on an 800 px page (three lines each at most, the whole
    title on hover when cut), so that they never run into their neighbours'."""
    rows = len(lay.row_px)
    width = max(16, int(_NARROW_PX / lay.cols / (title_px * 0.55)))
    wrapped = [wrap_title(t, width, lines=3) for t in titles] if titles is not None else None
    fig = Figure.grid(
        rows,
        lay.cols,
        titles=[t for t, _ in wrapped] if wrapped is not None else None,
        row_heights=list(lay.row_px),
        vertical_spacing=lay.gap_px / lay.plot_px if rows > 1 else 0.0,
        row_gaps=[g / lay.plot_px for g in lay.gaps] if lay.gaps_px else None,
        # the page is about 1200 px wide: keep the y labels of a column clear of the left
        # (and a column's colour bar clear of the next one's labels)
        horizontal_spacing=min(0.4, (lay.left_px + lay.bar_px + 10) / 1200)
        if lay.cols > 1
        else 0.0,
        title_font={"size": title_px},
    )
    for note, (_, whole) in zip(fig.layout.get("annotations", []), wrapped or [], strict=False):
        if whole is not None:
            note["hovertext"] = whole
    fig.update_layout(
        template=template(),
        height=lay.plot_px + lay.top_px + lay.bottom_px,
        margin={"l": lay.left_px, "r": 30 + lay.bar_px, "t": lay.top_px, "b": lay.bottom_px},
        # the legend sits under the x axis title, in the bottom margin
        legend={
            "orientation": "h",
            "yanchor": "top",
            "y": -(lay.bottom_px - 45) / lay.plot_px,
            "x": 0,
        },
        hoverlabel={"namelength": -1},
    )
    return fig


def tick_room(labels: Sequence[str], cols: int, reserved_px: int = 0) -> tuple[int, dict[str, Any]]:
    """Category tick labels: cut to 32 characters (the hover keeps them whole), every k-th
    only where more would not fit turned side by side in an 800 px window (each chart's
    width less ``reserved_px``, what its own row labels and colour bar take), and, when
    they would not fit side by side, turned 30 degrees with the room they need."""
    if not labels:
        return 0, {}
    cut = [cut_label(v) for v in labels]
    longest = max(len(v) for v in cut)
    width = 1100 / cols
    # more labels than fit side by side turned, on an 800 px page: every k-th (hover names
    # all); a label turned 30 degrees needs 24 px along the axis (twice its line's height)
    room = max(24.0, _NARROW_PX / cols - reserved_px)
    step = math.ceil(len(labels) / max(1, int(room / 24)))
    axis: dict[str, Any] = {
        "categoryorder": "array",  # the query's order, whichever trace has the value first
        "categoryarray": [esc(v) for v in labels],
        "tickmode": "array",
        "tickvals": [esc(v) for v in labels][::step],
        "ticktext": [esc(v) for v in cut][::step],
    }
    if longest * 7 * len(labels) <= width:
        return 0, axis
    axis["tickangle"] = -30
    return int(longest * 7 * 0.5), axis


def row_tick_room(ticks: Sequence[tuple[int, dict[str, Any]]], cols: int) -> list[int]:
    """Under each row of ``cols`` charts, the room its own tick labels need (:func:`tick_room`
    of each chart): a row of ten class names does not wait on another row's turned labels."""
    starts = range(0, len(ticks), cols)
    return [max(px for px, _ in ticks[start : start + cols]) for start in starts]


def category_rows(fig: Figure, row: int, col: int, labels: Sequence[str]) -> None:
    """Chart (row, col)'s y axis: the categories ``labels`` (plain text) top down in their
    order, each tick cut to 32 characters (the hover keeps it whole)."""
    fig.update_yaxes(
        row=row,
        col=col,
        type="category",
        autorange="reversed",
        categoryorder="array",
        categoryarray=[esc(v) for v in labels],
        tickmode="array",
        tickvals=[esc(v) for v in labels],
        ticktext=[esc(cut_label(v)) for v in labels],
    )


def cell(index: int, cols: int) -> tuple[int, int]:
    """The (row, col) of chart ``index``, both from 1, filling rows of ``cols`` charts."""
    return index // cols + 1, index % cols + 1


def axis_titles(fig: Figure, n: int, cols: int, x: str, y: str) -> None:
    """Axis titles once: x under the lowest chart of each column, y left of each row."""
    for index in range(n):
        row, col = cell(index, cols)
        if index + cols >= n:
            fig.update_xaxes(title={"text": x}, row=row, col=col)
        if col == 1:
            fig.update_yaxes(title={"text": y}, row=row, col=col)
