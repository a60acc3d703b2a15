"""Dashboard pages: the HTML around the figures (pure) and the files it is written to.

:func:`render_page` and :func:`render_index` turn frames into HTML and nothing else;
:func:`render_dashboard` runs a dashboard's queries for its page; :func:`write_dashboards`
writes the pages, an ``index.html`` and one shared ``plotly.min.js`` (never a CDN: the pages
work offline), rewriting only the files that change. Output is deterministic: the same database
gives byte-identical files. Every user string is escaped for HTML.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from evalstore.dashboards.axes import code_html
from evalstore.dashboards.board import board_html
from evalstore.dashboards.comparison import missing_baselines, paired
from evalstore.dashboards.data import panel_data, query_filters
from evalstore.dashboards.figures import panel_figure
from evalstore.dashboards.specs import Dashboard, Panel, default_specs, load_spec
from evalstore.dashboards.text import plain
from evalstore.db import sandbox
from evalstore.errors import InvalidInput

if TYPE_CHECKING:
    from evalstore.dashboards.plot import Figure
    from evalstore.db.connection import Progress
    from evalstore.runs.registry import RunRef
    from evalstore.store.facade import Store

__all__ = [
    "draw_script",
    "figure_json",
    "page_html",
    "panel_html",
    "plot_html",
    "plotly_js",
    "render_dashboard",
    "render_index",
    "render_page",
    "table_html",
    "write_dashboards",
    "write_if_changed",
]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;
background:#f6f7f9}
header{background:#fff;border-bottom:1px solid #ddd;padding:16px 32px}
header nav a{color:#1f77b4;text-decoration:none;font-size:14px}
h1{margin:6px 0 4px;font-size:24px}h2{margin:0 0 6px;font-size:18px}
main{padding:16px 32px;max-width:1400px}
.panel{background:#fff;border:1px solid #ddd;border-radius:6px;padding:16px;margin:0 0 20px}
.desc{color:#555;margin:0 0 10px;font-size:14px}
.desc code{background:#eef0f3;padding:0 3px;border-radius:3px;font-size:13px}
.filters{color:#555;font-size:13px}
.empty{color:#7a4b00;background:#fff6e0;border:1px solid #f0d090;padding:12px;
border-radius:4px;margin:0}
.table-wrap{overflow-x:auto;max-height:640px;overflow-y:auto}
table.data{border-collapse:collapse;font-size:13px;width:100%}
table.data th{position:sticky;top:0;background:#f0f2f5;text-align:left}
table.data th,table.data td{border-bottom:1px solid #e5e5e5;padding:4px 8px;white-space:nowrap}
table.data td.num{text-align:right;font-variant-numeric:tabular-nums}
table.data.board{width:auto;min-width:40%}
table.data.board th{white-space:normal;vertical-align:bottom;min-width:70px}
table.data td.best{font-weight:700;background:#eaf6ea}
h3.board{margin:12px 0 2px;font-size:15px}p.ranked-by{margin:0 0 6px}
table.data td.rank{color:#555;width:2em}table.data th.ranked{background:#e3ecf7}
.note{color:#777;font-size:12px;margin:6px 0 0}.note.baseline{color:#7a4b00;font-size:13px}
ul.dashboards{list-style:none;padding:0}ul.dashboards li{background:#fff;border:1px solid #ddd;
border-radius:6px;padding:12px 16px;margin:0 0 12px}
ul.dashboards a{font-size:18px;color:#1f77b4;text-decoration:none}
"""

_DRAW = """
(function () {
  var blocks = document.querySelectorAll('script[type="application/json"][data-plot]');
  if (typeof Plotly === "undefined") {
    for (var i = 0; i < blocks.length; i++) {
      document.getElementById(blocks[i].dataset.plot).textContent =
        MISSING;
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


def draw_script(missing: str) -> str:
    """The script that draws every figure block of a page (:func:`plot_html`) with
    plotly.min.js, or writes ``missing`` in each when Plotly did not load. It must run after
    the blocks are parsed: at the end of the body, or ``defer``red."""
    return _DRAW.replace("MISSING", json.dumps(missing))


_SCRIPT = draw_script("plotly.min.js did not load: keep it in the folder of this page.")


def plot_html(plot_id: str, fig: Figure | None) -> str:
    """A figure's element and its JSON block (never run as a script: :func:`draw_script`
    draws it); an empty figure for None."""
    data = figure_json(fig) if fig is not None else "{}"
    return (
        f'<div class="plot" id="{plot_id}"></div>\n'
        f'<script type="application/json" data-plot="{plot_id}">{data}</script>'
    )


def figure_json(fig: Figure) -> str:
    # <, > and / escaped (safe inside <script>), NaN as null, as plotly's json engine writes
    text = fig.to_json()
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def table_html(panel: Panel, frame: pl.DataFrame) -> str:
    columns = list(panel.columns) or frame.columns
    shown = frame.head(panel.limit)
    numeric = {c for c in columns if frame[c].dtype.is_numeric()}
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    rows = []
    for row in shown.select(columns).iter_rows():
        cells = "".join(
            f'<td class="num">{html.escape(plain(v))}</td>'
            if c in numeric
            else f"<td>{html.escape(plain(v))}</td>"
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


def panel_html(panel: Panel, frame: pl.DataFrame) -> str:
    """A panel as a page section (pure): its title, description and table or figure, or
    what it lacks when ``frame`` is empty (nothing at all for a panel with ``skip_empty``)."""
    if frame.height == 0 and panel.skip_empty:
        return ""
    parts = [f'<section class="panel" id="{panel.div_id}">', f"<h2>{html.escape(panel.title)}</h2>"]
    if panel.description:
        parts.append(f'<p class="desc">{code_html(panel.description)}</p>')
    notes = []
    if panel.kind == "comparison":  # runs without a baseline: say how to choose one
        notes = missing_baselines(frame)
        frame = paired(frame)
    if frame.height == 0:
        message = panel.empty or "the query returned no rows for the selected runs."
        parts.append(f'<p class="empty">No data for this panel: {html.escape(message)}</p>')
    elif panel.kind == "table":
        parts.append(table_html(panel, frame))
    else:
        if panel.kind == "leaderboard":  # the tables, then their charts
            parts.append(board_html(panel, frame))
        fig = panel_figure(panel, frame)
        parts.append(plot_html(f"{panel.div_id}-plot", fig))
    parts += [f'<p class="note baseline">{html.escape(n)}</p>' for n in notes]
    parts.append("</section>")
    return "\n".join(parts)


def _filters_note(names: Mapping[str, Sequence[str]]) -> str:
    said = [f"{key}: {', '.join(values)}" for key, values in names.items() if values]
    return "; ".join(said) if said else "all runs"


def page_html(title: str, description: str, shown: str, sections: str) -> str:
    """A page of panels (pure): ``title`` and ``shown`` (what the runs are filtered to) as
    text, ``description`` and ``sections`` as HTML already escaped; the page draws every
    figure of its ``sections`` with the shared ``plotly.min.js``."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} · evalstore</title>
<style>{_CSS}</style>
<script src="plotly.min.js"></script>
</head>
<body>
<header>
<nav><a href="index.html">&larr; all dashboards</a></nav>
<h1>{html.escape(title)}</h1>
{description}
<p class="filters">Runs shown: {html.escape(shown)}</p>
</header>
<main>
{sections}
</main>
<script>{_SCRIPT}</script>
</body>
</html>
"""


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
    sections = "\n".join(panel_html(p, f) for p, f in zip(dashboard.panels, frames, strict=True))
    description = (
        f'<p class="desc">{code_html(dashboard.description)}</p>' if dashboard.description else ""
    )
    return page_html(dashboard.title, description, _filters_note(filters or {}), sections)


def render_index(
    dashboards: Sequence[Dashboard], filters: Mapping[str, Sequence[str]] | None = None
) -> str:
    """The ``index.html`` linking every dashboard page (pure)."""
    items = []
    for d in dashboards:
        panels = ", ".join(html.escape(p.title) for p in d.panels)
        items.append(
            f'<li><a href="{html.escape(d.name)}.html">{html.escape(d.title)}</a>'
            f'<p class="desc">{code_html(d.description)}</p>'
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
    values = {"experiments": None, "runs": None, "baseline": None, **(filters or {})}
    frames = [panel_data(store, p, values) for p in dashboard.panels]
    return render_page(dashboard, frames, shown)


def write_dashboards(
    store: Store,
    out_dir: str | Path,
    specs: Sequence[str | Path] | None = None,
    experiments: Sequence[str] = (),
    runs: Sequence[RunRef] = (),
    progress: Progress | None = None,
    *,
    baseline: RunRef | None = None,
) -> list[Path]:
    """Render dashboards to ``out_dir``: one page per spec, ``index.html`` and
    ``plotly.min.js`` (written once, shared by the pages, which then work offline).

    Args:
        store: an open store. Specs with their own ``sql`` need it read-only: it becomes a
            sandbox (:mod:`evalstore.db.sandbox`) for the rest of its life.
        out_dir: the output folder, created if needed; existing pages are overwritten.
        specs: spec files; default :func:`default_specs`.
        experiments: show only these experiments' runs (default all).
        runs: show only these runs (names or ids; default all).
        progress: called with (dashboard name, done, total).
        baseline: the run every selected run is compared against on comparison panels
            (default: the first of ``runs``, else each experiment's run tagged ``baseline``).

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
    own_sql = [p for d in dashboards for p in d.panels if p.sql is not None]
    if own_sql and not sandbox.is_locked(store.con):
        if not store.read_only:
            raise InvalidInput(
                f"{own_sql[0].where}: a spec's own `sql` runs only in a sandbox: open the "
                "store read-only (Store(path, read_only=True)), as `evalstore dashboard` does"
            )
        sandbox.lock_down(store.con)
    filters = query_filters(store, experiments, runs, baseline=baseline)
    shown = {
        "experiments": list(dict.fromkeys(experiments)),
        "runs": [str(r) for r in dict.fromkeys(runs)],
        "baseline": [] if baseline is None else [str(baseline)],
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_if_changed(out / "plotly.min.js", plotly_js())
    pages = []
    for done, d in enumerate(dashboards, start=1):
        page = out / f"{d.name}.html"
        write_if_changed(page, render_dashboard(store, d, filters, shown))
        pages.append(page)
        if progress is not None:
            progress(d.name, done, len(dashboards))
    index = out / "index.html"
    write_if_changed(index, render_index(dashboards, shown))
    return [index, *pages]


def plotly_js() -> bytes:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().encode("utf-8")


def write_if_changed(path: Path, content: str | bytes) -> None:
    """Write ``path`` (through a temporary file, replaced at once) unless it already holds
    exactly ``content``: a file of another size is rewritten without being read, one of the
    same size only when its bytes differ (plotly.min.js is 4.8 MB: a second call leaves it,
    and every unchanged page, untouched)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        same = path.stat().st_size == len(data) and path.read_bytes() == data
    except FileNotFoundError:
        same = False
    if same:
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
