"""Dashboard figures (pure): a panel and its frame -> a Plotly figure; no database, no files.

:func:`panel_figure` draws a panel by its kind: lines, markers, bars and PR curves (one trace
per ``color`` value in each ``facet``, optionally with the best so far, and with ``error`` a
band ``y ± error`` around lines or error bars on markers and bars), heatmaps
(:mod:`~evalstore.dashboards.heatmap`: one per facet, each on its own axes and colour bar),
run comparisons (:mod:`~evalstore.dashboards.comparison`), leaderboards
(:mod:`~evalstore.dashboards.board`) and confusion matrices
(:mod:`~evalstore.dashboards.confusion`). Every user string is escaped for Plotly, which renders
some HTML in its labels. The figures are plain data
(:mod:`~evalstore.dashboards.plot`), not Plotly's Python objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from evalstore.analysis.configurations import label
from evalstore.dashboards.axes import time_axis, value_axis, value_range
from evalstore.dashboards.board import board_figure
from evalstore.dashboards.comparison import comparison_figure, paired
from evalstore.dashboards.confusion import confusion_figure
from evalstore.dashboards.grid import (
    axis_titles,
    cell,
    distinct,
    grid_layout,
    make_grid,
    positions,
    rows_where,
    split,
    tick_room,
)
from evalstore.dashboards.heatmap import heatmap_figure
from evalstore.dashboards.plot import Figure, palette, trace
from evalstore.dashboards.pr import pr_facets
from evalstore.dashboards.specs import Panel
from evalstore.dashboards.text import esc, plain, plot_values
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.metrics.registry import get

__all__ = ["panel_figure"]

#: A chart with at most this many points prints each point's label beside it.
_FEW_POINTS = 8
#: Line styles, one per round of the palette's colours (the 45th line is the first dashed).
_DASHES = ("solid", "dash", "dot", "dashdot")


def _direction(panel: Panel, group: pl.DataFrame) -> bool | None:
    """Whether higher is better for the metric of one series (``base_metric`` or ``metric``
    column); None when it names a metric this process does not know (a user's metric whose
    folder is not loaded): its values are drawn with their name, without a best so far."""
    column = "base_metric" if "base_metric" in group.columns else "metric"  # data.py checks
    names = [n for n in distinct(group[column]) if n is not None]
    try:
        directions = {get(str(n)).higher_is_better for n in names}
    except EvalstoreError:
        return None
    if len(directions) != 1:
        raise InvalidInput(
            f"{panel.where}: best_so_far: one series mixes metrics of opposite directions "
            f"({', '.join(map(str, names))}); facet or color by metric"
        )
    return directions.pop()


def _running_best(values: list[Any], higher: bool) -> list[Any]:
    best: float | None = None
    out: list[Any] = []
    for v in values:
        if v is not None and (best is None or (v > best if higher else v < best)):
            best = v
        out.append(best)
    return out


@dataclass
class _Rows:
    """Rows of a frame (``index``: their row numbers; None: all) as a trace reads them: each
    column's plot values, converted once for the frame and shared by its traces."""

    frame: pl.DataFrame
    index: list[int] | None = None
    converted: dict[str, list[Any]] = field(default_factory=dict)
    schema: dict[str, pl.DataType] = field(default_factory=dict)

    @property
    def height(self) -> int:
        return self.frame.height if self.index is None else len(self.index)

    def values(self, column: str) -> list[Any]:
        """:func:`plot_values` of ``column`` in these rows."""
        if column not in self.converted:
            self.converted[column] = plot_values(self.frame[column])
        every = self.converted[column]
        return every if self.index is None else [every[i] for i in self.index]

    def split(self, column: str | None, values: list[Any]) -> list[_Rows]:
        """The rows of each of ``values`` in ``column`` (:func:`rows_where`'s)."""
        if column is None:
            return [self for _ in values]
        found = positions(self.frame, column, values)
        if found is None:
            return [_Rows(rows_where(self.frame, column, v)) for v in values]
        return [_Rows(self.frame, rows, self.converted, self.schema) for rows in found]

    def dtype(self, column: str) -> pl.DataType:
        if not self.schema:
            self.schema.update(self.frame.schema)
        return self.schema[column]


def _hover(panel: Panel, group: _Rows, extra: str = "") -> dict[str, Any]:
    lines = [f"{esc(panel.x)}=%{{x}}", f"{esc(panel.y)}=%{{y}}"]
    custom = None
    if panel.hover:
        custom = list(zip(*(group.values(c) for c in panel.hover), strict=True))
        lines += [f"{esc(c)}=%{{customdata[{i}]}}" for i, c in enumerate(panel.hover)]
    return {"customdata": custom, "hovertemplate": "<br>".join(lines) + f"<extra>{extra}</extra>"}


def _spread(panel: Panel, group: _Rows) -> list[float] | None:
    """The ``error`` column of a trace (NULL as 0), or None when it has no spread."""
    if panel.error is None:
        return None
    if not group.dtype(panel.error).is_numeric():
        raise InvalidInput(f"{panel.where}: `error` column {panel.error!r} must be numeric")
    values = [0.0 if v is None else float(v) for v in group.values(panel.error)]
    return values if any(v > 0 for v in values) else None


def _band(
    x: list[Any], y: list[Any], spread: list[float], hue: str, name: str, what: str
) -> dict[str, Any]:
    """The shaded band y - spread .. y + spread under a line, one closed shape (points without
    a y are left out; the band narrows to the line where the spread is 0)."""
    kept = [(a, b, e) for a, b, e in zip(x, y, spread, strict=True) if b is not None]
    xs = [a for a, _, _ in kept]
    upper = [b + e for _, b, e in kept]
    lower = [b - e for _, b, e in kept]
    red, green, blue = (int(hue.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4))
    return trace(
        "scatter",
        x=xs + xs[::-1],
        y=upper + lower[::-1],
        fill="toself",
        fillcolor=f"rgba({red}, {green}, {blue}, 0.18)",
        line={"width": 0},
        mode="lines",
        name=f"{name}: ± {what}",
        legendgroup=name,
        showlegend=False,
        hoverinfo="skip",
    )


@dataclass(frozen=True)
class _Style:
    """How a facet's marks are drawn: its colour and dash, the metric's range (error bars
    are cut to it), whether points print their labels (``_label``: few points)."""

    hue: str
    dash: str = "solid"
    bounds: tuple[float, float] | None = None
    labelled: bool = False


def _mark(
    panel: Panel, rows: _Rows, name: str, style: _Style, fig: Figure, row: int, col: int
) -> dict[str, Any]:
    """The trace of ``rows`` (one color value, one ``line_group`` value); a line's band
    goes straight into ``fig``. Scatter points are joined by a line only with ``line_group``
    and more than one point. Error bars stop at the metric's range (``style.bounds``)."""
    hue = style.hue
    common: dict[str, Any] = {
        "x": rows.values(panel.x or ""),
        "y": rows.values(panel.y or ""),
        "name": name,
        "legendgroup": name,
        **_hover(panel, rows, name),
    }
    spread = _spread(panel, rows)
    if spread is not None and panel.kind != "line":
        up, down = spread, spread
        if style.bounds is not None:
            lo, hi = style.bounds
            ys = [None if v is None else float(v) for v in common["y"]]
            up = [
                e if v is None else max(0.0, min(e, hi - v))
                for v, e in zip(ys, spread, strict=True)
            ]
            down = [
                e if v is None else max(0.0, min(e, v - lo))
                for v, e in zip(ys, spread, strict=True)
            ]
        common["error_y"] = {"type": "data", "array": up, "arrayminus": down,
                             "symmetric": up == down, "visible": True}  # fmt: skip
    if style.labelled and panel.kind == "scatter" and "_label" in rows.frame.columns:
        common["text"] = rows.values("_label")
        # up and to the right: clear of the point's vertical error bar and of the horizontal
        # best-so-far line through it (centred above, the bar and the line crossed the label)
        common["textposition"] = "top right"
        common["textfont"] = {"size": 10, "color": hue}
        common["cliponaxis"] = False  # a label may reach past the chart's edge
    if panel.kind == "bar":
        return trace("bar", marker={"color": hue}, **common)
    if panel.kind == "scatter":
        joined = panel.line_group is not None and rows.height > 1
        size: int | list[int] = 8
        if joined:  # one configuration's estimate as its runs came in: the last point is it
            n = rows.height
            size = [4] * (n - 1) + [9]
            if "error_y" in common:
                for key in ("array", "arrayminus"):
                    common["error_y"][key] = [0.0] * (n - 1) + common["error_y"][key][-1:]
            if "text" in common:
                common["text"] = [""] * (n - 1) + common["text"][-1:]
        return trace(
            "scatter",
            mode=("lines+markers" if joined else "markers") + ("+text" if "text" in common else ""),
            marker={"color": hue, "size": size},
            line={"color": hue, "width": 1} if joined else None,
            **common,
        )
    if spread is not None:
        band = _band(common["x"], common["y"], spread, hue, name, esc(panel.error))
        fig.add_trace(band, row=row, col=col)
    return trace(
        "scatter",
        mode="lines" if panel.kind == "pr_curve" else "lines+markers",
        line={
            "color": hue,
            "shape": "hv" if panel.kind == "pr_curve" else "linear",
            **({"dash": style.dash} if style.dash != "solid" else {}),
        },
        **common,
    )


def _facet_bounds(part: pl.DataFrame) -> tuple[float, float] | None:
    """The range of the one metric of a facet's rows (``base_metric``), else None."""
    if "base_metric" not in part.columns:
        return None
    names = [n for n in distinct(part["base_metric"]) if n is not None]
    return value_range(str(names[0])) if len(names) == 1 else None


def _with_labels(panel: Panel, frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with a ``_label`` column (each configuration's label, as the leaderboard
    writes it) where the panel joins points by configuration (``line_group``) and the rows
    name their experiment and runs; else as it is."""
    if panel.kind != "scatter" or panel.line_group is None:
        return frame
    if not {"experiment", "run"} <= set(frame.columns):
        return frame
    labels = [
        label(str(e), [r.split("/", 1)[-1] for r in str(runs or "").split(", ")], str(c))
        for e, runs, c in zip(frame["experiment"], frame["run"], frame[panel.line_group],
                              strict=True)
    ]  # fmt: skip
    return frame.with_columns(_label=pl.Series(labels, dtype=pl.String))


def _xy_figure(panel: Panel, frame: pl.DataFrame) -> Figure:
    """line, scatter, bar and pr_curve: one trace per color value in each facet (and per
    ``line_group`` value: a line never joins two of them); with ``error``, a band around
    each line (y ± error) or error bars on marks and bars, cut to the metric's range. Past
    the palette's colours, lines repeat them dashed, so no two lines of a chart look alike.
    A y axis of one metric (``base_metric``) is zoomed to the values drawn, within the
    metric's range; a time axis gets ticks for its span; few points print their labels."""
    colours = palette()
    x, y = panel.x or "", panel.y or ""
    frame = _with_labels(panel, frame)
    facets = distinct(frame[panel.facet]) if panel.facet else [None]
    colors = distinct(frame[panel.color]) if panel.color else [None]
    x_dtype = frame[x].dtype
    categorical = x_dtype == pl.String or x_dtype == pl.Categorical
    cols = max(1, min(len(facets), panel.facet_cols))
    tick_px, ticks = tick_room([plain(v) for v in distinct(frame[x])] if categorical else [], cols)
    lay = grid_layout(panel, len(facets), titled=panel.facet is not None, tick_px=tick_px)
    fig = make_grid(lay, [esc(plain(f)) for f in facets] if panel.facet else None)
    shown: set[Any] = set()
    for f_index, part in enumerate(split(frame, panel.facet, facets)):
        row, col = cell(f_index, cols)
        by_color = split(part, panel.color, colors)
        bounds = _facet_bounds(part) if panel.kind in ("scatter", "line") else None
        # a configuration is one point (its earlier estimates lead to it)
        n_points = part.select(panel.line_group).n_unique() if panel.line_group else part.height
        zoom = "base_metric" in part.columns and panel.kind in ("scatter", "line")
        lows: list[float | None] = []
        highs: list[float | None] = []
        for c_index, (color, group) in enumerate(zip(colors, by_color, strict=True)):
            if group.height == 0:
                continue
            if panel.kind != "bar" and not categorical:  # lines run along x
                group = group.sort(x, maintain_order=True, nulls_last=True)
            name = esc(plain(color)) if panel.color else esc(y)
            style = _Style(
                hue=colours[c_index % len(colours)],
                dash=_DASHES[(c_index // len(colours)) % len(_DASHES)],
                bounds=bounds,
                labelled=n_points <= _FEW_POINTS,
            )
            # a line joins the rows of one `line_group` value only (one configuration)
            lines = distinct(group[panel.line_group]) if panel.line_group else [None]
            for rows in _Rows(group).split(panel.line_group, lines):
                mark = _mark(panel, rows, name, style, fig, row, col)
                mark["showlegend"] = panel.color is not None and color not in shown
                shown.add(color)
                fig.add_trace(mark, row=row, col=col)
                if not zoom:
                    continue
                err = mark.get("error_y", {})
                ups = err.get("array") or [0.0] * len(mark["y"])
                downs = err.get("arrayminus") or ups
                lows += [
                    None if v is None else v - d for v, d in zip(mark["y"], downs, strict=True)
                ]
                highs += [None if v is None else v + u for v, u in zip(mark["y"], ups, strict=True)]
            higher = _direction(panel, group) if panel.best_so_far else None
            if higher is not None:
                xs, ys = plot_values(group[x]), plot_values(group[y])
                best = _running_best(ys, higher)
                fig.add_trace(
                    trace(
                        "scatter",
                        x=xs,
                        y=best,
                        mode="lines",
                        line={"color": style.hue, "dash": "dot", "shape": "hv"},
                        name=f"{name}: best so far",
                        legendgroup=name,
                        showlegend=False,
                        hovertemplate="best so far=%{y}<extra>" + name + "</extra>",
                    ),
                    row=row,
                    col=col,
                )
        if zoom:
            fig.update_yaxes(row=row, col=col, **value_axis(lows, highs, bounds))
    if panel.kind == "bar":
        fig.update_layout(barmode="group")
    if x_dtype.is_temporal():
        fig.update_xaxes(type="date", **time_axis(frame[x].to_list()))
    elif categorical:
        fig.update_xaxes(type="category", **ticks)
    if panel.kind == "pr_curve":
        fig.update_xaxes(range=[0, 1.02])
        fig.update_yaxes(range=[0, 1.02])
    axis_titles(fig, len(facets), cols, esc(panel.x_title or x), esc(panel.y_title or y))
    return fig


def panel_figure(panel: Panel, frame: pl.DataFrame) -> Figure | None:
    """The figure of a chart panel (None for tables and when ``frame`` is empty; for
    leaderboards, the charts under the tables)."""
    if frame.height == 0 or panel.kind == "table":
        return None
    if panel.kind == "heatmap":
        return heatmap_figure(panel, frame)
    if panel.kind == "comparison":
        drawn = paired(frame)
        return comparison_figure(panel, drawn) if drawn.height else None
    if panel.kind == "leaderboard":
        return board_figure(panel, frame)
    if panel.kind == "confusion":
        return confusion_figure(panel, frame)
    if panel.kind == "pr_curve":
        panel = replace(panel, x="recall", y="precision", color="run", facet="task",
                        hover=("n_lists",))  # fmt: skip
        frame, lows = pr_facets(frame)
        fig = _xy_figure(panel, frame)
        cols = max(1, min(len(lows), panel.facet_cols))
        for index, low in enumerate(lows):
            row, col = cell(index, cols)
            fig.update_yaxes(row=row, col=col, range=[low, 1.005 if low > 0 else 1.02])
        return fig
    return _xy_figure(panel, frame)
