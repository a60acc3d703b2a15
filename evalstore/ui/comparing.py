"""The UI's compare page: the picked runs or configurations against a baseline, with the
numbers of ``evalstore compare`` (95% intervals, Holm-adjusted p-values), the per-list
differences and scatter of each task's headline metric (the dashboards' figures), and what
changed between the baseline and the first other unit.
"""

from __future__ import annotations

import html
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from evalstore.analysis.compare import COMPARE_COLUMNS, compare_units
from evalstore.analysis.diff import diff_lists
from evalstore.dashboards.changed import lists_figure
from evalstore.dashboards.comparison import comparison_figure
from evalstore.dashboards.pages import plot_html
from evalstore.dashboards.scatter import scatter_figure
from evalstore.dashboards.specs import Panel
from evalstore.dashboards.text import plain
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics.registry import HEADLINE, get
from evalstore.runs.selection import list_runs
from evalstore.ui import data
from evalstore.ui.caveats import with_caveats
from evalstore.ui.figures import FEW_LISTS, readable_bars, readable_scatter
from evalstore.ui.picker import picker
from evalstore.ui.shell import data_table, hidden, message, section
from evalstore.ui.view import FILTERS

if TYPE_CHECKING:
    from evalstore.store.facade import Store
    from evalstore.ui.view import View

__all__ = ["FEW_LISTS", "SIGNIFICANT", "compare_page"]

# compare's columns the table leaves out (the title names the baseline; the rest is detail)
_LEFT_OUT = ("baseline", "effect_size", "n_runs", "baseline_runs", "higher_is_better")
_FIRST = ("run", "task", "metric", "params", "diff", "ci_low", "ci_high", "p_value", "p_adj")
# the difference, its interval and p-values first: a narrow window scrolls the rest away
_COLUMNS = [
    *_FIRST,
    *[c for c in COMPARE_COLUMNS if c not in _LEFT_OUT and c not in _FIRST],
]

#: The adjusted p-value under which a row of the table is coloured better or worse.
SIGNIFICANT = 0.05


def _per_list(store: Store, units: list[Any], result: pl.DataFrame) -> pl.DataFrame:
    """The comparison panel's frame: per other unit, task and per-list metric, each list's
    value (the mean over a configuration's runs) beside the baseline's, with compare's
    statistics of the pair."""
    base = units[0]
    frames = []
    for row in result.filter(pl.col("n_lists") > 1).iter_rows(named=True):
        try:
            metric = get(row["metric"]).name
        except InvalidInput:
            continue  # a logged value: no lists
        if not _headline(row["task"], metric, row["params"]):
            continue
        other = next(u for u in units[1:] if u.label == row["run"])
        every = [*base.run_ids, *other.run_ids]
        lists = store.query(
            "compare/unit_lists",
            {"runs": every, "task": row["task"], "metric": metric, "params": row["params"]},
        )
        means = [
            lists.filter(pl.col("run_id").is_in(list(u.run_ids)))
            .group_by("group_id")
            .agg(pl.col("value").sort_by("run_id").mean().alias(name))
            for u, name in ((base, "baseline_value"), (other, "value"))
        ]
        paired = means[1].join(means[0], on="group_id").sort("group_id")
        stats = {
            "run": other.label,
            "baseline": base.label,
            "task": row["task"],
            "metric": metric,
            "params": row["params"],
            "mean_diff": row["diff"],
            "ci_low": row["ci_low"],
            "ci_high": row["ci_high"],
            "p_value": row["p_value"],
            "wins": row["wins"],
            "losses": row["losses"],
            "resampled": row["resampled"],
        }
        frames.append(
            paired.with_columns(
                diff=pl.col("value") - pl.col("baseline_value"),
                **{k: pl.lit(v) for k, v in stats.items()},
            )
        )
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def _headline(task: str, metric: str, params: str) -> bool:
    """Whether a per-list metric is one of the task's headline columns (its sweep value
    included: precision_at_sigma at 3 px, not at 6 and 9)."""
    for name, at in HEADLINE.get(task, ()):
        sweep = get(name).sweep
        if name == metric and (
            at is None or sweep is None or json.loads(params).get(sweep.column) == at
        ):
            return True
    return False


def _changes(fields: list[tuple[str, Any, Any]], a: str, b: str) -> str:
    frame = pl.DataFrame(
        {"what": [f[0] for f in fields], a: [plain(f[1]) for f in fields],
         b: [plain(f[2]) for f in fields]},
        schema={"what": pl.String, a: pl.String, b: pl.String},
    )  # fmt: skip
    if frame.height == 0:
        return message("Nothing differs but the results.")
    return data_table(frame, frame.columns, ident="changed-meta")


def _param_changes(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """The parameters whose values differ, as ``param KEY`` rows (``(unset)`` where missing)."""
    return [(f"param {k}", a.get(k, "(unset)"), b.get(k, "(unset)"))
            for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]  # fmt: skip


def _settings(text: str) -> dict[str, str]:
    """A configuration's ``key=value, ...`` text as a dict."""
    return dict(part.split("=", 1) for part in text.split(", ") if "=" in part)


def _what_changed(store: Store, units: list[Any], view: View) -> str:
    """The baseline and the first other unit: for two runs the metadata that differs and the
    lists whose value moved most; for configurations, the settings that differ."""
    base, other = units[0], units[1]
    fields: list[tuple[str, Any, Any]] = []
    if base.group or other.group:
        fields = _param_changes(_settings(base.config), _settings(other.config))
        if len(base.run_ids) != len(other.run_ids):
            fields.append(("seeds (runs)", len(base.run_ids), len(other.run_ids)))
        body = _changes(fields, base.label, other.label)
        said = "The settings that differ between the two configurations (seeds aside)."
        return section("What changed", body, said, "changed")
    a, b = base.run_ids[0], other.run_ids[0]
    meta = list_runs(store).filter(pl.col("run_id").is_in([a, b]))
    rows = {r["run_id"]: r for r in meta.iter_rows(named=True)}
    for key in ("created_at", "git_commit", "tags", "notes"):
        if rows[a][key] != rows[b][key]:
            fields.append((key, rows[a][key], rows[b][key]))
    fields += _param_changes(*(json.loads(rows[r]["params"] or "{}") for r in (a, b)))
    body = _changes(fields, base.label, other.label)
    try:
        # by name: what it says of the runs names them as the page does
        names = [f"{rows[r]['experiment']}/{rows[r]['name']}" for r in (a, b)]
        moves = diff_lists(store, *names, task=_diff_task(store, view, a, b))
    except (InvalidInput, duckdb.Error) as exc:
        body += message(f"No per-list moves: {exc}")
    else:
        higher = get(moves["metric"][0]).higher_is_better
        body += plot_html(
            "changed-lists", lists_figure(moves, base.label, other.label, higher=higher)
        )
    said = ("The metadata that differs between the two runs, then the lists whose value moved "
            "most (evalstore diff).")  # fmt: skip
    return section("What changed", body, said, "changed")


def compare_page(store: Store, view: View) -> str:
    """The picked units against the baseline: compare's table (differences, 95% intervals,
    Holm-adjusted p-values), the per-list differences and scatter, and what changed."""
    picked = data.units(store, view)
    units = [u for _, u in picked]
    if len(units) < 2:
        said = "Pick two or more runs (or configurations) to compare"
        return picker(store, view, "/compare", open_=True) + message(
            f"{said}, here or on the Runs page; the first picked run tagged 'baseline', "
            "else the oldest, is the baseline.",
            "empty",
        )
    options = "".join(
        f'<option value="{html.escape(token)}"{" selected" if i == 0 else ""}>'
        f"{html.escape(u.label)}</option>"
        for i, (token, u) in enumerate(picked)
    )
    keep = hidden(view, (*FILTERS, "unit", "task", "metric"))
    chooser = picker(store, view, "/compare") + (
        f'<form method="get" action="/compare" class="baseline">{keep}<label>baseline '
        f'<select name="baseline" id="baseline">{options}</select></label>'
        '<button type="submit">Compare with it</button></form>'
    )
    try:
        every = compare_units(store, units)
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0]
        return chooser + message(
            f"These runs lack stored values (the UI reads the store and computes nothing): "
            f"evaluate them with evalstore eval first ({first})",
            "error",
        )
    chooser += _task_form(view, every)
    result = with_caveats(_in_order(_chosen(every, view)))
    shown = result.select(*[c for c in _COLUMNS if c in result.columns], "caveat")
    tones = [
        "" if p is None or p >= SIGNIFICANT or d is None or d == 0
        else ("better" if (d > 0) == up else "worse")
        for p, d, up in result.select("p_adj", "diff", "higher_is_better").rows()
    ]  # fmt: skip
    table = data_table(shown, shown.columns, ident="compare-table", row_class=tones)
    body = chooser + section(
        f"Against {units[0].label}",
        table,
        "Each metric of each run (or configuration: the mean over its seeds) minus the "
        "baseline's, with its 95% interval and p-value as evalstore compare computes them "
        "(paired over lists; items within lists below 10 lists; a run value of image pairs, "
        "as pose_auc, over its pairs), and p_adj, the Holm "
        f"adjustment over every row of the table. Green: better than the baseline, red: worse, "
        f"with p_adj < {SIGNIFICANT}. Each interval is clipped to the differences the metric's "
        f"range allows (its caveat says so, and what it was); one from fewer than {FEW_LISTS} "
        "lists says so in its caveat: its coverage is not to be trusted.",
        "compare",
    )
    frame = _per_list(store, units, result)
    if frame.height:
        panel = Panel(index=1, title="per list", kind="comparison", facet_cols=1)
        body += section(
            "Per-list differences",
            plot_html("compare-bars", readable_bars(comparison_figure(panel, frame))),
            "The headline metric of each task, per list: run minus baseline, "
            "sorted; the band is the 95% interval of the mean difference, p its p-value "
            "before the Holm adjustment (p_adj in the table).",
            "bars",
        )
        body += section(
            "Per-list values",
            plot_html(
                "compare-scatter",
                readable_scatter(
                    scatter_figure(replace(panel, kind="scatter", facet_cols=2), frame),
                    _chart_params(frame),
                ),
            ),
            "Each list's value in the run (y) against the baseline (x); a number over a "
            "point counts the lists that share it.",
            "scatter",
        )
    return body + _what_changed(store, units, view)


def _chosen(result: pl.DataFrame, view: View) -> pl.DataFrame:
    """The rows of the view's ``task`` and ``metric`` (empty: every one)."""
    if view.task:
        result = result.filter(pl.col("task") == view.task)
    if view.metric:
        result = result.filter(pl.col("metric") == view.metric)
    return result


def _param_key(params: str | None) -> tuple[Any, ...]:
    """A row's params in their numbers' order (threshold 2 before 10), not the text's."""
    try:
        loaded = json.loads(params or "{}")
    except ValueError:
        return ((1, 0.0, str(params)),)
    items = loaded.items() if isinstance(loaded, dict) else []
    return tuple(
        (0, float(v), k) if isinstance(v, int | float) else (1, 0.0, f"{k}={v}") for k, v in items
    )


def _in_order(result: pl.DataFrame) -> pl.DataFrame:
    """The rows by run, task and metric as compare gives them, each metric's parameter
    values in numeric order."""
    if result.height == 0:
        return result
    first: dict[tuple[Any, ...], int] = {}
    keys = []
    for i, row in enumerate(result.select("run", "task", "metric", "params").rows()):
        head = first.setdefault(row[:3], i)
        keys.append((head, _param_key(row[3]), i))
    order = sorted(range(result.height), key=keys.__getitem__)
    return result[order]


def _task_form(view: View, result: pl.DataFrame) -> str:
    """The task and metric selects of the page (every one by default)."""
    keep = hidden(view, (*FILTERS, "unit", "baseline"))

    def select(name: str, values: list[str], chosen: str) -> str:
        options = '<option value="">every one</option>' + "".join(
            f'<option value="{html.escape(v)}"{" selected" if v == chosen else ""}>'
            f"{html.escape(v)}</option>"
            for v in values
        )
        return f'<label>{name} <select name="{name}" id="pick-{name}">{options}</select></label>'

    tasks = sorted(set(result["task"].to_list()))
    rows = result.filter(pl.col("task") == view.task) if view.task else result
    metrics = list(dict.fromkeys(rows["metric"].to_list()))
    return (
        f'<form method="get" action="/compare" class="baseline">{keep}'
        f"{select('task', tasks, view.task)}{select('metric', metrics, view.metric)}"
        '<button type="submit" id="pick-task-show">Show</button></form>'
    )


def _diff_task(store: Store, view: View, a: int, b: int) -> str | None:
    """The task of the per-list moves: the view's, else the first the two runs share
    (None: let diff choose, as it does for one task)."""
    if view.task:
        return view.task
    shared = [
        {t for (t,) in queries.fetch_rows(store.con, "store/run_tasks", {"run_id": r})}
        for r in (a, b)
    ]
    common = sorted(shared[0] & shared[1])
    return common[0] if common else None


def _chart_params(frame: pl.DataFrame) -> list[str]:
    """The params of each chart of the scatter, in its order (one per run, baseline, task,
    metric and params)."""
    keys = ["run", "baseline", "task", "metric", "params"]
    return [str(r[4]) for r in frame.select(keys).unique(maintain_order=True).rows()]
