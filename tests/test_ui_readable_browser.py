"""The UI read in a real browser (Debian's chromium, as tests/test_ui_browser.py): the
Compare page's picker chooses runs on the page and the URL names them; at 800 px the compare
table's difference, interval and p-value columns are in view without scrolling; the runs
table is not a box of its own (the page scrolls, not a fixed-height box inside it); at 800 px
the Per list page's turned list labels keep apart; the pickers of Curves and Per list choose
the runs drawn."""

from __future__ import annotations

from itertools import pairwise
from urllib.parse import parse_qs, urlsplit

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait
from test_ui_browser import (  # noqa: F401  (the fixtures)
    app,
    demo_app,
    driver,
    errors,
    table_rows,
    visit,
)

pytestmark = pytest.mark.browser


def test_the_compare_picker_chooses_runs_by_name(
    driver: webdriver.Chrome,  # noqa: F811
    app: str,  # noqa: F811
) -> None:
    driver.set_window_size(1400, 1000)
    visit(driver, app + "compare")
    picker = Select(driver.find_element(By.ID, "pick-units"))
    picker.select_by_value("demo/v1")
    picker.select_by_value("demo/v3")
    driver.find_element(By.ID, "pick-show").click()
    WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.ID, "compare-table"))
    visit(driver, driver.current_url)
    assert sorted(parse_qs(urlsplit(driver.current_url).query)["unit"]) == ["demo/v1", "demo/v3"]
    assert {row[0] for row in table_rows(driver, "compare-table")} == {"demo/v3"}
    assert errors(driver) == []


def test_at_800_px_the_interval_columns_are_in_view(
    driver: webdriver.Chrome,  # noqa: F811
    app: str,  # noqa: F811
) -> None:
    driver.set_window_size(800, 1000)
    visit(driver, app + "compare?unit=hpatches%2Fsift&unit=hpatches%2Fhardnet")
    right = driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#compare-table th')]"
        ".map(h => [h.dataset.col, h.getBoundingClientRect().right]))"
    )
    width = driver.execute_script("return document.documentElement.clientWidth")
    for column in ("diff", "ci_low", "ci_high", "p_value", "p_adj"):
        assert right[column] <= width, (column, right[column], width)
    assert errors(driver) == []


def test_the_runs_table_is_no_box_of_its_own(
    driver: webdriver.Chrome,  # noqa: F811
    app: str,  # noqa: F811
) -> None:
    driver.set_window_size(1400, 600)  # 20 runs: taller than the window, the page scrolls
    visit(driver, app)
    wrap = driver.execute_script(
        "const w = document.getElementById('runs-wrap');"
        "return [w.clientHeight, w.scrollHeight, window.innerHeight]"
    )
    assert wrap[0] == wrap[1]  # the whole table, no inner scroll
    driver.set_window_size(1400, 1000)


# Per x axis of every plot: where its turned tick labels end (a label turned by Plotly ends
# at its tick), in order along the axis.
TICKS = """
return [...document.querySelectorAll(".plot g.xaxislayer-above")].map(layer =>
  [...layer.querySelectorAll("text")]
    .filter(t => (t.getAttribute("transform") || "").includes("rotate"))
    .map(t => t.getBoundingClientRect().right).sort((a, b) => a - b));
"""


def test_at_800_px_turned_list_labels_keep_apart(
    driver: webdriver.Chrome,  # noqa: F811
    demo_app: str,  # noqa: F811
) -> None:
    """The Per list page's heatmaps of 60 image pairs: each written label is at least 24 px
    from the next along the axis (a label turned 30 degrees needs twice its line's height),
    so the turned labels never run into one another (every 3rd label was written, 21 px
    apart)."""
    driver.set_window_size(800, 1000)
    visit(driver, demo_app + "lists")
    axes = [a for a in driver.execute_script(TICKS) if len(a) > 1]
    assert len(axes) >= 2  # matching's and retrieval's 60 image pairs, turned
    gaps = [b - a for ticks in axes for a, b in pairwise(ticks)]
    assert min(gaps) >= 23.5, sorted(gaps)[:5]
    assert errors(driver) == []


@pytest.mark.parametrize("page", ["curves", "lists"])
def test_curves_and_per_list_pickers_choose_the_runs_drawn(
    driver: webdriver.Chrome,  # noqa: F811
    app: str,  # noqa: F811
    page: str,
) -> None:
    """Curves and Per list: the runs picked on the page are the runs drawn (the static pages'
    8 newest of each task are a default the user leaves on the page, not with a flag)."""
    driver.set_window_size(1400, 1000)
    visit(driver, app)
    every = {row[1] for row in table_rows(driver)}
    visit(driver, app + page)
    picker = Select(driver.find_element(By.ID, "pick-units"))
    picker.select_by_value("hpatches/sift")
    picker.select_by_value("hpatches/hardnet")
    driver.find_element(By.ID, "pick-show").click()
    WebDriverWait(driver, 60).until(lambda d: "unit=" in d.current_url)
    visit(driver, driver.current_url)
    picked = parse_qs(urlsplit(driver.current_url).query)["unit"]
    assert sorted(picked) == ["hpatches/hardnet", "hpatches/sift"]
    assert "Showing the 2 picked run(s)." in driver.find_element(By.TAG_NAME, "main").text
    drawn = driver.execute_script(
        "return [...document.querySelectorAll('.plot')].flatMap(p => p.data.flatMap(t =>"
        " [t.name || '', ...(Array.isArray(t.y) ? t.y : [])].map(String)))"
    )
    assert set(drawn) & every == {"hpatches/hardnet", "hpatches/sift"}
    assert errors(driver) == []
