"""The relative poses estimated from the matches of pairs with cameras, made on first use
(evalstore.analysis.pose_estimates): SuperGlue's estimate and error per pair and setting,
made once, stored, refused on a read-only store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from pose_scenes import K_COLUMNS, T_COLUMNS, scene

from evalstore import Store
from evalstore.analysis import pose_estimates
from evalstore.analysis.pose_estimates import PoseSetting, ensure_pose_estimates
from evalstore.core import pose
from evalstore.errors import InvalidInput

SUPERGLUE = PoseSetting()


def _run(store: Store, run: str, *, cameras: bool = True, seed: int = 0) -> int:
    """A keypoint run of scene()'s pairs plus a pair with 3 matches, the truth given per
    match, its cameras written into pair_cameras directly (or not at all)."""
    matches, cams, _ = scene(seed=seed)
    few = matches.head(3).with_columns(pair_id=pl.lit("few"))
    matches = pl.concat([matches, few]).with_columns(gt_x1=pl.col("x1"), gt_y1=pl.col("y1"))
    cams = pl.concat([cams, cams.head(1).with_columns(pair_id=pl.lit("few"))])
    run_id = store.ingest_keypoints(matches, run=run, git_commit=None).run_id
    if cameras:
        store.con.register("_cams", cams.to_arrow())
        cols = ", ".join([*K_COLUMNS, *T_COLUMNS])
        store.con.execute(
            f"insert into pair_cameras (run_id, pair_no, {cols}) select p.run_id, p.pair_no, "
            f"{cols} from _cams c join pairs p on p.pair_id = c.pair_id and p.run_id = $r",
            {"r": run_id},
        )
        store.con.unregister("_cams")
    return run_id


def _stored(store: Store) -> list[tuple[Any, ...]]:
    return store.con.execute(
        "select p.pair_id, e.method, e.threshold, e.confidence, e.r11, e.t1, e.err_t, e.err_r, "
        "e.n_inliers from pose_estimates e join pairs p using (run_id, pair_no) "
        "order by e.run_id, p.pair_id, e.threshold"
    ).fetchall()


def test_the_estimates_are_superglues_made_once_per_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[float] = []
    real = pose.estimate_pose

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[4])
        return real(*args, **kwargs)

    monkeypatch.setattr(pose, "estimate_pose", counted)
    with Store(tmp_path / "s.duckdb") as store:
        run_id = _run(store, "k/a")
        _run(store, "k/none", cameras=False)  # no cameras: no estimate
        with store.transaction():
            made = ensure_pose_estimates(store, [run_id, run_id + 1], [SUPERGLUE],
                                         needed_by="pose_auc")  # fmt: skip
        assert made == 4 and calls == [1.0] * 4  # the pair of 3 matches too: it fails
        with store.transaction():
            again = ensure_pose_estimates(store, [run_id], [SUPERGLUE, SUPERGLUE],
                                          needed_by="pose_auc")  # fmt: skip
            assert again == 0 and len(calls) == 4
            loftr = PoseSetting(threshold=0.5)
            assert ensure_pose_estimates(store, [run_id], [SUPERGLUE, loftr], needed_by="x") == 4
        rows = _stored(store)
    assert len(rows) == 8 and len(calls) == 8
    few = [r for r in rows if r[0] == "few"]
    assert few == [("few", "opencv", t, 0.99999, None, None, np.inf, np.inf, 0) for t in (0.5, 1.0)]
    good = [r for r in rows if r[0] != "few"]
    assert all(r[6] < 10 and r[7] < 3 and r[8] > 40 for r in good)  # 10 % outliers, 0.5 px noise


def test_the_stored_estimate_is_estimate_pose_on_the_matches_in_input_order(
    tmp_path: Path,
) -> None:
    matches, cams, poses = scene(n_pairs=1, seed=3)
    with Store(tmp_path / "s.duckdb") as store:
        run_id = _run(store, "k/a", seed=3)
        with store.transaction():
            ensure_pose_estimates(store, [run_id], [SUPERGLUE], needed_by="x")
        got = store.con.execute(
            "select e.r11, e.r12, e.r13, e.r21, e.r22, e.r23, e.r31, e.r32, e.r33, t1, t2, t3, "
            "err_t, err_r, e.n_inliers from pose_estimates e join pairs p using (run_id, pair_no) "
            "where p.pair_id = 'p0'"
        ).fetchall()[0]
    k = cams.row(0, named=True)
    k0 = np.array([k[c] for c in K_COLUMNS[:9]]).reshape(3, 3)
    k1 = np.array([k[c] for c in K_COLUMNS[9:]]).reshape(3, 3)
    xy = matches.filter(pl.col("pair_id") == "p0")
    want = pose.estimate_pose(
        xy.select("x0", "y0").to_numpy(), xy.select("x1", "y1").to_numpy(), k0, k1, 1.0
    )
    assert want is not None
    err_t, err_r = pose.pose_errors(poses[0], want[0], want[1])
    assert got == (*want[0].ravel(), *want[1], err_t, err_r, int(want[2].sum()))


def test_a_read_only_store_refuses_missing_estimates_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        run_id = _run(store, "k/a")
    with Store(path, read_only=True) as ro, pytest.raises(InvalidInput) as caught:
        ensure_pose_estimates(ro, [run_id], [SUPERGLUE], needed_by="pose_auc")
    message = str(caught.value)
    assert message.startswith("run k/a: pose_auc needs") and "\n" not in message
    with Store(path) as store, store.transaction():
        ensure_pose_estimates(store, [run_id], [SUPERGLUE], needed_by="pose_auc")
    with Store(path, read_only=True) as ro:  # made once: a read-only store reads them
        assert ensure_pose_estimates(ro, [run_id], [SUPERGLUE], needed_by="pose_auc") == 0


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        (PoseSetting(method="magsac"), "method 'magsac' is unknown"),
        (PoseSetting(threshold=0.0), "threshold 0.0 must be a positive"),
        (PoseSetting(threshold=float("nan")), "threshold nan must be a positive"),
        (PoseSetting(confidence=1.0), "confidence 1.0 must lie strictly between 0 and 1"),
    ],
)
def test_a_bad_setting_is_one_line(store: Store, setting: PoseSetting, words: str) -> None:
    with pytest.raises(InvalidInput, match=words) as caught:
        ensure_pose_estimates(store, [1], [setting], needed_by="x")
    assert "\n" not in str(caught.value)


def test_an_error_midway_leaves_no_estimates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        run_id = _run(store, "k/a")

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise KeyboardInterrupt

        monkeypatch.setattr(pose_estimates, "_pose", broken)
        with pytest.raises(KeyboardInterrupt), store.transaction():
            ensure_pose_estimates(store, [run_id], [SUPERGLUE], needed_by="x")
        assert store.con.execute("select count(*) from pose_estimates").fetchall() == [(0,)]


def test_gluefactorys_estimator_divides_by_the_mean_of_the_four_focal_lengths(
    tmp_path: Path,
) -> None:
    """method opencv_gluefactory (the gluefactory protocol's) stores glue-factory's estimate,
    made with the threshold over mean(fx0, fy0, fx1, fy1): here fy0 != fx0, where SuperGlue's
    mean(fx0, fy1, fx0, fy1) differs."""
    matches, cams, _ = scene(seed=1)
    with Store(tmp_path / "s.duckdb") as store:
        run_id = _run(store, "k/a", seed=1)
        store.con.execute("update pair_cameras set k0_22 = 1.3 * k0_22")
        setting = PoseSetting("opencv_gluefactory", 1.0)
        with store.transaction():
            ensure_pose_estimates(store, [run_id], [setting], needed_by="pose_auc")
        stored = {
            p: (r11, t1)
            for p, m, *_, r11, t1, _er, _et, _n in _stored(store)
            if m == "opencv_gluefactory"
        }
    for row in cams.iter_rows(named=True):
        k0 = np.array([row[c] for c in K_COLUMNS[:9]]).reshape(3, 3)
        k0[1, 1] *= 1.3
        k1 = np.array([row[c] for c in K_COLUMNS[9:]]).reshape(3, 3)
        assert k0[0, 0] != k0[1, 1]
        pair = matches.filter(pl.col("pair_id") == row["pair_id"])
        xy0, xy1 = pair.select("x0", "y0").to_numpy(), pair.select("x1", "y1").to_numpy()
        got = pose.estimate_pose_gluefactory(xy0, xy1, k0, k1, 1.0, 0.99999)
        assert got is not None
        assert stored[row["pair_id"]] == (got[0][0, 0], got[1][0]), row["pair_id"]
