"""The "what changed" page of two runs (``evalstore dashboard --changed A B``): the HTML
(:func:`render_changed`, pure) and its file (:func:`write_changed`), with the data of
:mod:`evalstore.analysis.diff`, the numbers of ``evalstore diff A B`` and ``--items G``.

Two panels: the lists whose value moved most (each run's value, the difference; a chart and
the table) and, for one list (``items``, by default the one that moved most), the items whose
rank moved (rank in each run, label, score). The page is ``changed.html`` next to the other
dashboards, sharing their ``plotly.min.js``.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from evalstore.analysis.diff import diff_items, diff_lists
from evalstore.dashboards.changed import items_figure, lists_figure
from evalstore.dashboards.pages import (
    page_html,
    plot_html,
    plotly_js,
    table_html,
    write_if_changed,
)
from evalstore.dashboards.plot import Figure
from evalstore.dashboards.specs import Panel
from evalstore.dashboards.text import plain
from evalstore.metrics.registry import METRICS

if TYPE_CHECKING:
    from evalstore.runs.registry import RunRef
    from evalstore.store.facade import Store

__all__ = ["PAGE", "render_changed", "write_changed"]

#: the page's file name in the output folder
PAGE = "changed.html"
LIST_COLUMNS = ("group_id", "value_a", "value_b", "diff")
ITEM_COLUMNS = ("item_id", "rank_a", "rank_b", "moved", "label_a", "label_b", "score_a", "score_b")


def _section(index: int, title: str, description: str, fig: Figure, table: str) -> str:
    plot_id = f"panel-{index}-plot"
    return "\n".join(
        [
            f'<section class="panel" id="panel-{index}">',
            f"<h2>{html.escape(title)}</h2>",
            f'<p class="desc">{html.escape(description)}</p>',
            plot_html(plot_id, fig),
            table,
            "</section>",
        ]
    )


def _empty(index: int, title: str, message: str) -> str:
    return (
        f'<section class="panel" id="panel-{index}"><h2>{html.escape(title)}</h2>\n'
        f'<p class="empty">No data for this panel: {html.escape(message)}</p></section>'
    )


def render_changed(lists: pl.DataFrame, items: pl.DataFrame, a: str, b: str, group: str) -> str:
    """The page of two runs ``a`` and ``b`` (pure; deterministic): ``lists`` from
    :func:`evalstore.analysis.diff.diff_lists`, ``items`` from
    :func:`evalstore.analysis.diff.diff_items` for the list ``group``."""
    metric = str(lists["metric"][0]) if lists.height else ""
    task = str(lists["task"][0]) if lists.height else ""
    params = plain(lists["params"][0]) if lists.height else ""
    higher = METRICS[metric].higher_is_better if metric in METRICS else True
    title = f"Lists whose {metric} moved most"
    if lists.height:
        panel = Panel(index=1, title=title, kind="table", columns=LIST_COLUMNS, limit=lists.height)
        first = _section(
            1,
            title,
            f"{task} · {metric} {params}: the value of each list in run a ({a}) and run b "
            f"({b}) and the difference b - a, the largest moves first "
            f"({'higher' if higher else 'lower'} is better).",
            lists_figure(lists, a, b, higher=higher),
            table_html(panel, lists),
        )
    else:
        first = _empty(1, title, "the runs have no per-list values in common.")
    title = f"Items of list {group} whose rank moved"
    said = (
        "Each item's rank in run a and in run b (1 + the items scored higher; a tie "
        "shares its best rank), green where it rose, red where it fell."
    )
    if "det_a" in items.columns:  # detection runs: the objects of a category
        title = f"Objects of category {group}, found or missed"
        said = (
            "Each object's rank in run a and in run b: the rank of the detection that found "
            "it at IoU 0.50 under COCO's matching (1 + the detections scored higher); an "
            "object found by one run only has one point, those come first."
        )
    if items.height:
        panel = Panel(index=2, title=title, kind="table", columns=ITEM_COLUMNS, limit=items.height)
        second = _section(
            2,
            title,
            said,
            items_figure(items, a, b),
            table_html(panel, items),
        )
    else:
        second = _empty(2, title, "neither run ranks an item of this list.")
    description = (
        f'<p class="desc">{html.escape(f"Run a: {a}. Run b: {b}.")} '
        f"The numbers of <code>{html.escape(f'evalstore diff {a} {b}')}</code>.</p>"
    )
    sections = first + "\n" + second
    return page_html(f"What changed: {a} \u2192 {b}", description, f"runs: {a}, {b}", sections)


def write_changed(
    store: Store,
    out_dir: str | Path,
    a: RunRef,
    b: RunRef,
    *,
    task: str | None = None,
    metric: str | None = None,
    items: str | None = None,
    limit: int = 20,
) -> Path:
    """Write ``changed.html`` (and ``plotly.min.js``) for the runs ``a`` and ``b`` in
    ``out_dir``: the ``limit`` lists whose ``metric`` moved most and the items of list
    ``items`` (default: the list that moved most) whose rank moved. Values not cached yet are
    computed, so the store must then be writable.

    Raises:
        InvalidInput: as :func:`evalstore.analysis.diff.diff_lists` and
            :func:`evalstore.analysis.diff.diff_items` (no task in common, an unknown list...).
        RunNotFound: an unknown run.
    """
    lists = diff_lists(store, a, b, task=task, metric=metric, limit=limit)
    group = items if items is not None else str(lists["group_id"][0])  # never empty
    moved = diff_items(store, a, b, group, task=str(lists["task"][0]), limit=limit)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_if_changed(out / "plotly.min.js", plotly_js())
    page = out / PAGE
    write_if_changed(page, render_changed(lists, moved, str(a), str(b), group))
    return page
