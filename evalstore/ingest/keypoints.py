"""Ingest of keypoint matches with their ground truth.

Ground truth for a match (x0, y0) -> (x1, y1) is the true position (gt_x1, gt_y1) of (x0, y0)
in image 1, derived here once and stored, so that every metric is plain SQL over the rows:
from a homography per pair (``x1 ~ H x0``), from a disparity per match or a disparity map
per pair (``x1 = x0 - d``, ``y1 = y0``, DSEC's left-camera convention; ``d = 0`` is invalid
and the match is left out and counted), or given directly. Each pair's homography is also
estimated from its matches (RANSAC) and stored, for the reprojection error and the
homography accuracy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstore import runs
from evalstore.core import geometry
from evalstore.errors import InvalidInput
from evalstore.ingest.frames import finite, ids_of, read_frame, where, write_tables
from evalstore.ingest.sources import Source, as_sources, parse_columns
from evalstore.ingest.truth import H_COLUMNS, load_disparity, load_homography, pairs_table
from evalstore.ingest.write import IngestResult

if TYPE_CHECKING:
    from evalstore.database import Database, Progress

__all__ = ["MATCH_COLUMNS", "ingest_keypoints"]

_E = tuple(f"e{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
_R = tuple(f"r{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
MATCH_COLUMNS = ("pair_id", "x0", "y0", "x1", "y1", "score", "gt_x1", "gt_y1", "disparity")


def ingest_keypoints(
    store: Database,
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
    sources = as_sources(data)
    if not sources:
        raise InvalidInput("nothing to ingest: no input given")
    frame = read_frame(sources, fmt, parse_columns(columns, MATCH_COLUMNS), ["pair_id"])
    pair_ids = ids_of(frame, "pair_id")
    xy = finite(frame, ("x0", "y0", "x1", "y1"), "coordinates")
    score = None
    if "score" in frame.columns:
        score = frame["score"].cast(pl.Float64).to_numpy()
        bad = np.isnan(score)
        if bad.any():
            raise InvalidInput(f"{where(frame, bad, 'score')} is NaN")
    table = pairs_table(pairs, pairs_format)
    for pid in dict.fromkeys(pair_ids):
        table.setdefault(pid, {"H": None, "width": None, "height": None, "slices": {}})
    if homography_dir is not None:
        for pid, info in table.items():
            if info["H"] is None:
                info["H"] = load_homography(Path(homography_dir), pid)

    keep = np.ones(len(pair_ids), dtype=bool)
    if "gt_x1" in frame.columns or "gt_y1" in frame.columns:
        gt = finite(frame, ("gt_x1", "gt_y1"), "ground-truth coordinates")
        gx, gy = gt["gt_x1"], gt["gt_y1"]
    elif "disparity" in frame.columns:
        d = finite(frame, ("disparity",), "disparities")["disparity"]
        gx, gy, keep = geometry.ground_truth_from_disparity(xy["x0"], xy["y0"], d)
    elif disparity_dir is not None:
        d = np.empty(len(pair_ids))
        for pid, idx in _by_pair(pair_ids).items():
            dmap, scale, path = load_disparity(Path(disparity_dir), pid, disparity_scale)
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
        x0, y0, x1, y1 = xy["x0"][sel], xy["y0"][sel], xy["x1"][sel], xy["y1"][sel]
        # r: image 1 -> 0 (EventPoint's reprojection); e: image 0 -> 1 estimated as such, as
        # SuperPoint's compute_homography does (RANSAC is not symmetric: e is not inv(r))
        r, inliers = geometry.estimate_homography(x0, y0, x1, y1, threshold=ransac_threshold)
        e, _ = geometry.estimate_homography(x1, y1, x0, y0, threshold=ransac_threshold)
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
    schema: dict[str, pl.DataType | type[pl.DataType]] = {
        c: pl.Float64 for c in (*H_COLUMNS, *_E, *_R)
    }
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
    run_id, replaced = write_tables(
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
