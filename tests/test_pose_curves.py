"""The curves page's cumulative pose-error chart (dashboards/curves.toml,
sql/dashboards/curves.sql ``pose_error_curves``): one line per run with pose estimates at the
panel's setting, the fraction of its pairs whose error max(err_t, err_r) is at most x."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl

from evalstore import Store
from evalstore import dashboards as dash
from evalstore.dashboards.data import query_filters
from evalstore.demo.pose_scenes import make_scenes, observe

#: (err_t, err_r) per pair of each run; inf is a failed estimate
ERRORS = {
    "pose/a": [(0.1, 0.05), (1.0, 0.2), (0.5, 3.0), (math.inf, math.inf)],
    "pose/b": [(0.5, 0.5), (25.0, 1.0), (2.0, 0.1), (0.0, 19.75)],
}
SETTING = ("opencv", 1.0, 0.99999)


def panel() -> dash.Panel:
    spec = dash.load_spec(dash.dashboards_dir() / "curves.toml")
    return next(p for p in spec.panels if p.query == "dashboards/pose_error_curves")


def store_with_estimates(path: Path) -> Store:
    """Three keypoints runs: two with pose estimates at the panel's setting (and one pair's
    at another setting, which the chart leaves out), one without any."""
    store = Store(path)
    scenes = make_scenes(4, seed=0, n_points=8)
    for name in (*ERRORS, "pose/none"):
        matches, _ = observe(scenes, noise_px=0.0, outlier_ratio=0.0, seed=0)
        store.ingest_keypoints(
            matches, run=name, pairs=pl.DataFrame({"pair_id": scenes.pair_ids}), git_commit=None
        )
    for name, errors in ERRORS.items():
        run_id = store.resolve(name)
        for pair_no, (err_t, err_r) in enumerate(errors, start=1):
            for method, threshold, confidence in (SETTING, ("opencv", 0.5, 0.99999)):
                failed = math.isinf(err_t)
                store.con.execute(
                    "insert into pose_estimates (run_id, pair_no, method, threshold, "
                    "confidence, err_t, err_r, n_inliers) values (?, ?, ?, ?, ?, ?, ?, ?)",
                    [run_id, pair_no, method, threshold, confidence,
                     err_t if threshold == 1.0 else 90.0, err_r, 0 if failed else 8],
                )  # fmt: skip
    return store


def expected(errors: list[tuple[float, float]], grid: np.ndarray) -> np.ndarray:
    worst = np.array([max(e) for e in errors])
    return (worst[None, :] <= grid[:, None]).mean(axis=1)


def test_one_line_per_run_with_estimates_and_the_fraction_at_each_error(db: Path) -> None:
    with store_with_estimates(db) as store:
        frame = dash.panel_data(store, panel(), query_filters(store, [], []))
    grid = np.arange(81) * 0.25  # pose/b has a pair at 19.75 degrees: the axis goes to 20
    assert frame["run"].unique(maintain_order=True).to_list() == list(ERRORS)
    for name, errors in ERRORS.items():
        rows = frame.filter(pl.col("run") == name)
        assert rows["error"].to_list() == grid.tolist()
        assert np.array_equal(rows["fraction"].to_numpy(), expected(errors, grid))
        assert set(rows["n_pairs"]) == {4}
    fig = dash.panel_figure(panel(), frame)
    assert fig is not None
    lines = [t for t in fig.data if t["name"] in ERRORS]
    assert [t["name"] for t in lines] == list(ERRORS) and len(fig.data) == len(ERRORS)
    for trace, (name, errors) in zip(lines, ERRORS.items(), strict=True):
        assert list(trace["x"]) == grid.tolist(), name
        assert np.array_equal(np.asarray(trace["y"]), expected(errors, grid)), name
    # run a: a pair at 0.1 (counted from 0.25), 1.0, 3.0 and a failure (never counted)
    a = np.asarray(lines[0]["y"])
    assert (a[0], a[1], a[4], a[12], a[-1]) == (0.0, 0.25, 0.5, 0.75, 0.75)
    assert fig.layout["xaxis"]["title"]["text"] == "pose error (degrees)"
    assert fig.layout["yaxis"]["title"]["text"] == "fraction of pairs"


def test_the_chart_follows_the_run_filter_and_is_empty_without_estimates(db: Path) -> None:
    with store_with_estimates(db) as store:
        only_a = dash.panel_data(store, panel(), query_filters(store, [], ["pose/a"]))
        only_b = dash.panel_data(store, panel(), query_filters(store, [], ["pose/b"]))
        none = dash.panel_data(store, panel(), query_filters(store, [], ["pose/none"]))
    assert set(only_b["run"]) == {"pose/b"} and only_b.height == 81
    assert only_b["error"].max() == 20.0
    # pose/a's finite errors stay within 5 degrees (3 at most): the axis ends at 5
    grid = np.arange(81) * 0.0625
    assert only_a["error"].to_list() == grid.tolist()
    assert np.array_equal(only_a["fraction"].to_numpy(), expected(ERRORS["pose/a"], grid))
    assert none.height == 0
    assert dash.panel_figure(panel(), none) is None
