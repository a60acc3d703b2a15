"""Ground truth of keypoint matches: the pairs file (true homographies, image sizes, slice
columns), one homography file per pair (HPatches' ``H_1_k``) and one disparity map per pair
(``.npy``, or DSEC's 16-bit PNG of disparity x 256)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from evalstore.core import geometry
from evalstore.errors import InvalidInput
from evalstore.ingest.frames import ids_of, read_frame, row_of, shown, where
from evalstore.ingest.sources import Source, first_line

__all__ = [
    "H_COLUMNS",
    "PAIR_COLUMNS",
    "load_disparity",
    "load_homography",
    "no_pairs",
    "pairs_table",
]

H_COLUMNS = tuple(f"h{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
#: the columns of :func:`pairs_table`
PAIR_COLUMNS = ("pair_id", *H_COLUMNS, "width", "height", "slice_keys", "slice_values")


def pairs_table(source: Source | None, fmt: str | None) -> pl.DataFrame:
    """The pairs of a pairs file, one row each, columns :data:`PAIR_COLUMNS`: ``pair_id``
    (text), ``h11..h33`` (null where the pair has no true homography), ``width`` and
    ``height`` (null where not given), ``slice_keys`` and ``slice_values`` (the slice columns
    that have a value, as text). No file: no rows.

    Raises:
        InvalidInput: a pair twice, incomplete or non-finite homographies, a singular one,
            sizes that are not whole numbers of pixels >= 1.
    """
    if source is None:
        return no_pairs([])
    frame = read_frame([source], fmt, {}, ["pair_id"])
    ids = ids_of(frame, "pair_id")
    dup = pl.Series(ids).is_duplicated().to_numpy()
    if dup.any():
        raise InvalidInput(f"{where(frame, dup, 'pair_id')}: pair {ids[dup][0]!r} appears twice")
    present = [c for c in H_COLUMNS if c in frame.columns]
    if present and len(present) != 9:
        missing = [c for c in H_COLUMNS if c not in frame.columns]
        raise InvalidInput(
            f"{frame['_file'][0]}: homography columns h11..h33 incomplete "
            f"(missing {', '.join(missing)})"
        )
    out = no_pairs(ids)
    if present:
        raw = frame.select(pl.col(c).cast(pl.Float64) for c in H_COLUMNS).to_numpy()
        empty = np.isnan(raw).all(axis=1)  # a pair without a true homography
        partial = ~empty & ~np.isfinite(raw).all(axis=1)
        if partial.any():
            i = int(np.flatnonzero(partial)[0])
            col = H_COLUMNS[int(np.flatnonzero(~np.isfinite(raw[i]))[0])]
            raise InvalidInput(
                f"{where(frame, partial, col)} is {shown(raw[i][H_COLUMNS.index(col)])}; "
                "give all of h11..h33 or none"
            )
        given = np.flatnonzero(~empty)
        det = np.abs(np.linalg.det(raw[given].reshape(-1, 3, 3)))
        for i in map(int, given[~(det >= geometry.DET_EPS)]):  # check_homography names the first
            geometry.check_homography(
                raw[i].reshape(3, 3),
                f"{frame['_file'][i]} row {row_of(frame, i)} (pair {ids[i]!r})",
            )
        out = out.with_columns(
            pl.Series(c, raw[:, k], dtype=pl.Float64).fill_nan(None)
            for k, c in enumerate(H_COLUMNS)
        )
    for col in ("width", "height"):
        if col in frame.columns:
            values = frame[col].cast(pl.Float64).to_numpy()
            bad = ~np.isfinite(values) | (values < 1) | (values != np.round(values))
            if bad.any():
                raise InvalidInput(
                    f"{where(frame, bad, col)} must be a whole number of pixels >= 1"
                )
            out = out.with_columns(pl.Series(col, values.astype(np.int64), dtype=pl.Int32))
    slice_cols = [
        c
        for c in frame.columns
        if c not in ("pair_id", "width", "height", *H_COLUMNS) and not c.startswith("_")
    ]
    if slice_cols:
        # str() of each value, as the slices were always written (True, not true)
        text = pl.DataFrame(
            {
                c: frame[c]
                if frame[c].dtype == pl.String
                else pl.Series([None if v is None else str(v) for v in frame[c].to_list()])
                for c in slice_cols
            },
            schema=dict.fromkeys(slice_cols, pl.String),
        )
        out = out.with_columns(
            slice_keys=text.select(
                pl.concat_list(
                    pl.when(pl.col(c).is_not_null()).then(pl.lit(c)) for c in slice_cols
                ).list.drop_nulls()
            ).to_series(),
            slice_values=text.select(pl.concat_list(slice_cols).list.drop_nulls()).to_series(),
        )
    return out


def no_pairs(ids: Sequence[str] | np.ndarray) -> pl.DataFrame:
    """Rows of :data:`PAIR_COLUMNS` for pairs known only by their ids: no true homography,
    no size, no slices."""
    n = len(ids)
    columns = [pl.Series("pair_id", ids, dtype=pl.String)]
    columns += [pl.repeat(None, n, dtype=pl.Float64, eager=True).alias(c) for c in H_COLUMNS]
    columns += [
        pl.repeat(None, n, dtype=pl.Int32, eager=True).alias(c) for c in ("width", "height")
    ]
    empty = pl.Series("", [[]], dtype=pl.List(pl.String)).new_from_index(0, n)
    columns += [empty.alias(c) for c in ("slice_keys", "slice_values")]
    return pl.DataFrame(columns)


def _find(directory: Path, pair_id: str, suffixes: Sequence[str]) -> Path | None:
    for suffix in suffixes:
        path = directory / f"{pair_id}{suffix}"
        if path.is_file():
            return path
    return None


def load_homography(directory: Path, pair_id: str) -> np.ndarray:
    path = _find(directory, pair_id, ("", ".npy", ".txt"))
    if path is None:
        raise InvalidInput(
            f"{directory}: no homography file for pair {pair_id!r} "
            f"({pair_id}, {pair_id}.npy or {pair_id}.txt)"
        )
    try:
        h = np.load(path) if path.suffix == ".npy" else np.loadtxt(path)
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{path}: cannot read a 3x3 homography: {first_line(exc)}") from None
    h = np.asarray(h, dtype=np.float64)
    if h.shape != (3, 3):
        raise InvalidInput(f"{path}: expected a 3x3 homography, found shape {h.shape}")
    geometry.check_homography(h, str(path))
    return h


def load_disparity(
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
            raise InvalidInput(f"{path}: cannot read: {first_line(exc)}") from None
    import cv2

    raw = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if raw is None or raw.ndim != 2:
        raise InvalidInput(f"{path}: not a single-channel PNG disparity map")
    if raw.dtype != np.uint16:
        raise InvalidInput(
            f"{path}: expected a 16-bit PNG (disparity x 256, as DSEC), found {raw.dtype}"
        )
    return raw.astype(np.float64), 1.0 / 256.0 if scale is None else scale, path
