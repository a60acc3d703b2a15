"""Dashboards as code: TOML specs -> self-contained Plotly HTML pages.

A spec (``dashboards/*.toml``) has a ``title``, a ``description`` and ``[[panels]]``; each
panel names a query (a named query from ``sql/dashboards/``, or inline ``sql``), a ``kind``
of chart and the columns to draw (``x``, ``y``, ``z``, ``color``, ``facet``). Every query gets
the parameters ``$experiments`` (varchar[]) and ``$runs`` (integer[]), NULL meaning all, so
that one filter applies to every panel. See ``docs/dashboards.md``.

The layers: :func:`load_spec` reads and validates a spec (no database); :func:`panel_data`
runs a panel's query; :func:`panel_figure` and :func:`render_page` are pure (frames in,
figures and HTML out); :func:`write_dashboards` writes the pages, an ``index.html`` and one
shared ``plotly.min.js`` (never a CDN: the pages work offline). Output is deterministic: the
same database gives byte-identical files. Every user string (run names, tags, parameters,
slices) is escaped for HTML, and for Plotly, which renders some HTML in its labels.
"""

from __future__ import annotations

import html
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import plotly.graph_objects as go
import polars as pl
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from evalstore import queries
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.metrics import METRICS, get

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (requires-python >= 3.10)
    import tomli as tomllib

if TYPE_CHECKING:
    from evalstore.runs import RunRef
    from evalstore.store import Progress, Store

__all__ = [
    "KINDS",
    "Dashboard",
    "Panel",
    "default_specs",
    "evaluate_selected",
    "load_spec",
    "panel_data",
    "panel_figure",
    "render_dashboard",
    "render_index",
    "render_page",
    "selected_run_ids",
    "write_dashboards",
]

KINDS = ("line", "scatter", "bar", "heatmap", "table", "pr_curve", "comparison")
_AXES = ("x", "y", "z", "color", "facet")
_REQUIRED_AXES = {
    "line": ("x", "y"),
    "scatter": ("x", "y"),
    "bar": ("x", "y"),
    "heatmap": ("x", "y", "z"),
    "table": (),
    "pr_curve": (),
    "comparison": (),
}
# Kinds whose query must return fixed columns (the chart's columns are implied).
_FIXED_COLUMNS = {
    "pr_curve": ("run_id", "run", "task"),
    "comparison": ("run", "baseline", "task", "metric", "params", "group_id", "value",
                   "baseline_value", "diff"),
}  # fmt: skip
_PANEL_KEYS = {
    "title", "description", "kind", "query", "sql", *_AXES, "best_so_far", "columns", "hover",
    "params", "limit", "facet_cols", "empty",
}  # fmt: skip
_SPEC_KEYS = {"title", "description", "panels"}
_FILTERS = ("experiments", "runs")
_PALETTE = qualitative.Plotly + qualitative.D3 + qualitative.Dark24
_ROW_PX = 320


@dataclass(frozen=True)
class Panel:
    """One panel of a dashboard, as declared in its spec (see docs/dashboards.md)."""

    index: int
    title: str
    kind: str
    query: str | None = None
    sql: str | None = None
    x: str | None = None
    y: str | None = None
    z: str | None = None
    color: str | None = None
    facet: str | None = None
    description: str = ""
    best_so_far: bool = False
    columns: tuple[str, ...] = ()
    hover: tuple[str, ...] = ()
    params: tuple[tuple[str, Any], ...] = ()
    limit: int = 200
    facet_cols: int = 2
    empty: str = ""
    where: str = field(default="", compare=False)  # "FILE: panel N ('title')", for errors

    def __post_init__(self) -> None:
        if not self.where:
            object.__setattr__(self, "where", f"panel {self.index} ({self.title!r})")

    @property
    def div_id(self) -> str:
        """The fixed id of the panel's element in the page: ``panel-<n>``."""
        return f"panel-{self.index}"


@dataclass(frozen=True)
class Dashboard:
    """A parsed spec: its file stem names the page (``overview`` -> ``overview.html``)."""

    name: str
    title: str
    description: str
    panels: tuple[Panel, ...]
    path: Path


# -- specs --------------------------------------------------------------------------------


def dashboards_dir() -> Path:
    """The folder of the default specs: inside the installed package or in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "dashboards", here.parent / "dashboards"):
        if candidate.is_dir() and any(candidate.glob("*.toml")):
            return candidate
    raise EvalstoreError(f"cannot find evalstore's dashboards/ folder next to {here}")


def default_specs() -> list[Path]:
    """The default dashboard specs: the overview first, then by file name."""
    return sorted(dashboards_dir().glob("*.toml"), key=lambda p: (p.stem != "overview", p.name))


def _query_name(ref: str) -> str:
    return ref if "/" in ref else f"dashboards/{ref}"


def _panel(path: Path, index: int, raw: Any) -> Panel:
    where = f"{path}: panel {index}"
    if not isinstance(raw, dict):
        raise InvalidInput(f"{where}: a panel is a table ([[panels]]), got {type(raw).__name__}")
    title = raw.get("title")
    if isinstance(title, str) and title.strip():
        where = f"{path}: panel {index} ({title!r})"
    else:
        raise InvalidInput(f"{where}: needs a non-empty `title`")
    unknown = sorted(set(raw) - _PANEL_KEYS)
    if unknown:
        raise InvalidInput(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_PANEL_KEYS))}"
        )
    kind = raw.get("kind")
    if kind not in KINDS:
        raise InvalidInput(f"{where}: unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    for key in ("description", "query", "sql", "empty", *_AXES):
        if key in raw and not (isinstance(raw[key], str) and raw[key].strip()):
            raise InvalidInput(f"{where}: `{key}` must be a non-empty string")
    if ("query" in raw) == ("sql" in raw):
        raise InvalidInput(f"{where}: give either `query` (a named query) or `sql`, not both")
    if "query" in raw:
        name = _query_name(raw["query"])
        try:
            queries.load(name)
        except EvalstoreError:
            known = ", ".join(n.removeprefix("dashboards/") for n in _panel_queries())
            raise InvalidInput(
                f"{where}: unknown query {raw['query']!r}; queries under sql/dashboards/: {known}"
            ) from None
    for axis in _REQUIRED_AXES[kind]:
        if axis not in raw:
            raise InvalidInput(f"{where}: a {kind} panel needs `{axis}` (a column name)")
    if raw.get("best_so_far", False) not in (True, False):
        raise InvalidInput(f"{where}: `best_so_far` must be true or false")
    if raw.get("best_so_far") and kind != "line":
        raise InvalidInput(f"{where}: `best_so_far` applies to line panels only, not {kind}")
    lists = {}
    for key in ("columns", "hover"):
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise InvalidInput(f"{where}: `{key}` must be a list of column names")
        lists[key] = tuple(value)
    params = raw.get("params", {})
    if not isinstance(params, dict) or set(params) & set(_FILTERS):
        raise InvalidInput(
            f"{where}: `params` must be a table of query parameters other than "
            "experiments and runs (those come from the filters)"
        )
    ints = {}
    for key, default, low in (("limit", 200, 1), ("facet_cols", 2, 1)):
        value = raw.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise InvalidInput(f"{where}: `{key}` must be an integer >= {low}")
        ints[key] = value
    if kind == "pr_curve" and params.get("ties", "grouped") not in (
        "grouped",
        "optimistic",
        "pessimistic",
        "input",
    ):
        raise InvalidInput(f"{where}: unknown ties {params['ties']!r}")
    return Panel(
        index=index,
        title=title,
        kind=kind,
        query=_query_name(raw["query"]) if "query" in raw else None,
        sql=raw.get("sql"),
        description=raw.get("description", ""),
        best_so_far=bool(raw.get("best_so_far", False)),
        columns=lists["columns"],
        hover=lists["hover"],
        params=tuple(sorted(params.items())),
        empty=raw.get("empty", ""),
        where=where,
        **{a: raw.get(a) for a in _AXES},
        **ints,
    )


def _panel_queries() -> list[str]:
    return queries.names_with_prefix("dashboards/")


def load_spec(path: str | Path) -> Dashboard:
    """Read and validate a dashboard spec.

    Raises:
        InvalidInput: unreadable or invalid TOML, an unknown key or kind, a missing axis, an
            unknown query; the message names the file and the panel.
    """
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the dashboard spec: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: not a valid TOML dashboard spec: {exc}") from None
    unknown = sorted(set(raw) - _SPEC_KEYS)
    if unknown:
        raise InvalidInput(f"{path}: unknown key(s) {', '.join(unknown)}; known: title, "
                           "description, panels")  # fmt: skip
    if path.stem == "index":
        raise InvalidInput(f"{path}: a dashboard cannot be called index (the index page)")
    title = raw.get("title")
    if not isinstance(title, str) or not title.strip():
        raise InvalidInput(f"{path}: needs a non-empty `title`")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise InvalidInput(f"{path}: `description` must be a string")
    panels = raw.get("panels")
    if not isinstance(panels, list) or not panels:
        raise InvalidInput(f"{path}: needs at least one [[panels]] table")
    return Dashboard(
        name=path.stem,
        title=title,
        description=description,
        panels=tuple(_panel(path, i + 1, p) for i, p in enumerate(panels)),
        path=path,
    )


# -- data ---------------------------------------------------------------------------------


def selected_run_ids(
    store: Store, experiments: Sequence[str] = (), runs: Sequence[RunRef] = ()
) -> list[int]:
    """The ids of the runs that pass the filters (every run when both are empty).

    Raises:
        RunNotFound: a run reference matches no run.
        InvalidInput: an experiment has no run.
    """
    return store.query("dashboards/selected_runs", _filters(store, experiments, runs))[
        "run_id"
    ].to_list()


def _filters(
    store: Store, experiments: Sequence[str], runs: Sequence[RunRef]
) -> dict[str, list[Any] | None]:
    known = set(store.query("dashboards/experiments")["experiment"].to_list())
    missing = [e for e in experiments if e not in known]
    if missing:
        raise InvalidInput(
            f"no runs in experiment(s) {', '.join(map(repr, missing))}; "
            f"experiments: {', '.join(sorted(known)) or '(none)'}"
        )
    ids = list(dict.fromkeys(store.resolve(r) for r in runs))
    return {
        "experiments": list(dict.fromkeys(experiments)) or None,
        "runs": ids or None,
    }


def evaluate_selected(
    store: Store,
    experiments: Sequence[str] = (),
    runs: Sequence[RunRef] = (),
    progress: Progress | None = None,
) -> None:
    """Compute the standard metrics of the selected runs where they are missing or stale
    (the dashboards draw stored values). Needs a writable store."""
    from evalstore.evaluate import evaluate

    ids = selected_run_ids(store, experiments, runs)
    if ids:
        evaluate(store, ids, progress=progress)


def panel_data(store: Store, panel: Panel, filters: Mapping[str, Any]) -> pl.DataFrame:
    """Run a panel's query with the filters and the panel's ``params``; check its columns.

    For ``pr_curve`` panels the query lists (run_id, run, task) and the curves come from
    ``dashboards/pr_points``: the result has run, task, recall, precision, n_lists.

    Raises:
        InvalidInput: the query failed, is not a single SELECT, or lacks a named column.
    """
    values = {**filters, **dict(panel.params)}
    if panel.sql is not None:
        try:
            statements = store.con.extract_statements(panel.sql)
        except duckdb.Error as exc:
            raise InvalidInput(f"{panel.where}: cannot parse `sql`: {_first_line(exc)}") from None
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            raise InvalidInput(f"{panel.where}: `sql` must be a single read-only SELECT query")
        query = queries.Query(panel.div_id, panel.sql, Path(panel.div_id))
    else:
        query = queries.load(panel.query or "")
    try:
        frame = queries.fetch(store.con, query, values)
    except duckdb.Error as exc:
        raise InvalidInput(f"{panel.where}: the query failed: {_first_line(exc)}") from None
    needed = [getattr(panel, a) for a in _AXES if getattr(panel, a)]
    needed += [*panel.columns, *panel.hover, *_FIXED_COLUMNS.get(panel.kind, ())]
    if panel.best_so_far and not {"base_metric", "metric"} & set(frame.columns):
        needed.append("base_metric")
    for column in dict.fromkeys(needed):
        if column not in frame.columns:
            raise InvalidInput(
                f"{panel.where}: column {column!r} is not in the query result "
                f"(columns: {', '.join(frame.columns) or 'none'})"
            )
    if panel.kind == "pr_curve":
        frame = _pr_points(store, frame, str(dict(panel.params).get("ties", "grouped")))
    return frame


def _pr_points(store: Store, runs: pl.DataFrame, ties: str) -> pl.DataFrame:
    frames = []
    for task in dict.fromkeys(runs["task"].to_list()):
        chosen = runs.filter(pl.col("task") == task).select("run_id", "run")
        points = store.query(
            "dashboards/pr_points",
            {"runs": chosen["run_id"].to_list(), "task": task, "ties": ties},
        )
        joined = chosen.join(points, on="run_id", how="inner", maintain_order="left")
        frames.append(joined.with_columns(task=pl.lit(task)))
    if not frames:
        schema = {"run": pl.String, "task": pl.String, "recall": pl.Float64,
                  "precision": pl.Float64, "n_lists": pl.Int64}  # fmt: skip
        return pl.DataFrame(schema=schema)
    return pl.concat(frames, how="vertical_relaxed").select(
        "run", "task", "recall", "precision", "n_lists"
    )


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


# -- figures (pure) -----------------------------------------------------------------------


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


# -- HTML (pure) --------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;
background:#f6f7f9}
header{background:#fff;border-bottom:1px solid #ddd;padding:16px 32px}
header nav a{color:#1f77b4;text-decoration:none;font-size:14px}
h1{margin:6px 0 4px;font-size:24px}h2{margin:0 0 6px;font-size:18px}
main{padding:16px 32px;max-width:1400px}
.panel{background:#fff;border:1px solid #ddd;border-radius:6px;padding:16px;margin:0 0 20px}
.desc{color:#555;margin:0 0 10px;font-size:14px}.filters{color:#555;font-size:13px}
.empty{color:#7a4b00;background:#fff6e0;border:1px solid #f0d090;padding:12px;
border-radius:4px;margin:0}
.table-wrap{overflow-x:auto;max-height:640px;overflow-y:auto}
table.data{border-collapse:collapse;font-size:13px;width:100%}
table.data th{position:sticky;top:0;background:#f0f2f5;text-align:left}
table.data th,table.data td{border-bottom:1px solid #e5e5e5;padding:4px 8px;white-space:nowrap}
table.data td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#777;font-size:12px;margin:6px 0 0}
ul.dashboards{list-style:none;padding:0}ul.dashboards li{background:#fff;border:1px solid #ddd;
border-radius:6px;padding:12px 16px;margin:0 0 12px}
ul.dashboards a{font-size:18px;color:#1f77b4;text-decoration:none}
"""

_SCRIPT = """
(function () {
  var blocks = document.querySelectorAll('script[type="application/json"][data-plot]');
  if (typeof Plotly === "undefined") {
    for (var i = 0; i < blocks.length; i++) {
      document.getElementById(blocks[i].dataset.plot).textContent =
        "plotly.min.js did not load: keep it in the folder of this page.";
    }
    return;
  }
  for (var j = 0; j < blocks.length; j++) {
    var fig = JSON.parse(blocks[j].textContent);
    Plotly.newPlot(blocks[j].dataset.plot, fig.data, fig.layout,
                   {responsive: true, displaylogo: false});
  }
})();
"""


def _figure_json(fig: go.Figure) -> str:
    # plotly's json engine escapes <, > and / (safe inside <script>) and writes NaN as null
    text = fig.to_json(engine="json", validate=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _table_html(panel: Panel, frame: pl.DataFrame) -> str:
    columns = list(panel.columns) or frame.columns
    shown = frame.head(panel.limit)
    numeric = {c for c in columns if frame[c].dtype.is_numeric()}
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    rows = []
    for row in shown.select(columns).iter_rows():
        cells = "".join(
            f'<td class="num">{html.escape(_plain(v))}</td>'
            if c in numeric
            else f"<td>{html.escape(_plain(v))}</td>"
            for c, v in zip(columns, row, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    body = "\n".join(rows)
    note = (
        f'<p class="note">Showing the first {panel.limit} of {frame.height} rows.</p>'
        if frame.height > panel.limit
        else ""
    )
    return (
        f'<div class="table-wrap"><table class="data" id="{panel.div_id}-table">'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>{note}"
    )


def _panel_html(panel: Panel, frame: pl.DataFrame) -> str:
    parts = [f'<section class="panel" id="{panel.div_id}">', f"<h2>{html.escape(panel.title)}</h2>"]
    if panel.description:
        parts.append(f'<p class="desc">{html.escape(panel.description)}</p>')
    if frame.height == 0:
        message = panel.empty or "the query returned no rows for the selected runs."
        parts.append(f'<p class="empty">No data for this panel: {html.escape(message)}</p>')
    elif panel.kind == "table":
        parts.append(_table_html(panel, frame))
    else:
        fig = panel_figure(panel, frame)
        plot_id = f"{panel.div_id}-plot"
        parts.append(f'<div class="plot" id="{plot_id}"></div>')
        parts.append(
            f'<script type="application/json" data-plot="{plot_id}">'
            f"{_figure_json(fig) if fig is not None else '{}'}</script>"
        )
    parts.append("</section>")
    return "\n".join(parts)


def _filters_note(names: Mapping[str, Sequence[str]]) -> str:
    said = [f"{key}: {', '.join(values)}" for key, values in names.items() if values]
    return "; ".join(said) if said else "all runs"


def render_page(
    dashboard: Dashboard,
    frames: Sequence[pl.DataFrame],
    filters: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The HTML page of a dashboard from its panels' data (pure; deterministic).

    Args:
        dashboard: the spec.
        frames: one frame per panel, from :func:`panel_data`.
        filters: what the page is filtered to, for the header (``{"experiments": [...]}``).
    """
    sections = "\n".join(_panel_html(p, f) for p, f in zip(dashboard.panels, frames, strict=True))
    description = (
        f'<p class="desc">{html.escape(dashboard.description)}</p>' if dashboard.description else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(dashboard.title)} · evalstore</title>
<style>{_CSS}</style>
<script src="plotly.min.js"></script>
</head>
<body>
<header>
<nav><a href="index.html">&larr; all dashboards</a></nav>
<h1>{html.escape(dashboard.title)}</h1>
{description}
<p class="filters">Runs shown: {html.escape(_filters_note(filters or {}))}</p>
</header>
<main>
{sections}
</main>
<script>{_SCRIPT}</script>
</body>
</html>
"""


def render_index(
    dashboards: Sequence[Dashboard], filters: Mapping[str, Sequence[str]] | None = None
) -> str:
    """The ``index.html`` linking every dashboard page (pure)."""
    items = []
    for d in dashboards:
        panels = ", ".join(html.escape(p.title) for p in d.panels)
        items.append(
            f'<li><a href="{html.escape(d.name)}.html">{html.escape(d.title)}</a>'
            f'<p class="desc">{html.escape(d.description)}</p>'
            f'<p class="note">Panels: {panels}</p></li>'
        )
    body = "\n".join(items)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>evalstore dashboards</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>evalstore dashboards</h1>
<p class="filters">Runs shown: {html.escape(_filters_note(filters or {}))}</p>
</header>
<main>
<ul class="dashboards">
{body}
</ul>
</main>
</body>
</html>
"""


# -- files --------------------------------------------------------------------------------


def render_dashboard(
    store: Store,
    dashboard: Dashboard,
    filters: Mapping[str, Any] | None = None,
    shown: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """Run every panel's query and return the dashboard's HTML page."""
    values = {"experiments": None, "runs": None, **(filters or {})}
    frames = [panel_data(store, p, values) for p in dashboard.panels]
    return render_page(dashboard, frames, shown)


def write_dashboards(
    store: Store,
    out_dir: str | Path,
    specs: Sequence[str | Path] | None = None,
    experiments: Sequence[str] = (),
    runs: Sequence[RunRef] = (),
    progress: Progress | None = None,
) -> list[Path]:
    """Render dashboards to ``out_dir``: one page per spec, ``index.html`` and
    ``plotly.min.js`` (written once, shared by the pages, which then work offline).

    Args:
        store: an open store (read-only is enough).
        out_dir: the output folder, created if needed; existing pages are overwritten.
        specs: spec files; default :func:`default_specs`.
        experiments: show only these experiments' runs (default all).
        runs: show only these runs (names or ids; default all).
        progress: called with (dashboard name, done, total).

    Returns:
        The written pages: ``index.html`` first, then one per spec.

    Raises:
        InvalidInput: an invalid spec or query (naming the file and panel), two specs with
            the same file name, or an experiment without runs.
        RunNotFound: an unknown run.
    """
    dashboards = [load_spec(p) for p in (specs if specs else default_specs())]
    seen: dict[str, Path] = {}
    for d in dashboards:
        if d.name in seen:
            raise InvalidInput(
                f"two dashboard specs are called {d.name!r}: {seen[d.name]} and {d.path}"
            )
        seen[d.name] = d.path
    filters = _filters(store, experiments, runs)
    shown = {
        "experiments": list(dict.fromkeys(experiments)),
        "runs": [str(r) for r in dict.fromkeys(runs)],
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _write_if_changed(out / "plotly.min.js", _plotly_js())
    pages = []
    for done, d in enumerate(dashboards, start=1):
        page = out / f"{d.name}.html"
        _write_if_changed(page, render_dashboard(store, d, filters, shown))
        pages.append(page)
        if progress is not None:
            progress(d.name, done, len(dashboards))
    index = out / "index.html"
    _write_if_changed(index, render_index(dashboards, shown))
    return [index, *pages]


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _write_if_changed(path: Path, text: str) -> None:
    data = text.encode("utf-8")
    if path.exists() and path.read_bytes() == data:
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
