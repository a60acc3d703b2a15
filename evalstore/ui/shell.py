"""The UI's HTML (pure): the frame of every page (navigation, the run filters), tables of
runs with sortable headers and check boxes, and figures drawn by ``/static/ui.js``.

Every user string is escaped here (``html.escape``) or, inside figures, by the dashboards'
own escaping; the pages carry no inline script (the figures are JSON blocks,
:func:`evalstore.dashboards.pages.plot_html`, that ``/static/ui.js`` draws), so the app's
Content-Security-Policy can forbid inline scripts.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from evalstore.dashboards.text import plain
from evalstore.ui.view import View

__all__ = ["PAGES", "data_table", "hidden", "message", "page", "section"]

#: The pages, in the order of the navigation: (path, title).
PAGES = (
    ("/", "Runs"),
    ("/compare", "Compare"),
    ("/curves", "Curves"),
    ("/history", "History"),
    ("/lists", "Per list"),
    ("/sql", "SQL"),
)

_e = html.escape


def hidden(view: View, keep: Sequence[str]) -> str:
    """Hidden inputs carrying the view's fields ``keep`` through a form."""
    pairs = [(k, v) for k, v in view.query() if k in keep]
    return "".join(f'<input type="hidden" name="{_e(k)}" value="{_e(v)}">' for k, v in pairs)


def _filters(path: str, view: View, experiments: Sequence[str]) -> str:
    chosen = set(view.experiment)
    options = "".join(
        f'<option value="{_e(e)}"{" selected" if e in chosen else ""}>{_e(e)}</option>'
        for e in experiments
    )
    # one experiment (or all) from a plain select; several, as a URL can name, a list box
    several = " multiple" if len(chosen) > 1 else ""
    if not several:
        options = '<option value="">all</option>' + options
    keep = ("unit", "baseline", "group", "col", "sort", "desc", "series", "task", "metric")
    # a box shows the first tag and param; more (from a link) ride along unseen
    more = "".join(
        f'<input type="hidden" name="{k}" value="{_e(v)}">'
        for k, values in (("tag", view.tag[1:]), ("param", view.param[1:]))
        for v in values
    )
    return f"""<form class="filters" id="filters" method="get" action="{_e(path)}">
{hidden(view, keep)}{more}
<label>experiment <select name="experiment"{several} id="f-experiment">{options}</select></label>
<label>tag <input name="tag" id="f-tag" value="{_e(view.tag[0] if view.tag else "")}"
 size="10"></label>
<label>param <input name="param" id="f-param" value="{_e(view.param[0] if view.param else "")}"
 placeholder="lr=0.01" size="12"></label>
<label class="wide">where <input name="where" id="f-where" value="{_e(view.where)}"
 placeholder="param_lr &gt; 0.001 and created_at &gt; '2026-01-01'"></label>
<button type="submit" id="f-apply">Apply</button>
<a class="clear" href="{_e(path)}">clear</a>
</form>"""


def page(
    path: str,
    title: str,
    body: str,
    *,
    view: View,
    experiments: Sequence[str],
    store: str,
    filters: bool = True,
) -> str:
    """A whole page: the navigation (each link keeps the view's filters and units), the run
    filters and ``body`` (HTML, already escaped)."""
    links = []
    for target, name in PAGES:
        kept = View(**{**view.filters(), "unit": view.unit, "baseline": view.baseline})
        here = ' class="here" aria-current="page"' if target == path else ""
        links.append(f'<a href="{_e(kept.href(target))}"{here}>{_e(name)}</a>')
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)} · evalstore</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/ui.css">
<script src="/static/plotly.min.js" defer></script>
<script src="/static/ui.js" defer></script>
<script src="/static/progress.js" defer></script>
</head>
<body>
<header>
<span class="brand">evalstore</span>
<nav>{"".join(links)}</nav>
<span class="store" title="the store, opened read-only">{_e(store)}</span>
</header>
{_filters(path, view, experiments) if filters else ""}
<main>
<h1>{_e(title)}</h1>
{body}
</main>
</body>
</html>
"""


def message(text: str, kind: str = "note") -> str:
    """A one-line message (``note``, ``empty`` or ``error``), escaped."""
    return f'<p class="{kind}">{_e(text)}</p>'


def section(title: str, body: str, description: str = "", ident: str = "") -> str:
    """A panel with a title, an optional description (text) and ``body`` (HTML)."""
    desc = f'<p class="desc">{_e(description)}</p>' if description else ""
    attr = f' id="{_e(ident)}"' if ident else ""
    return f'<section class="panel"{attr}><h2>{_e(title)}</h2>{desc}{body}</section>'


def _cell(value: Any, numeric: bool, best: bool) -> str:
    classes = " ".join(c for c, on in (("num", numeric), ("best", best)) if on)
    attr = f' class="{classes}"' if classes else ""
    return f"<td{attr}>{_e(plain(value))}</td>"


def data_table(
    frame: pl.DataFrame,
    columns: Sequence[str],
    *,
    ident: str,
    view: View | None = None,
    path: str = "/",
    pick: str | None = None,
    higher: Mapping[str, bool] | None = None,
    sd: bool = False,
    limit: int = 1000,
    row_class: Sequence[str] | None = None,
) -> str:
    """A table of ``columns`` of ``frame``; with ``view``, headers that sort (a link to
    ``path`` with ``sort`` and ``desc``); with ``pick``, a check box per row naming the row's
    ``pick`` column (``unit``); ``higher`` gives value columns a direction (the best cell of
    each is bold, the header says which way is better); with ``sd``, a column's ``<col> sd``
    is shown after its mean as ``mean ± sd``; ``row_class`` gives each row a CSS class
    (``better``, ``worse``)."""
    higher = higher or {}
    head = ['<th class="pick"></th>'] if pick else []
    for c in columns:
        arrow = "" if c not in higher else (" \u2191" if higher[c] else " \u2193")
        label = _e(c) + arrow
        if view is not None:
            desc = not (view.sort == c and view.desc)
            mark = (" \u25be" if view.desc else " \u25b4") if view.sort == c else ""
            href = view.href(path, sort=c, desc=desc)
            label = f'<a href="{_e(href)}">{label}</a>{mark}'
        tip = f' title="{"higher" if higher[c] else "lower"} is better"' if c in higher else ""
        head.append(f'<th data-col="{_e(c)}"{tip}>{label}</th>')
    best: dict[str, Any] = {}
    for c in columns:
        if c in higher and frame[c].dtype.is_numeric() and frame[c].drop_nulls().len():
            best[c] = frame[c].max() if higher[c] else frame[c].min()
    numeric = {c for c in columns if frame[c].dtype.is_numeric()}
    rows: list[str] = []
    for row in frame.head(limit).iter_rows(named=True):
        cells = []
        if pick:
            token = _e(str(row[pick]))
            name = _e(plain(row.get("run", row.get("configuration", row[pick]))))
            cells.append(
                f'<td class="pick"><input type="checkbox" name="unit" value="{token}"'
                f' aria-label="pick {name}"></td>'
            )
        for c in columns:
            value = row[c]
            if sd and row.get(f"{c} sd") is not None and value is not None:
                value = f"{plain(value)} ± {format(row[f'{c} sd'], '.4f')}"
            cells.append(_cell(value, c in numeric, c in best and row[c] == best[c]))
        tone = row_class[len(rows)] if row_class else ""
        rows.append(f'<tr class="{tone}">' if tone else "<tr>")
        rows[-1] += f"{''.join(cells)}</tr>"
    note = (
        message(f"Showing the first {limit:,} of {frame.height:,} rows.")
        if frame.height > limit
        else ""
    )
    return (
        f'<div class="table-wrap" id="{_e(ident)}-wrap"><table class="data" id="{_e(ident)}">'
        "<thead><tr>"
        f"{''.join(head)}</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + f"\n</tbody></table></div>{note}"
    )
