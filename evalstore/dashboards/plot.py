"""Plotly figures as plain data (pure): the JSON that Plotly.js draws, without Plotly's Python
objects.

A :class:`Figure` holds ``data`` (one dict per trace, Plotly.js' attribute names) and
``layout``; :meth:`Figure.grid` lays out rows x cols subplots as ``plotly.subplots.
make_subplots`` does (the same axis names, domains and title annotations:
``tests/test_dashboard_plot.py`` compares them), and :meth:`Figure.to_json` writes the figure
as Plotly's JSON engine does (``<``, ``>`` and ``/`` escaped, safe inside ``<script>``; NaN and
infinities as ``null``). Building Plotly's validated objects cost more than everything else of
a dashboard of 1,000 runs; these dicts are what those objects serialise to.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["Figure", "palette", "template", "trace"]

_FLAT = frozenset({str, int, float, bool, type(None)})
_SWAP = (("<", "\\u003c"), (">", "\\u003e"), ("/", "\\u002f"))


@cache
def template() -> dict[str, Any]:
    """The ``plotly_white`` template, as Plotly ships it (``package_data/templates``)."""
    path = resources.files("plotly") / "package_data" / "templates" / "plotly_white.json"
    template: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return template


@cache
def palette() -> tuple[str, ...]:
    """Plotly's qualitative colours, then D3's and Dark24's (44 before one repeats)."""
    from plotly.colors import qualitative

    return (*qualitative.Plotly, *qualitative.D3, *qualitative.Dark24)


def trace(kind: str, **props: Any) -> dict[str, Any]:
    """A trace of type ``kind`` (``scatter``, ``bar``, ``heatmap``...) with the attributes
    given; None leaves an attribute unset, as in Plotly's constructors."""
    return {"type": kind, **{k: v for k, v in props.items() if v is not None}}


class Figure:
    """A figure's traces and layout as dicts; subplots addressed by (row, col) from 1."""

    def __init__(self) -> None:
        self.data: list[dict[str, Any]] = []
        self.layout: dict[str, Any] = {}
        self._cols = 1
        self._cells = 1

    @classmethod
    def grid(
        cls,
        rows: int,
        cols: int,
        *,
        titles: Sequence[str] | None = None,
        row_heights: Sequence[float] | None = None,
        vertical_spacing: float = 0.0,
        horizontal_spacing: float = 0.0,
        title_font: dict[str, Any] | None = None,
        row_gaps: Sequence[float] | None = None,
    ) -> Figure:
        """``rows`` x ``cols`` subplots filled from the top left, as ``make_subplots`` places
        them: subplot k (from 1, row by row) draws on ``xaxis{k}``/``yaxis{k}`` (``x``/``y``
        for the first), each title an annotation centred above its subplot. ``row_gaps``
        (the gap under each row but the last, as fractions) replaces ``vertical_spacing``
        where rows need different gaps (``make_subplots`` has no such option)."""
        fig = cls()
        fig._cols, fig._cells = cols, rows * cols
        heights = list(row_heights) if row_heights else [1.0] * rows
        gaps = list(row_gaps) if row_gaps is not None else [vertical_spacing] * (rows - 1)
        width = (1.0 - horizontal_spacing * (cols - 1)) / cols
        scale = (1.0 - sum(gaps)) / sum(heights)
        tall = [h * scale for h in heights]
        annotations = []
        for k in range(rows * cols):
            r, c = divmod(k, cols)
            x0 = c * (width + horizontal_spacing)
            # rows counted from the bottom, as Plotly's domains are
            y0 = sum(tall[r + 1 :]) + sum(gaps[r:])
            x_dom, y_dom = [x0, x0 + width], [y0, y0 + tall[r]]
            suffix = str(k + 1) if k else ""
            fig.layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", "domain": x_dom}
            fig.layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "domain": y_dom}
            if titles is not None and k < len(titles):
                annotations.append(
                    {
                        "font": dict(title_font or {"size": 16}),
                        "showarrow": False,
                        "text": titles[k],
                        "x": (x_dom[0] + x_dom[1]) / 2.0,
                        "xanchor": "center",
                        "xref": "paper",
                        "y": y_dom[1],
                        "yanchor": "bottom",
                        "yref": "paper",
                    }
                )
        if annotations:
            fig.layout["annotations"] = annotations
        return fig

    def _suffix(self, row: int | None, col: int | None) -> str:
        if row is None or col is None:
            return ""
        k = (row - 1) * self._cols + col
        if not 1 <= k <= self._cells or not 1 <= col <= self._cols:
            raise IndexError(f"no subplot at row {row}, col {col}")
        return str(k) if k > 1 else ""

    def add_trace(
        self, trace: dict[str, Any], row: int | None = None, col: int | None = None
    ) -> None:
        """Append a trace (``trace["type"]`` names its kind), on the subplot at (row, col)."""
        suffix = self._suffix(row, col)
        if suffix:
            trace = {**trace, "xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}
        self.data.append(trace)

    def domain(self, row: int, col: int) -> tuple[list[float], list[float]]:
        """The x and y domains (fractions of the plot area) of subplot (row, col)."""
        suffix = self._suffix(row, col)
        x, y = self.layout[f"xaxis{suffix}"], self.layout[f"yaxis{suffix}"]
        return list(x.get("domain", [0.0, 1.0])), list(y.get("domain", [0.0, 1.0]))

    def _axes(self, letter: str, row: int | None, col: int | None) -> list[dict[str, Any]]:
        if row is not None and col is not None:
            return [self.layout.setdefault(f"{letter}axis{self._suffix(row, col)}", {})]
        names = [k for k in self.layout if k.startswith(f"{letter}axis")] or [f"{letter}axis"]
        return [self.layout.setdefault(k, {}) for k in names]

    def update_xaxes(self, row: int | None = None, col: int | None = None, **props: Any) -> None:
        """Set ``props`` on every x axis, or on the one of subplot (row, col)."""
        for axis in self._axes("x", row, col):
            _merge(axis, props)

    def update_yaxes(self, row: int | None = None, col: int | None = None, **props: Any) -> None:
        """Set ``props`` on every y axis, or on the one of subplot (row, col)."""
        for axis in self._axes("y", row, col):
            _merge(axis, props)

    def update_layout(self, props: dict[str, Any] | None = None, **more: Any) -> None:
        """Merge ``props`` into the layout (dicts merged key by key, the rest replaced)."""
        _merge(self.layout, {**(props or {}), **more})

    def to_dict(self) -> dict[str, Any]:
        return {"data": self.data, "layout": self.layout}

    def to_json(self) -> str:
        """The figure as JSON that is safe inside a ``<script>`` element."""
        figure = self.to_dict()
        try:  # in one pass where every float is finite (json refuses NaN and infinities)
            text = json.dumps(figure, separators=(",", ":"), allow_nan=False)
        except ValueError:
            text = json.dumps(_finite(figure), separators=(",", ":"), allow_nan=False)
        for raw, escaped in _SWAP:
            text = text.replace(raw, escaped)
        return text


def _merge(target: dict[str, Any], props: dict[str, Any]) -> None:
    for key, value in props.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float as None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # the common case, fast: flat values, every float finite (x - x is NaN otherwise)
        if all(type(v) in _FLAT and (type(v) is not float or v - v == 0) for v in value):
            return value
        return [_finite(v) for v in value]
    return value
