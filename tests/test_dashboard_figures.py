"""Dashboard figures on small frames (pure): heatmap facets on their own axes and colour
bars, history points that never join two configurations, distinct colours for many lines,
axis titles from the spec."""

from __future__ import annotations

import polars as pl

from evalstore import dashboards as dash
from evalstore.dashboards.heatmap import CELL_TEXT_PX, colour_bar_title
from evalstore.dashboards.plot import palette


def heatmap_panel(facet_cols: int = 2) -> dash.Panel:
    return dash.Panel(index=1, title="t", kind="heatmap", sql="select 1", x="list", y="run",
                      z="value", facet="series", facet_cols=facet_cols)  # fmt: skip


def two_facets() -> pl.DataFrame:
    """VOC-like classes for two runs, and HPatches-like image pairs (fpr95) for two others."""
    voc = [(f"class{c}", f"voc/r{r}", 0.5 + 0.01 * c + 0.1 * r) for c in range(20) for r in (1, 2)]
    hp = [(f"pair{p}", f"hp/d{d}", 0.3 - 0.01 * p) for p in range(3) for d in (1, 2)]
    return pl.DataFrame(
        {
            "series": ["classification · ap_voc07"] * len(voc) + ["verification · fpr95"] * 6,
            "list": [v[0] for v in voc + hp],
            "run": [v[1] for v in voc + hp],
            "value": [v[2] for v in voc + hp],
            "base_metric": ["ap_voc07"] * len(voc) + ["fpr95"] * 6,
        }
    )


def test_heatmap_facets_have_their_own_axes_and_colour_bars() -> None:
    fig = dash.panel_figure(heatmap_panel(), two_facets())
    assert fig is not None
    voc, hp = fig.data
    assert voc["x"] == [f"class{c}" for c in range(20)] and voc["y"] == ["voc/r1", "voc/r2"]
    assert hp["x"] == ["pair0", "pair1", "pair2"] and hp["y"] == ["hp/d1", "hp/d2"]
    # each subplot's axes list only its own categories
    assert fig.layout["xaxis"]["categoryarray"] == voc["x"]
    assert fig.layout["xaxis2"]["categoryarray"] == hp["x"]
    assert fig.layout["yaxis"]["categoryarray"] == voc["y"]
    assert fig.layout["yaxis2"]["categoryarray"] == hp["y"]
    assert (hp["xaxis"], hp["yaxis"]) == ("x2", "y2")
    # one colour bar per facet, beside its own subplot, titled with the metric
    assert voc["showscale"] and hp["showscale"]
    assert voc["colorbar"]["x"] > fig.layout["xaxis"]["domain"][1]
    assert voc["colorbar"]["x"] < fig.layout["xaxis2"]["domain"][0]
    assert hp["colorbar"]["x"] > fig.layout["xaxis2"]["domain"][1]
    assert voc["colorbar"]["title"]["text"] == "ap_voc07 (higher is better)"
    assert hp["colorbar"]["title"]["text"] == "fpr95 (lower is better)"
    # lower is better: the reversed scale, so that better is the same colour everywhere
    assert hp["reversescale"] is True and voc["reversescale"] is False


def test_heatmap_prints_values_only_in_wide_cells() -> None:
    fig = dash.panel_figure(heatmap_panel(facet_cols=1), two_facets())
    assert fig is not None
    voc, hp = fig.data
    assert CELL_TEXT_PX <= 1100 / 20 and voc["texttemplate"] == "%{z:.3f}"
    assert voc["textfont"]["size"] >= 10 and hp["texttemplate"] == "%{z:.3f}"
    many = pl.DataFrame(
        {
            "series": ["s"] * 60, "list": [f"q{i}" for i in range(60)], "run": ["r"] * 60,
            "value": [0.5] * 60, "base_metric": ["ap"] * 60,
        }
    )  # fmt: skip
    fig = dash.panel_figure(heatmap_panel(facet_cols=1), many)
    assert fig is not None
    assert "texttemplate" not in fig.data[0] and "%{z:.4f}" in fig.data[0]["hovertemplate"]


def test_colour_bar_title_without_a_registered_metric() -> None:
    assert colour_bar_title(None, "value") == ("value", True)
    assert colour_bar_title("my_metric", "value") == ("my_metric", True)
    assert colour_bar_title("reprojection_error", "value") == (
        "reprojection_error (lower is better)",
        False,
    )
    frame = two_facets().drop("base_metric")
    fig = dash.panel_figure(heatmap_panel(), frame)
    assert fig is not None
    assert [t["colorbar"]["title"]["text"] for t in fig.data] == ["value", "value"]


def test_a_line_joins_one_configuration_only() -> None:
    """Two configurations of one experiment, interleaved in time: no trace holds both; the
    one with runs at two times is a line, the other points; the best so far spans both."""
    panel = dash.Panel(index=1, title="t", kind="scatter", sql="select 1", x="t", y="v",
                       error="sd", color="e", line_group="c", best_so_far=True,
                       hover=("c",))  # fmt: skip
    frame = pl.DataFrame(
        {
            "t": [1, 2, 3, 4],
            "v": [0.5, 0.9, 0.6, 0.7],
            "sd": [None, None, 0.1, None],
            "e": ["x"] * 4,
            "c": ["a", "b", "a", "c"],
            "base_metric": ["ap"] * 4,
        }
    )
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    marks = [t for t in fig.data if not t["name"].endswith("best so far")]
    assert [sorted({c[0] for c in t["customdata"]}) for t in marks] == [["a"], ["b"], ["c"]]
    assert [t["mode"] for t in marks] == ["lines+markers", "markers", "markers"]
    assert marks[0]["x"] == [1, 3] and marks[0]["error_y"]["array"] == [0.0, 0.1]
    assert [t["showlegend"] for t in marks] == [True, False, False]
    best = next(t for t in fig.data if t["name"].endswith("best so far"))
    assert best["x"] == [1, 2, 3, 4] and best["y"] == [0.5, 0.9, 0.9, 0.9]


def test_many_lines_get_distinct_explicit_colours() -> None:
    """20 runs on one chart: every line has its own colour from the palette (Plotly's
    colorway has 10 and would repeat them)."""
    n = 20
    frame = pl.DataFrame(
        {
            "threshold": [float(t) for _ in range(n) for t in range(1, 4)],
            "mma": [0.1 * t + 0.01 * r for r in range(n) for t in range(1, 4)],
            "run": [f"e/r{r}" for r in range(n) for _ in range(3)],
        }
    )
    for kind in ("line", "scatter", "bar"):
        panel = dash.Panel(index=1, title="t", kind=kind, sql="select 1", x="threshold",
                           y="mma", color="run")  # fmt: skip
        fig = dash.panel_figure(panel, frame)
        assert fig is not None
        hues = [(t.get("line") or {}).get("color") or t["marker"]["color"] for t in fig.data]
        assert len(hues) == n and len(set(hues)) == n, kind
        assert hues == list(palette()[:n])
    assert len(set(palette())) == len(palette()) == 44


def test_mma_chart_says_its_unit() -> None:
    spec = dash.load_spec(dash.dashboards_dir() / "curves.toml")
    panel = next(p for p in spec.panels if p.query == "dashboards/mma_curves")
    frame = pl.DataFrame(
        {"run": ["a", "a"], "threshold": [1.0, 2.0], "mma": [0.2, 0.4], "n_lists": [3, 3]}
    )
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    assert fig.layout["xaxis"]["title"]["text"] == "threshold (px)"
    assert fig.layout["yaxis"]["title"]["text"] == "MMA"
    untitled = dash.Panel(index=1, title="t", kind="line", sql="select 1", x="threshold", y="mma")
    fig = dash.panel_figure(untitled, frame)
    assert fig is not None and fig.layout["xaxis"]["title"]["text"] == "threshold"


def test_heatmap_rows_leave_room_for_their_own_tick_labels_only() -> None:
    # three facets, one per row: short labels, long image-pair names (turned), short again
    frame = two_facets()
    long = frame.filter(pl.col("series") == "classification · ap_voc07").with_columns(
        series=pl.lit("matching · ap"), list="i_" + pl.col("list") + "_viewpoint_tough" * 2,
        base_metric=pl.lit("ap"),
    )  # fmt: skip
    short = frame.filter(pl.col("series") == "verification · fpr95")
    fig = dash.panel_figure(heatmap_panel(facet_cols=1), pl.concat([frame.head(40), long, short]))
    assert fig is not None
    tops = [fig.layout[a]["domain"] for a in ("yaxis", "yaxis2", "yaxis3")]
    under_first = tops[0][0] - tops[1][1]  # fractions of the plot area
    under_second = tops[1][0] - tops[2][1]
    assert "tickangle" not in fig.layout["xaxis"] and fig.layout["xaxis2"]["tickangle"] == -30
    assert under_second > under_first > 0  # the turned labels get room, the short ones less
