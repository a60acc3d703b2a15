"""Keypoint and outcome ingest, and the geometric metrics end to end through eval, on
hand-worked cases."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import polars as pl
import pytest
from conftest import examples, snapshot
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from evalstore import InvalidInput, Store
from evalstore.analysis.evaluate import evaluate
from evalstore.core import geometry
from evalstore.core.matching import homography_accuracy

H_COLS = [f"h{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]


def values(frame: pl.DataFrame, metric: str) -> dict[str, float]:
    rows = frame.filter(pl.col("metric") == metric, pl.col("slice") == "")
    return {
        json.dumps(json.loads(p)): v for p, v in zip(rows["params"], rows["value"], strict=True)
    }


def translation_pairs(path: Path, tx: float = 5.0, ty: float = -3.0) -> Path:
    h = np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]], dtype=float).reshape(9)
    pl.DataFrame(
        {
            "pair_id": ["a"],
            **{c: [v] for c, v in zip(H_COLS, h, strict=True)},
            "width": [64],
            "height": [48],
        }
    ).write_csv(path)
    return path


def test_pure_translation(store: Store, tmp_path: Path) -> None:
    # H moves every point by (5, -3): the truth of (10, 10) is (15, 7). Matches land
    # 0, 2.9, 3.0 and 5.0 px (3-4-5) from their truth.
    x0 = np.array([10.0, 20.0, 30.0, 40.0])
    y0 = np.array([10.0, 10.0, 20.0, 20.0])
    x1 = x0 + 5 + np.array([0.0, 2.9, 3.0, 3.0])
    y1 = y0 - 3 + np.array([0.0, 0.0, 0.0, 4.0])
    store.ingest_keypoints(
        {"pair_id": ["a"] * 4, "x0": x0, "y0": y0, "x1": x1, "y1": y1},
        run="t",
        pairs=translation_pairs(tmp_path / "pairs.csv"),
    )
    gt = store.con.sql("select gt_x1, gt_y1 from v_matches order by seq").fetchall()
    assert gt == [(15.0, 7.0), (25.0, 7.0), (35.0, 17.0), (45.0, 17.0)]
    frame = evaluate(store, ["t"], metrics=["precision_at_sigma", "mma"])
    p = values(frame, "precision_at_sigma")
    # d = 0, 2.9, 3, 5: strictly below 3 -> 2 of 4; below 6 and 9 -> all
    assert p == {'{"sigma": 3.0}': 0.5, '{"sigma": 6.0}': 1.0, '{"sigma": 9.0}': 1.0}
    m = values(frame, "mma")
    # inclusive: d <= 3 -> 3 of 4 (the match exactly 3.0 px away counts); d <= 5 -> 4 of 4
    assert m['{"threshold": 3.0}'] == 0.75 and m['{"threshold": 2.0}'] == 0.25
    assert m['{"threshold": 5.0}'] == 1.0


def test_known_disparity_map(store: Store, tmp_path: Path) -> None:
    # a 4 x 5 map; (x0, y0) = (1.4, 0.6) reads row floor(1.1) = 1, col floor(1.9) = 1
    disparity = np.array(
        [[0, 1, 2, 3, 4], [5, 6.5, 7, 8, 9], [10, 11, 12, 13, 14], [15, 16, 17, 18, 0]], dtype=float
    )
    maps = tmp_path / "disp"
    maps.mkdir()
    np.save(maps / "p.npy", disparity)
    # the same map as DSEC stores it: a 16-bit PNG of disparity * 256
    cv2.imwrite(str(maps / "q.png"), (disparity * 256).astype(np.uint16))
    matches = {
        "pair_id": ["p", "p", "p", "q", "q"],
        "x0": [1.4, 2.5, 4.0, 1.4, 0.0],
        "y0": [0.6, 2.0, 3.0, 0.6, 0.0],
        "x1": [-5.1, -10.5, 0.0, -5.1, 0.0],
        "y1": [0.6, 2.0, 3.0, 0.6, 0.0],
    }
    result = store.ingest_keypoints(matches, run="d", disparity_dir=maps)
    # (2.5, 2.0) rounds to col 3, row 2 -> d = 13; (4, 3) and (0, 0) hit zeros: invalid
    assert result.not_retrieved == 2
    gt = store.con.sql("select pair_id, gt_x1, gt_y1 from v_matches order by seq").fetchall()
    assert gt == [("p", 1.4 - 6.5, 0.6), ("p", 2.5 - 13, 2.0), ("q", 1.4 - 6.5, 0.6)]
    invalid = store.con.sql("select pair_id, n_invalid from pairs order by 1").fetchall()
    assert invalid == [("p", 1), ("q", 1)]


def test_disparity_map_too_small_is_refused(db: Path, tmp_path: Path) -> None:
    maps = tmp_path / "disp"
    maps.mkdir()
    np.save(maps / "p.npy", np.ones((4, 5)))
    Store(db).close()
    before = snapshot(db)
    with Store(db) as store, pytest.raises(InvalidInput, match=r"p\.npy \(pair 'p'\).*\(4, 5\)"):
        store.ingest_keypoints(
            {"pair_id": ["p"], "x0": [4.6], "y0": [1.0], "x1": [0.0], "y1": [1.0]},
            run="d",
            disparity_dir=maps,
        )
    assert snapshot(db) == before


def test_iou_table(store: Store, tmp_path: Path) -> None:
    # group a: 2 / (2 + 1 + 1) = 0.5; b: 1 / (1 + 2 + 1) = 0.25; c counted nothing: left out
    # macro = (0.5 + 0.25) / 2 = 0.375; micro = (2 + 1) / (4 + 4) = 0.375
    # group d comes as per-item rows in a second run: tp, tp, fp, fn -> 2 / 4
    path = tmp_path / "o.csv"
    path.write_text("group_id,tp,fp,fn\na,2,1,1\nb,1,2,1\nc,0,0,0\ne,3,1,0\n")
    store.ingest_outcomes(path, run="o")
    frame = evaluate(store, ["o"], by=["group"])
    got = {
        (m, s): v for m, s, v in zip(frame["metric"], frame["slice"], frame["value"], strict=True)
    }
    assert got[("iou", "group=a")] == 0.5 and got[("iou", "group=c")] is None
    assert got[("iou_macro", "")] == pytest.approx((0.5 + 0.25 + 0.75) / 3, rel=1e-15)
    assert got[("iou_micro", "")] == pytest.approx(6 / 12, rel=1e-15)
    items = tmp_path / "items.csv"
    items.write_text("group_id,outcome\nd,tp\nd,TP\nd,fp\nd,fn\n")
    store.ingest_outcomes(items, run="items")
    assert evaluate(store, ["items"], metrics=["iou"])["value"].to_list() == [0.5]


def test_corner_convention_with_a_one_percent_scale(store: Store, tmp_path: Path) -> None:
    # true H: identity; estimated from exact matches of a 1.01 scale. Corners of 640 x 480:
    # (0,0) -> 0; (639,0) -> 6.39; (0,479) -> 4.79; (639,479) -> sqrt(6.39^2 + 4.79^2) =
    # 7.98606...; mean 4.79151...: correct at eps 5, not at eps 1 or 3. With (w, h) = (640,
    # 480) as corners the mean would be 4.8.
    rng = np.random.default_rng(0)
    x0 = rng.uniform(0, 639, 40)
    y0 = rng.uniform(0, 479, 40)
    pairs = tmp_path / "pairs.csv"
    eye = np.eye(3).reshape(9)
    pl.DataFrame(
        {
            "pair_id": ["s"],
            **{c: [v] for c, v in zip(H_COLS, eye, strict=True)},
            "width": [640],
            "height": [480],
        }
    ).write_csv(pairs)
    store.ingest_keypoints(
        {
            "pair_id": ["s"] * 40,
            "x0": x0,
            "y0": y0,
            "x1": 1.01 * x0,
            "y1": 1.01 * y0,
            "gt_x1": x0,
            "gt_y1": y0,
        },
        run="s",
        pairs=pairs,
    )
    frame = evaluate(
        store, ["s"], metrics=["homography_accuracy"], sweeps={"eps": [1, 3, 4.79, 4.8, 5]}
    )
    acc = values(frame, "homography_accuracy")
    assert acc['{"eps": 3.0}'] == 0.0 and acc['{"eps": 5.0}'] == 1.0
    assert acc['{"eps": 4.79}'] == 0.0 and acc['{"eps": 4.8}'] == 1.0  # 4.7915 lies between


def test_reprojection_error_of_exact_and_shifted_matches(store: Store) -> None:
    # 30 matches related by a translation (5, -3), then the same with 10 of them moved 5 px
    # (3-4-5) off: RANSAC keeps the 20 exact ones, so the moved matches reproject 5 px away
    # and the pair's mean error is (20 * 0 + 10 * 5) / 30 = 5/3.
    rng = np.random.default_rng(1)
    x0, y0 = rng.uniform(0, 300, 30), rng.uniform(0, 200, 30)
    x1, y1 = x0 + 5, y0 - 3
    moved_x0, moved_y0 = x0.copy(), y0.copy()
    moved_x0[:10] += 3
    moved_y0[:10] += 4
    for name, a, b in (("exact", x0, y0), ("moved", moved_x0, moved_y0)):
        store.ingest_keypoints(
            {"pair_id": ["a"] * 30, "x0": a, "y0": b, "x1": x1, "y1": y1, "gt_x1": x1, "gt_y1": y1},
            run=name,
        )
    frame = evaluate(store, ["exact", "moved"], metrics=["reprojection_error"]).sort("run_id")
    exact, moved = frame["value"].to_list()
    assert exact == pytest.approx(0, abs=1e-6)
    assert moved == pytest.approx(5 / 3, rel=1e-6)


BAD = {
    "nan_coordinate": (
        {"x0": [1.0, np.nan]},
        None,
        "column 'x0' row 2 is empty or NaN; coordinates must be finite",
    ),
    "inf_truth": ({"gt_x1": [np.inf, 1.0]}, None, "column 'gt_x1' row 1 is inf"),
    "singular_homography": ({}, "singular", "singular"),
    "no_truth": ({}, "none", "pair 'a' has no ground truth"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_keypoint_input_changes_nothing(cli: Any, db: Path, tmp_path: Path, case: str) -> None:
    change, pairs_kind, message = BAD[case]
    base = {
        "pair_id": ["a", "a"],
        "x0": [1.0, 2.0],
        "y0": [1.0, 2.0],
        "x1": [6.0, 7.0],
        "y1": [-2.0, -1.0],
    }
    if pairs_kind is None:
        base.update(gt_x1=[6.0, 7.0], gt_y1=[-2.0, -1.0])
    base.update(change)
    path = tmp_path / "m.parquet"
    pl.DataFrame(base).write_parquet(path)
    args = ["ingest", str(path), "--task", "keypoints", "--run", "k"]
    if pairs_kind == "singular":
        pairs = tmp_path / "pairs.csv"
        pl.DataFrame({"pair_id": ["a"], **{c: [1.0] for c in H_COLS}}).write_csv(pairs)
        args += ["--pairs", str(pairs)]
    assert (
        cli(
            "ingest",
            str(translation_pairs(tmp_path / "ok.csv")),
            "--task",
            "outcomes",
            "--run",
            "x",
            "--column",
            "group_id=pair_id",
            "--column",
            "tp=width",
            "--column",
            "fp=height",
            "--column",
            "fn=h11",
        ).exit_code
        == 0
    )
    before = snapshot(db)
    result = cli(*args)
    assert result.exit_code == 1, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr
    assert snapshot(db) == before


def test_messages_name_the_row_in_its_own_file(store: Store, tmp_path: Path) -> None:
    # rows of several files form one frame; a message counts rows within the file they
    # came from, whichever files (the same one twice too) come before it
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    head = "pair_id,x0,y0,x1,y1,gt_x1,gt_y1\n"
    good.write_text(head + "a,1,1,2,2,2,2\na,3,3,4,4,4,4\na,5,5,6,6,6,6\n")
    bad.write_text(head + "b,1,1,2,2,2,2\nb,1,,2,2,2,2\n")
    with pytest.raises(InvalidInput, match=r"^\S*bad\.csv: column 'y0' row 2 is empty"):
        store.ingest_keypoints([str(good), str(bad)], run="k")
    with pytest.raises(InvalidInput, match=r"^\S*bad\.csv: column 'y0' row 2 is empty"):
        store.ingest_keypoints([str(good), str(good), str(bad)], run="k")
    assert store.runs().height == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "group_id,tp,fp,fn\na,-1,0,0\n",
            "column 'tp' row 1 is -1; counts must be whole numbers >= 0",
        ),
        ("group_id,tp,fp,fn\na,1.5,0,0\n", "column 'tp' row 1 is 1.5"),
        ("group_id,tp,fp,fn\na,1,0,0\na,2,0,0\n", "group 'a' appears twice"),
        ("group_id,outcome\na,tp\na,maybe\n", "'maybe' is not tp, fp or fn"),
    ],
)
def test_bad_outcomes(store: Store, tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "o.csv"
    path.write_text(text)
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        store.ingest_outcomes(path, run="o")
    assert store.con.sql("select count(*) from outcomes").fetchall() == [(0,)]


def test_homography_dir_and_slices(cli: Any, db: Path, tmp_path: Path) -> None:
    # HPatches keeps H_1_k as text files; a pair's file is named by its id
    hdir = tmp_path / "H"
    hdir.mkdir()
    np.savetxt(hdir / "i_boat_1_2", np.array([[1, 0, 5], [0, 1, -3], [0, 0, 1]], dtype=float))
    np.save(hdir / "v_home_1_2.npy", np.array([[1, 0, 5], [0, 1, -3], [0, 0, 1]], dtype=float))
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("pair_id,kind\ni_boat_1_2,illumination\nv_home_1_2,viewpoint\n")
    matches = tmp_path / "m.csv"
    matches.write_text("pair_id,x0,y0,x1,y1\ni_boat_1_2,1,1,6,-2\nv_home_1_2,1,1,10,-2\n")
    result = cli(
        "ingest",
        str(matches),
        "--task",
        "keypoints",
        "--run",
        "h",
        "--pairs",
        str(pairs),
        "--homography-dir",
        str(hdir),
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(
        cli(
            "eval",
            "h",
            "-m",
            "precision_at_sigma",
            "--sigma",
            "3",
            "--by",
            "kind",
            "--format",
            "json",
        ).stdout
    )
    got = {r["slice"]: r["value"] for r in rows}
    # i_boat's match is exact (d = 0), v_home's is 4 px off
    assert got == {"": 0.5, "kind=illumination": 1.0, "kind=viewpoint": 0.0}
    mma = cli("eval", "h", "-m", "mma", "--threshold", "4,15", "--format", "json").stdout
    by_t = {json.loads(r["params"])["threshold"] if isinstance(r["params"], str)
            else r["params"]["threshold"]: r["value"] for r in json.loads(mma)}  # fmt: skip
    assert by_t == {4.0: 1.0, 15.0: 1.0}  # d = 4 <= 4 (D2-Net's thresholds reach 15 px)


def test_a_corner_mapped_to_infinity_is_an_incorrect_estimate_in_sql_and_core(
    tmp_path: Path,
) -> None:
    """w = 0 at a corner: SuperPoint's division gives an infinite error, so the pair is
    incorrect; the SQL (NULL distance) and the NumPy twin agree on it."""
    e = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 1.0]])  # w = 1 - x, 0 at x = 1
    assert homography_accuracy(np.eye(3)[None], e[None], 2, 2).tolist() == [[0.0, 0.0, 0.0]]
    matches = {"pair_id": ["p"] * 4, "x0": [0.0, 1, 0, 1], "y0": [0.0, 0, 1, 1],
               "x1": [0.0, 1, 0, 1], "y1": [0.0, 0, 1, 1]}  # fmt: skip
    pairs = {"pair_id": ["p"], "width": [2], "height": [2],
             **{f"h{i}{j}": [float(i == j)] for i in (1, 2, 3) for j in (1, 2, 3)}}  # fmt: skip
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest_keypoints(matches, run="k/w0", pairs=pairs, git_commit=None)
        cells = ", ".join(f"e{i}{j} = {e[i - 1, j - 1]}" for i in (1, 2, 3) for j in (1, 2, 3))
        store.con.execute(f"update pairs set {cells}, e_direction = 'direct'")  # test-only SQL
        frame = evaluate(store, ["k/w0"], metrics=["homography_accuracy"], recompute=True)
    assert frame["value"].to_list() == [0.0, 0.0, 0.0]


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    h=arrays(np.float64, (3, 3), elements=st.floats(-1e3, 1e3, allow_subnormal=False)),
    xy=arrays(np.float64, (2, 7), elements=st.floats(-1e4, 1e4, allow_subnormal=False)),
)
def test_truth_from_a_homography_is_geometry_transfer_bit_for_bit(
    store: Store, h: np.ndarray, xy: np.ndarray
) -> None:
    # ingest stores no truth for a homography pair: the metrics' SQL (lib/match_truth.sql, read
    # here through v_matches) applies it, and must give the NumPy core's floats exactly
    x0, y0 = xy
    assume(abs(np.linalg.det(h)) >= geometry.DET_EPS)  # ingest refuses a singular homography
    _, _, w = geometry.apply_homography(h, x0, y0)
    assume(np.all(w != 0) and np.all(np.isfinite(w)))
    with np.errstate(over="ignore", invalid="ignore"):  # a tiny w overflows: assumed away
        gx, gy = geometry.transfer(h, x0, y0)
    assume(np.all(np.isfinite(gx)) and np.all(np.isfinite(gy)))
    run = f"r{next(_RUNS)}"
    store.ingest_keypoints(
        {"pair_id": ["a"] * 7, "x0": x0, "y0": y0, "x1": x0, "y1": y0},
        run=run,
        pairs={"pair_id": ["a"], **{c: [v] for c, v in zip(H_COLS, h.reshape(9), strict=True)}},
        git_commit=None,
    )
    stored = store.con.sql(
        "select m.gt_x1, m.gt_y1 from matches m join runs r using (run_id) "
        "where r.name = $n order by seq",
        params={"n": run},
    ).fetchall()
    assert stored == [(None, None)] * 7  # derived, not stored
    got = store.con.sql(
        "select v.gt_x1, v.gt_y1 from v_matches v join runs r using (run_id) "
        "where r.name = $n order by seq",
        params={"n": run},
    ).fetchall()
    assert [g[0] for g in got] == gx.tolist()
    assert [g[1] for g in got] == gy.tolist()


_RUNS = itertools.count()
