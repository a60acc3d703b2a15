"""The UI read without hovering and linked for good: runs addressed by name in every link (a
link survives a run re-ingested under a new id), pickers of runs, task and metric on the
pages (no page names a command's option), the compare table's parameters in numeric order
with its interval columns first and its caveat for intervals from few lists, the runs table
not a fixed-height box, and the Per list page's default as the docs say it."""

from __future__ import annotations

import html
import json
import re
import threading
from pathlib import Path

import polars as pl
import pytest
from conftest import ranked
from starlette.testclient import TestClient
from test_dashboards import build_sample
from test_ui import rows

from evalstore import Store, evaluate
from evalstore.ui import create_app, pages
from evalstore.ui.caveats import value_range, with_caveats
from evalstore.ui.comparing import FEW_LISTS

PATIENT = 120.0  # seconds a held computation waits for the test's word before going on


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ui-readable") / "sample.duckdb"
    with Store(path) as store:
        build_sample(store)
    return path


@pytest.fixture(scope="module")
def client(sample: Path) -> TestClient:
    return TestClient(create_app(sample, host="testserver", wait=600, latest=600, slow=600))


def _unit_boxes(page: str) -> list[str]:
    return [html.unescape(v) for v in re.findall(r'name="unit" value="([^"]*)"', page)]


def _visible(page: str) -> str:
    """The page's text a reader sees (no tags, no figure JSON)."""
    text = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def test_links_name_runs_and_survive_a_reingest(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        for name, seed in (("a", 1), ("b", 2)):
            store.ingest(ranked(seed=seed), task="retrieval", run=f"e/{name}", git_commit=None)
        evaluate(store, ["e/a", "e/b"])
        old = store.resolve("e/a")
    client = TestClient(create_app(path, host="testserver", wait=600, latest=600, slow=600))
    runs = client.get("/")
    assert sorted(_unit_boxes(runs.text)) == ["e/a", "e/b"]  # names, not ids
    grouped = client.get("/?group=1")
    assert sorted(_unit_boxes(grouped.text)) == ["g:e/a", "g:e/b"]
    saved = "/compare?unit=e%2Fb&unit=e%2Fa&baseline=e%2Fa"
    before = rows(client.get(saved).text, "compare-table")
    with Store(path) as store:  # the run made again: a new id
        store.remove("e/a")
        store.ingest(ranked(seed=1), task="retrieval", run="e/a", git_commit=None)
        evaluate(store, ["e/a"])
        assert store.resolve("e/a") != old
    after = client.get(saved)
    assert after.status_code == 200 and rows(after.text, "compare-table") == before
    # the page's own links (the baseline, the navigation) name the runs too
    assert '<option value="e/a" selected>e/a</option>' in after.text
    assert re.search(r'href="/curves\?unit=e%2Fb&amp;unit=e%2Fa&amp;baseline=e%2Fa"', after.text)
    configs = client.get("/compare?unit=g%3Ae%2Fb&unit=g%3Ae%2Fa")
    assert configs.status_code == 200 and rows(configs.text, "compare-table")
    with Store(path, read_only=True) as store:
        a, b = store.resolve("e/a"), store.resolve("e/b")
    legacy = client.get(f"/compare?unit={b}&unit={a}&baseline={a}")  # an older link's ids
    assert rows(legacy.text, "compare-table") == before
    gone = client.get(f"/compare?unit={old}&unit={b}")
    assert gone.status_code == 400 and str(old) in gone.text


def test_compare_with_nothing_picked_offers_a_picker(client: TestClient) -> None:
    page = client.get("/compare")
    assert page.status_code == 200
    picker = re.search(r'<select name="unit" id="pick-units" multiple[^>]*>(.*?)</select>',
                       page.text, re.S)  # fmt: skip
    assert picker, "no picker"
    offered = [html.unescape(v) for v in re.findall(r'value="([^"]*)"', picker.group(1))]
    assert "demo/v1" in offered and "hpatches/sift" in offered
    assert any(v.startswith("g:seeds/") for v in offered)  # configurations of seeds
    assert '<details class="picker" id="picker" open>' in page.text
    picked = client.get("/compare?unit=demo%2Fv1")
    assert '<option value="demo/v1" selected>demo/v1</option>' in picked.text


@pytest.mark.parametrize("path", ["/curves", "/lists"])
def test_curves_and_lists_have_a_picker(client: TestClient, path: str) -> None:
    page = client.get(f"{path}?unit=hpatches%2Fsift&unit=hpatches%2Ftfeat")
    assert 'id="pick-units"' in page.text
    assert f'<form method="get" action="{path}">' in page.text
    for name in ("hpatches/sift", "hpatches/tfeat"):
        assert f'<option value="{name}" selected>{name}</option>' in page.text


def test_compare_chooses_task_and_metric_on_the_page(client: TestClient) -> None:
    base = "/compare?unit=hpatches%2Fsift&unit=hpatches%2Fhardnet"
    every = client.get(base)
    tasks = {r.split("|")[1] for r in rows(every.text, "compare-table")}
    assert tasks == {"verification", "matching", "retrieval"}
    assert 'id="pick-task"' in every.text and 'id="pick-metric"' in every.text
    one = client.get(f"{base}&task=retrieval&metric=map")
    table = rows(one.text, "compare-table")
    assert table and all(r.split("|")[1:3] == ["retrieval", "map"] for r in table)
    # what changed: the moves of the chosen task, never "choose one with" an option
    assert "choose one with" not in every.text and 'data-plot="changed-lists"' in every.text


@pytest.mark.parametrize(
    "path",
    ["/", "/compare", "/compare?unit=hpatches%2Fsift&unit=hpatches%2Fhardnet", "/curves",
     "/lists", "/history", "/sql",
     # what the pages say of a refused or empty request
     "/sql?q=select+*+from+read_csv('elsewhere.csv')",
     "/compare?unit=demo%2Fv1&unit=demo%2Fv2&task=nosuch", "/?where=nosuch+%3E+1"],
)  # fmt: skip
def test_no_page_names_a_command_option(client: TestClient, path: str) -> None:
    text = _visible(client.get(path).text)
    assert not re.findall(r"(?<![\w-])--[a-z][\w-]*", text)
    assert "`" not in text  # no markdown shown literally


def test_what_a_page_says_names_runs_not_ids(client: TestClient) -> None:
    text = _visible(client.get("/compare?unit=demo%2Fv1&unit=demo%2Fv2&task=nosuch").text)
    assert "runs demo/v2 and demo/v1 have no nosuch values in common" in text
    refused = _visible(client.get("/sql?q=select+*+from+read_csv('elsewhere.csv')").text)
    assert "may not read 'elsewhere.csv': the UI's queries read the store only" in refused


def test_flags_are_left_out_of_spec_texts() -> None:
    said = "The area is the AP. Without --runs: the 8 newest runs of each task."
    assert pages.without_flags(said) == "The area is the AP."
    aside = "no slice columns (ingest a --groups file with columns such as noise)."
    assert "--" not in pages.without_flags(aside)


def test_compare_sorts_thresholds_as_numbers_and_warns_of_few_lists(client: TestClient) -> None:
    page = client.get("/compare?unit=superpoint%2Fv2&unit=superpoint%2Fv1&task=keypoints")
    head = re.findall(r'<th data-col="([^"]+)"', page.text.split('id="compare-table"')[1])
    assert head[:9] == ["run", "task", "metric", "params", "diff", "ci_low", "ci_high",
                        "p_value", "p_adj"]  # fmt: skip
    table = [r.split("|") for r in rows(page.text, "compare-table")]
    mma = [json.loads(r[3]) for r in table if r[2] == "mma"]
    thresholds = [p["threshold"] for p in mma]
    assert len(thresholds) >= 10 and thresholds == sorted(thresholds)
    # 4 image pairs: every interval says it is from too few lists
    caveat = head.index("caveat")
    assert all(r[caveat] == "4 list(s): interval unreliable" for r in table if r[5])
    assert FEW_LISTS == 5 and f"fewer than {FEW_LISTS} lists" in page.text


def test_runs_table_grows_with_the_window(client: TestClient) -> None:
    css = client.get("/static/ui.css").text
    runs = re.search(r"#runs-wrap\{[^}]*\}", css)
    assert runs and "max-height:none" in runs.group(0)
    assert 'class="table-wrap" id="runs-wrap"' in client.get("/").text


def test_lists_page_shows_the_newest_as_the_docs_say(client: TestClient, sample: Path) -> None:
    docs = (Path(__file__).parent.parent / "docs" / "ui.md").read_text()
    assert f"the {pages.NEWEST_LISTS} newest" in docs
    page = client.get("/lists")
    with Store(sample, read_only=True) as store:
        total = store.query("ui/run_count")["n"][0]
    shown = min(total, pages.NEWEST_LISTS)
    assert f"Showing the {shown} " in page.text


def _figure(page: str, plot: str) -> dict:
    found = re.search(rf'data-plot="{plot}">(.*?)</script>', page, re.S)
    assert found, f"no figure {plot}"
    return json.loads(found.group(1))


def test_compare_figures_read_without_hovering(client: TestClient) -> None:
    page = client.get("/compare?unit=superpoint%2Fv2&unit=superpoint%2Fv1").text
    scatter = _figure(page, "compare-scatter")
    titles = [a["text"] for a in scatter["layout"]["annotations"]]
    assert any("homography_accuracy (eps=" in t for t in titles)
    assert any("mma (threshold=" in t for t in titles)
    assert any("precision_at_sigma (sigma=" in t for t in titles)
    # homography_accuracy is 0 or 1 per pair: points coincide, and say how many they are
    points = [t for t in scatter["data"] if t.get("mode", "").startswith("markers")]
    counted = [t for t in points if t.get("text") and any(t["text"])]
    assert counted
    for t in counted:
        assert len(set(zip(t["x"], t["y"], strict=True))) == len(t["x"])  # one per spot
        assert sum(int(n or 1) for n in t["text"]) == 4  # the 4 image pairs
    bars = _figure(page, "compare-bars")
    chart = next(t for t in bars["data"] if t["type"] == "bar")
    axis = bars["layout"]["xaxis" + chart.get("xaxis", "x")[1:]]
    assert sorted(axis["ticktext"]) == ["i_a", "i_b", "v_a", "v_b"]  # lists, not ranks
    legend = {t["name"]: t["marker"]["color"] for t in bars["data"] if t.get("showlegend")
              and t["type"] == "bar"}  # fmt: skip
    assert legend == {"run better than baseline": "#2ca02c", "run worse": "#d62728"}
    # 4 lists: each interval's title warns
    assert all("only 4 list(s)" in a["text"] for a in bars["layout"]["annotations"])


def test_a_slow_page_shows_its_progress(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Curves held by the test until it has seen the progress display: no timer decides."""
    go, done = threading.Event(), threading.Event()
    draw = pages.panel_data

    def held(*args: object, **kwargs: object) -> object:
        go.wait(PATIENT)
        return draw(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pages, "panel_data", held)
    client = TestClient(create_app(sample, host="testserver", slow=0.05))
    first = client.get("/curves?unit=hpatches%2Fsift")
    assert first.status_code == 200 and 'id="page-progress"' in first.text
    poll = re.search(r'data-poll="([^"]+)"', first.text)
    assert poll and "Computing the runs' curves" in html.unescape(first.text)
    state = client.get(html.unescape(poll.group(1))).json()
    assert state["done"] is False and "s so far" in state["html"]
    assert client.get("/static/progress.js").text.count("section[data-poll]") == 1
    go.set()
    while not client.get(html.unescape(poll.group(1))).json()["done"]:
        done.wait(0.01)  # the app's thread draws the figures; the test waits for its word
    final = client.get("/curves?unit=hpatches%2Fsift")
    assert 'id="page-progress"' not in final.text and "data-plot=" in final.text


def test_tables_keep_value_when_every_value_is_equal(tmp_path: Path) -> None:
    path = tmp_path / "same.duckdb"
    with Store(path) as store:
        for name in ("a", "b"):  # the same rows: every value equal
            store.ingest(ranked(seed=3), task="retrieval", run=f"same/{name}", git_commit=None)
        evaluate(store, ["same/a", "same/b"])
    client = TestClient(create_app(path, host="testserver", wait=600, latest=600, slow=600))
    page = client.get("/compare?unit=same%2Fb&unit=same%2Fa").text
    head = re.findall(r'<th data-col="([^"]+)"', page.split('id="compare-table"')[1])
    assert {"value", "baseline_value", "diff"} <= set(head)
    runs = client.get("/").text
    assert any(c.startswith("retrieval map") for c in re.findall(r'<th data-col="([^"]+)"', runs))


def test_intervals_are_clipped_to_the_metric_range_or_say_why_not() -> None:
    rows_ = {
        "metric": ["ap", "tide_loc", "my_metric", "map", "reprojection_error"],
        "ci_low": [-1.2, -130.0, -3.0, 0.01, -9.0],
        "ci_high": [0.3, 5.0, 2.0, 0.02, 40.0],
        "n_lists": [2, 20, 20, 20, 20],
    }
    out = with_caveats(pl.DataFrame(rows_)).rows(named=True)
    assert (out[0]["ci_low"], out[0]["ci_high"]) == (-1.0, 0.3)  # a difference of two APs
    assert "clipped" in out[0]["caveat"] and "-1.2000" in out[0]["caveat"]
    assert "2 list(s): interval unreliable" in out[0]["caveat"]
    assert out[1]["ci_low"] == -100.0  # TIDE's points
    assert out[2]["caveat"] == "not clipped: the metric's range is unknown"
    assert out[3]["caveat"] == "" and out[3]["ci_low"] == 0.01
    assert (out[4]["ci_low"], out[4]["caveat"]) == (-9.0, "")  # no upper bound: nothing to clip
    assert value_range("mma") == (0.0, 1.0) and value_range("my_metric") is None


@pytest.mark.parametrize(("path", "plot"), [("/curves", "pr"), ("/lists", "heatmap")])
def test_curves_and_lists_choose_task_and_metric(client: TestClient, path: str, plot: str) -> None:
    every = client.get(path).text
    assert 'id="pick-task"' in every and '<option value="retrieval">' in every
    one = client.get(f"{path}?task=retrieval").text
    assert '<option value="retrieval" selected>' in one
    figures = [json.loads(m) for m in re.findall(r'data-plot="[^"]+">(.*?)</script>', one, re.S)]
    notes = [f.get("layout", {}).get("annotations", []) for f in figures]
    titles = [a.get("text", "") for each in notes for a in each]
    named = [t for t in titles if t in ("verification", "matching", "classification")
             or t.startswith(("verification ·", "matching ·", "classification ·"))]  # fmt: skip
    assert named == [], named  # only the chosen task's charts
    assert any("retrieval" in t for t in titles)
