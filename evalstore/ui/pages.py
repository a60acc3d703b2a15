"""The UI's pages: each takes a read-only store and a :class:`~evalstore.ui.view.View` and
returns the HTML of the page's body. The figures are the dashboards' own
(:mod:`evalstore.dashboards`: the same specs, queries and figure code as
``evalstore dashboard``), here filtered to the view's runs.
"""

from __future__ import annotations

import html
import re
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING

import polars as pl

from evalstore import render
from evalstore.dashboards.data import panel_data
from evalstore.dashboards.pages import panel_html
from evalstore.dashboards.specs import Panel, dashboards_dir, load_spec
from evalstore.db import sandbox
from evalstore.errors import InvalidInput
from evalstore.store import user_sql
from evalstore.ui import data
from evalstore.ui.picker import picker
from evalstore.ui.shell import data_table, hidden, message
from evalstore.ui.view import FILTERS

if TYPE_CHECKING:
    from evalstore.store.facade import Store
    from evalstore.ui.view import View

__all__ = [
    "EVERY",
    "NEWEST",
    "NEWEST_LISTS",
    "SQL_BYTES",
    "SQL_CSV_BYTES",
    "SQL_ROWS",
    "SQL_TIMEOUT",
    "STEP_PANEL",
    "curves_page",
    "history_page",
    "lists_page",
    "panels_page",
    "runs_page",
    "sql_csv",
    "sql_page",
    "sql_result",
    "without_flags",
]

#: Rows the SQL page shows (the download has up to sandbox.DEFAULT_MAX_ROWS).
SQL_ROWS = 500
#: Bytes (Arrow's, in memory) the SQL page fetches at most; the download, SQL_CSV_BYTES.
SQL_BYTES = 10_000_000
SQL_CSV_BYTES = sandbox.DEFAULT_MAX_BYTES
#: Seconds a query of the SQL page or its download may run.
SQL_TIMEOUT = 30.0
#: Runs the curves page draws when no run is picked (the filters keep its newest).
NEWEST = 8
#: Runs the per-list page draws when no run is picked.
NEWEST_LISTS = 20
_DEFAULT_VALUES = 6  # value columns shown before the user chooses
#: The history's ``series`` that shows every metric (one chart each).
EVERY = "*"


def _pick_form(view: View, table: str) -> str:
    buttons = (
        '<div class="actions"><span>With the ticked rows:</span>'
        '<button type="submit" id="do-compare" formaction="/compare">Compare</button>'
        '<button type="submit" formaction="/curves">Curves</button>'
        '<button type="submit" formaction="/lists">Per list</button></div>'
    )
    keep = hidden(view, FILTERS)
    return f'<form method="get" action="/compare" id="pick">{keep}{buttons}{table}</form>'


def _columns_form(view: View, available: list[str], shown: list[str]) -> str:
    boxes = "".join(
        f'<label><input type="checkbox" name="col" value="{html.escape(c)}"'
        f"{' checked' if c in shown else ''}> {html.escape(c)}</label>"
        for c in available
    )
    keep = hidden(view, (*FILTERS, "group", "sort", "desc"))
    return (
        f'<details class="columns"><summary>Columns ({len(shown)} of {len(available)})</summary>'
        f'<form method="get" action="/">{keep}<div class="boxes">{boxes}</div>'
        '<button type="submit">Show these columns</button></form></details>'
    )


def runs_page(store: Store, view: View) -> str:
    """The runs (or, with ``group``, the configurations) that pass the filters: sortable,
    columns chosen by the user, check boxes to compare."""
    runs = data.filtered_runs(store, view)
    total = store.query("ui/run_count")["n"][0]
    if view.group:
        table, higher = data.config_table(store, runs)
        fixed = ["configuration", "n_runs", "config", "created_at", "runs"]
    else:
        table, higher = data.run_table(store, runs)
        table = table.with_columns(unit=pl.col("run"))  # by name: a link outlives a rebuild
        fixed = ["run", "created_at", "tags", "params", "git_commit", "tasks", "n_rows", "notes"]
        fixed += [c for c in table.columns if c.startswith("p:")]
    value_cols = [c for c in higher if c in table.columns]
    available = [*fixed, *value_cols]
    # by default: who and when, the values these runs have (the first few), then the params
    filled = [c for c in value_cols if table[c].null_count() < table.height][:_DEFAULT_VALUES]
    first: list[str] = [
        c for c in ("run", "configuration", "n_runs", "created_at", "tags") if c in fixed
    ]
    default = [*first, *filled, *[c for c in ("config", "params") if c in fixed]]
    shown = [c for c in view.col if c in available] or default
    if view.sort in table.columns:
        table = table.sort(view.sort, descending=view.desc, nulls_last=True, maintain_order=True)
    switch = view.href("/", group=not view.group, sort="", col=())
    noun = "configurations" if view.group else "runs"
    head = (
        f'<p class="count" id="count">{table.height:,} {noun} '
        f"({runs.height:,} of {total:,} runs pass the filters) · "
        f'<a href="{html.escape(switch)}" id="toggle-group">'
        f"{'show runs' if view.group else 'group seeds into configurations (mean ± sd)'}"
        "</a></p>"
    )
    if table.height == 0:
        return head + message("No run passes these filters.", "empty")
    grid = data_table(
        table, shown, ident="runs", view=view, path="/", pick="unit", higher=higher, sd=view.group
    )
    return head + _columns_form(view, available, shown) + _pick_form(view, grid)


# -- the dashboards' panels ----------------------------------------------------------------


@cache
def _spec_panels(name: str) -> tuple[Panel, ...]:
    return load_spec(dashboards_dir() / f"{name}.toml").panels


def _run_filter(
    store: Store, view: View, newest: int | None, *, every: bool = False
) -> tuple[list[int] | None, str]:
    """The runs a panel page draws: the picked units' runs; else, with filters (or
    ``every``), the runs that pass them (the ``newest`` of them); else None (the spec's own
    default)."""
    if view.unit:
        ids = list(dict.fromkeys(i for _, u in data.units(store, view) for i in u.run_ids))
        return ids, f"the {len(ids)} picked run(s)"
    if not (view.filtered or every):
        return None, ""
    ids = data.filtered_runs(store, view)["run_id"].to_list()
    if newest is not None and len(ids) > newest:
        return ids[:newest], (
            f"the {newest} newest of the {len(ids)} runs that pass the filters "
            "(choose others above)"
        )
    return ids, f"the {len(ids)} runs that pass the filters"


_FLAG = re.compile(r"(\s*\([^()]*\s--?[a-z][^()]*\))|([^.]*\s--?[a-z][a-z-]*\b[^.]*\.)")


def without_flags(text: str) -> str:
    """A spec's text as the UI says it: the sentences and asides that name a command's
    option (``Without --runs: ...``) left out, as the page has pickers instead."""
    return _FLAG.sub("", text).strip()


def _in_ui(panel: Panel) -> Panel:
    return replace(
        panel, description=without_flags(panel.description), empty=without_flags(panel.empty)
    )


def panels_page(
    store: Store, view: View, spec: str, newest: int | None, path: str, *, every: bool = False
) -> str:
    """The panels of a dashboard spec (curves, heatmap) for the view's runs, under a picker
    of the runs; with ``every``, the ``newest`` runs when nothing is picked or filtered."""
    ids, said = _run_filter(store, view, newest, every=every)
    filters = {"experiments": list(view.experiment) or None, "runs": ids}
    if not said:  # the spec's default: the newest of each task
        total = data.filtered_runs(store, view).height
        said = f"the {newest} newest runs of each task, of {total} (choose others above)"
    parts = [picker(store, view, path, open_=not view.unit), message(f"Showing {said}.")]
    if ids == []:
        return parts[0] + message("No run passes these filters.", "empty")
    drawn = [(panel, panel_data(store, panel, filters)) for panel in _spec_panels(spec)]
    parts.insert(1, _choose_form(view, path, [frame for _, frame in drawn]))
    for panel, frame in drawn:
        parts.append(panel_html(_in_ui(panel), _narrowed(frame, view)))
    return "\n".join(parts)


def _tasks_metrics(frames: list[pl.DataFrame]) -> tuple[list[str], list[str]]:
    """The tasks (a ``task`` column, or a ``series`` ``TASK · METRIC``) and metrics (a
    ``base_metric`` column) of a page's frames."""
    tasks: set[str] = set()
    metrics: set[str] = set()
    for frame in frames:
        if "task" in frame.columns:
            tasks |= set(frame["task"].drop_nulls().to_list())
        if "series" in frame.columns:
            tasks |= {s.split(" · ")[0] for s in frame["series"].drop_nulls().to_list()}
        if "base_metric" in frame.columns:
            metrics |= set(frame["base_metric"].drop_nulls().to_list())
    return sorted(tasks), sorted(metrics)


def _narrowed(frame: pl.DataFrame, view: View) -> pl.DataFrame:
    """The rows of the view's ``task`` and ``metric``, where the frame says them."""
    if view.task and "task" in frame.columns:
        frame = frame.filter(pl.col("task") == view.task)
    if view.task and "series" in frame.columns:
        frame = frame.filter(pl.col("series").str.starts_with(f"{view.task} · "))
    if view.metric and "base_metric" in frame.columns:
        frame = frame.filter(pl.col("base_metric") == view.metric)
    return frame


def _choose_form(view: View, path: str, frames: list[pl.DataFrame]) -> str:
    """Selects of the task and metric the page's charts show (every one by default)."""
    tasks, metrics = _tasks_metrics(frames)
    if not tasks and not metrics:
        return ""

    def select(name: str, values: list[str], chosen: str) -> str:
        if not values:
            return ""
        options = '<option value="">every one</option>' + "".join(
            f'<option value="{html.escape(v)}"{" selected" if v == chosen else ""}>'
            f"{html.escape(v)}</option>"
            for v in values
        )
        return f'<label>{name} <select name="{name}" id="pick-{name}">{options}</select></label>'

    keep = hidden(view, (*FILTERS, "unit", "baseline"))
    return (
        f'<form method="get" action="{html.escape(path)}" class="baseline">{keep}'
        f"{select('task', tasks, view.task)}{select('metric', metrics, view.metric)}"
        '<button type="submit" id="pick-task-show">Show</button></form>'
    )


def curves_page(store: Store, view: View) -> str:
    """PR and MMA curves (curves.toml) of the picked runs, else the newest that pass."""
    return panels_page(store, view, "curves", NEWEST, "/curves")


def history_page(store: Store, view: View) -> str:
    """The overview's metric history, one metric (or every one) over time; above it, for the
    runs with training steps (the picked ones, else those that pass the filters), the metric
    against the step, one line per run. The chosen ``series`` (default the first; ``*``
    every one) picks the metric of both."""
    ids, said = _run_filter(store, view, None)
    if ids == []:
        return message("No run passes these filters.", "empty")
    panel = next(p for p in _spec_panels("overview") if p.query == "dashboards/metric_history")
    frame = panel_data(store, panel, {"experiments": list(view.experiment) or None, "runs": ids})
    steps = data.step_history(store, ids, view.experiment)
    # one metric, full width (the first, until the user picks), or every metric
    names = list(dict.fromkeys([*frame["series"].to_list(), *steps.values["series"].to_list()]))
    chosen = view.series if view.series in (*names, EVERY) else next(iter(names), "")
    parts = [message(f"Showing {said}.")] if said else []
    parts.append(_series_form(view, names, chosen))
    shown = steps.values
    if chosen != EVERY:
        frame = frame.filter(pl.col("series") == chosen)
        shown = shown.filter(pl.col("series") == chosen)
        panel = replace(panel, facet_cols=1)
    if shown.height:
        parts.append(panel_html(STEP_PANEL, shown) + _missing_steps(steps.missing))
    if frame.height or not shown.height:
        parts.append(panel_html(panel, frame))
    return "\n".join(parts)


#: The History page's chart of the runs with training steps.
STEP_PANEL = Panel(
    index=0,
    title="Over training steps",
    description="Each metric against the training step, one line per run: the value of "
    "each of its step runs (its evaluation at that step, EXPERIMENT/NAME@STEP) that "
    "evalstore eval stored, and the values it logged with a step (logged · NAME).",
    kind="line",
    x="step",
    y="value",
    color="run",
    facet="series",
    hover=("source",),
    facet_cols=1,
    x_title="step",
)
#: Step runs the History page names when it says which have no stored value.
MISSING_NAMED = 5


def _missing_steps(missing: list[str]) -> str:
    if not missing:
        return ""
    named = " ".join(missing[:MISSING_NAMED]) + (" ..." if len(missing) > MISSING_NAMED else "")
    return message(
        f"{len(missing)} step run(s) have no stored value, so their steps are not drawn: "
        f"evaluate them with evalstore eval {named} (the app computes no metric).",
        "note",
    )


def lists_page(store: Store, view: View) -> str:
    """The per-list and per-slice heatmaps (heatmap.toml)."""
    return panels_page(store, view, "heatmap", NEWEST_LISTS, "/lists", every=True)


def _series_form(view: View, names: list[str], chosen: str) -> str:
    options = "".join(
        f'<option value="{html.escape(n)}"{" selected" if n == chosen else ""}>'
        f"{html.escape('every metric' if n == EVERY else n)}</option>"
        for n in [*names, EVERY]
    )
    keep = hidden(view, (*FILTERS, "unit"))
    return (
        f'<form method="get" action="/history" class="baseline">{keep}<label>metric '
        f'<select name="series" id="series">{options}</select></label>'
        '<button type="submit">Show</button></form>'
    )


# -- SQL -----------------------------------------------------------------------------------


def sql_result(store: Store, query: str, max_rows: int, max_bytes: int) -> sandbox.Result:
    """The query's rows in the sandbox of ``evalstore sql`` (read-only, the store alone,
    SQL_TIMEOUT s at most, at most ``max_rows`` rows and about ``max_bytes`` bytes).

    Raises:
        InvalidInput: the query is refused or fails (one line).
    """
    hint = (
        f"the UI stops a query after {SQL_TIMEOUT:g} s; the command evalstore sql can run it longer"
    )
    return user_sql.run_sql(
        store, query, max_rows=max_rows, timeout=SQL_TIMEOUT, max_bytes=max_bytes,
        timeout_hint=hint, read_hint="the UI's queries read the store only",
    )  # fmt: skip


def sql_csv(store: Store, query: str) -> tuple[str, str]:
    """The query's rows as CSV, as ``evalstore sql --format csv`` writes them (nested values
    as text), up to sandbox.DEFAULT_MAX_ROWS rows and about SQL_CSV_BYTES bytes; and what
    was left out ("" when nothing was).

    Raises:
        InvalidInput: the query is refused or fails (one line).
    """
    result = sql_result(store, query, sandbox.DEFAULT_MAX_ROWS, SQL_CSV_BYTES)
    note = result.note(
        "the UI's limit", "the UI's limit; the command evalstore sql, writing a file, has none"
    )
    return render.to_text(result.frame, "csv") + "\n", note


def sql_page(store: Store, view: View) -> str:
    """A read-only query box, its result as a table and a CSV download."""
    example = "select run, task, metric, value from v_metrics where slice = '' limit 20"
    box = (
        '<form method="get" action="/sql" class="sql"><textarea name="q" id="q" rows="5" '
        f'spellcheck="false" placeholder="{html.escape(example)}">{html.escape(view.q)}'
        '</textarea><div class="actions"><button type="submit" id="run-sql">Run</button>'
        "<span>One read-only statement on the store (views v_runs, v_metrics, v_lists, "
        "v_confusion, ...), "
        "as evalstore sql runs it.</span></div></form>"
    )
    if not view.q.strip():
        return box
    try:
        result = sql_result(store, view.q, SQL_ROWS, SQL_BYTES)
    except InvalidInput as exc:
        return box + message(str(exc), "error")
    frame = result.frame
    download = view.href("/sql.csv")
    more = ""
    if result.bytes_cap is not None:
        more = f" (truncated at {result.bytes_cap / 1e6:g} MB; more rows in the download)"
    elif result.truncated:
        more = " (more rows in the download)"
    head = (
        f'<p class="count">{frame.height:,} row(s){more} · '
        f'<a href="{html.escape(download)}" id="download">download CSV</a></p>'
    )
    return box + head + data_table(frame, frame.columns, ident="sql-result", limit=SQL_ROWS)
