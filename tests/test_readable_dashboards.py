"""Static dashboards a researcher reads without hovering (pure, on small frames): chart
titles that fit their column, time ticks chosen from the span, y axes on the metric's range,
one labelled point per configuration, heatmaps split where lists differ on one colour scale,
PR charts that state their cap and their zoom, lines that never look alike, intervals cut to
the metric's range with a warning below 5 lists, backticks shown as code, "value" on charts
of single runs, whole-number ticks for list indices."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from conftest import ranked
from step_runs import add_steps

from evalstore import Store, evaluate
from evalstore import dashboards as dash
from evalstore.dashboards.axes import FEW_LISTS
from evalstore.dashboards.pages import panel_html
from evalstore.dashboards.plot import palette

T0 = datetime(2026, 3, 4, 3, 52, 8)


def history_panel(facet_cols: int = 3) -> dash.Panel:
    return dash.Panel(index=1, title="t", kind="scatter", sql="select 1", x="created_at",
                      y="value", error="sd", color="experiment", line_group="config",
                      facet="series", hover=("run", "n_runs", "sd"), best_so_far=True,
                      facet_cols=facet_cols)  # fmt: skip


def history(times: list[datetime], series: list[str] | None = None) -> pl.DataFrame:
    """One configuration's three seeds (its mean as they came in) and a one-run
    configuration, per series."""
    names = series or ["classification · map"]
    rows = []
    for s in names:
        for k, t in enumerate(times[:3]):
            rows.append(
                (
                    s,
                    "wine",
                    '{"lr": 0.1}',
                    ", ".join(f"wine/mlp-seed{i}" for i in range(k + 1)),
                    k + 1,
                    t,
                    0.90 + 0.01 * k,
                    None if k == 0 else 0.3,
                )
            )
        rows.append((s, "wine", "#9", "wine/knn", 1, times[-1], 0.95, None))
    cols = ["series", "experiment", "config", "run", "n_runs", "created_at", "value", "sd"]
    frame = pl.DataFrame(rows, schema=cols, orient="row")
    return frame.with_columns(base_metric=pl.lit("ap"))


def test_chart_titles_fit_their_column_at_800_px() -> None:
    """Nine long metric titles on three columns: each title line fits a third of the
    charts' width in an 800 px window (about 7 px a character at 13 px), the whole title on
    hover where one is cut; today's titles ran into each other."""
    long = [f"classification · map_voc07_numpy_{k} (k=10, threshold=0.5, ties=optimistic)"
            for k in range(9)]  # fmt: skip
    fig = dash.panel_figure(history_panel(), history([T0, T0, T0, T0], long))
    assert fig is not None
    notes = fig.layout["annotations"]
    assert len(notes) == 9
    column_px = 600 / 3
    for note in notes:
        lines = note["text"].split("<br>")
        assert 1 < len(lines) <= 3
        assert all(len(line) * 13 * 0.55 <= column_px for line in lines), lines
        assert note.get("hovertext", " ".join(lines)).startswith("classification · map_voc07")
    assert any(n.get("hovertext") in long for n in notes)  # cut ones keep the whole on hover


@pytest.mark.parametrize(
    ("span", "tickformat"),
    [
        (timedelta(seconds=0.9995), "%H:%M:%S"),
        (timedelta(hours=3), "%H:%M<br>%b %d"),
        (timedelta(days=20), "%b %d"),
        (timedelta(days=400), "%Y-%m-%d"),
    ],
)
def test_time_ticks_follow_the_span_of_the_runs(span: timedelta, tickformat: str) -> None:
    """Runs made within a second get whole seconds (no "03:52:08.9995"), within hours the
    hour and the day; longer spans days or dates."""
    times = [T0, T0 + span / 3, T0 + span / 2, T0 + span]
    fig = dash.panel_figure(history_panel(), history(times))
    assert fig is not None
    axis = fig.layout["xaxis"]
    assert axis["type"] == "date" and axis["tickformat"] == tickformat
    if span < timedelta(days=1):
        assert axis["dtick"] >= 1000  # never a fraction of a second
    assert "%S" in axis["hoverformat"] or "%M" in axis["hoverformat"]


def test_history_y_axis_stays_on_the_metric_range_and_error_bars_are_cut() -> None:
    """AP values near 0.9 with an sd of 0.3: the bars stop at 1 (and at 0), the y axis
    spans the values drawn within 0..1, never 0..1.5 as Plotly's autorange gave."""
    fig = dash.panel_figure(history_panel(), history([T0, T0 + timedelta(days=1)] * 2))
    assert fig is not None
    low, high = fig.layout["yaxis"]["range"]
    assert low >= -0.011 and high <= 1.011 and fig.layout["yaxis"]["autorange"] is False
    for t in fig.data:
        err = t.get("error_y")
        if err:
            for v, up in zip(t["y"], err["array"], strict=True):
                assert v + up <= 1.0 + 1e-12


def test_a_configuration_is_one_labelled_point_with_its_interval() -> None:
    """A configuration whose seeds came in one by one: its earlier means are small steps of
    one line, the last its point, with its label and its error bar; labels print where a
    chart has few configurations."""
    times = [T0, T0 + timedelta(hours=1), T0 + timedelta(hours=2), T0 + timedelta(hours=3)]
    fig = dash.panel_figure(history_panel(), history(times))
    assert fig is not None
    marks = [t for t in fig.data if not t["name"].endswith("best so far")]
    seeds, knn = marks
    assert seeds["marker"]["size"] == [4, 4, 9]
    assert seeds["error_y"]["array"][:2] == [0.0, 0.0] and seeds["error_y"]["array"][2] > 0
    assert seeds["text"] == ["", "", "wine/mlp"] and "text" in seeds["mode"]
    assert knn["text"] == ["wine/knn"] and knn["mode"] == "markers+text"
    # beside the point, up and right: the vertical error bar and the horizontal best-so-far
    # line through the point crossed a label centred above it
    assert seeds["textposition"] == knn["textposition"] == "top right"


def test_many_configurations_are_not_labelled() -> None:
    times = [T0 + timedelta(hours=k) for k in range(12)]
    frame = pl.DataFrame({
        "series": ["s"] * 12, "experiment": ["e"] * 12, "config": [f"c{k}" for k in range(12)],
        "run": [f"e/r{k}" for k in range(12)], "n_runs": [1] * 12, "created_at": times,
        "value": [0.5] * 12, "sd": [0.0] * 12, "base_metric": ["ap"] * 12,
    })  # fmt: skip
    fig = dash.panel_figure(history_panel(), frame)
    assert fig is not None
    assert not any("text" in t for t in fig.data)


def heatmap_panel() -> dash.Panel:
    return dash.Panel(index=1, title="t", kind="heatmap", sql="select 1", x="list", y="run",
                      z="value", facet="series", facet_cols=1)  # fmt: skip


def test_heatmap_splits_experiments_whose_lists_differ_on_one_colour_scale() -> None:
    """wine's class0-2 and synth's c0-c4 in one series: one chart each (no empty quadrants),
    titled with the experiment; every chart of AP coloured on 0..1, so 0.8 is one colour."""
    rows = [("classification · ap", f"class{c}", f"wine/r{r}", 0.8 + 0.05 * c, "ap", "wine")
            for c in range(3) for r in range(2)]  # fmt: skip
    rows += [("classification · ap", f"c{c}", f"synth/r{r}", 0.3 + 0.1 * c, "ap", "synth")
             for c in range(5) for r in range(3)]  # fmt: skip
    frame = pl.DataFrame(rows, schema=["series", "list", "run", "value", "base_metric",
                                       "experiment"], orient="row")  # fmt: skip
    fig = dash.panel_figure(heatmap_panel(), frame)
    assert fig is not None
    wine, synth = fig.data
    assert wine["x"] == ["class0", "class1", "class2"] and wine["y"] == ["wine/r0", "wine/r1"]
    assert synth["x"] == [f"c{c}" for c in range(5)] and len(synth["y"]) == 3
    assert all(None not in row for t in fig.data for row in t["z"])  # no empty cell
    titles = [a["text"] for a in fig.layout["annotations"]]
    assert titles == ["classification · ap · wine", "classification · ap · synth"]
    assert [(t["zmin"], t["zmax"]) for t in fig.data] == [(0.0, 1.0), (0.0, 1.0)]


def test_heatmap_of_an_unbounded_metric_shares_one_range() -> None:
    rows = [("a · reprojection_error", f"p{p}", f"e/r{r}", 1.0 + p + r, "reprojection_error")
            for p in range(2) for r in range(2)]  # fmt: skip
    rows += [("b · reprojection_error", f"p{p}", f"e/r{r}", 10.0 + p, "reprojection_error")
             for p in range(2) for r in range(2)]  # fmt: skip
    frame = pl.DataFrame(rows, schema=["series", "list", "run", "value", "base_metric"],
                         orient="row")  # fmt: skip
    fig = dash.panel_figure(heatmap_panel(), frame)
    assert fig is not None
    assert [(t["zmin"], t["zmax"]) for t in fig.data] == [(1.0, 11.0), (1.0, 11.0)]


def pr_frame(n_runs: int, n_task: int, floor: float) -> pl.DataFrame:
    rows = [
        (
            f"e/r{r}",
            "classification",
            k / 100,
            1.0 - (1.0 - floor) * (k / 100) ** 4 - 0.001 * r,
            5,
            n_task,
        )
        for r in range(n_runs)
        for k in range(101)
    ]
    return pl.DataFrame(rows, schema=["run", "task", "recall", "precision", "n_lists",
                                      "n_task"], orient="row")  # fmt: skip


def pr_panel() -> dash.Panel:
    return dash.Panel(index=1, title="t", kind="pr_curve", query="dashboards/pr_runs")


def test_pr_chart_states_its_cap_and_zooms_where_models_are_good() -> None:
    fig = dash.panel_figure(pr_panel(), pr_frame(8, 11, 0.9))
    assert fig is not None
    (title,) = [a["text"].replace("<br>", " ") for a in fig.layout["annotations"]]
    assert "the 8 newest of 11 runs" in title and "precision from 0.90" in title
    assert fig.layout["yaxis"]["range"][0] == pytest.approx(0.90)
    assert len([t for t in fig.data if t["type"] == "scatter"]) == 8


def test_pr_chart_without_cap_or_zoom_says_nothing_more() -> None:
    fig = dash.panel_figure(pr_panel(), pr_frame(3, 3, 0.1))
    assert fig is not None
    assert [a["text"] for a in fig.layout["annotations"]] == ["classification"]
    assert fig.layout["yaxis"]["range"] == [0.0, 1.02]


def test_lines_past_the_palette_are_dashed_never_alike() -> None:
    n = len(palette()) + 6
    frame = pl.DataFrame({
        "x": [float(t) for _ in range(n) for t in range(2)],
        "y": [0.1 * t for _ in range(n) for t in range(2)],
        "run": [f"e/r{r}" for r in range(n) for _ in range(2)],
    })  # fmt: skip
    panel = dash.Panel(index=1, title="t", kind="line", sql="select 1", x="x", y="y",
                       color="run")  # fmt: skip
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    looks = {(t["line"]["color"], t["line"].get("dash", "solid")) for t in fig.data}
    assert len(looks) == n


def comparison(n_lists: int, ci: tuple[float, float]) -> pl.DataFrame:
    return pl.DataFrame({
        "run_id": [2] * n_lists, "run": ["e/b"] * n_lists, "baseline_id": [1] * n_lists,
        "baseline": ["e/a"] * n_lists, "task": ["classification"] * n_lists,
        "metric": ["ap"] * n_lists, "params": ['{"ties": "grouped"}'] * n_lists,
        "group_id": [f"class{k}" for k in range(n_lists)],
        "value": [0.9] * n_lists, "baseline_value": [0.2] * n_lists, "diff": [0.7] * n_lists,
        "mean_diff": [0.7] * n_lists, "ci_low": [ci[0]] * n_lists, "ci_high": [ci[1]] * n_lists,
        "p_value": [0.01] * n_lists, "wins": [n_lists] * n_lists, "losses": [0] * n_lists,
        "resampled": ["items"] * n_lists, "note": [None] * n_lists,
    })  # fmt: skip


def comparison_panel() -> dash.Panel:
    return dash.Panel(index=1, title="t", kind="comparison", query="dashboards/list_differences")


def test_comparison_interval_is_cut_to_the_range_and_warns_below_5_lists() -> None:
    """A difference of APs lies in -1..1: an interval reaching 1.05 is drawn to 1 and says
    it was clipped; 2 lists carry a visible warning; the list axis ticks whole numbers."""
    fig = dash.panel_figure(comparison_panel(), comparison(2, (0.4, 1.05)))
    assert fig is not None
    title = fig.layout["annotations"][0].get("hovertext") or fig.layout["annotations"][0]["text"]
    title = title.replace("<br>", " ")
    assert "[+0.4000, +1.0000]" in title and "clipped" in title
    assert f"2 list(s): interval unreliable below {FEW_LISTS}" in title
    band = next(t for t in fig.data if t["name"] == "95% interval of the mean")
    assert max(band["y"]) == 1.0
    assert fig.layout["xaxis"]["dtick"] == 1


def test_comparison_of_enough_lists_has_no_warning() -> None:
    fig = dash.panel_figure(comparison_panel(), comparison(12, (0.6, 0.8)))
    assert fig is not None
    text = " ".join(a.get("hovertext") or a["text"] for a in fig.layout["annotations"])
    assert "unreliable" not in text and "clipped" not in text


def test_backticks_show_as_code() -> None:
    panel = dash.Panel(index=1, title="t", kind="table", sql="select 1",
                       description="params but for `seed` <b>")  # fmt: skip
    text = panel_html(panel, pl.DataFrame({"a": [1]}))
    assert "<code>seed</code>" in text and "`" not in text and "&lt;b&gt;" in text


def test_leaderboard_of_single_runs_says_value_not_mean_sd() -> None:
    frame = pl.DataFrame({
        "experiment": ["hp", "hp", "dg", "dg"], "config": ["a", "b", "c", "d"],
        "runs": [["hp/a"], ["hp/b"], ["dg/c-seed0", "dg/c-seed1"], ["dg/d-seed0", "dg/d-seed1"]],
        "n_runs": [1, 1, 2, 2], "task": ["verification"] * 2 + ["classification"] * 2,
        "metric": ["map"] * 4, "base_metric": ["ap"] * 4, "params": ['{"ties": "grouped"}'] * 4,
        "mean": [0.9, 0.8, 0.7, 0.6], "sd": [None, None, 0.01, 0.02],
    })  # fmt: skip
    panel = dash.Panel(index=1, title="t", kind="leaderboard", query="dashboards/leaderboard",
                       facet_cols=1)  # fmt: skip
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    titles = [fig.layout[k].get("title", {}).get("text") for k in ("yaxis", "yaxis2")]
    assert titles == ["mean ± sd", "value"]  # dg (2 seeds each), then hp (single runs)


def test_runs_with_training_steps_are_drawn_against_the_step(tmp_path: Path) -> None:
    """A run evaluated at steps 100, 200, 300 (step runs NAME@STEP): the overview's "Over
    training steps" panel draws its map against the step, one line per run, and the step
    runs stay out of the history."""
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(ranked(seed=1), task="retrieval", run="train/net")
        add_steps(store, "train/net", [100, 200, 300])
        evaluate(store, ["train/net", *(f"train/net@{k}" for k in (100, 200, 300))])
        spec = dash.load_spec(dash.dashboards_dir() / "overview.toml")
        panel = next(p for p in spec.panels if p.title == "Over training steps")
        frame = dash.panel_data(store, panel, {"experiments": None, "runs": None})
        history = next(p for p in spec.panels if p.title == "Metric history")
        runs = dash.panel_data(store, history, {"experiments": None, "runs": None})["run"]
    shown = frame.filter(pl.col("series") == "retrieval · map")
    assert shown["run"].to_list() == ["train/net"] * 3
    assert shown["step"].to_list() == [100, 200, 300]
    assert not any("@" in r for r in runs.to_list())
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    line = next(t for t in fig.data if t["name"] == "train/net")
    assert line["x"] == [100, 200, 300] and line["mode"] == "lines+markers"
    assert fig.layout["xaxis"]["title"]["text"] == "training step"
    # a store without steps shows no such section at all (skip_empty), not an empty box
    assert panel.skip_empty and panel_html(panel, frame.clear()) == ""
    assert "Over training steps" in panel_html(panel, frame)


def test_many_list_labels_are_thinned_to_what_fits() -> None:
    """60 image pairs on one heatmap: every 4th label is written (60 turned labels ran into
    one another at 800 px; every 3rd still did, in the width the row labels and the colour
    bar leave); the chart keeps every column, and the hover names each."""
    rows = [("matching · ap", f"i_pair_{p:02d}", f"hp/d{d}", 0.5, "ap") for p in range(60)
            for d in range(2)]  # fmt: skip
    frame = pl.DataFrame(rows, schema=["series", "list", "run", "value", "base_metric"],
                         orient="row")  # fmt: skip
    fig = dash.panel_figure(heatmap_panel(), frame)
    assert fig is not None
    axis = fig.layout["xaxis"]
    assert len(axis["categoryarray"]) == 60 and len(fig.data[0]["x"]) == 60
    assert axis["tickvals"] == axis["categoryarray"][::4] and len(axis["ticktext"]) == 15
