"""Cameras of keypoint pairs at ingest (evalstore.ingest.cameras): the camera columns of
``--pairs`` (Parquet, CSV) and SuperGlue's pairs text file (magicleap/SuperGluePretrainedNetwork
``match_pairs.py`` @ ddcf11f42e7e), into pair_cameras; each mistake refused in one line with the
store unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import snapshot
from pose_scenes import K_COLUMNS, T_COLUMNS, scene

from evalstore import Store
from evalstore.errors import InvalidInput

CAMERAS = [*K_COLUMNS, *T_COLUMNS]


def _stored(store: Store) -> pl.DataFrame:
    return store.con.sql(
        "select p.pair_id, c.* exclude (run_id, pair_no) from pair_cameras c "
        "join pairs p using (run_id, pair_no) order by p.pair_id"
    ).pl()


def _superglue_line(row: dict[str, Any], path0: str, path1: str, rot: str = "0 0") -> str:
    values = [row[c] for c in CAMERAS] + [0.0, 0.0, 0.0, 1.0]
    return f"{path0} {path1} {rot} " + " ".join(repr(float(v)) for v in values)


def test_camera_columns_of_a_parquet_file_are_stored_as_given(store: Store, tmp_path: Path) -> None:
    matches, cams, _ = scene()
    cams = cams.with_columns(n_keypoints0=pl.Series([1024, None, 700]))
    cams.write_parquet(tmp_path / "pairs.parquet")
    store.ingest_keypoints(matches, pairs=tmp_path / "pairs.parquet", run="k/a", git_commit=None)
    got = _stored(store)
    assert got.select("pair_id", *CAMERAS).equals(cams.select("pair_id", *CAMERAS))
    assert got["n_keypoints0"].to_list() == [1024, None, 700]
    # no homography: the matches have no truth per point, and none is stored
    assert store.con.sql("select count(gt_x1) from v_matches").fetchall() == [(0,)]


def test_a_csv_file_may_give_homographies_the_last_row_and_slices_beside_cameras(
    store: Store, tmp_path: Path
) -> None:
    matches, cams, _ = scene(n_pairs=2)
    eye = {f"h{i}{j}": [float(i == j)] * 2 for i in (1, 2, 3) for j in (1, 2, 3)}
    last = {"t_41": [0, 0], "t_42": [0, 0], "t_43": [0, 0], "t_44": [1, 1]}
    extra = {k: pl.Series(v) for k, v in {**eye, **last, "scene": ["a", "b"]}.items()}
    cams.with_columns(**extra).write_csv(tmp_path / "pairs.csv")
    store.ingest_keypoints(matches, pairs=tmp_path / "pairs.csv", run="k/a", git_commit=None)
    got = _stored(store)
    assert np.allclose(got.select(CAMERAS).to_numpy(), cams.select(CAMERAS).to_numpy(), rtol=1e-15)
    slices = store.con.sql("select pair_id, slices from pairs order by pair_id").fetchall()
    assert slices == [("p0", {"scene": "a"}), ("p1", {"scene": "b"})]  # no camera column


def test_pairs_without_cameras_beside_pairs_with_them(store: Store, tmp_path: Path) -> None:
    matches, cams, _ = scene(n_pairs=2)
    eye = {f"h{i}{j}": [float(i == j)] * 2 for i in (1, 2, 3) for j in (1, 2, 3)}
    cams = cams.with_columns(**{k: pl.Series(v) for k, v in eye.items()})
    cams = cams.with_columns(
        pl.when(pl.col("pair_id") == "p1").then(None).otherwise(pl.col(c)).alias(c) for c in CAMERAS
    )
    store.ingest_keypoints(matches, pairs=cams, run="k/a", git_commit=None)
    assert _stored(store)["pair_id"].to_list() == ["p0"]


@pytest.mark.parametrize("named", ["paths", "stems"])
def test_superglues_pairs_file(store: Store, tmp_path: Path, named: str) -> None:
    """pair_id ``path0 path1``, or ``stem0_stem1`` where the matches name the pairs so."""
    matches, cams, _ = scene(n_pairs=2)
    paths = {"p0": ("scene0/a.jpg", "scene0/b.jpg"), "p1": ("scene1/c.jpg", "scene1/d.jpg")}
    ids = {p: f"{a} {b}" if named == "paths" else f"{Path(a).stem}_{Path(b).stem}"
           for p, (a, b) in paths.items()}  # fmt: skip
    lines = [_superglue_line(row, *paths[row["pair_id"]]) for row in cams.iter_rows(named=True)]
    (tmp_path / "pairs.txt").write_text("\n".join(lines) + "\n")
    matches = matches.with_columns(pl.col("pair_id").replace_strict(ids))
    store.ingest_keypoints(matches, pairs=tmp_path / "pairs.txt", run="k/a", git_commit=None)
    got = _stored(store)
    assert got["pair_id"].to_list() == sorted(ids.values())
    want = cams.with_columns(pl.col("pair_id").replace_strict(ids)).sort("pair_id")
    assert np.allclose(got.select(CAMERAS).to_numpy(), want.select(CAMERAS).to_numpy(), rtol=1e-15)


def test_superglues_own_scannet_file_is_accepted(store: Store, tmp_path: Path) -> None:
    """Two lines of assets/scannet_sample_pairs_with_gt.txt (five decimals: R^T R is 1.5e-5
    from I), with a few matches under their ``path0 path1`` ids."""
    text = (
        "scene0711_00_frame-001680.jpg scene0711_00_frame-001995.jpg 0 0 1163.45 0. 653.626 0. "
        "1164.79 481.6 0. 0. 1. 1163.45 0. 653.626 0. 1164.79 481.6 0. 0. 1. 0.78593 -0.35128 "
        "0.50884 -1.51061 0.39215 0.91944 0.02904 -0.05367 -0.47805 0.17672 0.86037 0.056 0. 0. "
        "0. 1.\n"
    )
    (tmp_path / "scannet.txt").write_text(text)
    pair = "scene0711_00_frame-001680.jpg scene0711_00_frame-001995.jpg"
    matches = {"pair_id": [pair] * 3, "x0": [1.0, 2, 3], "y0": [1.0, 2, 3], "x1": [1.0, 2, 3],
               "y1": [1.0, 2, 3]}  # fmt: skip
    store.ingest_keypoints(matches, pairs=tmp_path / "scannet.txt", run="k/a", git_commit=None)
    assert store.con.sql("select k0_11, t_34 from pair_cameras").fetchall() == [(1163.45, 0.056)]


def _edit(column: str, value: Any) -> Callable[[pl.DataFrame], pl.DataFrame]:
    return lambda cams: cams.with_columns(
        pl.when(pl.col("pair_id") == "p1")
        .then(pl.lit(value))
        .otherwise(pl.col(column))
        .alias(column)
    )


_TILTED = np.array([[1.0, 0.01, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
_MIRROR = np.diag([1.0, 1.0, -1.0])


def _rotation(r: np.ndarray) -> Callable[[pl.DataFrame], pl.DataFrame]:
    def edit(cams: pl.DataFrame) -> pl.DataFrame:
        for i in range(3):
            for j in range(3):
                cams = _edit(f"t_{i + 1}{j + 1}", float(r[i, j]))(cams)
        return cams

    return edit


BAD_COLUMNS = {
    "partial": (
        lambda c: c.drop("k1_23", "t_34"),
        "pairs.csv: camera columns incomplete: missing k1_23, t_34 (cameras need",
    ),
    "empty": (_edit("k0_13", None), "pairs.csv row 2 (pair 'p1'): k0_13 is empty or NaN"),
    "infinite": (_edit("t_24", float("inf")), "pairs.csv row 2 (pair 'p1'): t_24 is inf"),
    "focal": (
        _edit("k1_22", 0.0),
        "pairs.csv row 2 (pair 'p1'): K1 has fx = k1_11 = 490 and fy = k1_22 = 0; focal "
        "lengths must be > 0 pixels (of K only fx, fy, cx and cy are read)",
    ),
    "not_rotation": (
        _rotation(_TILTED),
        "pairs.csv row 2 (pair 'p1'): T_0to1 is not a rigid motion: its rotation t_11..t_33 "
        "has |R^T R - I| up to 0.01 (at most 0.0001)",
    ),
    "reflection": (_rotation(_MIRROR), "and det -1 (must be +1)"),
    "zero_t": (
        lambda c: _edit("t_14", 0.0)(_edit("t_24", 0.0)(_edit("t_34", 0.0)(c))),
        "pairs.csv row 2 (pair 'p1'): T_0to1's translation t_14, t_24, t_34 is zero",
    ),
    "last_row": (
        lambda c: c.with_columns(t_41=0.0, t_42=0.0, t_43=0.5, t_44=1.0),
        "pairs.csv row 1 (pair 'p0'): T_0to1's last row t_41..t_44 is 0 0 0.5 1; it must be "
        "0 0 0 1",
    ),
    "last_row_partial": (
        lambda c: c.with_columns(t_44=1.0),
        "pairs.csv: T_0to1's last row incomplete: missing t_41, t_42, t_43",
    ),
    "keypoints": (
        lambda c: c.with_columns(n_keypoints0=pl.Series([10.0, 2.5, 3.0])),
        "pairs.csv row 2 (pair 'p1'): n_keypoints0 is 2.5; it must be a whole number",
    ),
    "fewer_keypoints_than_matches": (
        lambda c: c.with_columns(n_keypoints0=pl.Series([None, 1, None])),
        "pairs.csv (pair 'p1'): n_keypoints0 is 1, fewer than its",
    ),
    "text": (
        _edit("k0_11", "f"),
        "pairs.csv: column 'k0_11' must be numeric, found String",
    ),
}


@pytest.mark.parametrize("case", list(BAD_COLUMNS))
def test_bad_camera_columns_are_one_line_and_change_nothing(
    cli: Any, db: Path, tmp_path: Path, case: str
) -> None:
    matches, cams, _ = scene()
    edit, words = BAD_COLUMNS[case]
    matches.write_csv(tmp_path / "m.csv")
    edit(cams).write_csv(tmp_path / "pairs.csv")
    before = snapshot(db)
    result = cli("ingest", str(tmp_path / "m.csv"), "--task", "keypoints", "--run", "k/a",
                 "--pairs", str(tmp_path / "pairs.csv"))  # fmt: skip
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and words in lines[0], lines
    assert snapshot(db) == before


BAD_LINES = {
    "no_truth": ("a.jpg b.jpg 0 0", "pairs.txt line 2: 4 fields; a pair without ground truth"),
    "no_truth_2": ("a.jpg b.jpg", "pairs.txt line 2: 2 fields; a pair without ground truth"),
    "short": ("a.jpg b.jpg 0 0 1 2 3", "pairs.txt line 2: 7 fields; expected path0 path1"),
    "word": (None, "pairs.txt line 2: 'x' is not a number"),
    "rotated": (None, "pairs.txt line 2: rot1 is 1; match_pairs.py then rotates image 1"),
    "mirror": (None, "pairs.txt line 2 (pair 'c.jpg d.jpg'): T_0to1 is not a rigid motion"),
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_bad_superglue_lines_are_one_line_and_change_nothing(
    cli: Any, db: Path, tmp_path: Path, case: str
) -> None:
    matches, cams, _ = scene(n_pairs=2)
    rows = list(cams.iter_rows(named=True))
    line, words = BAD_LINES[case]
    first = _superglue_line(rows[0], "a.jpg", "b.jpg")
    if case == "word":
        line = _superglue_line(rows[1], "c.jpg", "d.jpg").replace(" 0 0 ", " 0 0 x ", 1)
        line = line.rsplit(" ", 1)[0]  # still 38 fields
    elif case == "rotated":
        line = _superglue_line(rows[1], "c.jpg", "d.jpg", rot="0 1")
    elif case == "mirror":
        line = _superglue_line({**rows[1], "t_33": -rows[1]["t_33"]}, "c.jpg", "d.jpg")
    (tmp_path / "pairs.txt").write_text(f"{first}\n{line}\n")
    ids = {"p0": "a.jpg b.jpg", "p1": "c.jpg d.jpg"}
    matches.with_columns(pl.col("pair_id").replace_strict(ids)).write_csv(tmp_path / "m.csv")
    before = snapshot(db)
    result = cli("ingest", str(tmp_path / "m.csv"), "--task", "keypoints", "--run", "k/a",
                 "--pairs", str(tmp_path / "pairs.txt"))  # fmt: skip
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and words in lines[0], lines
    assert snapshot(db) == before


def test_a_pair_with_neither_homography_nor_cameras_names_both(store: Store) -> None:
    matches, cams, _ = scene(n_pairs=2)
    with pytest.raises(InvalidInput, match=r"pair 'p1' has no ground truth: .* or cameras") as e:
        store.ingest_keypoints(matches, pairs=cams.head(1), run="k/a", git_commit=None)
    assert "\n" not in str(e.value)
    assert store.con.sql("select count(*) from runs").fetchall() == [(0,)]
