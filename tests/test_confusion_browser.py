"""The confusion matrices in a real browser (Debian's chromium through chromium-driver, as
tests/test_ui_browser.py drives them): the UI's Per list page draws one heatmap per
classification run, each cell's count written on the page (readable without hovering), equal
to scikit-learn's confusion matrix; the static heatmap dashboard draws the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from selenium import webdriver
from sklearn.metrics import confusion_matrix
from test_classification_headline import wine_rows
from test_ui_browser import driver, errors, visit  # noqa: F401  (driver: the fixture)

from evalstore import Store
from evalstore import dashboards as dash
from evalstore.ui import launch

pytestmark = pytest.mark.browser

TITLE = "Confusion matrices"

# The figure after the confusion panel's heading: per heatmap trace its counts and its
# share colours, and the text Plotly wrote into the drawn cells.
FIGURE = """
const heading = [...document.querySelectorAll("h2")]
  .find(h => h.textContent.startsWith(arguments[0]));
if (!heading) { return null; }
const panel = heading.closest("section") || heading.parentElement;
const plot = panel.querySelector(".plot, .js-plotly-plot");
if (!plot || !plot.data) { return null; }
return {
  traces: plot.data.filter(t => t.type === "heatmap").map(t => ({text: t.text, y: t.y})),
  written: [...plot.querySelectorAll("text")].map(t => t.textContent),
  heading: heading.textContent,
};
"""


@pytest.fixture(scope="module")
def wine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    """Two wine runs (a logistic regression's probabilities, one list per class) and their
    scikit-learn confusion matrices."""
    path = tmp_path_factory.mktemp("confusion-browser") / "wine.duckdb"
    expected = {}
    with Store(path) as store:
        for seed in (0, 1):
            frame, y, proba = wine_rows(seed, c=0.05 if seed else 1.0)
            store.ingest(frame, task="classification", run=f"wine/s{seed}")
            expected[f"wine/s{seed}"] = confusion_matrix(y, np.argmax(proba, axis=1))
    return path, expected


@pytest.fixture(scope="module")
def wine_app(wine: tuple[Path, dict[str, np.ndarray]]) -> Iterator[str]:
    app = launch(wine[0])
    try:
        yield app.url
    finally:
        app.stop()


def drawn(driver: webdriver.Chrome) -> dict[str, Any]:  # noqa: F811
    found: dict[str, Any] | None = driver.execute_script(FIGURE, TITLE)
    assert found is not None, "no confusion matrix figure on the page"
    return found


def check(found: dict[str, Any], expected: dict[str, np.ndarray]) -> None:
    assert found["heading"].startswith(TITLE) and "row-normalised" in found["heading"]
    counts = [np.array(t["text"], dtype=np.int64) for t in found["traces"]]
    assert len(counts) == 2
    for got, matrix in zip(counts, expected.values(), strict=True):
        np.testing.assert_array_equal(got, matrix)
    assert found["traces"][0]["y"] == ["class0", "class1", "class2"]
    # every count is on the page as text, not only in the hover
    written = found["written"]
    for matrix in expected.values():
        for n in {str(v) for v in matrix.ravel()}:
            assert n in written
    assert sum(w.isdigit() for w in written) >= 2 * 9


def test_the_ui_per_list_page_draws_the_confusion_matrices(
    driver: webdriver.Chrome,  # noqa: F811
    wine_app: str,
    wine: tuple[Path, dict[str, np.ndarray]],
) -> None:
    visit(driver, wine_app + "lists")
    check(drawn(driver), wine[1])
    assert errors(driver) == []


def test_the_heatmap_dashboard_draws_the_confusion_matrices(
    driver: webdriver.Chrome,  # noqa: F811
    wine: tuple[Path, dict[str, np.ndarray]],
    tmp_path: Path,
) -> None:
    with Store(wine[0]) as store:
        dash.write_dashboards(store, tmp_path / "out", [dash.dashboards_dir() / "heatmap.toml"])
    visit(driver, (tmp_path / "out" / "heatmap.html").as_uri())
    check(drawn(driver), wine[1])
    assert errors(driver) == []
