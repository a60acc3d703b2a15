"""Values of a metric this process does not know: a user's metric (tests/user_metrics/) was
evaluated with its folder loaded, and a colleague reads the store without that folder. Its
stored values are shown with their name (direction unknown: no best so far, not ranked),
and never make a page, a dashboard or a comparison fail."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ingest_lists
from starlette.testclient import TestClient

from evalstore import Store, dashboards
from evalstore.analysis.compare import compare, history
from evalstore.analysis.evaluate import evaluate, stored_metrics
from evalstore.analysis.leaderboard import leaderboard
from evalstore.metrics import registry as metrics
from evalstore.metrics.user import load_metrics
from evalstore.ui import create_app

HERE = Path(__file__).parent / "user_metrics"
LISTS_A = {"q1": ([3.0, 2.0], [1, -1]), "q2": ([3.0, 1.0], [-1, 1]), "q3": ([2.0, 2.0], [1, -1])}
LISTS_B = {"q1": ([3.0, 2.0], [1, -1]), "q2": ([3.0, 4.0], [-1, 1]), "q3": ([3.0, 2.0], [1, -1])}


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """exp/a and exp/b with values of hit_at_1 (a user's metric) and map; afterwards the
    metric is unknown to this process, as to anyone without its folder."""
    folder = tmp_path_factory.mktemp("mine")
    shutil.copy(HERE / "hit_at_1.sql", folder / "hit_at_1.sql")
    db = folder.parent / "shared.duckdb"
    try:
        assert load_metrics([folder]) == ["hit_at_1"]
        with Store(db) as store:
            ingest_lists(store, "exp/a", LISTS_A)
            ingest_lists(store, "exp/b", LISTS_B)
            evaluate(store, ["exp/a", "exp/b"], metrics=["hit_at_1", "map"])
    finally:
        metrics.unregister("hit_at_1")
    assert "hit_at_1" not in metrics.METRICS
    return db


def evalstore(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A fresh process that loads no metrics folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("EVALSTORE_DB", "EVALSTORE_METRICS")}
    return subprocess.run(
        [sys.executable, "-m", "evalstore", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd, env=env,
    )  # fmt: skip


def test_the_ui_history_shows_the_unknown_metric(stored: Path) -> None:
    client = TestClient(create_app(stored, host="testserver"))
    for url in ("/history", "/history?series=hit_at_1", "/", "/compare", "/curves", "/lists"):
        page = client.get(url)
        assert page.status_code == 200, (url, re.findall(r'class="error">(.*?)<', page.text))
    every = client.get("/history").text
    assert "hit_at_1" in every
    one = client.get("/history?series=hit_at_1").text
    assert "retrieval · hit_at_1" in one.split("<main>")[1]  # its chart, by name


def test_the_history_figure_draws_the_values_without_a_best_so_far(stored: Path) -> None:
    [overview] = [p for p in dashboards.default_specs() if p.stem == "overview"]
    [panel] = [p for p in dashboards.load_spec(overview).panels if p.best_so_far]
    with Store(stored, read_only=True) as store:
        frame = dashboards.panel_data(store, panel, {"experiments": None, "runs": None})
    assert {"hit_at_1", "ap"} <= set(frame["base_metric"].to_list())
    figure = dashboards.panel_figure(panel, frame)
    assert figure is not None
    titles = [a.get("text") for a in figure.layout.get("annotations", [])]
    assert titles == ["retrieval · hit_at_1", "retrieval · map"]  # a chart each, by name
    by_chart: dict[str, list[str]] = {}
    for t in figure.data:  # the first chart's traces name no axes, the second's x2
        by_chart.setdefault(str(t.get("xaxis") or "x"), []).append(str(t.get("name")))
    assert by_chart["x"] == ["exp", "exp"]  # hit_at_1's values, no best so far guessed
    assert by_chart["x2"] == ["exp", "exp", "exp: best so far"]  # map keeps its best so far


@pytest.mark.slow  # fresh processes
def test_the_commands_show_stored_values_of_an_unknown_metric(stored: Path, tmp_path: Path) -> None:
    db = ["--db", str(stored)]
    page = evalstore("dashboard", "--out", str(tmp_path / "pages"), *db, cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    assert "hit_at_1" in (tmp_path / "pages" / "overview.html").read_text()
    for command in (
        ["compare", "exp/a", "exp/b", "--format", "csv"],
        ["check", "exp/b", "--baseline", "exp/a"],
        ["leaderboard", "--format", "csv"],
        ["history", "-m", "map", "--format", "csv"],
        ["groups", "--format", "csv"],
        ["metrics", "--all", "--format", "csv"],
    ):
        done = evalstore(*command, *db, cwd=tmp_path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (command, done.stderr)
    shown = evalstore("metrics", "--all", "--format", "csv", *db, cwd=tmp_path)
    assert shown.stdout.count("hit_at_1") == 2  # one value a run, with its name


def test_the_library_compares_and_ranks_the_known_metrics_only(stored: Path) -> None:
    with Store(stored) as store:
        compared = compare(store, ["exp/a", "exp/b"])
        assert compared["metric"].to_list() == ["map"]
        assert leaderboard(store).columns == ["retrieval map"]
        assert history(store, "map")["value"].len() == 2
        values = stored_metrics(store, None, all_runs=True)
    assert sorted(values.filter(values["metric"] == "hit_at_1")["value"].to_list()) == [0.5, 1.0]
