"""Ingest of keypoint matches with their ground truth, and of counted outcomes (TP/FP/FN).

Ground truth for a match (x0, y0) -> (x1, y1) is the true position (gt_x1, gt_y1) of (x0, y0)
in image 1, derived here once and stored, so that every metric is plain SQL over the rows:
from a homography per pair (``x1 ~ H x0``), from a disparity per match or a disparity map
per pair (``x1 = x0 - d``, ``y1 = y0``, DSEC's left-camera convention; ``d = 0`` is invalid
and the match is left out and counted), or given directly. Each pair's homography is also
estimated from its matches (RANSAC) and stored, for the reprojection error and the
homography accuracy.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import polars as pl

from evalstore import queries, runs
from evalstore.core import geometry
from evalstore.errors import InvalidInput
from evalstore.ingest import IngestResult, Source, _first_line, _open, parse_columns

if TYPE_CHECKING:
    from evalstore.store import Progress, Store

__all__ = ["H_COLUMNS", "ingest_keypoints", "ingest_outcomes"]

H_COLUMNS = tuple(f"h{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
_E = tuple(f"e{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
_R = tuple(f"r{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
MATCH_COLUMNS = ("pair_id", "x0", "y0", "x1", "y1", "score", "gt_x1", "gt_y1", "disparity")
OUTCOME_COLUMNS = ("group_id", "tp", "fp", "fn", "outcome")


def _read(sources: Sequence[Source], fmt: str | None, mapping: dict[str, str]) -> pl.DataFrame:
    """All sources as one frame with our column names plus _file and _row (1-based)."""
    frames = []
    for i, source in enumerate(sources):
        label, frame = _open(source, fmt, i)[:2]
        if isinstance(frame, pl.LazyFrame):
            try:
                frame = frame.collect()
            except pl.exceptions.PolarsError as exc:
                raise InvalidInput(f"{label}: cannot read: {_first_line(exc)}") from None
        if frame.height == 0:
            raise InvalidInput(f"{label}: no rows")
        rename = {theirs: ours for ours, theirs in mapping.items()}
        missing = [t for t in rename if t not in frame.columns]
        if missing:
            raise InvalidInput(
                f"{label}: missing column {missing[0]!r} named by --column "
                f"(columns: {', '.join(frame.columns)})"
            )
        frame = frame.drop([c for c in frame.columns if c in mapping and c not in rename])
        frame = frame.rename(rename).with_columns(
            _file=pl.lit(label), _row=pl.int_range(1, frame.height + 1, dtype=pl.Int64)
        )
        frames.append(frame)
    return pl.concat(frames, how="diagonal_relaxed")


def _where(frame: pl.DataFrame, mask: pl.Series | np.ndarray, col: str) -> str:
    i = int(np.flatnonzero(np.asarray(mask))[0])
    return f"{frame['_file'][i]}: column {col!r} row {frame['_row'][i]}"


def _finite(frame: pl.DataFrame, cols: Sequence[str], what: str) -> dict[str, np.ndarray]:
    out = {}
    for col in cols:
        if col not in frame.columns:
            raise InvalidInput(
                f"{frame['_file'][0]}: missing column {col!r} (columns: "
                f"{', '.join(c for c in frame.columns if not c.startswith('_'))})"
            )
        series = frame[col]
        if not (series.dtype.is_numeric() or series.dtype == pl.Null):
            raise InvalidInput(
                f"{frame['_file'][0]}: column {col!r} must be numeric, found {series.dtype}"
            )
        values = series.cast(pl.Float64).to_numpy()
        bad = ~np.isfinite(values)
        if bad.any():
            raise InvalidInput(
                f"{_where(frame, bad, col)} is {_shown(values[bad][0])}; "
                f"{what} must be finite numbers"
            )
        out[col] = values
    return out


def _shown(value: float) -> str:
    return "empty or NaN" if np.isnan(value) else f"{value:g}"


def _ids(frame: pl.DataFrame, col: str) -> np.ndarray:
    if col not in frame.columns:
        raise InvalidInput(f"{frame['_file'][0]}: missing column {col!r}")
    if frame[col].dtype.is_float():
        raise InvalidInput(
            f"{frame['_file'][0]}: column {col!r} holds floats; ids must be integers or strings"
        )
    ids = frame[col].cast(pl.String)
    if ids.null_count():
        raise InvalidInput(f"{_where(frame, ids.is_null().to_numpy(), col)} is empty")
    return ids.to_numpy().astype(object)


# -- pairs -------------------------------------------------------------------------------


def _pairs_table(source: Source | None, fmt: str | None) -> dict[str, dict[str, Any]]:
    """pair_id -> {"H": 3x3 or None, "width", "height", "slices": {...}} from a pairs file."""
    if source is None:
        return {}
    frame = _read([source], fmt, {})
    ids = _ids(frame, "pair_id")
    dup = pl.Series(ids).is_duplicated().to_numpy()
    if dup.any():
        raise InvalidInput(f"{_where(frame, dup, 'pair_id')}: pair {ids[dup][0]!r} appears twice")
    present = [c for c in H_COLUMNS if c in frame.columns]
    if present and len(present) != 9:
        missing = [c for c in H_COLUMNS if c not in frame.columns]
        raise InvalidInput(
            f"{frame['_file'][0]}: homography columns h11..h33 incomplete "
            f"(missing {', '.join(missing)})"
        )
    hs: dict[str, np.ndarray] = {}
    if present:
        raw = frame.select(pl.col(c).cast(pl.Float64) for c in H_COLUMNS).to_numpy()
        empty = np.isnan(raw).all(axis=1)  # a pair without a true homography
        partial = ~empty & ~np.isfinite(raw).all(axis=1)
        if partial.any():
            i = int(np.flatnonzero(partial)[0])
            col = H_COLUMNS[int(np.flatnonzero(~np.isfinite(raw[i]))[0])]
            raise InvalidInput(
                f"{_where(frame, partial, col)} is {_shown(raw[i][H_COLUMNS.index(col)])}; "
                "give all of h11..h33 or none"
            )
        hs = {c: raw[:, k] for k, c in enumerate(H_COLUMNS)}
    sizes = {}
    for col in ("width", "height"):
        if col in frame.columns:
            values = frame[col].cast(pl.Float64).to_numpy()
            bad = ~np.isfinite(values) | (values < 1) | (values != np.round(values))
            if bad.any():
                raise InvalidInput(
                    f"{_where(frame, bad, col)} must be a whole number of pixels >= 1"
                )
            sizes[col] = values.astype(np.int64)
    slice_cols = [
        c
        for c in frame.columns
        if c not in ("pair_id", "width", "height", *H_COLUMNS) and not c.startswith("_")
    ]
    out: dict[str, dict[str, Any]] = {}
    for i, pid in enumerate(ids):
        h = None
        if hs and not np.isnan(hs["h11"][i]):
            h = np.array([hs[c][i] for c in H_COLUMNS]).reshape(3, 3)
            geometry.check_homography(
                h, f"{frame['_file'][i]} row {frame['_row'][i]} (pair {pid!r})"
            )
        out[pid] = {
            "H": h,
            "width": int(sizes["width"][i]) if "width" in sizes else None,
            "height": int(sizes["height"][i]) if "height" in sizes else None,
            "slices": {c: None if frame[c][i] is None else str(frame[c][i]) for c in slice_cols},
        }
    return out


def _find(directory: Path, pair_id: str, suffixes: Sequence[str]) -> Path | None:
    for suffix in suffixes:
        path = directory / f"{pair_id}{suffix}"
        if path.is_file():
            return path
    return None


def _load_homography(directory: Path, pair_id: str) -> np.ndarray:
    path = _find(directory, pair_id, ("", ".npy", ".txt"))
    if path is None:
        raise InvalidInput(
            f"{directory}: no homography file for pair {pair_id!r} "
            f"({pair_id}, {pair_id}.npy or {pair_id}.txt)"
        )
    try:
        h = np.load(path) if path.suffix == ".npy" else np.loadtxt(path)
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{path}: cannot read a 3x3 homography: {_first_line(exc)}") from None
    h = np.asarray(h, dtype=np.float64)
    if h.shape != (3, 3):
        raise InvalidInput(f"{path}: expected a 3x3 homography, found shape {h.shape}")
    geometry.check_homography(h, str(path))
    return h


def _load_disparity(
    directory: Path, pair_id: str, scale: float | None
) -> tuple[np.ndarray, float, Path]:
    path = _find(directory, pair_id, (".npy", ".png"))
    if path is None:
        raise InvalidInput(
            f"{directory}: no disparity map for pair {pair_id!r} ({pair_id}.npy or {pair_id}.png)"
        )
    if path.suffix == ".npy":
        try:
            return (
                np.asarray(np.load(path), dtype=np.float64),
                1.0 if scale is None else scale,
                path,
            )
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"{path}: cannot read: {_first_line(exc)}") from None
    import cv2

    raw = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if raw is None or raw.ndim != 2:
        raise InvalidInput(f"{path}: not a single-channel PNG disparity map")
    if raw.dtype != np.uint16:
        raise InvalidInput(
            f"{path}: expected a 16-bit PNG (disparity x 256, as DSEC), found {raw.dtype}"
        )
    return raw.astype(np.float64), 1.0 / 256.0 if scale is None else scale, path


# -- keypoint ingest ---------------------------------------------------------------------------


def ingest_keypoints(
    store: Store,
    data: Source | Sequence[Source],
    *,
    run: str,
    experiment: str | None = None,
    fmt: str | None = None,
    columns: Sequence[str] | Mapping[str, str] | None = None,
    pairs: Source | None = None,
    pairs_format: str | None = None,
    homography_dir: str | os.PathLike[str] | None = None,
    disparity_dir: str | os.PathLike[str] | None = None,
    disparity_scale: float | None = None,
    ransac_threshold: float = 3.0,
    replace: bool = False,
    append: bool = False,
    params: Sequence[str] | Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
    notes: str | None = None,
    created_at: Any = None,
    git_commit: str | bool | None = True,
    progress: Progress | None = None,
) -> IngestResult:
    """Ingest keypoint matches of image pairs with their ground truth, all or nothing.

    Args:
        data: matches: ``pair_id, x0, y0, x1, y1`` and optionally ``score`` and the truth as
            ``gt_x1, gt_y1`` or ``disparity``.
        pairs: per-pair metadata: ``pair_id``, optional ``h11..h33`` (true homography, x1 ~ H
            x0), ``width``, ``height`` (needed by the homography accuracy) and slice columns.
        homography_dir: a folder with one 3x3 homography per pair (``<pair_id>``,
            ``<pair_id>.npy`` or ``.txt``, as HPatches' ``H_1_k`` files).
        disparity_dir: a folder with one disparity map per pair (``<pair_id>.npy``, or a
            16-bit ``<pair_id>.png`` holding disparity x 256 as DSEC), sampled at the nearest
            pixel of (x0, y0).
        disparity_scale: overrides the map scale (default 1 for .npy, 1/256 for .png).
        ransac_threshold: RANSAC inlier threshold (px) of the estimated homographies.
        (the rest as :func:`evalstore.ingest.ingest`)

    Raises:
        InvalidInput: non-finite coordinates, a singular homography, a disparity map smaller
            than the keypoints reach, a pair without ground truth...; nothing is written.
    """
    meta = runs.RunMeta.build(run, experiment, params, tags, notes, created_at, git_commit)
    sources = list(data) if isinstance(data, (list, tuple)) else [data]
    if not sources:
        raise InvalidInput("nothing to ingest: no input given")
    frame = _read(sources, fmt, parse_columns(columns, MATCH_COLUMNS))
    pair_ids = _ids(frame, "pair_id")
    xy = _finite(frame, ("x0", "y0", "x1", "y1"), "coordinates")
    score = None
    if "score" in frame.columns:
        score = frame["score"].cast(pl.Float64).to_numpy()
        bad = np.isnan(score)
        if bad.any():
            raise InvalidInput(f"{_where(frame, bad, 'score')} is NaN")
    table = _pairs_table(pairs, pairs_format)
    for pid in dict.fromkeys(pair_ids):
        table.setdefault(pid, {"H": None, "width": None, "height": None, "slices": {}})
    if homography_dir is not None:
        for pid, info in table.items():
            if info["H"] is None:
                info["H"] = _load_homography(Path(homography_dir), pid)

    keep = np.ones(len(pair_ids), dtype=bool)
    if "gt_x1" in frame.columns or "gt_y1" in frame.columns:
        gt = _finite(frame, ("gt_x1", "gt_y1"), "ground-truth coordinates")
        gx, gy = gt["gt_x1"], gt["gt_y1"]
    elif "disparity" in frame.columns:
        d = _finite(frame, ("disparity",), "disparities")["disparity"]
        gx, gy, keep = geometry.ground_truth_from_disparity(xy["x0"], xy["y0"], d)
    elif disparity_dir is not None:
        d = np.empty(len(pair_ids))
        for pid, idx in _by_pair(pair_ids).items():
            dmap, scale, path = _load_disparity(Path(disparity_dir), pid, disparity_scale)
            try:
                d[idx] = geometry.sample_disparity(dmap, xy["x0"][idx], xy["y0"][idx], scale=scale)
            except InvalidInput as exc:
                raise InvalidInput(f"{path} (pair {pid!r}): {exc}") from None
        gx, gy, keep = geometry.ground_truth_from_disparity(xy["x0"], xy["y0"], d)
    else:
        gx, gy = np.empty(len(pair_ids)), np.empty(len(pair_ids))
        for pid, idx in _by_pair(pair_ids).items():
            h = table[pid]["H"]
            if h is None:
                raise InvalidInput(
                    f"pair {pid!r} has no ground truth: give gt_x1/gt_y1 or disparity columns, "
                    "--disparity-dir, or homographies (--pairs with h11..h33, or --homography-dir)"
                )
            gx[idx], gy[idx] = geometry.transfer(h, xy["x0"][idx], xy["y0"][idx])
    keep = np.asarray(keep, dtype=bool)
    invalid = _by_pair(pair_ids[~keep])

    kept_ids = pair_ids[keep]
    groups = _by_pair(kept_ids)
    rows = []
    for n, pid in enumerate(table):
        info = table[pid]
        idx = groups.get(pid, np.empty(0, dtype=np.int64))
        sel = np.flatnonzero(keep)[idx]
        r, inliers = geometry.estimate_homography(
            xy["x0"][sel], xy["y0"][sel], xy["x1"][sel], xy["y1"][sel], threshold=ransac_threshold
        )
        e = geometry.invert_homography(r) if r is not None else None
        if e is None:
            r = None
        row = {"pair_id": pid, "width": info["width"], "height": info["height"]}
        row.update(zip(H_COLUMNS, _flat(info["H"]), strict=True))
        row.update(zip(_E, _flat(e), strict=True))
        row.update(zip(_R, _flat(r), strict=True))
        row["n_inliers"] = inliers if r is not None else None
        row["n_invalid"] = len(invalid.get(pid, ()))
        row["slice_keys"] = [k for k, v in info["slices"].items() if v is not None]
        row["slice_values"] = [v for v in info["slices"].values() if v is not None]
        rows.append(row)
        if progress is not None and n % 50 == 0:
            progress("estimate homographies", n, len(table))
    schema = {c: pl.Float64 for c in (*H_COLUMNS, *_E, *_R)}
    schema.update(
        pair_id=pl.String,
        width=pl.Int32,
        height=pl.Int32,
        n_inliers=pl.Int32,
        n_invalid=pl.Int64,
        slice_keys=pl.List(pl.String),
        slice_values=pl.List(pl.String),
    )
    _pairs = pl.DataFrame(rows, schema=schema).to_arrow()
    _matches = (
        pl.DataFrame(
            {
                "pair_id": kept_ids.astype(str),
                "x0": xy["x0"][keep],
                "y0": xy["y0"][keep],
                "x1": xy["x1"][keep],
                "y1": xy["y1"][keep],
                "score": score[keep] if score is not None else np.full(keep.sum(), np.nan),
                "gt_x1": np.asarray(gx)[keep],
                "gt_y1": np.asarray(gy)[keep],
                "seq": np.flatnonzero(keep).astype(np.int64),
            }
        )
        .with_columns(pl.col("score").fill_nan(None))
        .to_arrow()
    )
    run_id, replaced = _write(
        store, meta, "keypoints", replace, append, {"_pairs": _pairs, "_matches": _matches}
    )
    return IngestResult(
        run_id=run_id,
        experiment=meta.experiment,
        name=meta.name,
        task="keypoints",
        rows=int(keep.sum()),
        lists=len(table),
        not_retrieved=int((~keep).sum()),
        replaced=replaced,
        files=[str(s) for s in sources if isinstance(s, (str, os.PathLike))],
    )


_WRITES = {
    "keypoints": ("store/run_has_pairs", ("store/insert_pairs", "store/insert_matches")),
    "outcomes": ("store/run_has_outcomes", ("store/insert_outcomes",)),
}


def _write(
    store: Store,
    meta: runs.RunMeta,
    task: str,
    replace: bool,
    append: bool,
    frames: dict[str, Any],
) -> tuple[int, bool]:
    """Open the run (new, replaced or reopened to append) and write the frames through the
    task's named queries, all in one transaction. Returns (run_id, replaced)."""
    has_task, inserts = _WRITES[task]
    con = store.con
    with store.transaction():
        run_id, replaced = runs.open_run(
            con,
            meta,
            replace=replace,
            append=append,
            has_task=lambda rid: queries.fetch_rows(con, has_task, {"run_id": rid})[0][0] > 0,
            task=task,
        )
        try:
            for name, frame in frames.items():
                con.register(name, frame)
            for insert in inserts:
                queries.run(con, insert, {"run_id": run_id})
        finally:
            for name in frames:
                with contextlib.suppress(duckdb.Error):  # fails in an aborted transaction
                    con.unregister(name)
    return run_id, replaced


def _by_pair(ids: np.ndarray) -> dict[str, np.ndarray]:
    """pair id -> the indices of its rows, in input order."""
    if len(ids) == 0:
        return {}
    uniq, inverse = np.unique(ids.astype(str), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
    return {str(u): order[bounds[i] : bounds[i + 1]] for i, u in enumerate(uniq)}


def _flat(h: np.ndarray | None) -> list[float | None]:
    return [None] * 9 if h is None else [float(v) for v in np.asarray(h).reshape(9)]


# -- outcomes ------------------------------------------------------------------------------


def ingest_outcomes(
    store: Store,
    data: Source | Sequence[Source],
    *,
    run: str,
    experiment: str | None = None,
    fmt: str | None = None,
    columns: Sequence[str] | Mapping[str, str] | None = None,
    replace: bool = False,
    append: bool = False,
    params: Sequence[str] | Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
    notes: str | None = None,
    created_at: Any = None,
    git_commit: str | bool | None = True,
    progress: Progress | None = None,
) -> IngestResult:
    """Ingest counted outcomes per group: ``group_id, tp, fp, fn``, or one row per item with
    ``group_id, outcome`` where outcome is ``tp``, ``fp`` or ``fn`` (counted here).

    Raises:
        InvalidInput: negative or fractional counts, an unknown outcome, a group twice.
    """
    meta = runs.RunMeta.build(run, experiment, params, tags, notes, created_at, git_commit)
    sources = list(data) if isinstance(data, (list, tuple)) else [data]
    frame = _read(sources, fmt, parse_columns(columns, OUTCOME_COLUMNS))
    groups = _ids(frame, "group_id")
    if "outcome" in frame.columns and not {"tp", "fp", "fn"} & set(frame.columns):
        kind = frame["outcome"].cast(pl.String).str.to_lowercase()
        bad = ~kind.is_in(["tp", "fp", "fn"]).fill_null(False)
        if bad.any():
            raise InvalidInput(
                f"{_where(frame, bad.to_numpy(), 'outcome')}: "
                f"{frame['outcome'][int(bad.arg_true()[0])]!r} is not tp, fp or fn"
            )
        counts = (
            pl.DataFrame({"group_id": groups.astype(str), "kind": kind})
            .group_by("group_id", maintain_order=True)
            .agg(**{k: (pl.col("kind") == k).sum().cast(pl.Int64) for k in ("tp", "fp", "fn")})
        )
    else:
        values = _finite(frame, ("tp", "fp", "fn"), "counts")
        for col, v in values.items():
            bad = (v < 0) | (v != np.round(v))
            if bad.any():
                raise InvalidInput(
                    f"{_where(frame, bad, col)} is {v[bad][0]:g}; counts must be whole numbers >= 0"
                )
        dup = pl.Series(groups).is_duplicated().to_numpy()
        if dup.any():
            raise InvalidInput(
                f"{_where(frame, dup, 'group_id')}: group {groups[dup][0]!r} appears twice"
            )
        counts = pl.DataFrame(
            {
                "group_id": groups.astype(str),
                **{c: values[c].astype(np.int64) for c in ("tp", "fp", "fn")},
            }
        )
    _outcomes = counts.to_arrow()
    run_id, replaced = _write(store, meta, "outcomes", replace, append, {"_outcomes": _outcomes})
    return IngestResult(
        run_id=run_id,
        experiment=meta.experiment,
        name=meta.name,
        task="outcomes",
        rows=frame.height,
        lists=counts.height,
        not_retrieved=0,
        replaced=replaced,
        files=[str(s) for s in sources if isinstance(s, (str, os.PathLike))],
    )
