"""The dashboards' plain-data figures against Plotly's own objects: the same subplot grid as
``make_subplots``, the same JSON as Plotly's json engine, every trace valid for Plotly."""

from __future__ import annotations

import json
import math

import plotly.graph_objects as go
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from plotly.subplots import make_subplots

from evalstore.dashboards.plot import Figure, palette, template, trace


@settings(max_examples=examples(60), deadline=None)
@given(
    rows=st.integers(1, 5),
    cols=st.integers(1, 4),
    heights=st.lists(st.integers(100, 700), min_size=5, max_size=5),
    v_gap=st.floats(0.0, 0.05),
    h_gap=st.floats(0.0, 0.06),
    n_titles=st.integers(0, 20),
)
def test_grid_is_make_subplots(
    rows: int, cols: int, heights: list[int], v_gap: float, h_gap: float, n_titles: int
) -> None:
    titles = [f"t{k}" for k in range(min(n_titles, rows * cols))] or None
    kw = {"row_heights": heights[:rows], "vertical_spacing": v_gap if rows > 1 else 0.0,
          "horizontal_spacing": h_gap if cols > 1 else 0.0}  # fmt: skip
    theirs = make_subplots(rows=rows, cols=cols, subplot_titles=titles, **kw)
    ours = Figure.grid(rows, cols, titles=titles, **kw)
    want = {k: v for k, v in theirs.to_dict()["layout"].items() if k != "template"}
    got = json.loads(ours.to_json())["layout"]
    assert set(got) == set(want)
    for key, axis in want.items():
        if key == "annotations":
            assert len(got[key]) == len(axis)
            for a, b in zip(got[key], axis, strict=True):
                assert a.keys() == b.keys()
                assert a["text"] == b["text"] and a["font"] == b["font"]
                assert math.isclose(a["x"], b["x"], abs_tol=1e-12)
                assert math.isclose(a["y"], b["y"], abs_tol=1e-12)
            continue
        assert got[key]["anchor"] == axis["anchor"]
        assert got[key]["domain"] == pytest.approx(axis["domain"], abs=1e-12)
    # a trace on each cell lands on that cell's axes, as add_trace(row=, col=) puts it
    for k in range(rows * cols):
        r, c = divmod(k, cols)
        theirs.add_trace(go.Scatter(x=[k], y=[k]), row=r + 1, col=c + 1)
        ours.add_trace(trace("scatter", x=[k], y=[k]), row=r + 1, col=c + 1)
    for a, b in zip(ours.data, theirs.to_dict()["data"], strict=True):
        assert (a.get("xaxis", "x"), a.get("yaxis", "y")) == (b["xaxis"], b["yaxis"])


def test_json_is_what_plotly_writes() -> None:
    """Escapes that keep a figure inside <script>, and NaN/inf as null, as Plotly's json
    engine writes them; attributes set to None stay unset."""
    fig = Figure.grid(1, 2, titles=["</script><b>x</b>", "a/b"])
    fig.add_trace(
        trace("scatter", x=[1, 2, 3], y=[float("nan"), 1.5, float("inf")], name="<i>n</i>",
              customdata=None),
        row=1, col=2,
    )  # fmt: skip
    fig.update_layout(template=template(), height=300)
    plotly_fig = go.Figure(fig.to_dict())
    ours, theirs = fig.to_json(), plotly_fig.to_json(engine="json", validate=False)
    assert "</" not in ours and "<" not in ours and ">" not in ours
    assert json.loads(ours) == json.loads(theirs)
    assert "customdata" not in fig.data[0]


def test_every_default_dashboard_figure_is_valid_plotly(tmp_path: object) -> None:
    """The traces and layouts the figure code writes are accepted by Plotly's validators
    (which raise on an unknown attribute or a bad value)."""
    import polars as pl

    from evalstore import dashboards as dash

    frame = pl.DataFrame(
        {"x": ["a", "b", "a", "b"], "y": [1.0, 2.0, 3.0, None], "c": ["s", "s", "t", "t"],
         "f": ["u", "u", "v", "v"], "e": [0.1, 0.0, 0.2, 0.1], "metric": ["ap"] * 4}
    )  # fmt: skip
    for kind in ("line", "scatter", "bar", "heatmap"):
        panel = dash.Panel(
            index=1, title="t", kind=kind, sql="select 1", x="x", y="c" if kind == "heatmap"
            else "y", z="y", color=None if kind == "heatmap" else "c", facet="f",
            error=None if kind == "heatmap" else "e", hover=("x",),
        )  # fmt: skip
        fig = dash.panel_figure(panel, frame)
        assert fig is not None
        go.Figure(json.loads(fig.to_json()))  # raises ValueError on anything Plotly rejects


def test_palette_has_no_repeat_before_forty_colours() -> None:
    colours = palette()
    assert len(colours) >= 40 and len(set(colours[:40])) == 40
