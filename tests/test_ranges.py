"""One table of metric ranges (evalstore.metrics.ranges) read by the dashboards, the UI and
the CLI; a configuration's t interval across seeds clipped to it, saying so."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import ranked

from evalstore import Store
from evalstore import dashboards as dash
from evalstore.analysis import compare_caveats
from evalstore.analysis.configurations import groups
from evalstore.analysis.group_caveats import with_caveats
from evalstore.dashboards import axes, heatmap
from evalstore.metrics import registry as metrics
from evalstore.metrics.ranges import value_range
from evalstore.metrics.user import load_metrics
from evalstore.ui import caveats


def test_the_range_table() -> None:
    assert value_range("ap") == value_range("map") == (0.0, 1.0)
    assert value_range("tide_cls") == (0.0, 100.0)
    assert value_range("reprojection_error") == (0.0, None)
    assert value_range("no_such_metric") is None and value_range(None) is None
    # the dashboards clip to the range, an unbounded top as +inf; the UI reads the same table
    assert axes.value_range("tide_cls") == (0.0, 100.0)
    assert axes.value_range("reprojection_error") == (0.0, math.inf)
    assert caveats.value_range("reprojection_error") == (0.0, None)


def test_a_users_metric_has_no_range(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    shutil.copy(Path(__file__).parent / "user_metrics" / "hit_at_1.sql", folder)
    try:
        assert load_metrics([folder]) == ["hit_at_1"]
        assert value_range("hit_at_1") is None and axes.value_range("hit_at_1") is None
    finally:
        metrics.unregister("hit_at_1")


def _one_list(misplaced: int) -> dict[str, Any]:
    """One list of 100 relevant items and one irrelevant one, ranked ``misplaced`` places from
    the bottom (0: last, AP 1)."""
    labels = np.ones(101, dtype=np.int64)
    order = np.arange(101)[::-1].astype(np.float64)
    labels[100 - misplaced] = -1
    return {"group_id": np.zeros(101, dtype=np.int64), "item_id": np.arange(101),
            "score": order, "label": labels}  # fmt: skip


@pytest.fixture
def near_one(db: Path) -> Path:
    """A configuration of two seeds whose APs are 1 and just below: its t interval (12.7 sd /
    sqrt 2 from two seeds) reaches past 1."""
    with Store(db) as store:
        for seed, misplaced in enumerate((0, 1)):
            store.ingest(_one_list(misplaced), task="retrieval", run=f"exp/m-seed{seed}",
                         params={"arch": "m", "seed": seed})  # fmt: skip
    return db


def test_groups_clip_the_interval_and_say_so(near_one: Path) -> None:
    with Store(near_one) as store:
        row = groups(store, experiment="exp", metrics=["map"]).to_dicts()[0]
        raw = store.con.execute("select ci_high from v_groups where metric = 'map'").fetchone()
    assert raw is not None and raw[0] > 1  # the view as stored
    assert row["mean"] < 1 and row["ci_high"] == 1.0 and row["ci_low"] < row["mean"]
    assert "clipped to the metric's range" in row["caveat"]
    assert "2 seeds: t interval wide" in row["caveat"]


def test_cli_groups_shows_the_clipped_interval(near_one: Path, cli: Any) -> None:
    out = cli("groups", "-e", "exp", "-m", "map", "--format", "json")
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.output)
    assert row["ci_high"] == 1.0 and "clipped" in row["caveat"]
    table = cli("groups", "-e", "exp", "-m", "map")
    assert table.exit_code == 0, table.output
    assert "clipped" in table.output and "caveat" in table.output


def test_groups_of_an_unknown_range_say_why_not() -> None:
    frame = pl.DataFrame({"metric": ["logged loss", "map"], "ci_low": [-3.0, 0.4],
                          "ci_high": [9.0, 0.6], "n_runs": [6, 6]})  # fmt: skip
    out = with_caveats(frame).to_dicts()
    assert out[0]["ci_low"] == -3.0 and "range is unknown" in out[0]["caveat"]
    assert out[1]["caveat"] == "" and out[1]["ci_high"] == 0.6


def test_dashboard_leaderboard_error_bars_stay_in_0_1() -> None:
    frame = pl.DataFrame({
        "experiment": ["dg", "dg"], "config": ["c", "d"],
        "runs": [["dg/c-seed0", "dg/c-seed1"], ["dg/d-seed0", "dg/d-seed1"]],
        "n_runs": [2, 2], "task": ["classification"] * 2,
        "metric": ["map"] * 2, "base_metric": ["ap"] * 2, "params": ['{"ties": "grouped"}'] * 2,
        "mean": [0.995, 0.6], "sd": [0.02, 0.02],
    })  # fmt: skip
    panel = dash.Panel(index=1, title="t", kind="leaderboard", query="dashboards/leaderboard",
                       facet_cols=1)  # fmt: skip
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    spec = json.loads(fig.to_json())
    (bars,) = [t for t in spec["data"] if t.get("error_y")]
    tops = [m + up for m, up in zip(bars["y"], bars["error_y"]["array"], strict=True)]
    bottoms = [m - d for m, d in zip(bars["y"], bars["error_y"]["arrayminus"], strict=True)]
    assert max(tops) == pytest.approx(1.0) and min(bottoms) >= 0
    assert bars["error_y"]["array"][1] == pytest.approx(0.02)  # not cut: unchanged
    notes = [c[2] for c in bars["customdata"]]
    assert "clipped" in notes[0] and notes[1] == ""


def test_dashboard_error_bars_of_pixels_stop_at_0() -> None:
    """reprojection_error has no upper bound: a configuration's sd bar is cut at 0 below, as
    the caveat says, and not above; a heatmap of it is coloured over its values' span."""
    frame = pl.DataFrame({
        "experiment": ["kp", "kp"], "config": ["c", "d"],
        "runs": [["kp/c-seed0", "kp/c-seed1"], ["kp/d-seed0", "kp/d-seed1"]],
        "n_runs": [2, 2], "task": ["keypoints"] * 2,
        "metric": ["reprojection_error"] * 2, "base_metric": ["reprojection_error"] * 2,
        "params": ["{}"] * 2, "mean": [0.5, 40.0], "sd": [2.0, 30.0],
    })  # fmt: skip
    panel = dash.Panel(index=1, title="t", kind="leaderboard", query="dashboards/leaderboard",
                       facet_cols=1)  # fmt: skip
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    (bars,) = [t for t in json.loads(fig.to_json())["data"] if t.get("error_y")]
    assert bars["error_y"]["arrayminus"] == pytest.approx([0.5, 30.0])
    assert bars["error_y"]["array"] == pytest.approx([2.0, 30.0])
    notes = [c[2] for c in bars["customdata"]]
    assert "clipped" in notes[0] and notes[1] == ""
    assert heatmap._scales([frame], "mean") == [(0.5, 40.0)]
    assert heatmap._scales([frame.with_columns(base_metric=pl.lit("ap"))], "mean") == [(0, 1)]


def test_cli_compare_warns_of_few_lists_and_clips(db: Path, cli: Any) -> None:
    """Two runs of 3 lists: ``evalstore compare`` says of each interval that it comes from
    fewer than 5 lists (in every format), as the UI's Compare page does."""
    with Store(db) as store:
        for name, seed in (("a", 1), ("b", 2)):
            store.ingest(ranked(n_groups=3, n_items=12, seed=seed), task="retrieval",
                         run=f"few/{name}", git_commit=None)  # fmt: skip
    out = cli("compare", "few/a", "few/b", "-m", "map", "--format", "json")
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.output)
    assert row["n_lists"] == 3 and row["ci_low"] is not None
    assert row["caveat"] == "3 list(s): interval unreliable"
    assert -1.0 <= row["ci_low"] <= row["ci_high"] <= 1.0
    table = cli("compare", "few/a", "few/b", "-m", "map")
    assert table.exit_code == 0, table.output
    assert "interval unreliable" in table.output


def test_compare_caveats_clip_a_difference_to_twice_the_range() -> None:
    """A difference of two APs lies in [-1, 1]; TIDE's in [-100, 100]; a user's metric says
    why it is not clipped (the same rows the UI shows)."""
    frame = pl.DataFrame({"metric": ["ap", "tide_loc", "my_metric"],
                          "ci_low": [-1.5, -130.0, -3.0], "ci_high": [1.2, 5.0, 2.0],
                          "n_lists": [20, 20, 3]})  # fmt: skip
    out = compare_caveats.with_caveats(frame).to_dicts()
    assert (out[0]["ci_low"], out[0]["ci_high"]) == (-1.0, 1.0) and "clipped" in out[0]["caveat"]
    assert out[1]["ci_low"] == -100.0
    assert out[2]["caveat"] == (
        "not clipped: the metric's range is unknown; 3 list(s): interval unreliable"
    )
