"""The demo end to end, on real data: every task and metric has values in range, and the
better method wins where it must."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from evalstore import Store, demo
from evalstore.metrics import DEFAULTS

QUICK = os.environ.get("CI") == "true" or os.environ.get("EVALSTORE_DEMO_FULL") != "1"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, demo.DemoResult]:
    folder = tmp_path_factory.mktemp("demo")
    db = folder / "demo.duckdb"
    with Store(db) as store:
        result = demo.build(store, out=folder / "dashboards", quick=QUICK)
    return db, result


def overall(db: Path) -> pl.DataFrame:
    with Store(db, read_only=True) as store:
        return store.con.sql(
            "select run, experiment, task, metric, base_metric, params, value, n_lists "
            "from v_metrics where slice = ''"
        ).pl()


def test_every_task_and_default_metric_has_values(built: tuple[Path, demo.DemoResult]) -> None:
    db, result = built
    frame = overall(db)
    tasks = {"classification", "verification", "matching", "retrieval", "keypoints"}
    assert set(frame["task"]) == tasks
    for task in tasks:
        for metric in DEFAULTS[task]:
            rows = frame.filter(pl.col("task") == task, pl.col("base_metric") == metric)
            assert rows.height > 0, (task, metric)
            assert rows["value"].null_count() < rows.height, (task, metric)
    assert len(result.runs) >= 6
    assert {r.split("/")[0] for r in result.runs} == {"digits", "hpatches"}


def test_values_are_in_range(built: tuple[Path, demo.DemoResult]) -> None:
    frame = overall(built[0]).drop_nulls("value")
    error = frame.filter(pl.col("base_metric") == "reprojection_error")
    bounded = frame.filter(pl.col("base_metric") != "reprojection_error")
    assert bounded["value"].min() >= 0.0 and bounded["value"].max() <= 1.0
    assert error.height > 0 and error["value"].min() >= 0.0


def value(
    frame: pl.DataFrame, run: str, task: str, metric: str, params: str | None = None
) -> float:
    rows = frame.filter(
        pl.col("run") == run, pl.col("task") == task, pl.col("base_metric") == metric
    )
    if params is not None:
        rows = rows.filter(pl.col("params") == params)
    assert rows.height == 1, (run, task, metric, rows)
    return float(rows["value"][0])


def test_the_better_method_wins(built: tuple[Path, demo.DemoResult]) -> None:
    frame = overall(built[0])
    for task in ("matching", "retrieval", "verification"):
        sift = value(frame, "hpatches/sift", task, "ap")
        weak = value(frame, "hpatches/sift_weak", task, "ap")
        assert sift > weak, (task, sift, weak)
    sift = value(frame, "hpatches/sift", "keypoints", "precision_at_sigma", '{"sigma":3.0}')
    weak = value(frame, "hpatches/sift_weak", "keypoints", "precision_at_sigma", '{"sigma":3.0}')
    assert sift > weak
    best = value(frame, "digits/mlp-128", "classification", "ap_voc07")
    baseline = value(frame, "digits/naive-bayes", "classification", "ap_voc07")
    assert best > baseline


def test_slices_and_per_class_values(built: tuple[Path, demo.DemoResult]) -> None:
    with Store(built[0], read_only=True) as store:
        slices = {
            s
            for (s,) in store.con.sql(
                "select distinct slice from v_metrics where run = 'hpatches/sift'"
            ).fetchall()
        }
        classes = store.con.sql(
            "select count(distinct group_id) from v_lists where task = 'classification'"
        ).fetchall()[0][0]
    assert {
        "noise=easy",
        "noise=hard",
        "noise=tough",
        "kind=viewpoint",
        "kind=illumination",
    } <= slices
    assert classes == 10


def test_dashboards_are_written(built: tuple[Path, demo.DemoResult]) -> None:
    pages = {p.name for p in built[1].dashboards}
    assert {"overview.html", "hpatches.html"} <= pages
    assert all(p.exists() and p.stat().st_size > 1000 for p in built[1].dashboards)


def test_demo_is_deterministic(built: tuple[Path, demo.DemoResult], tmp_path: Path) -> None:
    with Store(tmp_path / "again.duckdb") as store:
        demo.build(store, quick=True)
    first = overall(built[0]).sort("run", "task", "metric", "params")
    again = overall(tmp_path / "again.duckdb").sort("run", "task", "metric", "params")
    if QUICK:
        joined = first.join(again, on=["run", "task", "metric", "params"])
        assert joined.height == first.height
        diff = (joined["value"] - joined["value_right"]).abs().max()
        assert diff is None or diff < 1e-12
