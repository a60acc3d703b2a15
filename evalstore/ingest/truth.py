"""Ground truth of keypoint matches: the pairs file (true homographies, image sizes, slice
columns), one homography file per pair (HPatches' ``H_1_k``) and one disparity map per pair
(``.npy``, or DSEC's 16-bit PNG of disparity x 256)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evalstore.core import geometry
from evalstore.errors import InvalidInput
from evalstore.ingest.frames import ids_of, read_frame, shown, where
from evalstore.ingest.sources import Source, first_line

__all__ = ["H_COLUMNS", "load_disparity", "load_homography", "pairs_table"]

H_COLUMNS = tuple(f"h{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))


def pairs_table(source: Source | None, fmt: str | None) -> dict[str, dict[str, Any]]:
    """pair_id -> {"H": 3x3 or None, "width", "height", "slices": {...}} from a pairs file."""
    if source is None:
        return {}
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
    hs: dict[str, np.ndarray] = {}
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
        hs = {c: raw[:, k] for k, c in enumerate(H_COLUMNS)}
    sizes = {}
    for col in ("width", "height"):
        if col in frame.columns:
            values = frame[col].cast(pl.Float64).to_numpy()
            bad = ~np.isfinite(values) | (values < 1) | (values != np.round(values))
            if bad.any():
                raise InvalidInput(
                    f"{where(frame, bad, col)} must be a whole number of pixels >= 1"
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
