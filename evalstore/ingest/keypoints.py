"""Ingest of keypoint matches with their ground truth.

Ground truth for a match (x0, y0) -> (x1, y1) is the true position (gt_x1, gt_y1) of (x0, y0)
in image 1: from a homography per pair (``x1 ~ H x0``), from a disparity per match or a
disparity map per pair (``x1 = x0 - d``, ``y1 = y0``, DSEC's left-camera convention; ``d = 0``
is invalid and the match is left out and counted), or given directly. Given or derived from a
disparity, it is stored with the match; from a homography it is not (two columns fewer to
write): the metrics apply the pair's stored homography when they read the match
(``sql/lib/match_truth.sql``, the floats of :func:`evalstore.core.geometry.transfer`), and
ingest only checks that no match is sent to infinity. Each pair's homography is also
estimated from its matches (RANSAC), for the reprojection error and the homography accuracy:
by :mod:`evalstore.analysis.estimates` when a metric first needs it (the run's pairs are stored with
``estimated = false``), or here with ``estimate=True``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstore.core import geometry
from evalstore.errors import InvalidInput, option
from evalstore.ingest.cameras import CAMERA_COLUMNS
from evalstore.ingest.exact import INEXACT, first_row, inexact_integers
from evalstore.ingest.frames import finite, ids_of, read_frame, where, write_tables
from evalstore.ingest.sources import Source, as_sources, parse_columns
from evalstore.ingest.truth import (
    H_COLUMNS,
    load_disparity,
    load_homography,
    no_pairs,
    pairs_table,
)
from evalstore.ingest.validate import MAX_ROWS
from evalstore.ingest.write import IngestResult
from evalstore.runs.meta import RunMeta, run_meta

if TYPE_CHECKING:
    from evalstore.db.connection import Database, Progress

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
    meta: RunMeta | None = None,
    fmt: str | None = None,
    columns: Sequence[str] | Mapping[str, str] | None = None,
    pairs: Source | None = None,
    pairs_format: str | None = None,
    homography_dir: str | os.PathLike[str] | None = None,
    disparity_dir: str | os.PathLike[str] | None = None,
    disparity_scale: float | None = None,
    ransac_threshold: float = 3.0,
    estimate: bool = False,
    progress: Progress | None = None,
    run: str | None = None,
    experiment: str | None = None,
    replace: bool = False,
    append: bool = False,
    params: Sequence[str] | Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
    notes: str | None = None,
    created_at: str | datetime | None = None,
    git_commit: str | bool | None = True,
) -> IngestResult:
    """Ingest keypoint matches of image pairs with their ground truth, all or nothing.

    Args:
        data: matches: ``pair_id, x0, y0, x1, y1`` and optionally ``score`` and the truth as
            ``gt_x1, gt_y1`` or ``disparity``.
        pairs: per-pair metadata: ``pair_id``, optional ``h11..h33`` (true homography, x1 ~ H
            x0), ``width``, ``height`` (needed by the homography accuracy), cameras
            (``k0_11..k0_33``, ``k1_11..k1_33``, ``t_11..t_34``, ``n_keypoints0``:
            :mod:`evalstore.ingest.cameras`) and slice columns; or SuperGlue's pairs file
            (a ``.txt`` path, or ``pairs_format="superglue"``).
        homography_dir: a folder with one 3x3 homography per pair (``<pair_id>``,
            ``<pair_id>.npy`` or ``.txt``, as HPatches' ``H_1_k`` files).
        disparity_dir: a folder with one disparity map per pair (``<pair_id>.npy``, or a
            16-bit ``<pair_id>.png`` holding disparity x 256 as DSEC), sampled at the nearest
            pixel of (x0, y0).
        disparity_scale: overrides the map scale (default 1 for .npy, 1/256 for .png).
        ransac_threshold: RANSAC inlier threshold (px) of the estimated homographies.
        estimate: estimate them here; by default they are estimated, and stored, when a
            metric first needs them (:mod:`evalstore.analysis.estimates`).
        (the rest as :func:`evalstore.ingest.ingest`: ``meta``, or the keywords kept for
        compatibility)

    Raises:
        InvalidInput: non-finite coordinates, a singular homography, a disparity map smaller
            than the keypoints reach, a pair without ground truth...; nothing is written.
    """
    meta = run_meta(meta, run=run, experiment=experiment, params=params, tags=tags, notes=notes,
                    created_at=created_at, git_commit=git_commit, replace=replace,
                    append=append)  # fmt: skip
    sources = as_sources(data)
    if not sources:
        raise InvalidInput("nothing to ingest: no input given")
    frame = read_frame(sources, fmt, parse_columns(columns, MATCH_COLUMNS), ["pair_id"])
    # the checks of ids_of on the first row of each pair: the same message (a NULL id's first
    # row) without a Python string per match; the pairs in order of first appearance
    firsts = frame["pair_id"].arg_unique()
    seen = ids_of(frame[firsts], "pair_id")
    _check_finite(frame, ("x0", "y0", "x1", "y1"), "coordinates")
    if "score" in frame.columns:
        score = frame["score"]
        if not (score.dtype.is_numeric() or score.dtype == pl.Null):
            raise InvalidInput(
                f"{frame['_file'][0]}: column 'score' must be numeric, found {score.dtype}"
            )
        if score.dtype.is_integer() and (inexact := inexact_integers(score)).any():
            i = first_row(inexact)  # int64 beyond 2^53: stored as float64, rounded into ties
            raise InvalidInput(f"{where(frame, inexact.to_numpy(), 'score')}: {score[i]} {INEXACT}")
        if score.dtype != pl.Float64 or score.null_count() or score.is_nan().any():
            values = score.cast(pl.Float64).to_numpy()
            bad = np.isnan(values)
            if bad.any():
                raise InvalidInput(f"{where(frame, bad, 'score')} is NaN")
    table = pairs_table(pairs, pairs_format, seen.tolist())
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
    _check_keypoint_counts(table, codes, pairs, frame["_file"][0])
    if n > MAX_ROWS:
        raise InvalidInput(
            f"{frame['_file'][0]}: {n:,} matches; a run holds at most {MAX_ROWS:,} (seq is an "
            "INTEGER): split the matches into several runs"
        )

    def xy() -> tuple[np.ndarray, np.ndarray]:
        """x0, y0 as float64 arrays: a copy, made only where the truth or an estimate needs
        them whole (not for a homography: :func:`_check_transfer` reads them by blocks)."""
        return frame["x0"].cast(pl.Float64).to_numpy(), frame["y0"].cast(pl.Float64).to_numpy()

    keep = np.ones(n, dtype=bool)
    gx: np.ndarray | None
    gy: np.ndarray | None
    if "gt_x1" in frame.columns or "gt_y1" in frame.columns:
        gt = finite(frame, ("gt_x1", "gt_y1"), "ground-truth coordinates")
        gx, gy = gt["gt_x1"], gt["gt_y1"]
    elif "disparity" in frame.columns:
        d = finite(frame, ("disparity",), "disparities")["disparity"]
        gx, gy, keep = geometry.ground_truth_from_disparity(*xy(), d)
    elif disparity_dir is not None:
        order, bounds = _segments(codes, len(keys))
        x0, y0 = xy()
        d = np.empty(n)
        for pid in first:
            k = code_of[pid]
            idx = order[bounds[k] : bounds[k + 1]]
            dmap, scale, path = load_disparity(Path(disparity_dir), pid, disparity_scale)
            try:
                d[idx] = geometry.sample_disparity(dmap, x0[idx], y0[idx], scale=scale)
            except InvalidInput as exc:
                raise InvalidInput(f"{path} (pair {pid!r}): {exc}") from None
        gx, gy, keep = geometry.ground_truth_from_disparity(x0, y0, d)
    else:  # applied by the metrics' SQL when they read the matches (lib/match_truth.sql)
        cameras = table["k0_11"].is_not_null().to_numpy()  # their truth: the relative pose
        _check_transfer(hs, cameras, keys, codes, first, code_of, frame["x0"], frame["y0"])
        gx = gy = None
    keep = np.asarray(keep, dtype=bool)
    all_kept = bool(keep.all())
    kept = None if all_kept else np.flatnonzero(keep)

    def rows(values: np.ndarray) -> np.ndarray:
        return values if kept is None else values[kept]

    # the stored coordinates and score in the frame's chunks (read_frame): no copy when every
    # match is kept and they are float64, and DuckDB writes whole row groups but at their ends
    given = frame.select(
        pl.col(c).cast(pl.Float64) for c in ("x0", "y0", "x1", "y1", "score") if c in frame.columns
    )
    if kept is not None:
        given = given.filter(pl.Series(keep))
    n_pairs = len(keys)
    est: dict[str, pl.Series | pl.Expr] = {
        c: pl.lit(None, pl.Float64) for c in (*_E, *_R, "n_inliers")
    }
    if estimate:
        # the kept matches of each pair, contiguous and in input order, as the lazy estimate
        # reads them back (evalstore.analysis.estimates)
        order, bounds = _segments(rows(codes), n_pairs)
        x0, y0, x1, y1 = (given[c].to_numpy() for c in ("x0", "y0", "x1", "y1"))
        r, e, inliers = geometry.estimate_pairs(
            x0[order], y0[order], x1[order], y1[order], bounds, ransac_threshold
        )
        est = {c: _nullable(m[:, k]) for m, cs in ((e, _E), (r, _R)) for k, c in enumerate(cs)}
        est["n_inliers"] = _nullable(np.where(inliers < 0, np.nan, inliers))
    # built with polars, not pa.array (which imports pandas: 0.2 s of a command)
    _pairs = table.with_columns(
        **est,
        n_invalid=np.zeros(n_pairs, np.int64)
        if all_kept
        else np.bincount(codes[~keep], minlength=n_pairs),
        estimated=pl.lit(estimate),
        ransac_threshold=pl.lit(float(ransac_threshold)),
        pair_no=pl.int_range(n_pairs, dtype=pl.Int32),
    ).with_columns(pl.col("n_inliers").cast(pl.Int32))
    # the truth columns only where it is stored, the score only where given: the insert is by
    # name, and an absent column is NULL
    _matches = given.to_arrow()
    stored = {} if gx is None or gy is None else {"gt_x1": rows(gx), "gt_y1": rows(gy)}
    # input order of the kept matches
    seq = np.arange(n, dtype=np.int32) if kept is None else kept
    for name, values in (*stored.items(), ("seq", seq)):
        _matches = _matches.append_column(name, pl.Series(values).to_arrow())
    # a match names its pair by number (its place in `table`, pairs.pair_no), not by its
    # text id: a string a match costs DuckDB 1.1 CPU s per 2e7 matches to write
    _matches = _matches.append_column("pair_no", pl.Series(rows(codes)).to_arrow())
    _cameras = (
        _pairs.select("pair_no", *CAMERA_COLUMNS).filter(pl.col("k0_11").is_not_null()).to_arrow()
    )
    run_id, replaced = write_tables(
        store,
        meta,
        "keypoints",
        meta.replace,
        meta.append,
        {"_pairs": _pairs.to_arrow(), "_matches": _matches, "_cameras": _cameras},
    )
    return IngestResult(
        run_id=run_id,
        experiment=meta.experiment,
        name=meta.name,
        task="keypoints",
        rows=_matches.num_rows,
        lists=n_pairs,
        not_retrieved=n - _matches.num_rows,
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


def _check_keypoint_counts(
    table: pl.DataFrame, codes: np.ndarray, pairs: Source | None, matches: str
) -> None:
    """A pair's ``n_keypoints0`` (the keypoints detected in image 0, matching_score's
    denominator) is at least its matches: each keypoint is matched at most once."""
    given = table["n_keypoints0"].to_numpy(allow_copy=True) if "n_keypoints0" in table else None
    if given is None or table["n_keypoints0"].null_count() == table.height:
        return
    matched = np.bincount(codes, minlength=table.height)
    short = np.flatnonzero(~np.isnan(given.astype(np.float64)) & (given < matched))
    if short.size:
        i = int(short[0])
        where_ = str(pairs) if isinstance(pairs, (str, os.PathLike)) else "the pairs"
        raise InvalidInput(
            f"{where_} (pair {table['pair_id'][i]!r}): n_keypoints0 is {int(given[i])}, fewer "
            f"than its {int(matched[i])} matches in {matches} (a keypoint is matched once)"
        )


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


def _check_transfer(
    hs: np.ndarray,
    cameras: np.ndarray,
    keys: list[str],
    codes: np.ndarray,
    first: list[str],
    code_of: dict[str, int],
    x0: pl.Series,
    y0: pl.Series,
) -> None:
    """Refuse, as a loop over the pairs in the order of their ids would, the first pair
    without a homography or cameras (``cameras[k]``: pair k has them) or with a point mapped
    to infinity (``w = (h31 x + h32 y) + h33 = 0``, geometry.transfer's floats; ``point i``
    counts that pair's rows). Only ``w`` is computed, in blocks of rows: the truth itself is
    applied by the metrics' SQL."""
    coef = hs.reshape(-1, 9)[:, 6:9].T.copy()  # one contiguous array per entry: 1-D gathers
    at_infinity = np.zeros(len(keys), bool)
    v, b = np.empty(_BLOCK), np.empty(_BLOCK)  # reused per block
    for s, x, y in _blocks(x0, y0):
        c = codes[s : s + len(x)]
        w = _affine(coef, c, x, y, v[: len(c)], b[: len(c)])
        at_infinity[c[w == 0]] = True
    for pid in first:
        k = code_of[pid]
        if np.isnan(hs[k, 0, 0]):
            if cameras[k]:
                continue  # no truth per match: the metrics of poses judge it
            raise InvalidInput(
                f"pair {pid!r} has no ground truth: give gt_x1/gt_y1 or disparity columns, "
                f"{option('disparity_dir')}, homographies ({option('pairs')} with h11..h33, "
                f"or {option('homography_dir')}), or cameras ({option('pairs')} with "
                "k0_11..k0_33, k1_11..k1_33, t_11..t_34, or SuperGlue's pairs file)"
            )
        if at_infinity[k]:
            rows = np.flatnonzero(codes == k)
            x, y = (z.gather(rows).cast(pl.Float64).to_numpy() for z in (x0, y0))
            _, _, w = geometry.apply_homography(hs[k], x, y)
            geometry.refuse_infinity(w, "point {i}")


def _blocks(x: pl.Series, y: pl.Series) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(first row, x, y) as float64 arrays of at most ``_BLOCK`` rows, views of the columns'
    chunks where they are float64 (no copy of the whole column)."""
    if x.dtype != pl.Float64 or y.dtype != pl.Float64 or x.chunk_lengths() != y.chunk_lengths():
        x, y = x.cast(pl.Float64).rechunk(), y.cast(pl.Float64).rechunk()
    start = 0
    for cx, cy in zip(x.get_chunks(), y.get_chunks(), strict=True):
        ax, ay = cx.to_numpy(), cy.to_numpy()
        for s in range(0, len(ax), _BLOCK):
            yield start + s, ax[s : s + _BLOCK], ay[s : s + _BLOCK]
        start += len(ax)


def _affine(
    coef: np.ndarray, c: np.ndarray, x: np.ndarray, y: np.ndarray, out: np.ndarray, tmp: np.ndarray
) -> np.ndarray:
    """``coef[0][c] * x + coef[1][c] * y + coef[2][c]`` into ``out`` (``tmp``: scratch)."""
    np.multiply(np.take(coef[0], c, out=out), x, out=out)
    np.multiply(np.take(coef[1], c, out=tmp), y, out=tmp)
    out += tmp
    out += np.take(coef[2], c, out=tmp)
    return out


def _nullable(values: np.ndarray) -> pl.Series:
    """float64 values with NaN as NULL (a failed estimate)."""
    return pl.Series(values, dtype=pl.Float64).fill_nan(None)
