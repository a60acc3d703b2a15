"""Dashboard figures (pure): a panel and its frame -> a Plotly figure; no database, no files.

:func:`panel_figure` draws a panel by its kind: lines, markers, bars and PR curves (one trace
per ``color`` value in each ``facet``, optionally with the best so far), heatmaps (one per
facet, each with its own color range) and run comparisons (sorted per-list differences with
the bootstrap interval of ``evalstore compare``). Every user string is escaped for Plotly,
which renders some HTML in its labels.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any

import plotly.graph_objects as go
import polars as pl
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from evalstore.dashboards.specs import Panel
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.metrics import METRICS, get

__all__ = ["panel_figure"]

_PALETTE = qualitative.Plotly + qualitative.D3 + qualitative.Dark24
_ROW_PX = 320


def _esc(value: Any) -> str:
    """Text that Plotly shows literally: it renders some HTML tags in labels, not entities."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _values(series: pl.Series) -> list[Any]:
    """A column as JSON-ready values: text escaped for Plotly, times as ISO text, NaN None."""
    if series.dtype.is_temporal():
        return [None if v is None else _time_text(v) for v in series.to_list()]
    if series.dtype.is_numeric():
        return [
            None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v
            for v in series.to_list()
        ]
    return [None if v is None else _esc(_plain(v)) for v in series.to_list()]


def _time_text(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _plain(value: Any) -> str:
    """A cell as text: lists joined, floats short, times without microseconds."""
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return format(value, ".4f") if value == 0 or 1e-3 <= abs(value) < 1e6 else f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value)
    if isinstance(value, (datetime, date)):
        return _time_text(value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _only(frame: pl.DataFrame, column: str | None, value: Any) -> pl.DataFrame:
    """The rows where ``column`` equals ``value`` (NULL matching NULL); all without a column."""
    return frame if column is None else frame.filter(pl.col(column).eq_missing(value))


def _order(series: pl.Series) -> list[Any]:
    """Distinct values in order of first appearance (the query's ORDER BY decides)."""
    return list(dict.fromkeys(series.to_list()))


@dataclass(frozen=True)
class _Layout:
    """Pixel sizes of a grid of charts: rows of heights ``row_px``, ``gap_px`` between rows
    (room for subplot titles and tick labels), ``bottom_px`` under the last row (x labels,
    the axis title and the legend), ``left_px`` for y labels (also kept between columns)."""

    n: int
    cols: int
    row_px: tuple[int, ...]
    gap_px: int
    top_px: int
    bottom_px: int
    left_px: int = 70

    @property
    def plot_px(self) -> int:
        return sum(self.row_px) + (len(self.row_px) - 1) * self.gap_px


def _layout(
    panel: Panel, n: int, *, titled: bool, row_px: Sequence[int] | None = None,
    tick_px: int = 0, left_px: int = 70,
) -> _Layout:  # fmt: skip
    cols = max(1, min(n, panel.facet_cols))
    rows = math.ceil(n / cols)
    heights = tuple(row_px) if row_px else (_ROW_PX,) * rows
    top = 64 if titled else 24
    return _Layout(n, cols, heights, top + 40 + tick_px, top, 100 + tick_px, left_px)


def _grid(lay: _Layout, titles: list[str] | None) -> go.Figure:
    rows = len(lay.row_px)
    fig = make_subplots(
        rows=rows,
        cols=lay.cols,
        subplot_titles=titles,
        row_heights=list(lay.row_px),
        vertical_spacing=lay.gap_px / lay.plot_px if rows > 1 else 0.0,
        # the page is about 1200 px wide: keep the y labels of a column clear of the left
        horizontal_spacing=min(0.3, (lay.left_px + 10) / 1200) if lay.cols > 1 else 0.0,
    )
    fig.update_layout(
        template="plotly_white",
        height=lay.plot_px + lay.top_px + lay.bottom_px,
        margin={"l": lay.left_px, "r": 30, "t": lay.top_px, "b": lay.bottom_px},
        # the legend sits under the x axis title, in the bottom margin
        legend={
            "orientation": "h",
            "yanchor": "top",
            "y": -(lay.bottom_px - 45) / lay.plot_px,
            "x": 0,
        },
        hoverlabel={"namelength": -1},
    )
    fig.update_annotations(font={"size": 13})
    return fig


def _cut(text: str) -> str:
    return text if len(text) <= 32 else text[:31] + "\u2026"


def _tick_room(labels: Sequence[str], cols: int) -> tuple[int, dict[str, Any]]:
    """Category tick labels: cut to 32 characters (the hover keeps them whole) and, when
    they would not fit side by side, turned 30 degrees with the room they need."""
    if not labels:
        return 0, {}
    cut = [_cut(v) for v in labels]
    longest = max(len(v) for v in cut)
    width = 1100 / cols
    axis: dict[str, Any] = {
        "categoryorder": "array",  # the query's order, whichever trace has the value first
        "categoryarray": [_esc(v) for v in labels],
        "tickmode": "array",
        "tickvals": [_esc(v) for v in labels],
        "ticktext": [_esc(v) for v in cut],
    }
    if longest * 7 * len(labels) <= width:
        return 0, axis
    axis["tickangle"] = -30
    return int(longest * 7 * 0.5), axis


def _cell(index: int, cols: int) -> tuple[int, int]:
    return index // cols + 1, index % cols + 1


def _axis_titles(fig: go.Figure, n: int, cols: int, x: str, y: str) -> None:
    """Axis titles once: x under the lowest chart of each column, y left of each row."""
    for index in range(n):
        row, col = _cell(index, cols)
        if index + cols >= n:
            fig.update_xaxes(title_text=x, row=row, col=col)
        if col == 1:
            fig.update_yaxes(title_text=y, row=row, col=col)


def _direction(panel: Panel, group: pl.DataFrame) -> bool:
    column = "base_metric" if "base_metric" in group.columns else "metric"
    names = [n for n in _order(group[column]) if n is not None]
    try:
        directions = {get(str(n)).higher_is_better for n in names}
    except EvalstoreError:
        raise InvalidInput(
            f"{panel.where}: best_so_far needs registered metric names in `{column}`, "
            f"got {', '.join(map(str, names))}"
        ) from None
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


def _hover(panel: Panel, group: pl.DataFrame, extra: str = "") -> dict[str, Any]:
    lines = [f"{_esc(panel.x)}=%{{x}}", f"{_esc(panel.y)}=%{{y}}"]
    custom = None
    if panel.hover:
        custom = list(zip(*(_values(group[c]) for c in panel.hover), strict=True))
        lines += [f"{_esc(c)}=%{{customdata[{i}]}}" for i, c in enumerate(panel.hover)]
    return {"customdata": custom, "hovertemplate": "<br>".join(lines) + f"<extra>{extra}</extra>"}


def _xy_figure(panel: Panel, frame: pl.DataFrame) -> go.Figure:
    """line, scatter, bar and pr_curve: one trace per color value in each facet."""
    x, y = panel.x or "", panel.y or ""
    facets = _order(frame[panel.facet]) if panel.facet else [None]
    colors = _order(frame[panel.color]) if panel.color else [None]
    x_dtype = frame[x].dtype
    categorical = x_dtype == pl.String or x_dtype == pl.Categorical
    cols = max(1, min(len(facets), panel.facet_cols))
    tick_px, ticks = _tick_room([_plain(v) for v in _order(frame[x])] if categorical else [], cols)
    lay = _layout(panel, len(facets), titled=panel.facet is not None, tick_px=tick_px)
    fig = _grid(lay, [_esc(_plain(f)) for f in facets] if panel.facet else None)
    shown: set[Any] = set()
    for f_index, facet in enumerate(facets):
        row, col = _cell(f_index, cols)
        part = _only(frame, panel.facet, facet)
        for c_index, color in enumerate(colors):
            group = _only(part, panel.color, color)
            if group.height == 0:
                continue
            if panel.kind != "bar" and not categorical:  # lines run along x
                group = group.sort(x, maintain_order=True, nulls_last=True)
            name = _esc(_plain(color)) if panel.color else _esc(y)
            hue = _PALETTE[c_index % len(_PALETTE)]
            common = {
                "x": _values(group[x]),
                "y": _values(group[y]),
                "name": name,
                "legendgroup": name,
                "showlegend": panel.color is not None and color not in shown,
                **_hover(panel, group, name),
            }
            shown.add(color)
            if panel.kind == "bar":
                trace: Any = go.Bar(marker={"color": hue}, **common)
            elif panel.kind == "scatter":
                trace = go.Scatter(mode="markers", marker={"color": hue, "size": 8}, **common)
            else:
                trace = go.Scatter(
                    mode="lines" if panel.kind == "pr_curve" else "lines+markers",
                    line={"color": hue, "shape": "hv" if panel.kind == "pr_curve" else "linear"},
                    **common,
                )
            fig.add_trace(trace, row=row, col=col)
            if panel.best_so_far:
                best = _running_best(common["y"], _direction(panel, group))
                fig.add_trace(
                    go.Scatter(
                        x=common["x"],
                        y=best,
                        mode="lines",
                        line={"color": hue, "dash": "dot", "shape": "hv"},
                        name=f"{name}: best so far",
                        legendgroup=name,
                        showlegend=False,
                        hovertemplate="best so far=%{y}<extra>" + name + "</extra>",
                    ),
                    row=row,
                    col=col,
                )
    if panel.kind == "bar":
        fig.update_layout(barmode="group")
    if x_dtype.is_temporal():
        fig.update_xaxes(type="date")
    elif categorical:
        fig.update_xaxes(type="category", **ticks)
    if panel.kind == "pr_curve":
        fig.update_xaxes(range=[0, 1.02])
        fig.update_yaxes(range=[0, 1.02])
    _axis_titles(fig, len(facets), cols, _esc(x), _esc(y))
    return fig


def _heatmap_figure(panel: Panel, frame: pl.DataFrame) -> go.Figure:
    """One heatmap per facet, each with its own color range (metrics differ in scale): the
    cells print their values, and a single heatmap gets a color bar."""
    x, y, z = panel.x or "", panel.y or "", panel.z or ""
    facets = _order(frame[panel.facet]) if panel.facet else [None]
    parts = [_only(frame, panel.facet, f) for f in facets]
    cols = max(1, min(len(facets), panel.facet_cols))
    heights = []
    for start in range(0, len(parts), cols):
        tallest = max(len(_order(p[y])) for p in parts[start : start + cols])
        heights.append(max(120, 30 * tallest + 20))
    tick_px, ticks = _tick_room([_plain(v) for v in _order(frame[x])], cols)
    y_labels = [_plain(v) for v in _order(frame[y])]
    left_px = 40 + 7 * max(len(_cut(v)) for v in y_labels)
    lay = _layout(panel, len(facets), titled=panel.facet is not None, row_px=heights,
                  tick_px=tick_px, left_px=left_px)  # fmt: skip
    fig = _grid(lay, [_esc(_plain(f)) for f in facets] if panel.facet else None)
    for f_index, part in enumerate(parts):
        xs, ys = _order(part[x]), _order(part[y])
        cells: dict[tuple[Any, Any], Any] = {}
        for xv, yv, zv in zip(part[x].to_list(), part[y].to_list(), _values(part[z]),
                              strict=True):  # fmt: skip
            cells.setdefault((xv, yv), zv)
        row, col = _cell(f_index, cols)
        fig.add_trace(
            go.Heatmap(
                x=[_esc(_plain(v)) for v in xs],
                y=[_esc(_plain(v)) for v in ys],
                z=[[cells.get((xv, yv)) for xv in xs] for yv in ys],
                colorscale="Viridis",
                showscale=len(facets) == 1,
                colorbar={"title": {"text": _esc(z)}},
                texttemplate="%{z:.3f}" if len(xs) * len(ys) <= 600 else None,
                hovertemplate=f"{_esc(y)}=%{{y}}<br>{_esc(x)}=%{{x}}<br>{_esc(z)}=%{{z:.4f}}"
                "<extra></extra>",
                xgap=1,
                ygap=1,
            ),
            row=row,
            col=col,
        )
    fig.update_xaxes(type="category", **ticks)
    fig.update_yaxes(
        type="category",
        autorange="reversed",
        categoryorder="array",
        categoryarray=[_esc(v) for v in y_labels],
        tickmode="array",
        tickvals=[_esc(v) for v in y_labels],
        ticktext=[_esc(_cut(v)) for v in y_labels],
    )
    _axis_titles(fig, len(facets), cols, _esc(x), _esc(y))
    return fig


def _comparison_figure(panel: Panel, frame: pl.DataFrame) -> go.Figure:
    """Per-list differences (run - baseline) sorted, with the mean and its 95% bootstrap
    interval (:func:`evalstore.compare.paired_stats`, seed 0: the numbers of
    ``evalstore compare``); bars green where the run is better in the metric's direction."""
    from evalstore.compare import paired_stats

    keys = ["run", "baseline", "task", "metric", "params"]
    groups = frame.select(keys).unique(maintain_order=True).rows()
    titles = []
    stats = []
    for run, baseline, task, metric, params in groups:
        part = frame
        for key, value in zip(keys, (run, baseline, task, metric, params), strict=True):
            part = _only(part, key, value)
        # resampled in group_id order, as `evalstore compare` does: the same interval
        in_order = part.sort("group_id", nulls_last=True)["diff"].cast(pl.Float64).to_numpy()
        s = paired_stats(in_order, n_boot=1000, seed=0)
        part = part.sort("diff", "group_id", nulls_last=True)
        higher = METRICS[metric].higher_is_better if metric in METRICS else True
        wins, losses = (s.positive, s.negative) if higher else (s.negative, s.positive)
        shown = _short_params(params)
        titles.append(
            f"{_esc(run)} vs {_esc(baseline)}<br>{_esc(task)} · {_esc(metric)}{_esc(shown)}: "
            f"mean {s.mean:+.4f} [{s.ci_low:+.4f}, {s.ci_high:+.4f}], p={s.p_value:.3g}, "
            f"better/worse {wins}/{losses}"
        )
        stats.append((part, s, higher))
    lay = _layout(panel, len(groups), titled=True)
    fig = _grid(lay, titles)
    cols = lay.cols
    for index, (part, s, higher) in enumerate(stats):
        row, col = _cell(index, cols)
        n = part.height
        ranks = list(range(1, n + 1))
        diffs = _values(part["diff"])
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
                        _values(part["group_id"]),
                        _values(part["value"]),
                        _values(part["baseline_value"]),
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
    _axis_titles(fig, len(groups), cols, "lists, sorted by difference", "run - baseline")
    return fig


def _short_params(params: Any) -> str:
    try:
        items = json.loads(params or "{}")
    except (TypeError, ValueError):
        return f" {params}"
    shown = [f"{k}={v}" for k, v in items.items() if (k, v) != ("ties", "grouped")]
    return f" ({', '.join(shown)})" if shown else ""


def panel_figure(panel: Panel, frame: pl.DataFrame) -> go.Figure | None:
    """The figure of a chart panel (None for tables and when ``frame`` is empty)."""
    if frame.height == 0 or panel.kind == "table":
        return None
    if panel.kind == "heatmap":
        return _heatmap_figure(panel, frame)
    if panel.kind == "comparison":
        return _comparison_figure(panel, frame)
    if panel.kind == "pr_curve":
        panel = replace(panel, x="recall", y="precision", color="run", facet="task",
                        hover=("n_lists",))  # fmt: skip
    return _xy_figure(panel, frame)
