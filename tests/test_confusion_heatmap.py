"""The confusion matrix heatmap (dashboards/heatmap.toml's ``confusion`` panel, the UI's Per
list page): its data through the real store equals scikit-learn's confusion matrix in every
cell of the class grid, zeros included, classes in the order they were read; the figure draws
one heatmap per run, counts printed in every cell, colour the row-normalised share on one
0-1 scale; the dashboard page holds it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import confusion_matrix
from test_classification_headline import wine_rows

from evalstore import Store
from evalstore import dashboards as dash
from evalstore.dashboards.confusion import CELL_PX, COLOUR_TITLE


def confusion_panel() -> dash.Panel:
    spec = dash.load_spec(dash.dashboards_dir() / "heatmap.toml")
    return next(p for p in spec.panels if p.kind == "confusion")


def cells(classes: list[str], runs: dict[str, np.ndarray]) -> pl.DataFrame:
    """The panel's frame for ``runs`` (run -> count matrix over ``classes``)."""
    rows = []
    for run, matrix in runs.items():
        totals = matrix.sum(axis=1)
        for i, a in enumerate(classes):
            for j, p in enumerate(classes):
                share = matrix[i, j] / totals[i] if totals[i] else None
                rows.append((run, a, p, int(matrix[i, j]), share))
    return pl.DataFrame(rows, schema=["run", "actual", "predicted", "n", "share"], orient="row")


def test_one_heatmap_per_run_counts_printed_colour_the_row_share() -> None:
    classes = ["dog", "cat", "<b>bird</b>"]
    first = np.array([[5, 1, 0], [2, 6, 0], [0, 0, 0]])  # no sample of <b>bird</b>
    second = np.array([[1, 0, 3], [0, 4, 0], [1, 1, 1]])
    fig = dash.panel_figure(confusion_panel(), cells(classes, {"e/a": first, "e/b": second}))
    assert fig is not None
    one, two = fig.data
    shown = ["dog", "cat", "&lt;b&gt;bird&lt;/b&gt;"]  # escaped, in the frame's order
    assert one["x"] == one["y"] == two["x"] == shown
    assert one["type"] == "heatmap" and one["texttemplate"] == "%{text}"
    assert one["text"] == [["5", "1", "0"], ["2", "6", "0"], ["0", "0", "0"]]
    assert two["text"] == [["1", "0", "3"], ["0", "4", "0"], ["1", "1", "1"]]
    assert one["z"][0] == pytest.approx([5 / 6, 1 / 6, 0]) and one["z"][2] == [None] * 3
    assert two["z"][2] == pytest.approx([1 / 3] * 3)
    # one scale for every run: 0 to 1, one colour bar, titled with what the colour is
    assert (one["zmin"], one["zmax"], two["zmin"], two["zmax"]) == (0, 1, 0, 1)
    assert one["showscale"] and not two["showscale"] and "colorbar" not in two
    assert one["colorbar"]["title"]["text"] == COLOUR_TITLE
    assert "row-normalised" in COLOUR_TITLE and "counts" in confusion_panel().title
    # each run titled and on its own axes: actual down (first class on top), predicted along
    titles = [a["text"] for a in fig.layout["annotations"]]
    assert "e/a" in titles and "e/b" in titles
    assert (two["xaxis"], two["yaxis"]) == ("x2", "y2")
    assert fig.layout["yaxis"]["autorange"] == "reversed"
    assert fig.layout["yaxis"]["categoryarray"] == shown
    assert fig.layout["xaxis"]["title"]["text"] == "predicted"
    assert fig.layout["yaxis"]["title"]["text"] == "actual"


def test_many_classes_take_fewer_charts_a_row() -> None:
    """30 classes in one chart a row (cells at least CELL_PX wide), 3 classes three a row."""
    many = [f"c{i}" for i in range(30)]
    matrix = np.eye(30, dtype=np.int64)
    fig = dash.panel_figure(confusion_panel(), cells(many, {"e/a": matrix, "e/b": matrix}))
    assert fig is not None
    width = fig.layout["xaxis"]["domain"][1] - fig.layout["xaxis"]["domain"][0]
    assert width * 1100 / 30 >= CELL_PX
    assert fig.layout["yaxis2"]["domain"][1] < fig.layout["yaxis"]["domain"][0]  # a row each
    few = cells(["a", "b", "c"], {f"e/{r}": np.eye(3, dtype=np.int64) for r in "xyz"})
    fig = dash.panel_figure(confusion_panel(), few)
    assert fig is not None
    assert fig.layout["yaxis3"]["domain"] == fig.layout["yaxis"]["domain"]  # one row


@pytest.fixture
def wine_store(store: Store) -> tuple[Store, dict[str, np.ndarray]]:
    """Two wine runs, one with its classes read in another order, a retrieval run and a
    classification run without one true class per sample; each wine run's scikit-learn
    confusion matrix over its classes in the order they were read."""
    expected = {}
    for seed, order in ((0, [0, 1, 2]), (1, [2, 0, 1])):
        frame, y, proba = wine_rows(seed)
        names = [f"class{c}" for c in order]
        frame = frame.sort(pl.col("group_id").replace_strict(names, list(range(3))),
                           maintain_order=True)  # fmt: skip
        store.ingest(frame, task="classification", run=f"wine/s{seed}")
        matrix = confusion_matrix(y, np.argmax(proba, axis=1), labels=order)
        expected[f"wine/s{seed}"] = matrix
    store.ingest(frame, task="retrieval", run="other/retrieval")
    multi = frame.with_columns(label=pl.lit(1))
    store.ingest(multi, task="classification", run="other/multi")  # every class positive
    return store, expected


def test_the_panel_data_is_scikit_learns_matrix_in_every_cell(
    wine_store: tuple[Store, dict[str, np.ndarray]],
) -> None:
    store, expected = wine_store
    panel = confusion_panel()
    frame = dash.panel_data(store, panel, {"experiments": None, "runs": None})
    assert frame["run"].unique(maintain_order=True).to_list() == ["wine/s0", "wine/s1"]
    for run, matrix in expected.items():
        part = frame.filter(pl.col("run") == run)
        order = part["actual"].unique(maintain_order=True).to_list()
        assert order == (["class0", "class1", "class2"] if run == "wine/s0"
                         else ["class2", "class0", "class1"])  # fmt: skip
        got = np.array(part["n"].to_list()).reshape(3, 3)
        np.testing.assert_array_equal(got, matrix)
        shares = np.array(part["share"].to_list()).reshape(3, 3)
        np.testing.assert_allclose(shares, matrix / matrix.sum(axis=1, keepdims=True), rtol=1e-15)
    one = dash.panel_data(store, panel, {"experiments": None, "runs": [store.resolve("wine/s1")]})
    assert set(one["run"]) == {"wine/s1"} and one.height == 9
    none = dash.panel_data(store, panel, {"experiments": ["other"], "runs": None})
    assert none.height == 0 and dash.panel_figure(panel, none) is None


def test_the_heatmap_page_holds_the_confusion_matrices(
    wine_store: tuple[Store, dict[str, np.ndarray]], tmp_path: Path
) -> None:
    store, expected = wine_store
    dash.write_dashboards(store, tmp_path / "out")
    page = (tmp_path / "out" / "heatmap.html").read_text()
    assert confusion_panel().title in page
    start = page.index(confusion_panel().title)
    assert '"texttemplate":"%{text}"' in page[start:]
    diagonal = str(expected["wine/s0"][0, 0])
    assert f'"text":[["{diagonal}",' in page[start:]
