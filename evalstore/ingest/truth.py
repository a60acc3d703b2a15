"""Ground truth of keypoint matches: the pairs file (true homographies, cameras and true
relative poses (:mod:`evalstore.ingest.cameras`), image sizes, slice columns), one
homography file per pair (HPatches' ``H_1_k``) and one disparity map per pair
(``.npy``, or DSEC's 16-bit PNG of disparity x 256)."""

from __future__ import annotations

import os
import struct
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from evalstore.core import geometry
from evalstore.errors import InvalidInput
from evalstore.ingest.cameras import (
    CAMERA_COLUMNS,
    LAST_ROW,
    cameras_of,
    is_superglue,
    no_cameras,
    read_superglue,
)
from evalstore.ingest.frames import finite, ids_of, read_frame, row_of, shown, where
from evalstore.ingest.sources import NPY_ERRORS, Source, first_line, names_text
from evalstore.ingest.validate import INT32

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
PAIR_COLUMNS = (
    "pair_id", *H_COLUMNS, "width", "height", "slice_keys", "slice_values", *CAMERA_COLUMNS
)  # fmt: skip


def pairs_table(
    source: Source | None, fmt: str | None, match_ids: Sequence[str] = ()
) -> pl.DataFrame:
    """The pairs of a pairs file, one row each, columns :data:`PAIR_COLUMNS`: ``pair_id``
    (text), ``h11..h33`` (null where the pair has no true homography), ``width`` and
    ``height`` (null where not given), ``slice_keys`` and ``slice_values`` (the slice columns
    that have a value, as text), the cameras (null where the pair has none; see
    :mod:`evalstore.ingest.cameras`). No file: no rows. SuperGlue's pairs file (``.txt``,
    or ``fmt`` ``"superglue"``) names its pairs as the matches ``match_ids`` do.

    Raises:
        InvalidInput: a pair twice, incomplete or non-finite homographies, a singular one,
            sizes that are not whole numbers of pixels >= 1, cameras that are incomplete or
            not a camera's.
    """
    if source is None:
        return no_pairs([])
    if is_superglue(source, fmt) and isinstance(source, (str, os.PathLike)):
        frame = read_superglue(Path(source), match_ids)
    else:
        frame = read_frame([source], fmt, {}, ["pair_id"])
    ids = ids_of(frame, "pair_id")
    dup = pl.Series(ids).is_duplicated().to_numpy()
    if dup.any():
        raise InvalidInput(f"{where(frame, dup, 'pair_id')}: pair {ids[dup][0]!r} appears twice")
    present = [c for c in H_COLUMNS if c in frame.columns]
    for col in present:
        dtype = frame[col].dtype
        if not (dtype.is_numeric() or dtype == pl.Null):
            raise InvalidInput(
                f"{frame['_file'][0]}: column {col!r} must be numeric, found {dtype}"
            )
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
            values = finite(frame, (col,), "image sizes")[col]
            bad = (values < 1) | (values > INT32[1]) | (values != np.round(values))
            if bad.any():
                raise InvalidInput(
                    f"{where(frame, bad, col)} must be a whole number of pixels from 1 to "
                    f"{INT32[1]:,}"
                )
            out = out.with_columns(pl.Series(col, values.astype(np.int64), dtype=pl.Int32))
    out = out.with_columns(cameras_of(frame, ids).get_columns())
    slice_cols = [
        c
        for c in frame.columns
        if c not in ("pair_id", "width", "height", *H_COLUMNS, *CAMERA_COLUMNS, *LAST_ROW)
        and not c.startswith("_")
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
    return pl.concat([pl.DataFrame(columns), no_cameras(n)], how="horizontal")


def _find(directory: Path, pair_id: str, suffixes: Sequence[str]) -> Path | None:
    for suffix in suffixes:
        path = directory / f"{pair_id}{suffix}"
        if path.is_file():
            return path
    return None


def _names(pair_id: str, suffixes: Sequence[str]) -> str:
    """The file names a pair's file may have, for a message: ``a, a.npy or a.txt``."""
    names = [names_text([f"{pair_id}{suffix}"]) for suffix in suffixes]
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]


def _numbers(path: Path, what: str) -> np.ndarray:
    """The array of numbers in a ``.npy`` file (no pickles) or, under any other name, a text
    file of whitespace-separated numbers, as float64."""
    try:
        # NumPy warns of a text file without numbers (refused below by its shape) and of a
        # .npy header it had to read as Python 2 wrote it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            if path.suffix != ".npy":
                array = np.loadtxt(path)
            else:  # opened here, so that it is closed whatever np.load raises
                with open(path, "rb") as file:
                    array = np.load(file, allow_pickle=False)
    except NPY_ERRORS as exc:
        raise InvalidInput(f"{path}: cannot read {what}: {first_line(exc)}") from None
    if not isinstance(array, np.ndarray):  # an .npz archive under a .npy name
        raise InvalidInput(f"{path}: cannot read {what}: an .npz archive, not one array")
    if array.dtype.kind not in "biuf":
        raise InvalidInput(f"{path}: cannot read {what}: it holds {array.dtype}, not numbers")
    return array.astype(np.float64)


def load_homography(directory: Path, pair_id: str) -> np.ndarray:
    suffixes = ("", ".npy", ".txt")
    path = _find(directory, pair_id, suffixes)
    if path is None:
        raise InvalidInput(
            f"{directory}: no homography file for pair {pair_id!r} ({_names(pair_id, suffixes)})"
        )
    h = _numbers(path, "a 3x3 homography")
    if h.shape != (3, 3):
        raise InvalidInput(f"{path}: expected a 3x3 homography, found shape {h.shape}")
    geometry.check_homography(h, str(path))
    return h


def load_disparity(
    directory: Path, pair_id: str, scale: float | None
) -> tuple[np.ndarray, float, Path]:
    suffixes = (".npy", ".png")
    path = _find(directory, pair_id, suffixes)
    if path is None:
        raise InvalidInput(
            f"{directory}: no disparity map for pair {pair_id!r} ({_names(pair_id, suffixes)})"
        )
    if path.suffix == ".npy":
        return _numbers(path, "a disparity map"), 1.0 if scale is None else scale, path
    import cv2

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    _check_png(data, path)  # what libpng would print on stderr, said in one line
    raw = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    if raw is None or raw.ndim != 2:
        raise InvalidInput(f"{path}: not a single-channel PNG disparity map")
    if raw.dtype != np.uint16:
        raise InvalidInput(
            f"{path}: expected a 16-bit PNG (disparity x 256, as DSEC), found {raw.dtype}"
        )
    return raw.astype(np.float64), 1.0 / 256.0 if scale is None else scale, path


_PNG = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # by colour type


def _check_png(data: bytes, path: Path) -> None:
    """Refuse a damaged PNG before libpng reads it (libpng prints its complaints on stderr):
    the signature, each chunk's length and CRC, IHDR first, IEND last, and image data that
    inflates to the size IHDR gives (for an image without interlacing)."""

    def bad(why: str) -> InvalidInput:
        return InvalidInput(f"{path}: not a valid PNG file: {why}")

    if not data.startswith(_PNG):
        raise bad("no PNG signature")
    at, chunks, idat, header = len(_PNG), [], [], b""
    while at < len(data):
        if at + 12 > len(data):
            raise bad(f"a chunk cut short at byte {at}")
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        if len(body) < length or at + 12 + length > len(data):
            raise bad(f"chunk {kind!r} cut short")
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise bad(f"chunk {kind!r} at byte {at} fails its CRC")
        chunks.append(kind)
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat.append(body)
        at += 12 + length
        if kind == b"IEND":
            break
    if not chunks or chunks[0] != b"IHDR" or len(header) != 13:
        raise bad("no IHDR chunk first")
    if chunks[-1] != b"IEND":
        raise bad("no IEND chunk at the end")
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if colour not in _CHANNELS or depth not in (1, 2, 4, 8, 16) or not idat:
        raise bad(f"colour type {colour}, bit depth {depth}, {len(idat)} IDAT chunk(s)")
    size = height * (1 + (width * _CHANNELS[colour] * depth + 7) // 8)
    inflate = zlib.decompressobj()
    try:
        pixels = inflate.decompress(b"".join(idat), size + 1)
    except zlib.error as exc:
        raise bad(f"image data: {exc}") from None
    if interlace == 0 and (len(pixels) != size or not inflate.eof):
        raise bad(f"image data of {len(pixels):,} bytes, not {size:,}")
