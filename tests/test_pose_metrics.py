"""The pose metrics end to end: relative poses estimated on first use at the protocol's setting
(SuperGlue's by default), the setting recorded in each value's params, values cached apart per
protocol, the same values as the NumPy twins over the stored estimates, the command line, and
how compare and --ci treat a run's AUC. (SQL == twin == slow loop on random stores:
tests/test_parity.py; hand-worked values: sql/metrics/fixtures/; the protocols against the
transcribed reference code: tests/conformance/test_pose_protocols.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from pose_scenes import scene
from typer.testing import CliRunner

from evalstore import Store
from evalstore.analysis.compare import compare
from evalstore.analysis.evaluate import evaluate
from evalstore.cli import app
from evalstore.core import pose
from evalstore.errors import InvalidInput
from evalstore.metrics.pose_catalogue import DEFAULT_RULES, ESTIMATED, RULED
from evalstore.metrics.pose_references import best_errors, read_pose_run
from evalstore.metrics.protocols import PROTOCOLS
from evalstore.metrics.registry import METRICS, Params

POSE = ["pose_auc", "pose_maa", "pose_error", "pose_ransac_threshold", "pose_maa_imc",
        "epipolar_precision", "matching_score"]  # fmt: skip


def _ingest(store: Store, run: str, seed: int, n_pairs: int = 5, **kw: Any) -> int:
    matches, cams, _ = scene(n_pairs=n_pairs, n_matches=40, seed=seed, **kw)
    cams = cams.with_columns(n_keypoints0=pl.lit(60, dtype=pl.Int64))
    return store.ingest_keypoints(matches, run=run, pairs=cams, git_commit=None).run_id


def _value(frame: pl.DataFrame, metric: str, **params: Any) -> float:
    rows = frame.filter(pl.col("metric") == metric).to_dicts()
    rows = [r for r in rows if all(json.loads(r["params"]).get(k) == v for k, v in params.items())]
    assert len(rows) == 1, (metric, params, rows)
    return float(rows[0]["value"])


def test_poses_are_estimated_on_first_use_at_the_default_setting(store: Store) -> None:
    run_id = _ingest(store, "m/a", seed=1)
    count = "select count(*) from pose_estimates where run_id = $r"
    assert store.con.execute(count, {"r": run_id}).fetchone() == (0,)
    evaluate(store, ["m/a"], metrics=["epipolar_precision"])  # reads no estimate
    assert store.con.execute(count, {"r": run_id}).fetchone() == (0,)
    frame = evaluate(store, ["m/a"], metrics=["pose_auc"])
    settings = store.con.execute(
        "select distinct method, threshold, confidence from pose_estimates where run_id = $r",
        {"r": run_id},
    ).fetchall()
    assert settings == [("opencv", 1.0, 0.99999)]
    assert store.con.execute(count, {"r": run_id}).fetchone() == (5,)
    for text in frame["params"]:
        params = json.loads(text)
        assert (params["method"], params["ransac_threshold"], params["confidence"]) == (
            "opencv", 1.0, 0.99999,
        )  # fmt: skip


def test_the_values_are_the_twins_over_the_stored_estimates(store: Store) -> None:
    run_id = _ingest(store, "m/a", seed=2, outliers=0.3)
    for protocol in (None, "superglue", "loftr", "gluefactory"):
        chosen = PROTOCOLS[protocol] if protocol else None
        rules = DEFAULT_RULES if chosen is None else chosen.pose
        names = [m for m in POSE if chosen is None or m in chosen.metrics["keypoints"]]
        frame = evaluate(store, ["m/a"], metrics=names, protocol=protocol)
        run = read_pose_run(store.con, run_id)
        for name in names:
            metric = METRICS[name]
            result = metric.reference(run, Params(pose=rules))
            picked = [g is None for g in result.group.tolist()]
            for i in range(result.value.size):
                at = None if result.at is None else float(result.at[i])
                if metric.overall == "run row" and not picked[i]:
                    continue
                params = {} if at is None else {metric.sweep.column: at}  # type: ignore[union-attr]
                got = _value(frame, name, **params)
                want = (
                    float(result.value[i])
                    if metric.overall == "run row"
                    else float(np.nanmean(result.value[result.at == at]))
                )
                assert got == pytest.approx(want, rel=1e-12, abs=1e-12), (protocol, name, at)


def test_gluefactory_estimates_its_sweep_and_records_the_threshold_it_keeps(store: Store) -> None:
    run_id = _ingest(store, "m/a", seed=3, noise=1.5, outliers=0.2)
    frame = evaluate(store, ["m/a"], protocol="gluefactory", metrics=["pose_ransac_threshold"])
    found = store.con.execute(
        "select distinct threshold from pose_estimates where run_id = $r order by 1",
        {"r": run_id},
    ).fetchall()
    assert [t for (t,) in found] == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    run = read_pose_run(store.con, run_id)
    errors = {}
    for th in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0):
        mine = run.est_threshold == th
        errors[th] = np.maximum(run.err_t[mine], run.err_r[mine])
    best, _, _ = pose.best_threshold_gluefactory(errors, (5.0, 10.0, 20.0))
    assert _value(frame, "pose_ransac_threshold") == best
    rules = PROTOCOLS["gluefactory"].pose
    assert rules is not None and best_errors(run, rules) is not None
    assert json.loads(frame["params"][0])["ransac_threshold"] == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]


def test_values_of_each_protocol_are_cached_apart(store: Store) -> None:
    _ingest(store, "m/a", seed=4)
    first = evaluate(store, ["m/a"], metrics=["pose_auc"], protocol="superglue")
    loftr = evaluate(store, ["m/a"], metrics=["pose_auc"], protocol="loftr")
    again = evaluate(store, ["m/a"], metrics=["pose_auc"], protocol="superglue")
    stored = store.con.execute(
        "select params, value from metric_values where metric = 'pose_auc' order by params"
    ).fetchall()
    assert len(stored) == 6  # three thresholds under each protocol
    assert {json.loads(p)["protocol"] for p, _ in stored} == {"superglue", "loftr"}
    assert {json.loads(p)["ransac_threshold"] for p, _ in stored} == {1.0, 0.5}
    assert first["value"].to_list() == again["value"].to_list()
    assert set(first["params"]).isdisjoint(set(loftr["params"]))
    computed = store.con.execute(
        "select count(distinct computed_at) from metric_values where metric = 'pose_auc'"
    ).fetchone()
    assert computed == (2,)  # the second superglue call read its cached values


def test_a_run_without_cameras_has_no_pose_metric(store: Store) -> None:
    xy = np.random.default_rng(0).uniform(0, 60, (10, 2)).tolist()  # x1 = x0: H = I
    matches = {"pair_id": ["p"] * 10, "x0": [p[0] for p in xy], "y0": [p[1] for p in xy],
               "x1": [p[0] for p in xy], "y1": [p[1] for p in xy]}  # fmt: skip
    pairs = pl.DataFrame({"pair_id": ["p"], **{f"h{i}{j}": [float(i == j)] for i in (1, 2, 3)
                          for j in (1, 2, 3)}, "width": [64], "height": [48]})  # fmt: skip
    store.ingest_keypoints(matches, run="m/h", pairs=pairs, git_commit=None)
    with pytest.raises(InvalidInput, match="none of the requested metrics applies"):
        evaluate(store, ["m/h"], metrics=["pose_auc"])
    frame = evaluate(store, ["m/h"], metrics=["homography_auc"])  # the homography's corners
    assert frame.height == 3 and all(v > 0.99 for v in frame["value"])


def test_compare_counts_no_pair_wins_of_a_run_value_and_resamples_its_pairs(
    store: Store,
) -> None:
    """The run's AUC has no per-pair value (no wins); its test resamples the pairs
    (tests/test_run_value_pairs.py)."""
    _ingest(store, "m/a", seed=5, noise=0.3)
    _ingest(store, "m/b", seed=5, noise=3.0, outliers=0.4)
    frame = compare(store, ["m/a", "m/b"], metrics=["pose_auc", "epipolar_precision"])
    auc = frame.filter(pl.col("metric") == "pose_auc")
    assert auc.height == 3
    assert set(auc["resampled"]) == {"pairs"} and (auc["wins"] + auc["losses"] == 0).all()
    assert auc["p_value"].null_count() == 0 and auc["n_lists"].to_list() == [5, 5, 5]
    prec = frame.filter(pl.col("metric") == "epipolar_precision")
    assert prec["n_lists"].to_list() == [5] and prec["resampled"][0] == "lists"


def test_the_interval_of_a_run_auc_resamples_its_pairs(store: Store) -> None:
    _ingest(store, "m/a", seed=6, n_pairs=8, noise=1.0, outliers=0.3)
    frame = evaluate(store, ["m/a"], metrics=["pose_auc", "pose_error"], ci=True)
    for row in frame.to_dicts():
        assert row["ci_unit"] == "items", row
        assert row["ci_low"] <= row["value"] <= row["ci_high"], row


def test_every_metric_that_reads_estimates_records_the_setting() -> None:
    reads = {name for name, m in METRICS.items() if "pose_estimates" in m.query.text}
    assert reads == set(ESTIMATED) and ESTIMATED <= RULED
    auc_code = {name for name, m in METRICS.items() if "$auc" in m.query.text}
    assert auc_code == set(RULED)


def test_eval_from_the_command_line(cli: Any, db: Path) -> None:
    with Store(db) as store:
        _ingest(store, "m/a", seed=7)
    result = cli("eval", "m/a", "-m", "pose_auc", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["params"]["threshold"] for r in rows] == [5.0, 10.0, 20.0]
    assert all(0 <= r["value"] <= 1 for r in rows)
    result = cli("eval", "m/a", "-m", "pose_auc", "--protocol", "loftr", "--threshold", "10")
    assert result.exit_code == 0, result.output
    assert "loftr" in result.stdout and "pose_auc" in result.stdout
    result = cli("eval", "m/a", "-m", "mma", "--protocol", "gluefactory")
    assert result.exit_code == 1 and "does not report mma" in result.output


def test_protocols_lists_the_pose_protocols() -> None:
    result = CliRunner().invoke(app, ["protocols", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["protocol"]: r for r in json.loads(result.stdout)}
    assert rows["superglue"]["repository"] == "magicleap/SuperGluePretrainedNetwork"
    assert rows["loftr"]["commit"] == "df7ca80f917334b94cfbe32cc2901e09a80e70a8"
    assert rows["gluefactory"]["path"] == "gluefactory/eval/utils.py"
    assert "0.5 px" in rows["loftr"]["pose estimation"]
    assert "0.5, 1, 1.5, 2, 2.5, 3 px" in rows["gluefactory"]["pose estimation"]
    assert rows["hpatches"]["pose estimation"] == ""
