"""The static overview of the quick demo in a real browser (Debian's chromium through
chromium-driver, as tests/test_ui_browser.py drives it) at 1400 and 800 px: no chart title of
the metric history runs into another's (they used to, on three columns, at both widths), and
every default page draws (``EVALSTORE_SCREENSHOTS=docs/img`` saves the pictures of
docs/dashboards.md there)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from selenium import webdriver
from test_ui_browser import driver, errors, full_page, visit  # noqa: F401  (driver: the fixture)

from evalstore import Store, demo

pytestmark = pytest.mark.browser

# The boxes of every chart title Plotly drew, per plot of the page.
TITLES = """
return [...document.querySelectorAll(".plot")].map(plot =>
  [...plot.querySelectorAll(".infolayer g.annotation")].map(a => {
    const r = a.getBoundingClientRect();
    return {text: a.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
  }));
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quick demo's pages: the history has a chart per metric of its classifiers, many
    with long parameters (``cf1_at_k (k=3, threshold=0.5)``)."""
    folder = tmp_path_factory.mktemp("readable-browser")
    with Store(folder / "demo.duckdb") as store:
        demo.build(store, out=folder / "out", quick=True)
    return folder / "out"


def _overlaps(boxes: list[dict]) -> list[tuple[str, str]]:
    found = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = (a["right"] <= b["left"] or b["right"] <= a["left"]
                     or a["bottom"] <= b["top"] or b["bottom"] <= a["top"])  # fmt: skip
            if not apart:
                found.append((a["text"], b["text"]))
    return found


@pytest.mark.parametrize("width", [1400, 800])
def test_history_titles_never_overlap(
    driver: webdriver.Chrome,  # noqa: F811
    site: Path,
    width: int,
) -> None:
    driver.set_window_size(width, 1000)
    visit(driver, (site / "overview.html").as_uri())
    plots = driver.execute_script(TITLES)
    history = max(plots, key=len)  # the history: a chart per metric
    assert len(history) >= 9
    assert _overlaps(history) == []
    assert errors(driver) == []


STATIC_PAGES = ["overview", "comparison", "curves", "heatmap", "hpatches"]


@pytest.mark.parametrize("width", [1400, 800])
@pytest.mark.parametrize("name", STATIC_PAGES)
def test_every_static_page_draws_at_both_widths(
    driver: webdriver.Chrome,  # noqa: F811
    site: Path,
    name: str,
    width: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Each default page of the quick demo draws every figure at 1400 and 800 px, without a
    console error and no wider than the window; its picture (the first 2,500 px) is
    docs/dashboards.md's (``EVALSTORE_SCREENSHOTS=docs/img`` saves them there as
    ``static-<page>-<width>.png``)."""
    driver.set_window_size(width, 1000)
    visit(driver, (site / f"{name}.html").as_uri())
    assert errors(driver) == []
    assert driver.execute_script("return document.documentElement.scrollWidth") <= width
    drawn = driver.execute_script("return document.querySelectorAll('.plot .main-svg').length")
    assert drawn > 0
    shot = full_page(driver, 2500)
    folder = tmp_path_factory.getbasetemp() / "static-screenshots"
    folder.mkdir(exist_ok=True)
    (folder / f"static-{name}-{width}.png").write_bytes(shot)
    wanted = os.environ.get("EVALSTORE_SCREENSHOTS")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        (Path(wanted) / f"static-{name}-{width}.png").write_bytes(shot)
