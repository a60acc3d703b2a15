"""Every page of the UI that takes long shows its progress, in a real browser (Debian's
chromium through chromium-driver, as tests/test_ui_browser.py drives it): Runs,
Configurations, Compare (nothing picked yet), Curves, History, Per list and SQL.

The app runs in this process (uvicorn in a thread of its own) with each page's body held by
the test until it has seen the page's progress display (no timer decides how slow a page
is): the browser shows what the page does and for how long so far; once released, the page
reloads itself and the answer replaces the display. The SQL page answered at once, with no
progress, however long its query ran.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest
import uvicorn
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from test_dashboards import build_sample
from test_ui_browser import DRAWN, driver, errors  # noqa: F401  (driver: the fixture)

from evalstore import Store
from evalstore.ui import app as ui_app
from evalstore.ui import create_app, pages
from evalstore.ui.shell import PAGES as NAVIGATION

pytestmark = pytest.mark.browser

PATIENT = 120.0  # seconds a held page waits for the test's word before going on

# path: (the page's status while it computes, what its answer shows)
PAGES = {
    "": ("Reading the runs and their values", "#runs"),
    "?group=1": ("Reading the runs and their values", "#runs"),
    "compare": ("Reading the runs' values", "#pick-units"),
    "curves?unit=hpatches%2Fsift": ("Computing the runs' curves", ".plot .main-svg"),
    "history": ("Reading the runs' history", ".plot .main-svg"),
    "lists?unit=hpatches%2Fsift": ("Reading each list's values", ".plot .main-svg"),
    "sql?q=select+experiment%2C+count(*)+as+runs+from+v_runs+group+by+all": (
        "Running the query",
        "#sql-result",
    ),
}


class Gate:
    """Holds every page body until :meth:`open` (a new gate per test: :meth:`close`)."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def close(self) -> None:
        self.event = threading.Event()

    def open(self) -> None:
        self.event.set()

    def held(self, body: Callable[..., str]) -> Callable[..., str]:
        def wait_then(*args: object) -> str:
            self.event.wait(PATIENT)
            return body(*args)

        return wait_then


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Gate]]:
    path = tmp_path_factory.mktemp("ui-progress-browser") / "sample.duckdb"
    with Store(path) as store:
        build_sample(store)
    gate = Gate()
    with pytest.MonkeyPatch.context() as patch:
        for name in ("runs_page", "curves_page", "history_page", "lists_page", "sql_page"):
            patch.setattr(pages, name, gate.held(getattr(pages, name)))
        patch.setattr(ui_app, "compare_page", gate.held(ui_app.compare_page))
        app = create_app(path, host="127.0.0.1", wait=0.05, latest=0.1, slow=0.1)
        sock = socket.create_server(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}/", gate
        finally:
            gate.open()
            server.should_exit = True
            thread.join(30)
            sock.close()


@pytest.mark.parametrize("page", list(PAGES))
def test_a_slow_page_shows_its_progress_then_its_answer(
    driver: webdriver.Chrome,  # noqa: F811
    gated: tuple[str, Gate],
    page: str,
) -> None:
    url, gate = gated
    status, answer = PAGES[page]
    gate.close()
    errors(driver)
    driver.set_window_size(1400, 1000)
    driver.get(url + page)
    # the page answers with what it does, not its content
    shown = driver.find_element(By.ID, "progress-status").text
    assert status in shown and "s so far" in shown, shown
    assert driver.find_elements(By.CSS_SELECTOR, "section[data-poll]")
    assert not driver.find_elements(By.CSS_SELECTOR, answer)
    # the script refreshes the time so far while the page computes
    WebDriverWait(driver, 30).until(
        lambda d: d.find_element(By.ID, "progress-status").text != shown
    )
    gate.open()
    # then the page reloads itself with its answer, the display gone
    WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, answer))
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(DRAWN))
    assert not driver.find_elements(By.ID, "page-progress")
    assert errors(driver) == []


def test_the_held_pages_are_every_page() -> None:
    """Every page of the navigation is among those checked."""
    checked = {"/" + p.split("?")[0] for p in PAGES}
    assert checked == {path for path, _ in NAVIGATION}
