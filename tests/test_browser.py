"""The default dashboards in a real browser: headless Chromium opens every page from disk
(file://, no network), and each panel must have drawn, with no console error and no script
run from a user string.

Chromium is driven over the DevTools protocol through a pipe (``--remote-debugging-pipe``:
file descriptors 3 and 4, NUL-separated JSON), so no driver or websocket package is needed.
Debian's ``chromium`` must be installed (CI's .ci/run installs it); without it these tests
fail rather than skip. Set ``EVALSTORE_SCREENSHOTS=docs/img`` to also save the overview
screenshot there.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from test_dashboards import XSS_RUN, build_sample

from evalstore import Store, evaluate
from evalstore import dashboards as dash
from evalstore.demo.pose_scenes import make_scenes, observe
from evalstore.runs.meta import RunMeta
from tests.conformance.detsets import make_detset

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("EVALSTORE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
]
PAGES = ["index", "overview", "comparison", "curves", "heatmap", "hpatches"]
# Before any page script: calls to alert/confirm/prompt are recorded (none may happen).
TRAP = """
window.__dialogs = [];
for (const name of ["alert", "confirm", "prompt"]) {
  window[name] = (...args) => { window.__dialogs.push(name + ":" + args.join(" ")); };
}
"""
# Per panel: what it drew. Plotly keeps the figure on its div (gd.data, gd._fullLayout) and
# draws traces as <g class="trace"> (lines, bars) or <g class="hm"> (heatmaps) in .main-svg.
STATUS = """
!document.body ? JSON.stringify({ready: false, panels: []}) : JSON.stringify({
  ready: document.readyState === "complete",
  panels: [...document.querySelectorAll("section.panel")].map(s => {
    const plot = s.querySelector(".plot");
    return {
      id: s.id,
      empty: !!s.querySelector(".empty"),
      rows: s.querySelectorAll("table.data tbody tr").length,
      plot: !!plot,
      traces: plot && plot.data ? plot.data.length : 0,
      laidOut: !!(plot && plot._fullLayout),
      svg: plot ? plot.querySelectorAll(".main-svg").length : 0,
      drawn: plot ? plot.querySelectorAll("g.trace, g.hm").length : 0,
    };
  }),
  dialogs: window.__dialogs || [],
  injected: document.querySelectorAll('img[src="x"], b[onmouseover], [onerror]').length,
  text: document.body.innerText,
  svgText: [...document.querySelectorAll(".main-svg text")].map(t => t.textContent).join("\\n"),
})
"""


class Chromium:
    """A headless Chromium driven over the DevTools protocol on a pipe."""

    def __init__(self, profile: Path) -> None:
        self.log = (profile / "chromium.log").open("wb")
        # fd 3: commands to Chromium, fd 4: its answers; `sh` wires our pipes there
        self.proc = subprocess.Popen(
            [
                "sh",
                "-c",
                'exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null',
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile / 'profile'}",
                "about:blank",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            start_new_session=True,
        )
        self.buffer = b""
        self.last_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""

    def _message(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"Chromium sent nothing for {timeout} s")
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe (see chromium.log)")
                self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        """Send one command (to the page's session once attached) and return its result."""
        assert self.proc.stdin is not None
        self.last_id += 1
        message: dict[str, Any] = {"id": self.last_id, "method": method, "params": params or {}}
        if self.session and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        self.proc.stdin.write(json.dumps(message).encode() + b"\0")
        self.proc.stdin.flush()
        while True:
            reply = self._message(timeout)
            if reply.get("id") == self.last_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)
            if reply.get("method") == "Page.javascriptDialogOpening":
                # a real dialog would block the page: close it (the test fails on it)
                self.events.append({"method": "dialog", "params": reply["params"]})

    def navigate(self, url: str, timeout: float = 20) -> None:
        """Open ``url`` and wait for its load event."""
        self.events.clear()
        self.send("Page.navigate", {"url": url})
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{url} did not load in {timeout} s")
            self.events.append(self._message(left))

    def open_page(self) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.send("Page.addScriptToEvaluateOnNewDocument", {"source": TRAP})
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        )

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        size = self.send("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.send(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True, "clip": clip},
        )
        path.write_bytes(base64.b64decode(shot["data"]))

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions, failed loads and dialogs seen so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append("console: " + " ".join(str(a.get("value")) for a in params["args"]))
            elif method == "Runtime.exceptionThrown":
                found.append("exception: " + json.dumps(params["exceptionDetails"])[:500])
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append("log: " + params["entry"].get("text", ""))
            elif method == "dialog":
                found.append("dialog: " + params.get("message", ""))
        return found

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # our own process group only
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):  # else a ResourceWarning each
            if pipe is not None:
                pipe.close()
        self.log.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    gt, dets = make_detset(3, n_images=12, n_categories=3)  # and two detection runs
    (folder / "gt.json").write_text(json.dumps(gt))
    (folder / "dt.json").write_text(json.dumps(dets))
    with Store(folder / "sample.duckdb") as store:
        build_sample(store)
        for name in ("det/a", "det/b"):
            meta = RunMeta(name, git_commit=False)
            store.ingest_coco(folder / "dt.json", folder / "gt.json", meta=meta)
        evaluate(store, ["det/a", "det/b"])
        # and a keypoints run with cameras, whose pose estimates the pose-error curve draws
        scenes = make_scenes(6, seed=0, n_points=30)
        matches, pairs = observe(scenes, noise_px=0.5, outlier_ratio=0.1, seed=0)
        meta = RunMeta("pose/a", git_commit=False)
        store.ingest_keypoints(matches, pairs=pl.DataFrame(pairs), meta=meta)
        evaluate(store, ["pose/a"], metrics=["pose_auc"])
        dash.write_dashboards(store, folder / "out")
    return folder / "out"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(
            f"Chromium is not installed at {CHROMIUM}: the browser tests need it "
            "(apt-get install -y chromium; .ci/run installs it)",
            pytrace=False,
        )
    chromium = Chromium(tmp_path_factory.mktemp("chromium"))
    try:
        chromium.open_page()
        yield chromium
    finally:
        chromium.close()


def load(browser: Chromium, page: Path) -> dict[str, Any]:
    """Open a page and wait until every plot is laid out (at most 20 s)."""
    browser.navigate(page.as_uri())
    deadline = time.monotonic() + 20
    while True:
        status = json.loads(browser.evaluate(STATUS))
        plots = [p for p in status["panels"] if p["plot"]]
        if status["ready"] and all(p["laidOut"] and p["svg"] for p in plots):
            return status
        if time.monotonic() > deadline:
            raise TimeoutError(f"{page.name}: plots not drawn after 20 s: {status['panels']}")
        time.sleep(0.1)


@pytest.mark.parametrize("name", PAGES)
def test_dashboard_draws_every_panel(
    browser: Chromium, site: Path, name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    status = load(browser, site / f"{name}.html")
    assert browser.errors() == []
    assert status["dialogs"] == [] and status["injected"] == 0
    if name == "index":
        assert "Overview" in status["text"] and "HPatches" in status["text"]
    else:
        assert status["panels"], name
    for panel in status["panels"]:
        assert not panel["empty"], (name, panel["id"])
        if panel["plot"]:
            assert panel["traces"] > 0 and panel["drawn"] > 0, (name, panel)
        else:
            assert panel["rows"] > 0, (name, panel)
    shots = tmp_path_factory.getbasetemp() / "screenshots"
    shots.mkdir(exist_ok=True)
    browser.screenshot(shots / f"{name}.png")
    assert (shots / f"{name}.png").stat().st_size > 10_000


def test_html_in_run_names_is_shown_as_text(browser: Chromium, site: Path) -> None:
    # the leaderboard cell, and the legend of the PR curves (an SVG text drawn by Plotly)
    status = load(browser, site / "overview.html")
    assert f"demo/{XSS_RUN}" in status["text"]
    assert "<script>alert(2)</script>" in status["text"]
    status = load(browser, site / "curves.html")
    assert f"demo/{XSS_RUN}" in status["svgText"]
    assert browser.errors() == [] and status["dialogs"] == [] and status["injected"] == 0


def test_page_without_plotly_js_says_so(browser: Chromium, site: Path, tmp_path: Path) -> None:
    shutil.copyfile(site / "curves.html", tmp_path / "curves.html")
    browser.navigate((tmp_path / "curves.html").as_uri())
    text = browser.evaluate("document.body.innerText")
    # one note per plotted panel: precision-recall, MMA, pose error, COCO per category
    assert text.count("plotly.min.js did not load: keep it in the folder of this page.") == 4
    assert any("ERR_FILE_NOT_FOUND" in e for e in browser.errors())  # the expected failure
    browser.events.clear()


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from evalstore import demo

    folder = tmp_path_factory.mktemp("demo-site")
    with Store(folder / "demo.duckdb") as store:
        demo.build(store, out=folder / "out", quick=True)
    return folder / "out"


@pytest.mark.parametrize("name", PAGES)
def test_demo_dashboards_draw(
    browser: Chromium, demo_site: Path, name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The demo's dashboards (real runs) draw without errors; the overview screenshot is the
    README's picture (saved with EVALSTORE_SCREENSHOTS=docs/img)."""
    status = load(browser, demo_site / f"{name}.html")
    assert browser.errors() == []
    drawn = [p for p in status["panels"] if p["plot"] and p["traces"] > 0 and p["drawn"] > 0]
    tables = [p for p in status["panels"] if not p["plot"] and p["rows"] > 0]
    assert name == "index" or drawn or tables
    shots = tmp_path_factory.getbasetemp() / "demo-screenshots"
    shots.mkdir(exist_ok=True)
    browser.screenshot(shots / f"{name}.png")
    wanted = os.environ.get("EVALSTORE_SCREENSHOTS")
    if wanted and name == "overview":
        Path(wanted).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shots / "overview.png", Path(wanted) / "overview.png")
