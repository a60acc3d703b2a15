"""Dashboard leaderboards (pure): configurations x headline metrics, as tables and charts.

A ``leaderboard`` panel's query gives one row per (configuration, task, metric, params) with
its mean and sd across the configuration's runs (``dashboards/leaderboard``).
:func:`board` pivots it with :func:`evalstore.analysis.leaderboard.pivot`, the pivot of
``evalstore leaderboard``: a row per configuration, labelled as
:func:`evalstore.analysis.configurations.label` labels it, a column per (task, metric, params) in
the query's order. Each experiment gets its own table (:func:`board_html`) with only the columns it
has values in, its rows ranked by the first of them (best first, a rank column 1, 2, 3...,
:func:`ranking`; a line under the experiment's name says which column ranks and its direction),
each cell ``mean ± sd`` (the mean alone for one run) and the best of each column in bold
(:meth:`~evalstore.analysis.leaderboard.Leaderboard.best`, in the metric's direction).
:func:`board_figure` draws one chart per experiment and column: the means as points with
the sd as error bars (cut to the metric's range, the hover saying so), the best in green.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from evalstore.analysis.configurations import label
from evalstore.analysis.leaderboard import pivot
from evalstore.dashboards.axes import clipped, value_range
from evalstore.dashboards.grid import axis_titles, cell, grid_layout, make_grid, tick_room
from evalstore.dashboards.plot import Figure, trace
from evalstore.dashboards.specs import Panel
from evalstore.dashboards.text import esc, plain
from evalstore.errors import InvalidInput

__all__ = ["BOARD_COLUMNS", "Board", "board", "board_figure", "board_html", "ranking"]

#: The columns a leaderboard panel's query returns.
BOARD_COLUMNS = ("experiment", "config", "runs", "n_runs", "task", "metric", "base_metric",
                 "params", "mean", "sd")  # fmt: skip

_BEST, _OTHER = "#2ca02c", "#1f77b4"
_RANKED = ' class="ranked"'  # the header of the column that ranks the rows
#: the last pivot made, with its panel and frame: a page asks it twice (the tables, the charts)
_LAST: list[tuple[Panel, pl.DataFrame, Board]] = []


@dataclass(frozen=True)
class Board:
    """A leaderboard ready to show.

    Attributes:
        experiments: in order; each has its own table.
        columns: per experiment, the metric columns it has values in.
        rows: per experiment, its configurations' labels, best first by its first column.
        cells: (experiment, label, column) -> (mean, sd).
        n_runs: (experiment, label) -> the number of runs.
        runs: (experiment, label) -> the runs (``experiment/name``).
        best: per column, the (experiment, label) holding its best mean in each experiment.
        higher: per column, whether higher is better.
        metric: per column, its metric (for its range).
    """

    experiments: list[str]
    columns: dict[str, list[str]]
    rows: dict[str, list[str]]
    cells: dict[tuple[str, str, str], tuple[float | None, float | None]]
    n_runs: dict[tuple[str, str], int]
    runs: dict[tuple[str, str], list[str]]
    best: dict[str, set[tuple[str, str]]]
    higher: dict[str, bool]
    metric: dict[str, str] = field(default_factory=dict)


def board(panel: Panel, frame: pl.DataFrame) -> Board:
    """The pivot of a leaderboard panel's rows (see the module docstring); made once for the
    same panel and frame (the same objects) in a row, which only read it.

    Raises:
        InvalidInput: a metric that is not registered or params that are not JSON text.
    """
    last = _LAST[0] if _LAST else None
    if last is not None and last[0] is panel and last[1] is frame:
        return last[2]
    made = _board(panel, frame)
    _LAST[:] = [(panel, frame, made)]
    return made


def _board(panel: Panel, frame: pl.DataFrame) -> Board:
    names = frame["runs"].to_list()
    keys = list(zip(frame["experiment"], frame["config"], strict=True))
    labels = [
        label(e, [r.split("/", 1)[-1] for r in rs], c)
        for (e, c), rs in zip(keys, names, strict=True)
    ]
    configs: dict[tuple[str, str], set[str]] = {}
    for (e, c), g in zip(keys, labels, strict=True):
        configs.setdefault((e, g), set()).add(c)
    # two configurations whose run names give one label: their params tell them apart
    labels = [
        g if len(configs[(e, g)]) == 1 else f"{g} ({c})"
        for (e, c), g in zip(keys, labels, strict=True)
    ]
    labelled = frame.with_columns(group=pl.Series(labels, dtype=pl.String))
    try:
        lb = pivot(labelled)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise InvalidInput(
            f"{panel.where}: a leaderboard needs registered metric names in `base_metric` and "
            f"parameters as JSON text in `params` ({type(exc).__name__}: {exc})"
        ) from None
    cells = {
        (e, g, c): (m, s)
        for e, g, c, m, s in lb.long.select("experiment", "group", "column", "mean", "sd").rows()
    }
    n_runs: dict[tuple[str, str], int] = {}
    runs: dict[tuple[str, str], list[str]] = {}
    for e, g, n, rs in zip(frame["experiment"], labels, frame["n_runs"], names, strict=True):
        n_runs[(e, g)] = max(n_runs.get((e, g), 0), int(n))
        runs[(e, g)] = sorted({*runs.get((e, g), []), *rs})
    experiments = sorted(set(frame["experiment"].to_list()))
    columns: dict[str, list[str]] = {}
    rows: dict[str, list[str]] = {}
    for e in experiments:
        groups = sorted({g for (x, g) in n_runs if x == e})
        columns[e] = [
            c for c in lb.columns if any(cells.get((e, g, c), (None,))[0] is not None
                                         for g in groups)
        ]  # fmt: skip
        if columns[e]:
            first = columns[e][0]
            sign = -1.0 if lb.higher[first] else 1.0

            def rank(g: str, e: str = e, first: str = first, sign: float = sign) -> tuple:
                mean = cells.get((e, g, first), (None, None))[0]
                return (mean is None, 0.0 if mean is None else sign * mean, g)

            groups.sort(key=rank)
        rows[e] = groups
    metric = dict(lb.long.select("column", "metric").unique("column").rows())
    return Board(experiments, columns, rows, cells, n_runs, runs, lb.best(), lb.higher, metric)


def _sd_text(mean: float | None, sd: float | None) -> str:
    """The sd to the mean's precision (``0.9927 ± 0.0009``, not ``± 0.0008977``)."""
    if sd is None:
        return ""
    fixed = mean is not None and (mean == 0 or 1e-3 <= abs(mean) < 1e6)
    return format(sd, ".4f") if fixed else plain(sd)


def _cell_text(mean: float | None, sd: float | None) -> str:
    if mean is None:
        return ""
    return plain(mean) if sd is None else f"{plain(mean)} ± {_sd_text(mean, sd)}"


def board_html(panel: Panel, frame: pl.DataFrame) -> str:
    """The leaderboard's tables, one per experiment (pure; every user string escaped)."""
    b = board(panel, frame)
    parts = []
    for k, e in enumerate(b.experiments, start=1):
        cols = b.columns[e]
        ranks = ranking(b, e)
        head = '<th class="rank">rank</th><th>configuration</th><th>runs</th>' + "".join(
            f'<th title="{"higher" if b.higher[c] else "lower"} is better"{_RANKED * (i == 0)}>'
            f"{html.escape(c)} {'&uarr;' if b.higher[c] else '&darr;'}</th>"
            for i, c in enumerate(cols)
        )
        body = []
        for g in b.rows[e][: panel.limit]:
            runs = b.runs[(e, g)]
            title = f' title="{html.escape(", ".join(runs))}"' if len(runs) > 1 else ""
            rank = ranks.get(g)
            cells = [
                f'<td class="num rank">{"" if rank is None else rank}</td>',
                f"<td{title}>{html.escape(g)}</td>",
                f'<td class="num">{b.n_runs[(e, g)]}</td>',
            ]
            for c in cols:
                mean, sd = b.cells.get((e, g, c), (None, None))
                best = " best" if (e, g) in b.best.get(c, set()) else ""
                cells.append(f'<td class="num{best}">{html.escape(_cell_text(mean, sd))}</td>')
            body.append(f"<tr>{''.join(cells)}</tr>")
        note = (
            f'<p class="note">Showing the first {panel.limit} of {len(b.rows[e])} rows.</p>'
            if len(b.rows[e]) > panel.limit
            else ""
        )
        rows = "\n".join(body)
        parts.append(
            f'<h3 class="board">{html.escape(e)}</h3>'
            f'<p class="note ranked-by">{html.escape(_ranked_by(b, e))}</p>'
            f'<div class="table-wrap"><table class="data board" id="{panel.div_id}-table-{k}">'
            f"<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}\n</tbody></table></div>{note}"
        )
    return "\n".join(parts)


def ranking(b: Board, experiment: str) -> dict[str, int]:
    """The rank of each configuration of ``experiment`` by its first column, best first in
    the metric's direction (1, 2, 3...; equal means share a rank; none without a value)."""
    if not b.columns[experiment]:
        return {}
    first = b.columns[experiment][0]
    means = {g: b.cells.get((experiment, g, first), (None, None))[0] for g in b.rows[experiment]}
    ranks: dict[str, int] = {}
    for g, mean in means.items():
        if mean is not None:
            better = [m for m in means.values() if m is not None
                      and (m > mean if b.higher[first] else m < mean)]  # fmt: skip
            ranks[g] = 1 + len(better)
    return ranks


def _ranked_by(b: Board, experiment: str) -> str:
    if not b.columns[experiment]:
        return ""
    first = b.columns[experiment][0]
    return f"Ranked by {first}, {'higher' if b.higher[first] else 'lower'} is better (best first)."


def _bars(
    means: list[Any], sds: list[Any], bounds: tuple[float, float] | None
) -> tuple[list[Any], list[Any], list[str]]:
    """The error bars above and below each mean (its sd), cut to the metric's ``bounds``, and
    per mean a note when its bar was cut."""
    ups, downs, notes = [], [], []
    for m, s in zip(means, sds, strict=True):
        if m is None or s is None:
            ups.append(s)
            downs.append(s)
            notes.append("")
            continue
        lo, hi, _ = clipped(m - s, m + s, bounds)
        up, down = (s if hi == m + s else hi - m), (s if lo == m - s else m - lo)
        cut = (up, down) != (s, s)
        ups.append(up)
        downs.append(down)
        notes.append(" (bar clipped to the metric's range)" if cut else "")
    return ups, downs, notes


def board_figure(panel: Panel, frame: pl.DataFrame) -> Figure:
    """One chart per experiment and metric column: each configuration's mean with its sd as
    an error bar (none for one run), in the table's order, the best in green."""
    b = board(panel, frame)
    charts = [(e, c) for e in b.experiments for c in b.columns[e]]
    cols = max(1, min(len(charts), panel.facet_cols))
    ticks: dict[tuple[str, str], dict[str, Any]] = {}
    tick_px = 0
    for e, c in charts:
        shown = [
            g for g in b.rows[e][: panel.limit] if b.cells.get((e, g, c), (None,))[0] is not None
        ]
        px, ticks[(e, c)] = tick_room(shown, cols)
        tick_px = max(tick_px, px)
    lay = grid_layout(panel, len(charts), titled=True, tick_px=tick_px)
    fig = make_grid(lay, [f"{esc(e)} · {esc(c)}" for e, c in charts])
    axes: dict[str, Any] = {}
    for index, (e, c) in enumerate(charts):
        row, col = cell(index, cols)
        shown = [
            g for g in b.rows[e][: panel.limit] if b.cells.get((e, g, c), (None,))[0] is not None
        ]
        means = [b.cells[(e, g, c)][0] for g in shown]
        sds = [b.cells[(e, g, c)][1] for g in shown]
        ups, downs, notes = _bars(means, sds, value_range(b.metric.get(c)))
        best = b.best.get(c, set())
        fig.add_trace(
            trace(
                "scatter",
                x=[esc(g) for g in shown],
                y=means,
                mode="markers",
                marker={"size": 10, "color": [_BEST if (e, g) in best else _OTHER for g in shown]},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": ups,
                    "arrayminus": downs,
                    "visible": True,
                    "thickness": 1.5,
                },
                customdata=[
                    [b.n_runs[(e, g)], _sd_text(m, s) or "-", n]
                    for g, m, s, n in zip(shown, means, sds, notes, strict=True)
                ],
                hovertemplate="%{x}<br>mean %{y:.4f}<br>sd %{customdata[1]}%{customdata[2]}<br>"
                "%{customdata[0]} run(s)<extra></extra>",
                name=esc(c),
                showlegend=False,
            ),
            row=row,
            col=col,
        )
        axes[f"xaxis{index + 1 if index else ''}"] = {"type": "category", **ticks[(e, c)]}
    fig.update_layout(axes)  # one update: per chart, it costs a second on a large store
    axis_titles(fig, len(charts), cols, "configuration", "mean ± sd")
    for start in range(0, len(charts), cols):  # a row of single runs shows values, no sd
        single = all(
            b.n_runs[(e, g)] == 1 for e, c in charts[start : start + cols] for g in b.rows[e]
        )
        if single:
            fig.update_yaxes(title={"text": "value"}, row=start // cols + 1, col=1)
    return fig
