"""Step runs (a run's evaluations at training steps, each a run of its own linked by
run_steps) stay out of every list that compares or ranks runs: groups, the leaderboard,
history, eval --all, the dashboards' selection and panels, the UI's runs page; a step run is
still reachable by name and in the SQL views."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from step_runs import training_store

from evalstore import Store
from evalstore.analysis.compare import history
from evalstore.analysis.configurations import configs, groups
from evalstore.analysis.eval_plan import run_ids
from evalstore.analysis.evaluate import evaluate
from evalstore.analysis.leaderboard import leaderboard
from evalstore.dashboards.data import query_filters, selected_run_ids
from evalstore.db import queries
from evalstore.ui import data
from evalstore.ui.view import View

ORDINARY = {"exp/r", "exp/r-s1", "exp/other"}
STEPS = {"exp/r@0", "exp/r@1", "exp/r@2"}


@pytest.fixture
def trained(db: Path) -> tuple[Path, dict[str, Any]]:
    with Store(db) as store:
        ids = training_store(store)
        evaluate(store, None, all_runs=True, metrics=["ap"])
        evaluate(store, list(STEPS), metrics=["ap"])  # their values exist: still left out
    return db, ids


def test_groups_and_leaderboard_count_seeds_not_steps(trained: tuple[Path, Any]) -> None:
    db, _ids = trained
    with Store(db) as store:
        frame = groups(store, experiment="exp", metrics=["ap"])
        board = leaderboard(store).wide()
        per_run = leaderboard(store, runs=True).wide()
        found = configs(store)
    by_config = {c: (n, sorted(r)) for c, n, r in frame.select("config", "n_runs", "runs").rows()}
    assert by_config == {
        "lr=0.1": (2, ["exp/r", "exp/r-s1"]),
        "lr=0.2": (1, ["exp/other"]),
    }
    assert sorted(board["n_runs"].to_list()) == [1, 2]
    assert set(per_run["group"].to_list()) == ORDINARY
    assert set(found["run"].to_list()) == ORDINARY


def test_history_and_eval_all_leave_step_runs_out(trained: tuple[Path, Any], cli: Any) -> None:
    db, ids = trained
    with Store(db) as store:
        shown = history(store, "map", experiment="exp")
        every = run_ids(store, None, True)
    assert set(shown["run"].to_list()) == ORDINARY
    assert sorted(every) == sorted([ids["r"], ids["r-s1"], ids["other"]])
    done = cli("eval", "--all", "-m", "ap", "--format", "json")
    assert done.exit_code == 0, done.output
    assert {row["run"] for row in json.loads(done.stdout)} == ORDINARY
    one = cli("eval", "exp/r@1", "-m", "ap", "--format", "json")  # by name: reachable
    assert one.exit_code == 0, one.output
    assert {row["run"] for row in json.loads(one.stdout)} == {"exp/r@1"}


def panel_runs(store: Store, name: str, filters: dict[str, Any], column: str = "run") -> set[str]:
    frame = queries.fetch(store.con, name, filters)
    names: set[str] = set()
    for value in frame[column].to_list():
        names |= set(value) if isinstance(value, list) else set(str(value).split(", "))
    return names


def test_dashboards_select_runs_without_their_steps(trained: tuple[Path, Any]) -> None:
    db, ids = trained
    with Store(db) as store:
        every = query_filters(store, [], [])
        assert set(selected_run_ids(store)) == {ids["r"], ids["r-s1"], ids["other"]}
        assert set(selected_run_ids(store, ["exp"])) == {ids["r"], ids["r-s1"], ids["other"]}
        assert selected_run_ids(store, runs=["exp/r@1"]) == [ids["steps"][1]]  # named: shown
        counted = store.query("dashboards/experiments").rows()
        for name in ("dashboards/runs", "dashboards/latest_values", "dashboards/pr_runs"):
            assert panel_runs(store, name, every) == ORDINARY, name
        assert panel_runs(store, "dashboards/leaderboard", every, "runs") == ORDINARY
        history_runs = panel_runs(store, "dashboards/metric_history", every)
        lists = store.query("dashboards/per_list_values", every)
        named = query_filters(store, [], ["exp/r@2"])
        step_lists = store.query("dashboards/per_list_values", named)
    assert counted == [("exp", 3)]
    assert history_runs == ORDINARY
    assert set(lists["run"].to_list()) == ORDINARY
    assert set(step_lists["run"].to_list()) == {"exp/r@2"}


def test_ui_runs_page_and_pickers_leave_step_runs_out(trained: tuple[Path, Any]) -> None:
    db, ids = trained
    with Store(db, read_only=True) as store:
        runs = data.filtered_runs(store, View())
        table, _ = data.config_table(store, runs)
        total = store.query("ui/run_count")["n"][0]
        in_view = store.query("ui/step_run_ids")["step_run_id"].to_list()
        views = store.con.sql("select run from v_runs").fetchall()
        steps = store.con.sql("select step_run from v_steps order by step").fetchall()
    assert set(runs["run"].to_list()) == ORDINARY and total == 3
    assert sorted(table["n_runs"].to_list()) == [1, 2]
    assert sorted(in_view) == sorted(ids["steps"].values())
    assert {r for (r,) in views} == ORDINARY | STEPS  # the SQL views keep them
    assert [s for (s,) in steps] == ["exp/r@0", "exp/r@1", "exp/r@2"]
