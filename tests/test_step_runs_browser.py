"""The History page over training steps in a real browser (Debian's chromium through its
chromium-driver, as tests/test_ui_browser.py): the chart of the metric against the step is
drawn, with one line for the run with steps, and the page logs no console error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from test_step_runs_ui import build
from test_ui_browser import driver, errors, visit

from evalstore import Store
from evalstore.ui import launch

pytestmark = pytest.mark.browser

__all__ = ["driver"]  # the browser, a fixture of tests/test_ui_browser.py


@pytest.fixture(scope="module")
def steps_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("ui-steps") / "steps.duckdb"
    with Store(path) as store:
        build(store)
    app = launch(path)
    try:
        yield app.url
    finally:
        app.stop()


def test_history_draws_the_metric_against_the_step(
    driver: webdriver.Chrome, steps_app: str
) -> None:
    errors(driver)
    visit(driver, steps_app + "history")
    chart = driver.find_element(By.ID, "panel-0-plot")
    drawn = driver.execute_script(
        "const p = arguments[0];"
        "return {title: p._fullLayout.xaxis.title.text,"
        " lines: p._fullData.map(t => [t.name, Array.from(t.x)])};",
        chart,
    )
    assert drawn == {"title": "step", "lines": [["exp/r", [0, 2]]]}
    assert "evalstore eval exp/r@1" in driver.find_element(By.TAG_NAME, "main").text
    assert errors(driver) == []
