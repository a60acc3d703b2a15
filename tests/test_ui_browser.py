"""evalstore ui in a real browser: Selenium drives Debian's ``chromium`` through its
``chromium-driver`` (both installed by .ci/run; no browser or driver is downloaded) against
``evalstore ui`` started in its own process on a free port.

The runs table loads, a filter narrows it and the URL keeps it, ticking two runs and pressing
Compare shows their comparison, a run named in HTML is shown as text, every page draws its
figures at 1400 px and at 800 px wide without a console error, and no request goes to any
host but the app's. Set ``EVALSTORE_SCREENSHOTS=docs/img`` to save the demo's pages there
(``ui-<page>-<width>.png``, the pictures of docs/cli.md and docs/ui.md).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait
from test_dashboards import XSS_RUN, build_sample

from evalstore import Store, evaluate
from evalstore.ui import launch

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("EVALSTORE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = (
    os.environ.get("EVALSTORE_CHROMEDRIVER")
    or shutil.which("chromedriver")
    or "/usr/bin/chromedriver"
)
# Every figure laid out and drawn (Plotly keeps the figure on its div: gd._fullLayout), and
# no Compare page still computing (its progress display reloads the page when done).
DRAWN = """
const plots = [...document.querySelectorAll(".plot")];
return document.readyState === "complete" && !document.querySelector("section[data-poll]")
  && plots.every(p => p._fullLayout && p.querySelectorAll(".main-svg").length > 0);
"""


def _executable(path: str, package: str) -> None:
    if not (Path(path).is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"{path} is missing: the browser tests need Debian's {package} "
            f"(apt-get install -y {package}; .ci/run installs it)",
            pytrace=False,
        )


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    _executable(CHROMIUM, "chromium")
    _executable(DRIVER, "chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    chrome = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    try:
        yield chrome
    finally:
        chrome.quit()


def _serve(db: Path) -> Iterator[str]:
    app = launch(db)
    try:
        yield app.url
    finally:
        app.stop()


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("ui-browser") / "sample.duckdb"
    with Store(path) as store:
        build_sample(store)
    yield from _serve(path)


@pytest.fixture(scope="module")
def demo_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from evalstore import demo

    folder = tmp_path_factory.mktemp("ui-demo")
    with Store(folder / "demo.duckdb") as store:
        demo.build(store, out=folder / "out", quick=True)
    yield from _serve(folder / "demo.duckdb")


@pytest.fixture(scope="module")
def pairs_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, int]]:
    """Two verification runs of one list of 200,000 pairs (seconds of item resampling)."""
    path = tmp_path_factory.mktemp("ui-pairs") / "pairs.duckdb"
    n = 200_000
    rng = np.random.default_rng(0)
    label = np.where(rng.random(n) < 0.5, 1, -1)
    base = rng.standard_normal(n) + (label == 1)
    with Store(path) as store:
        for name, noise in (("a", 0.0), ("b", 0.3)):
            scores = base + noise * rng.standard_normal(n)
            store.ingest(
                {"item_id": np.arange(n), "score": scores, "label": label},
                task="verification", run=f"pv/{name}", git_commit=None,
            )  # fmt: skip
        evaluate(store, ["pv/a", "pv/b"])
        a, b = store.resolve("pv/a"), store.resolve("pv/b")
    for url in _serve(path):
        yield url, a, b


def visit(driver: webdriver.Chrome, url: str) -> None:
    """Open ``url`` and wait until every figure of the page is drawn."""
    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(DRAWN))


def table_rows(driver: webdriver.Chrome, table: str = "runs") -> list[list[str]]:
    """The cells' text of each body row of a table (read in one script: the page may be
    navigating)."""
    rows: list[list[str]] = driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])]"
        ".map(r => [...r.cells].map(c => c.innerText))",
        f"#{table} tbody tr",
    )
    return rows


def errors(driver: webdriver.Chrome) -> list[str]:
    """Console errors since the last call (a blocked request or script is one)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def requests(driver: webdriver.Chrome) -> list[str]:
    """The URLs the pages requested since the last call."""
    urls = []
    for entry in driver.get_log("performance"):
        message: dict[str, Any] = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def test_the_runs_table_loads(driver: webdriver.Chrome, app: str) -> None:
    visit(driver, app)
    names = [row[1] for row in table_rows(driver)]
    assert len(names) == 20 and names[0].startswith("seeds/")
    assert driver.find_element(By.ID, "count").text.startswith("20 runs")
    assert errors(driver) == []


def test_a_filter_narrows_the_table_and_the_url_keeps_it(
    driver: webdriver.Chrome, app: str
) -> None:
    visit(driver, app)
    Select(driver.find_element(By.ID, "f-experiment")).select_by_value("voc")
    driver.find_element(By.ID, "f-apply").click()
    WebDriverWait(driver, 20).until(lambda d: len(table_rows(d)) == 2)
    assert {row[1] for row in table_rows(driver)} == {"voc/resnet-v1", "voc/resnet-v2"}
    assert parse_qs(urlsplit(driver.current_url).query)["experiment"] == ["voc"]
    where = driver.find_element(By.ID, "f-where")
    where.send_keys("name = 'resnet-v2'")
    driver.find_element(By.ID, "f-apply").click()
    WebDriverWait(driver, 20).until(lambda d: len(table_rows(d)) == 1)
    link = driver.current_url
    visit(driver, app)  # elsewhere, then the link: the same view
    visit(driver, link)
    assert [row[1] for row in table_rows(driver)] == ["voc/resnet-v2"]
    assert errors(driver) == []


def test_ticking_two_runs_shows_their_comparison(driver: webdriver.Chrome, app: str) -> None:
    visit(driver, app + "?experiment=demo&sort=run&desc=0")
    boxes = driver.find_elements(By.CSS_SELECTOR, "#runs tbody input[type=checkbox]")
    names = [row[1] for row in table_rows(driver)]
    boxes[names.index("demo/v1")].click()
    boxes[names.index("demo/v4")].click()
    driver.find_element(By.ID, "do-compare").click()
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.ID, "compare-table"))
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(DRAWN))
    compared = table_rows(driver, "compare-table")
    assert compared and all(row[0] == "demo/v4" for row in compared)
    assert "Against demo/v1" in driver.find_element(By.TAG_NAME, "main").text
    drawn = driver.execute_script(
        "return [...document.querySelectorAll('.plot')].map(p => p.id + ':' + p.data.length)"
    )
    assert {d.split(":")[0] for d in drawn} >= {"compare-bars", "compare-scatter", "changed-lists"}
    assert all(int(d.split(":")[1]) > 0 for d in drawn)
    assert len(parse_qs(urlsplit(driver.current_url).query)["unit"]) == 2
    assert errors(driver) == []


def test_a_hostile_run_name_is_shown_as_text(driver: webdriver.Chrome, app: str) -> None:
    visit(driver, app + "?experiment=demo")
    assert f"demo/{XSS_RUN}" in [row[1] for row in table_rows(driver)]
    injected = driver.execute_script(
        "return document.querySelectorAll('img[src=\"x\"], b[onmouseover], [onerror]').length"
    )
    assert injected == 0
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 - reading it raises when there is none
    hostile = [
        b for b in driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr") if XSS_RUN in b.text
    ]
    hostile[0].find_element(By.CSS_SELECTOR, "input[type=checkbox]").click()
    driver.find_elements(By.CSS_SELECTOR, "#runs tbody input[type=checkbox]")[-1].click()
    driver.find_element(By.ID, "do-compare").click()
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.ID, "compare-table"))
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(DRAWN))
    svg = driver.execute_script(
        "return [...document.querySelectorAll('.main-svg text')].map(t => t.textContent).join()"
    )
    assert XSS_RUN in svg  # in the figures' titles, as text
    assert driver.execute_script("return document.querySelectorAll('[onerror]').length") == 0
    assert errors(driver) == []


def test_compare_shows_its_progress_then_the_final_table(
    driver: webdriver.Chrome, pairs_app: tuple[str, int, int]
) -> None:
    url, a, b = pairs_app
    errors(driver)
    driver.get(f"{url}compare?unit={a}&unit={b}")
    # the page answers at once with the progress display, not the table
    assert driver.find_elements(By.ID, "compare-progress")
    assert not driver.find_elements(By.ID, "compare-table")
    # the first block of replicates may not be done when the page is made: its status then
    # says what the job does; the page's script shows the replicates once they come
    WebDriverWait(driver, 60).until(
        lambda d: "replicates" in d.find_element(By.ID, "progress-status").text
    )
    status = driver.find_element(By.ID, "progress-status").text
    assert "pv/b against pv/a" in status
    provisional = table_rows(driver, "progress-table")  # the running estimate, provisional
    assert provisional[0][:3] == ["pv/b", "verification", "ap"]
    first = driver.find_element(By.ID, "progress-bar").get_attribute("value")
    # the script updates it: a count beyond the first one (or the next metric) is shown
    WebDriverWait(driver, 120).until(
        lambda d: d.execute_script(
            "const bar = document.getElementById('progress-bar');"
            "return !bar || bar.value > Number(arguments[0]) ||"
            " document.querySelectorAll('#progress-table tbody tr').length > 1",
            first,
        )
    )
    # then the final table replaces it, with its figures drawn
    WebDriverWait(driver, 300).until(lambda d: d.find_elements(By.ID, "compare-table"))
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(DRAWN))
    compared = table_rows(driver, "compare-table")
    assert [row[2] for row in compared] == ["ap", "fpr95"]
    assert all(row[0] == "pv/b" and row[-2] == "items" for row in compared)  # then caveat
    assert not driver.find_elements(By.ID, "compare-progress")
    assert errors(driver) == []


PAGES = {
    "runs": "",
    "configurations": "?group=1",
    "compare": "compare?unit={a}&unit={b}",
    "curves": "curves",
    "history": "history",
    "lists": "lists",
    "sql": "sql?q=select+experiment%2C+count(*)+as+runs+from+v_runs+group+by+all",
}


@pytest.mark.parametrize("width", [1400, 800])
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_draws_at_both_widths_and_stays_on_the_app(
    driver: webdriver.Chrome,
    demo_app: str,
    page: str,
    width: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    driver.set_window_size(width, 1000)
    requests(driver), errors(driver)
    path = PAGES[page]
    if "{a}" in path:
        visit(driver, demo_app + "?experiment=hpatches&sort=run&desc=0")
        units = [
            b.get_attribute("value")
            for b in driver.find_elements(By.CSS_SELECTOR, "#runs tbody input[type=checkbox]")
        ]
        path = path.format(a=units[0], b=units[1])
    visit(driver, demo_app + path)
    assert errors(driver) == []
    main = driver.find_element(By.TAG_NAME, "main").text
    assert "Error" not in main.split("\n")[0]
    assert not driver.find_elements(By.CSS_SELECTOR, "p.error")
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(demo_app))
    seen = requests(driver)
    assert seen and all(u.startswith((origin + "/", "data:", "blob:")) for u in seen), seen
    # nothing wider than the window (the tables scroll inside their own box)
    overflow = driver.execute_script("return document.documentElement.scrollWidth")
    assert overflow <= width
    shot = full_page(driver)
    folder = tmp_path_factory.getbasetemp() / "ui-screenshots"
    folder.mkdir(exist_ok=True)
    (folder / f"ui-{page}-{width}.png").write_bytes(shot)
    wanted = os.environ.get("EVALSTORE_SCREENSHOTS")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        (Path(wanted) / f"ui-{page}-{width}.png").write_bytes(shot)


def full_page(driver: webdriver.Chrome, most: int = 2400) -> bytes:
    """The page as PNG, down to ``most`` px."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], most), "scale": 1}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    return base64.b64decode(shot["data"])
