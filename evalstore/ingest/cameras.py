"""The cameras of keypoint pairs: intrinsics K0, K1 and the true relative pose T_0to1, as
columns of the pairs file or as SuperGlue's pairs text file, checked.

Columns (``--pairs``, Parquet, CSV...): ``k0_11..k0_33`` and ``k1_11..k1_33`` (row-major 3 x 3
intrinsics of images 0 and 1), ``t_11..t_34`` (the 3 x 4 top of T_0to1 = [R | t], image 0's
camera frame to image 1's; ``t_41..t_44`` may be given too and must then be ``0 0 0 1``) and
optionally ``n_keypoints0`` (the keypoints detected in image 0, a whole number). A pair whose
camera columns are all empty has no cameras; some empty is refused. Only fx (k_11), fy
(k_22), cx (k_13) and cy (k_23) are read by the estimate, as in SuperGlue's ``estimate_pose``:
they must be finite, with fx, fy > 0; the other entries must be finite and are not read. R
must be a rotation: ``|R^T R - I| <= 1e-4`` entrywise and ``det R > 0`` (SuperGlue's ScanNet
poses, written with five decimals, are within 1.6e-5); t finite and not zero (the pose error
measures the angle of its direction).

SuperGlue's pairs file (magicleap/SuperGluePretrainedNetwork ``match_pairs.py`` @
ddcf11f42e7e, ``assets/*_pairs_with_gt.txt``): one pair a line, whitespace separated,
``path0 path1 rot0 rot1 K0(9) K1(9) T_0to1(16)`` (38 fields). A pair's id is ``path0 path1``
(its two first fields joined by one space); where the matches name none of a file's pairs so
but do name one as ``stem0_stem1`` (the file names without folder and extension, as
``match_pairs.py`` names its outputs ``{stem0}_{stem1}_matches.npz``), that file's pairs are
named so. Lines of 2 or 4 fields (pairs without ground truth) are refused, as is a rotation
``rot0``/``rot1`` other than 0: ``match_pairs.py`` then rotates the image, its K and T_0to1
(``rotate_intrinsics``, ``rotate_pose_inplane``), which needs the image size the file lacks.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import numpy as np
import polars as pl

from evalstore.errors import InvalidInput
from evalstore.ingest.frames import row_of
from evalstore.ingest.validate import INT32
from evalstore.metrics.pose_inputs import K0_COLUMNS, K1_COLUMNS, T_COLUMNS

__all__ = [
    "CAMERA_COLUMNS",
    "K_COLUMNS",
    "LAST_ROW",
    "OPTIONAL_COLUMNS",
    "ROTATION_TOLERANCE",
    "T_COLUMNS",
    "cameras_of",
    "is_superglue",
    "no_cameras",
    "read_superglue",
]

K_COLUMNS = (*K0_COLUMNS, *K1_COLUMNS)
#: T_0to1's last row: optional, 0 0 0 1 where given
LAST_ROW = ("t_41", "t_42", "t_43", "t_44")
#: the columns of pair_cameras (but run_id and pair_no), as :func:`cameras_of` returns them
CAMERA_COLUMNS = (*K_COLUMNS, *T_COLUMNS, "n_keypoints0")
#: what a pairs file may give beside the required camera columns
OPTIONAL_COLUMNS = (*LAST_ROW, "n_keypoints0")
#: how far R^T R may be from the identity, entrywise
ROTATION_TOLERANCE = 1e-4
_FIELDS = 38


def is_superglue(source: object, fmt: str | None) -> bool:
    """Whether a pairs source is SuperGlue's text file: ``fmt`` ``"superglue"``, or a path
    ending in ``.txt`` with no format given."""
    if fmt is not None:
        return fmt == "superglue"
    return isinstance(source, (str, os.PathLike)) and Path(source).suffix.lower() == ".txt"


def no_cameras(n: int) -> pl.DataFrame:
    """:data:`CAMERA_COLUMNS` for ``n`` pairs without cameras (all null)."""
    return pl.DataFrame(
        [
            pl.repeat(None, n, dtype=pl.Float64, eager=True).alias(c)
            for c in (*K_COLUMNS, *T_COLUMNS)
        ]
        + [pl.repeat(None, n, dtype=pl.Int32, eager=True).alias("n_keypoints0")]
    )


def cameras_of(frame: pl.DataFrame, ids: np.ndarray) -> pl.DataFrame:
    """The cameras of a pairs frame (``_file`` and the pairs' ``ids`` for messages; a
    ``_line`` column, where present, numbers its rows), columns :data:`CAMERA_COLUMNS` with a
    row per pair, all null where the pair has none (or the file no camera columns).

    Raises:
        InvalidInput: some camera columns but not all (naming the missing ones), a column that
            is not numeric, a pair with some camera values empty, a K or T that breaks the
            rules of the module docstring, an ``n_keypoints0`` that is not a whole number.
    """
    label = str(frame["_file"][0])
    given = [c for c in (*K_COLUMNS, *T_COLUMNS, *OPTIONAL_COLUMNS) if c in frame.columns]
    if not given:
        return no_cameras(frame.height)
    required = [c for c in (*K_COLUMNS, *T_COLUMNS) if c in frame.columns]
    if len(required) != len(K_COLUMNS) + len(T_COLUMNS):
        missing = [c for c in (*K_COLUMNS, *T_COLUMNS) if c not in frame.columns]
        raise InvalidInput(
            f"{label}: camera columns incomplete: missing {', '.join(missing)} (cameras need "
            "k0_11..k0_33, k1_11..k1_33 and t_11..t_34)"
        )
    for col in given:
        dtype = frame[col].dtype
        if not (dtype.is_numeric() or dtype == pl.Null):
            raise InvalidInput(f"{label}: column {col!r} must be numeric, found {dtype}")
    raw = frame.select(pl.col(c).cast(pl.Float64) for c in required).to_numpy()
    empty = np.isnan(raw).all(axis=1)
    partial = ~empty & ~np.isfinite(raw).all(axis=1)
    if partial.any():
        i = int(np.flatnonzero(partial)[0])
        col = required[int(np.flatnonzero(~np.isfinite(raw[i]))[0])]
        value = raw[i][required.index(col)]
        shown = "empty or NaN" if np.isnan(value) else f"{value:g}"
        raise InvalidInput(
            f"{_at(frame, ids, i)}: {col} is {shown}; a pair's cameras must be finite numbers "
            "(or all empty: no cameras)"
        )
    with_cameras = np.flatnonzero(~empty)
    k = raw[:, :18].reshape(-1, 2, 3, 3)
    t = raw[:, 18:].reshape(-1, 3, 4)
    _check_intrinsics(frame, ids, k, with_cameras)
    _check_poses(frame, ids, t, with_cameras)
    if any(c in frame.columns for c in LAST_ROW):
        _check_last_row(frame, ids, with_cameras)
    out = pl.DataFrame(
        {
            c: pl.Series(c, raw[:, j], dtype=pl.Float64).fill_nan(None)
            for j, c in enumerate(required)
        }
    )
    counts = pl.repeat(None, frame.height, dtype=pl.Int32, eager=True)
    if "n_keypoints0" in frame.columns:
        values = frame["n_keypoints0"].cast(pl.Float64).fill_nan(None).to_numpy()
        values = np.where(empty, np.nan, values)
        bad = ~np.isnan(values) & ~(
            (values >= 0) & (values <= INT32[1]) & (values == np.round(values))
        )
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InvalidInput(
                f"{_at(frame, ids, i)}: n_keypoints0 is {values[i]:g}; it must be a whole number "
                f"of keypoints from 0 to {INT32[1]:,} (or empty)"
            )
        counts = pl.Series("n_keypoints0", values).fill_nan(None).cast(pl.Int32)
    return out.with_columns(counts.alias("n_keypoints0"))


def read_superglue(path: Path, match_ids: Sequence[str]) -> pl.DataFrame:
    """SuperGlue's pairs file as a pairs frame: ``_file``, ``_line`` (1-based), ``pair_id``
    and the camera columns but ``n_keypoints0`` (rule of the module docstring).

    Raises:
        InvalidInput: an unreadable file, a line of another field count, a field that is not
            a number, a rotation other than 0.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    lines, fields = [], []
    for n, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != _FIELDS:
            why = (
                "a pair without ground truth (SuperGlue's path0 path1 [rot0 rot1]); evaluation "
                "needs K0, K1 and T_0to1"
                if len(parts) in (2, 4)
                else "expected path0 path1 rot0 rot1, K0 (9), K1 (9) and T_0to1 (16)"
            )
            raise InvalidInput(f"{path} line {n}: {len(parts)} fields; {why}")
        lines.append(n)
        fields.append(parts)
    if not fields:
        raise InvalidInput(f"{path}: no pairs")
    numbers = np.empty((len(fields), _FIELDS - 2))
    for r, parts in enumerate(fields):
        try:
            numbers[r] = [float(x) for x in parts[2:]]
        except ValueError:
            bad = next(x for x in parts[2:] if not _is_number(x))
            raise InvalidInput(f"{path} line {lines[r]}: {bad!r} is not a number") from None
    for side in (0, 1):
        rot = numbers[:, side]
        if (rot != 0).any():
            r = int(np.flatnonzero(rot != 0)[0])
            raise InvalidInput(
                f"{path} line {lines[r]}: rot{side} is {fields[r][2 + side]}; match_pairs.py "
                f"then rotates image {side}, its K and T_0to1 by 90 degrees x rot{side}, which "
                "needs the image size this file lacks: give the matches in the unrotated "
                "images' pixels and rot0 = rot1 = 0"
            )
    ids = [f"{p[0]} {p[1]}" for p in fields]
    named = set(match_ids)
    if not named.intersection(ids):
        stems = [f"{PurePosixPath(p[0]).stem}_{PurePosixPath(p[1]).stem}" for p in fields]
        if named.intersection(stems):
            ids = stems
    values = {c: numbers[:, 2 + j] for j, c in enumerate((*K_COLUMNS, *T_COLUMNS, *LAST_ROW))}
    label = str(path)
    return pl.DataFrame(
        {
            "pair_id": ids,
            **values,
            "_line": lines,
            "_file": pl.Series([label] * len(ids), dtype=pl.Enum([label])),
        }
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _at(frame: pl.DataFrame, ids: np.ndarray, i: int) -> str:
    """``FILE row N (pair 'ID')``, or ``line N`` for SuperGlue's file."""
    place = f"line {frame['_line'][i]}" if "_line" in frame.columns else f"row {row_of(frame, i)}"
    return f"{frame['_file'][i]} {place} (pair {ids[i]!r})"


def _check_intrinsics(
    frame: pl.DataFrame, ids: np.ndarray, k: np.ndarray, rows: np.ndarray
) -> None:
    for side in (0, 1):
        f = k[rows, side][:, [0, 1], [0, 1]]  # fx, fy
        bad = ~(f > 0).all(axis=1)
        if bad.any():
            i = int(rows[np.flatnonzero(bad)[0]])
            fx, fy = k[i, side, 0, 0], k[i, side, 1, 1]
            raise InvalidInput(
                f"{_at(frame, ids, i)}: K{side} has fx = k{side}_11 = {fx:g} and fy = "
                f"k{side}_22 = {fy:g}; focal lengths must be > 0 pixels (of K only fx, fy, "
                "cx and cy are read)"
            )


def _check_poses(frame: pl.DataFrame, ids: np.ndarray, t: np.ndarray, rows: np.ndarray) -> None:
    r = t[rows, :, :3]
    gram = np.abs(np.einsum("nji,njk->nik", r, r) - np.eye(3)).max(axis=(1, 2))
    det = np.linalg.det(r) if len(rows) else np.zeros(0)
    bad = ~((gram <= ROTATION_TOLERANCE) & (det > 0))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        i = int(rows[j])
        raise InvalidInput(
            f"{_at(frame, ids, i)}: T_0to1 is not a rigid motion: its rotation t_11..t_33 has "
            f"|R^T R - I| up to {gram[j]:.3g} (at most {ROTATION_TOLERANCE:g}) and det "
            f"{det[j]:.6g} (must be +1)"
        )
    zero = ~(np.abs(t[rows, :, 3]) > 0).any(axis=1)
    if zero.any():
        i = int(rows[np.flatnonzero(zero)[0]])
        raise InvalidInput(
            f"{_at(frame, ids, i)}: T_0to1's translation t_14, t_24, t_34 is zero; the pose "
            "error measures the angle of its direction"
        )


def _check_last_row(frame: pl.DataFrame, ids: np.ndarray, rows: np.ndarray) -> None:
    missing = [c for c in LAST_ROW if c not in frame.columns]
    if missing:
        raise InvalidInput(
            f"{frame['_file'][0]}: T_0to1's last row incomplete: missing {', '.join(missing)} "
            "(give all of t_41..t_44, 0 0 0 1, or none)"
        )
    last = frame.select(pl.col(c).cast(pl.Float64) for c in LAST_ROW).to_numpy()[rows]
    bad = ~(last == np.array([0.0, 0.0, 0.0, 1.0])).all(axis=1)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        shown = " ".join(f"{v:g}" for v in last[j])
        raise InvalidInput(
            f"{_at(frame, ids, int(rows[j]))}: T_0to1's last row t_41..t_44 is {shown}; "
            "it must be 0 0 0 1"
        )
