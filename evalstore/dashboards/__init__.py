"""Dashboards as code: TOML specs -> self-contained Plotly HTML pages.

A spec (``dashboards/*.toml``) has a ``title``, a ``description`` and ``[[panels]]``; each
panel names a query (a named query from ``sql/dashboards/``, or inline ``sql``), a ``kind``
of chart and the columns to draw (``x``, ``y``, ``z``, ``color``, ``facet``, ``error``).
Every query gets the parameters ``$experiments`` (varchar[]) and ``$runs`` (integer[]), NULL
meaning all, so that one filter applies to every panel. See ``docs/dashboards.md``.

The layers: :func:`load_spec` reads and validates a spec (no database); :func:`panel_data`
runs a panel's query; :func:`panel_figure` and :func:`render_page` are pure (frames in,
figures and HTML out); :func:`write_dashboards` writes the pages, an ``index.html`` and one
shared ``plotly.min.js`` (never a CDN: the pages work offline). Output is deterministic: the
same database gives byte-identical files. Every user string (run names, tags, parameters,
slices) is escaped for HTML, and for Plotly, which renders some HTML in its labels.

The package, by noun: :mod:`~evalstore.dashboards.specs` (loading and validating specs),
:mod:`~evalstore.dashboards.data` (running the panels' queries),
:mod:`~evalstore.dashboards.figures` (pure Plotly figure builders, with
:mod:`~evalstore.dashboards.comparison` for the run comparisons,
:mod:`~evalstore.dashboards.board` for the leaderboards of configurations,
:mod:`~evalstore.dashboards.grid` for the grid of charts,
:mod:`~evalstore.dashboards.axes` for axes and titles a reader needs no hover for,
:mod:`~evalstore.dashboards.pr` for the titles and zoom of PR charts and
:mod:`~evalstore.dashboards.text` for cells and labels as text),
:mod:`~evalstore.dashboards.pages` (the HTML and the files) and the "what changed" page of two
runs (:mod:`~evalstore.dashboards.changed`, its figures, and
:mod:`~evalstore.dashboards.changed_page`); this module re-exports their public API. Plotly
is imported when a figure or a page is made, not with the package.
"""

from evalstore.dashboards.changed_page import render_changed, write_changed
from evalstore.dashboards.data import evaluate_selected, panel_data, selected_run_ids
from evalstore.dashboards.figures import panel_figure
from evalstore.dashboards.pages import (
    render_dashboard,
    render_index,
    render_page,
    write_dashboards,
)
from evalstore.dashboards.specs import (
    KINDS,
    Dashboard,
    Panel,
    dashboards_dir,
    default_specs,
    load_spec,
)

__all__ = [
    "KINDS",
    "Dashboard",
    "Panel",
    "dashboards_dir",
    "default_specs",
    "evaluate_selected",
    "load_spec",
    "panel_data",
    "panel_figure",
    "render_changed",
    "render_dashboard",
    "render_index",
    "render_page",
    "selected_run_ids",
    "write_changed",
    "write_dashboards",
]
