"""Ingest of keypoint matches with their ground truth.

Ground truth for a match (x0, y0) -> (x1, y1) is the true position (gt_x1, gt_y1) of (x0, y0)
in image 1, derived here once and stored, so that every metric is plain SQL over the rows:
from a homography per pair (``x1 ~ H x0``), from a disparity per match or a disparity map
per pair (``x1 = x0 - d``, ``y1 = y0``, DSEC's left-camera convention; ``d = 0`` is invalid
and the match is left out and counted), or given directly. Each pair's homography is also
estimated from its matches (RANSAC), for the reprojection error and the homography accuracy:
by :mod:`evalstore.estimates` when a metric first needs it (the run's pairs are stored with
``estimated = false``), or here with ``estimate=True``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa

from evalstore import runs
from evalstore.core import geometry
from evalstore.errors import InvalidInput
from evalstore.ingest.frames import finite, ids_of, read_frame, where, write_tables
from evalstore.ingest.sources import Source, as_sources, parse_columns
from evalstore.ingest.truth import (
    H_COLUMNS,
    load_disparity,
    load_homography,
    no_pairs,
    pairs_table,
)
from evalstore.ingest.write import IngestResult

if TYPE_CHECKING:
    from evalstore.database import Database, Progress

__all__ = ["MATCH_COLUMNS", "ingest_keypoints"]

_E = tuple(f"e{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
_R = tuple(f"r{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
#: rows per block of the vectorised transfer (a (block, 3, 3) gather of the homographies)
_BLOCK = 1 << 18
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
    estimate: bool = False,
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
        estimate: estimate them here; by default they are estimated, and stored, when a
            metric first needs them (:mod:`evalstore.estimates`).
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
    # the checks of ids_of on the first row of each pair: the same message (a NULL id's first
    # row) without a Python string per match; the pairs in order of first appearance
    firsts = frame["pair_id"].arg_unique()
    seen = ids_of(frame[firsts], "pair_id")
    # x0, y0 as arrays (the truth is computed from them); x1, y1 and score stay in the frame
    xy = finite(frame, ("x0", "y0"), "coordinates")
    _check_finite(frame, ("x1", "y1"), "coordinates")
    if "score" in frame.columns:
        score = frame["score"]
        if not (score.dtype.is_numeric() or score.dtype == pl.Null):
            raise InvalidInput(
                f"{frame['_file'][0]}: column 'score' must be numeric, found {score.dtype}"
            )
        if score.dtype != pl.Float64 or score.null_count() or score.is_nan().any():
            values = score.cast(pl.Float64).to_numpy()
            bad = np.isnan(values)
            if bad.any():
                raise InvalidInput(f"{where(frame, bad, 'score')} is NaN")
    table = pairs_table(pairs, pairs_format)
    known = set(table["pair_id"].to_list())
    table = pl.concat([table, no_pairs([p for p in seen if p not in known])])
    keys = table["pair_id"].to_list()
    code_of = {pid: k for k, pid in enumerate(keys)}
    hs = table.select(H_COLUMNS).to_numpy().reshape(-1, 3, 3)  # NaN: no true homography
    if homography_dir is not None:
        for j in map(int, np.flatnonzero(np.isnan(hs[:, 0, 0]))):
            hs[j] = load_homography(Path(homography_dir), keys[j])
        table = table.with_columns(
            pl.Series(c, hs.reshape(-1, 9)[:, i]) for i, c in enumerate(H_COLUMNS)
        )
    # every match as the position of its pair in `table`; the pairs with matches in the order
    # of their ids, the order in which a per-pair check names the first bad pair
    codes = _codes(
        frame["pair_id"], frame["pair_id"].gather(firsts), np.array([code_of[p] for p in seen])
    )
    first = sorted(seen)
    n = len(codes)

    keep = np.ones(n, dtype=bool)
    if "gt_x1" in frame.columns or "gt_y1" in frame.columns:
        gt = finite(frame, ("gt_x1", "gt_y1"), "ground-truth coordinates")
        gx, gy = gt["gt_x1"], gt["gt_y1"]
    elif "disparity" in frame.columns:
        d = finite(frame, ("disparity",), "disparities")["disparity"]
        gx, gy, keep = geometry.ground_truth_from_disparity(xy["x0"], xy["y0"], d)
    elif disparity_dir is not None:
        order, bounds = _segments(codes, len(keys))
        d = np.empty(n)
        for pid in first:
            k = code_of[pid]
            idx = order[bounds[k] : bounds[k + 1]]
            dmap, scale, path = load_disparity(Path(disparity_dir), pid, disparity_scale)
            try:
                d[idx] = geometry.sample_disparity(dmap, xy["x0"][idx], xy["y0"][idx], scale=scale)
            except InvalidInput as exc:
                raise InvalidInput(f"{path} (pair {pid!r}): {exc}") from None
        gx, gy, keep = geometry.ground_truth_from_disparity(xy["x0"], xy["y0"], d)
    else:
        gx, gy = _transfer(hs, keys, codes, first, code_of, xy["x0"], xy["y0"])
    keep = np.asarray(keep, dtype=bool)
    all_kept = bool(keep.all())
    kept = np.arange(n, dtype=np.int64) if all_kept else np.flatnonzero(keep).astype(np.int64)

    def rows(values: np.ndarray) -> np.ndarray:
        return values if all_kept else values[kept]

    # the columns alone (a select or the whole frame's to_arrow would copy them)
    given = pl.DataFrame([frame[c] for c in ("x1", "y1", "score") if c in frame.columns])
    if not all_kept:
        given = given.filter(pl.Series(keep))
    # one chunk per column, as the frame is (read_frame): DuckDB then fills whole row groups
    # (chunked input leaves partial ones, which the checkpoint at close rewrites)
    given = given.with_columns(pl.col(c).cast(pl.Float64) for c in given.columns)
    given = given.rechunk().to_arrow()
    x0, y0 = rows(xy["x0"]), rows(xy["y0"])
    n_pairs = len(keys)
    est = {c: pa.nulls(n_pairs, pa.float64()) for c in (*_E, *_R)}
    n_inliers = pa.nulls(n_pairs, pa.int32())
    if estimate:
        # the kept matches of each pair, contiguous and in input order, as the lazy estimate
        # reads them back (evalstore.estimates)
        order, bounds = _segments(rows(codes), n_pairs)
        x1, y1 = (given[c].to_numpy() for c in ("x1", "y1"))
        r, e, inliers = geometry.estimate_pairs(
            x0[order], y0[order], x1[order], y1[order], bounds, ransac_threshold
        )
        est = {c: _nullable(m[:, k]) for m, cs in ((e, _E), (r, _R)) for k, c in enumerate(cs)}
        n_inliers = pa.array(inliers, pa.int32(), mask=inliers < 0)
    _pairs = table.to_arrow()
    for name, column in {
        **est,
        "n_inliers": n_inliers,
        "n_invalid": pa.array(
            np.zeros(n_pairs, np.int64)
            if all_kept
            else np.bincount(codes[~keep], minlength=n_pairs),
            pa.int64(),
        ),
        "estimated": pa.array(np.full(n_pairs, estimate)),
        "ransac_threshold": pa.array(np.full(n_pairs, float(ransac_threshold))),
    }.items():
        _pairs = _pairs.append_column(name, column)
    _matches = pa.table(
        {
            # one string per pair, not per match
            "pair_id": pa.DictionaryArray.from_arrays(
                pa.array(rows(codes)), pa.array(keys, pa.string())
            ),
            "x0": x0,
            "y0": y0,
            "x1": given["x1"],
            "y1": given["y1"],
            "score": given["score"]
            if "score" in given.column_names
            else pa.nulls(len(kept), pa.float64()),
            "gt_x1": rows(np.asarray(gx)),
            "gt_y1": rows(np.asarray(gy)),
            "seq": kept,
        }
    )
    run_id, replaced = write_tables(
        store, meta, "keypoints", replace, append, {"_pairs": _pairs, "_matches": _matches}
    )
    return IngestResult(
        run_id=run_id,
        experiment=meta.experiment,
        name=meta.name,
        task="keypoints",
        rows=len(kept),
        lists=n_pairs,
        not_retrieved=n - len(kept),
        replaced=replaced,
        files=[str(s) for s in sources if isinstance(s, (str, os.PathLike))],
    )


def _codes(ids: pl.Series, uniques: pl.Series, positions: np.ndarray) -> np.ndarray:
    """``positions[j]`` (int32) for every id equal to ``uniques[j]``: a table lookup for
    integer ids of a compact range, else a hash lookup."""
    positions = positions.astype(np.int32)
    if ids.dtype.is_integer() and ids.dtype != pl.UInt64 and len(uniques):
        lo, hi = int(uniques.min()), int(uniques.max())  # type: ignore[arg-type]
        if hi - lo <= 4 * len(ids) + (1 << 20):
            lut = np.empty(hi - lo + 1, dtype=np.int32)
            lut[uniques.to_numpy().astype(np.int64) - lo] = positions
            values = ids.to_numpy()
            if values.dtype.itemsize < 4:  # no overflow of values - lo
                values = values.astype(np.int64)
            return lut[values - values.dtype.type(lo) if lo else values]
    return ids.replace_strict(uniques, positions, return_dtype=pl.Int32).to_numpy()


def _check_finite(frame: pl.DataFrame, cols: Sequence[str], what: str) -> None:
    """:func:`finite`'s checks, without a copy of the columns when they are floats."""
    for col in cols:
        s = frame[col] if col in frame.columns else None
        if s is None or s.dtype != pl.Float64 or s.null_count() or not s.is_finite().all():
            finite(frame, (col,), what)  # raises with the message, or accepts (integers)


def _segments(codes: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, bounds): the rows of group k are ``order[bounds[k]:bounds[k + 1]]``, in input
    order, for group codes 0..n-1; one stable sort, linear in the rows."""
    order = np.argsort(codes, kind="stable")
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=n), out=bounds[1:])
    return order, bounds


def _transfer(
    hs: np.ndarray,
    keys: list[str],
    codes: np.ndarray,
    first: list[str],
    code_of: dict[str, int],
    x0: np.ndarray,
    y0: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The truth of every match by its pair's homography (geometry.transfer's formula, the same
    floats), in blocks of rows; refuses, as a loop over the pairs in the order of their ids
    would, the first pair without a homography or with a point mapped to infinity (``point i``
    counts that pair's rows)."""
    coef = hs.reshape(-1, 9).T.copy()  # one contiguous array per entry: 1-D gathers
    gx, gy, at_infinity = np.empty(len(codes)), np.empty(len(codes)), np.zeros(len(keys), bool)
    a, b, v = np.empty(_BLOCK), np.empty(_BLOCK), np.empty(_BLOCK)  # reused per block
    for s in range(0, len(codes), _BLOCK):
        c = codes[s : s + _BLOCK]
        x, y, m = x0[s : s + _BLOCK], y0[s : s + _BLOCK], len(c)
        # each value computed as (h_1 * x + h_2 * y) + h_3, in place, the same floats
        w = _affine(coef[6:9], c, x, y, v[:m], b[:m])
        with np.errstate(divide="ignore", invalid="ignore"):
            np.divide(_affine(coef[0:3], c, x, y, a[:m], b[:m]), w, out=gx[s : s + m])
            np.divide(_affine(coef[3:6], c, x, y, a[:m], b[:m]), w, out=gy[s : s + m])
        at_infinity[c[w == 0]] = True
    for pid in first:
        k = code_of[pid]
        if np.isnan(hs[k, 0, 0]):
            raise InvalidInput(
                f"pair {pid!r} has no ground truth: give gt_x1/gt_y1 or disparity columns, "
                "--disparity-dir, or homographies (--pairs with h11..h33, or --homography-dir)"
            )
        if at_infinity[k]:
            rows = np.flatnonzero(codes == k)
            _, _, w = geometry.apply_homography(hs[k], x0[rows], y0[rows])
            geometry.refuse_infinity(w, "point {i}")
    return gx, gy


def _affine(
    coef: np.ndarray, c: np.ndarray, x: np.ndarray, y: np.ndarray, out: np.ndarray, tmp: np.ndarray
) -> np.ndarray:
    """``coef[0][c] * x + coef[1][c] * y + coef[2][c]`` into ``out`` (``tmp``: scratch)."""
    np.multiply(np.take(coef[0], c, out=out), x, out=out)
    np.multiply(np.take(coef[1], c, out=tmp), y, out=tmp)
    out += tmp
    out += np.take(coef[2], c, out=tmp)
    return out


def _nullable(values: np.ndarray) -> pa.Array:
    """float64 values with NaN as NULL (a failed estimate)."""
    return pa.array(values, pa.float64(), mask=np.isnan(values))
