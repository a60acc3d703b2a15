"""The UI's History page over training steps: for the runs with steps, each metric against
the step (one line per run), from the stored values of their step runs and the values they
logged with a step; the step runs without a stored value are named with the command that
computes them; runs without steps keep the chart over time alone. The runs page leaves step
runs out. (The browser test is tests/test_step_runs_browser.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from step_runs import training_store

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.ui import create_app, data
from evalstore.ui.view import View


def build(store: Store) -> dict[str, Any]:
    """The training store with ap stored for every run but the step run exp/r@1, and a loss
    logged by exp/r at steps 0 and 2 and by exp/other at step 5."""
    ids = training_store(store)
    evaluate(store, None, all_runs=True, metrics=["ap"])
    evaluate(store, ["exp/r@0", "exp/r@2"], metrics=["ap"])
    for run, step, loss in [("exp/r", 0, 0.9), ("exp/r", 2, 0.4), ("exp/other", 5, 0.7)]:
        store.log_metric(run, "loss", loss, step=step)
    store.log_metric("exp/r-s1", "loss", 0.5)  # without a step: no line over steps
    return ids


@pytest.fixture
def trained(db: Path) -> tuple[Path, dict[str, Any]]:
    with Store(db) as store:
        ids = build(store)
    return db, ids


def test_step_history_reads_step_runs_and_logged_steps(trained: tuple[Path, Any]) -> None:
    db, ids = trained
    with Store(db) as store:  # the stored values, as evaluate gives them
        stored = evaluate(store, ["exp/r@0", "exp/r@2"], metrics=["ap"])
    want = dict(stored.filter(stored["slice"] == "").select("run", "value").rows())
    with Store(db, read_only=True) as store:
        every = data.step_history(store, None)
        picked = data.step_history(store, [ids["r"], ids["r-s1"]])
        other = data.step_history(store, None, ["nope"])
    rows = every.values.select("series", "run", "step", "value", "source").rows()
    assert rows == [
        ("retrieval · map", "exp/r", 0, want["exp/r@0"], "evaluated"),
        ("retrieval · map", "exp/r", 2, want["exp/r@2"], "evaluated"),
        ("logged · loss", "exp/other", 5, 0.7, "logged"),
        ("logged · loss", "exp/r", 0, 0.9, "logged"),
        ("logged · loss", "exp/r", 2, 0.4, "logged"),
    ]
    assert every.missing == ["exp/r@1"]
    assert set(picked.values["run"].to_list()) == {"exp/r"} and picked.missing == ["exp/r@1"]
    assert other.values.height == 0 and other.missing == []


def figure(text: str, plot: str) -> dict[str, Any] | None:
    found = re.search(rf'data-plot="{plot}">(.*?)</script>', text, re.S)
    return None if found is None else json.loads(found.group(1))


def test_history_page_draws_the_metric_against_the_step(trained: tuple[Path, Any]) -> None:
    db, ids = trained
    client = TestClient(create_app(db, host="testserver"))
    page = client.get("/history")
    assert page.status_code == 200
    steps = figure(page.text, "panel-0-plot")
    assert steps is not None and steps["layout"]["xaxis"]["title"]["text"] == "step"
    assert [(t["name"], t["x"]) for t in steps["data"]] == [("exp/r", [0, 2])]
    assert figure(page.text, "panel-2-plot") is not None  # and over time, as before
    assert "evalstore eval exp/r@1" in page.text
    logged = client.get("/history", params={"series": "logged · loss"}).text
    drawn = figure(logged, "panel-0-plot")
    assert drawn is not None
    assert sorted((t["name"], t["x"]) for t in drawn["data"]) == [
        ("exp/other", [5]),
        ("exp/r", [0, 2]),
    ]
    # picked runs without steps: the chart over time alone
    plain = client.get(f"/history?unit={ids['r-s1']}").text
    assert figure(plain, "panel-0-plot") is None and figure(plain, "panel-2-plot") is not None


def test_runs_page_leaves_step_runs_out(trained: tuple[Path, Any]) -> None:
    db, _ = trained
    client = TestClient(create_app(db, host="testserver"))
    page = client.get("/").text
    assert "exp/r-s1" in page and "exp/r@" not in page
    assert "3 runs (3 of 3 runs pass the filters)" in page
    with Store(db, read_only=True) as store:
        assert data.filtered_runs(store, View(experiment=("exp",))).height == 3


def test_a_step_run_picked_as_a_configuration_is_compared_as_itself(
    trained: tuple[Path, Any],
) -> None:
    db, ids = trained
    with Store(db, read_only=True) as store:
        view = View.parse([("unit", f"g{ids['steps'][2]}"), ("unit", f"g{ids['r']}")])
        found = {unit.run_ids[0]: unit for _, unit in data.units(store, view)}  # by name
    step = found[ids["steps"][2]]
    assert step.run_ids == (ids["steps"][2],) and not step.group
    assert found[ids["r"]].run_ids == (ids["r"], ids["r-s1"])  # seeds, not steps
