"""The "what changed" page of two runs (`evalstore dashboard --changed A B`): its figures'
data, its HTML and file, the command, and the page in a real browser."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import ingest_lists
from test_browser import Chromium, load
from test_browser import browser as browser  # the module's Chromium fixture

from evalstore import Store
from evalstore import dashboards as dash
from evalstore.analysis.diff import diff_items, diff_lists
from evalstore.dashboards.changed import BETTER, EVEN, WORSE, items_figure, lists_figure
from tests.conformance.detsets import make_detset

XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture
def two(db: Path) -> Path:
    """Runs e/a and e/b: q1 falls from AP 1 to 0.5, q2 stays at 1, q3 rises from 1/3."""
    a = {"q1": ([4, 3, 2, 1], [1, 1, -1, -1]), "q2": ([2, 1], [1, -1]),
         "q3": ([3, 2, 1], [-1, -1, 1])}  # fmt: skip
    b = {"q1": ([4, 3, 2, 1], [-1, 1, -1, 1]), "q2": ([2, 1], [1, -1]),
         "q3": ([1, 2, 3], [-1, -1, 1])}  # fmt: skip
    with Store(db) as store:
        for run, lists in (("e/a", a), (f"e/{XSS}", b)):
            ingest_lists(store, run, lists)
    return db


def _figures(page: str) -> list[dict[str, Any]]:
    blocks = re.findall(r'<script type="application/json" data-plot="[^"]+">(.*?)</script>', page)
    return [json.loads(b) for b in blocks]


def test_lists_figure_draws_both_values_and_the_difference(store: Store, two: Path) -> None:
    lists = diff_lists(store, "e/a", f"e/{XSS}")
    fig = lists_figure(lists, "e/a", "e/b").to_dict()
    lines, marks_a, marks_b, bars = fig["data"]
    assert bars["type"] == "bar" and bars["orientation"] == "h"
    assert bars["y"] == ["q1", "q2", "q3"]  # sorted by the difference: the fall first
    assert bars["x"] == pytest.approx([-0.5, 0.0, 2 / 3])
    assert bars["marker"]["color"] == [WORSE, EVEN, BETTER]
    assert marks_a["x"] == pytest.approx([1.0, 1.0, 1 / 3]) and marks_b["x"][0] == 0.5
    assert marks_a["name"] == "a: e/a" and lines["x"][:3] == [1.0, 0.5, None]
    assert bars["xaxis"] == "x2" and fig["layout"]["yaxis2"]["matches"] == "y"
    lower = lists_figure(lists, "a", "b", higher=False).to_dict()["data"][3]
    assert lower["marker"]["color"] == [BETTER, EVEN, WORSE]


def test_items_figure_is_a_slope_chart_of_ranks(store: Store, two: Path) -> None:
    items = diff_items(store, "e/a", f"e/{XSS}", "q3")
    fig = items_figure(items, "e/a", XSS).to_dict()
    assert len(fig["data"]) == items.height == 3
    by_item = {t["name"]: t for t in fig["data"]}
    assert by_item["q3-2"]["y"] == [3, 1] and by_item["q3-2"]["line"]["color"] == BETTER
    assert by_item["q3-0"]["y"] == [1, 3] and by_item["q3-0"]["line"]["color"] == WORSE
    assert fig["layout"]["yaxis"]["autorange"] == "reversed"
    assert fig["layout"]["xaxis"]["categoryarray"] == [
        "a: e/a",
        "b: &lt;img src=x onerror=alert(1)&gt;",
    ]


def test_page_has_both_panels_and_escapes_run_names(
    store: Store, two: Path, tmp_path: Path
) -> None:
    page = dash.write_changed(store, tmp_path / "out", "e/a", f"e/{XSS}")
    assert page.name == "changed.html" and (tmp_path / "out" / "plotly.min.js").is_file()
    text = page.read_text()
    assert XSS not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert 'id="panel-1"' in text and 'id="panel-2"' in text
    assert "Items of list q3 whose rank moved" in text  # the list that moved most
    lists, items = _figures(text)
    assert [t["type"] for t in lists["data"]] == ["scatter", "scatter", "scatter", "bar"]
    assert len(items["data"]) == 3
    rows = re.findall(r"<tr><td>(q\d)</td>", text)
    assert rows == ["q3", "q1", "q2"]  # the table: largest |diff| first, as `evalstore diff`
    again = dash.write_changed(store, tmp_path / "out", "e/a", f"e/{XSS}", items="q1")
    assert "Items of list q1 whose rank moved" in again.read_text()
    before = again.read_bytes()
    dash.write_changed(store, tmp_path / "out", "e/a", f"e/{XSS}", items="q1")
    assert again.read_bytes() == before  # deterministic


def test_render_changed_says_when_a_panel_is_empty() -> None:
    lists = pl.DataFrame(
        {"group_id": ["q"], "value_a": [1.0], "value_b": [0.5], "diff": [-0.5],
         "task": ["retrieval"], "metric": ["ap"], "params": ['{"ties":"grouped"}']}
    )  # fmt: skip
    items = pl.DataFrame(schema={c: pl.Int64 for c in ("rank_a", "rank_b", "moved")})
    text = dash.render_changed(lists, items, "x/a", "x/b", "q")
    assert "No data for this panel: neither run ranks an item of this list." in text
    assert len(_figures(text)) == 1


def test_dashboard_command_writes_the_changed_page(cli: Any, two: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    got = cli("dashboard", "--changed", "e/a", f"e/{XSS}", "-o", str(out), "--items", "q2")
    assert got.exit_code == 0, got.output
    assert got.stdout.strip() == f"wrote {out / 'changed.html'}"
    assert "Items of list q2 whose rank moved" in (out / "changed.html").read_text()
    assert not (out / "index.html").exists()  # the other pages are not written
    bad = cli("dashboard", "--changed", "e/a", f"e/{XSS}", "-o", str(out), "--items", "nope")
    assert bad.exit_code == 1 and bad.stderr.startswith("Error: neither e/a nor")
    alone = cli("dashboard", "-o", str(out), "--items", "q2")
    assert alone.exit_code == 1
    assert (
        alone.stderr.strip() == "Error: --items, --metric and --task go with --changed RUN_A RUN_B"
    )


def test_changed_page_of_detection_runs_shows_the_objects(
    cli: Any, db: Path, tmp_path: Path
) -> None:
    """Two detection runs: the lists are categories, the second panel the objects of the one
    that moved most, found or missed (evalstore diff A B --items CATEGORY)."""
    gt, dets = make_detset(2, n_images=12, n_categories=4)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    for k in range(2):
        scored = [dict(d, score=d["score"] if k == 0 else 1 - d["score"]) for d in dets]
        (tmp_path / f"dt{k}.json").write_text(json.dumps(scored))
        with Store(db) as store:
            store.ingest_coco(tmp_path / f"dt{k}.json", tmp_path / "gt.json", run=f"det/r{k}",
                              git_commit=None)  # fmt: skip
    out = tmp_path / "site"
    got = cli("dashboard", "--changed", "det/r0", "det/r1", "-o", str(out))
    assert got.exit_code == 0, got.output
    page = (out / "changed.html").read_text()
    with Store(db) as store:
        group = str(diff_lists(store, "det/r0", "det/r1")["group_id"][0])
        objects = diff_items(store, "det/r0", "det/r1", group, limit=20)
    assert f"Objects of category {group}, found or missed" in page
    for item in objects["item_id"]:
        assert f">{item}<" in page


@pytest.mark.browser
def test_changed_page_draws_in_a_browser(browser: Chromium, two: Path, tmp_path: Path) -> None:
    with Store(two) as store:
        page = dash.write_changed(store, tmp_path / "out", "e/a", f"e/{XSS}")
    status = load(browser, page)
    assert browser.errors() == []
    assert status["dialogs"] == [] and status["injected"] == 0
    panels = {p["id"]: p for p in status["panels"]}
    assert panels["panel-1"]["traces"] == 4 and panels["panel-1"]["drawn"] >= 4
    assert panels["panel-2"]["traces"] == 3 and panels["panel-2"]["drawn"] == 3
    assert panels["panel-1"]["rows"] == 3 and panels["panel-2"]["rows"] == 3
    assert f"e/{XSS}" in status["text"]  # shown as text, never run
    assert "q3-2" in status["svgText"]
