"""HPatches descriptor files, and the distances between them in bounded memory.

The benchmark's layout (hpatches/hpatches-benchmark, ``python/utils/hpatch.py`` and
``matlab/+desc/memdesc.m`` @ e0c993c7756d26129fef47f752f79e4cfe6681aa): a descriptor folder
``DESC/`` holds one folder per sequence (``i_*``: illumination, ``v_*``: viewpoint), each with
16 CSV files ``ref.csv``, ``e1.csv`` .. ``e5.csv``, ``h1.csv`` .. ``h5.csv``, ``t1.csv`` ..
``t5.csv``: one descriptor per row, no header, the same number of rows in all 16 (row ``i`` of
every file describes patch ``i`` of the sequence), comma-separated numbers (``hpatch_descr``:
``pd.read_csv(descr_path, header=None, sep=sep).astype(np.float32)``; ``--delimiter`` there,
``dlmread`` in MATLAB; here a ``;`` is recognised too). Like both benchmarks, the values are
kept as float32; under ``hamming`` they are bytes of packed bits, unpacked as the benchmark's
``descr_type == "bin_packed"`` does (``np.unpackbits(df.astype(np.uint8), axis=1)``).

Every file is read once, checked and written to a ``.npy`` file of a private work folder, then
memory-mapped: the process holds one file's rows at a time, never the whole dataset.

Distances are those of ``dist_matrix`` in ``python/utils/tasks.py`` (same commit): SciPy's
``cdist`` ``euclidean`` (``l2``, the benchmark's ``L2``) and ``cityblock`` (``l1``, its ``L1``);
also ``sqeuclidean`` (``l2sq``: the MATLAB code's ``sum((descsA - descsB).^2, 1)``, the same
ranking as ``l2``), ``cosine`` (1 - cosine similarity) and ``hamming`` (bits that differ:
``cityblock`` over the unpacked bits, what the benchmark's ``L1`` gives on ``bin_packed``).
Matrices are computed a block of rows at a time (:func:`nearest`, :func:`blocks`), so that at
most ``block_rows`` x ``columns`` distances exist at once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from evalstore.errors import InvalidInput, option
from evalstore.ingest.sources import READ_ERRORS, check_file, first_line

__all__ = [
    "DISTANCES",
    "IMAGES",
    "NOISES",
    "Descriptors",
    "blocks",
    "gather",
    "load_descriptors",
    "nearest",
    "paired",
    "sequence_kind",
]

#: the 16 files of a sequence, in the benchmark's order (``tps`` of ``hpatch.py``)
IMAGES = ("ref", *(f"{z}{k}" for z in "eht" for k in range(1, 6)))
#: geometric noise: easy, hard, tough
NOISES = ("e", "h", "t")
#: --distance -> SciPy's cdist metric
DISTANCES = {
    "l2": "euclidean",
    "l2sq": "sqeuclidean",
    "l1": "cityblock",
    "cosine": "cosine",
    "hamming": "cityblock",
}
#: distances held at once by a block (bytes), unless block_rows says otherwise
BLOCK_BYTES = 64 << 20


def sequence_kind(name: str) -> str:
    """``illum`` for ``i_*``, ``view`` for ``v_*`` (the benchmark's naming), else ``other``.

    >>> sequence_kind("i_ajuntament"), sequence_kind("v_birdwoman"), sequence_kind("x")
    ('illum', 'view', 'other')
    """
    return {"i_": "illum", "v_": "view"}.get(name[:2], "other")


@dataclass
class Descriptors:
    """The descriptors of some sequences, memory-mapped from the work folder."""

    folder: Path
    distance: str
    dim: int = 0  # values per stored descriptor (bits under hamming)
    sizes: dict[str, int] = field(default_factory=dict)  # sequence -> number of patches
    work: Path = Path()

    def image(self, sequence: str, image: str) -> np.ndarray:
        """(patches, dim) of one file: float32, or uint8 bits under ``hamming``."""
        return np.load(self.work / sequence / f"{image}.npy", mmap_mode="r")

    def path(self, sequence: str, image: str = "") -> Path:
        """The input file (or the sequence's folder) for messages."""
        folder = self.folder / sequence
        return folder / f"{image}.csv" if image else folder


def load_descriptors(
    folder: str | os.PathLike[str],
    sequences: Sequence[str],
    distance: str,
    work: Path,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> Descriptors:
    """Read and check the 16 files of each sequence into ``work`` (see the module docstring).

    Raises:
        InvalidInput: a missing folder or file, a row that is not numbers (ragged, empty,
            NaN, infinite), files of one sequence with different row counts, or files of
            different widths; the message names the file and, where it can, the line.
    """
    if distance not in DISTANCES:
        raise InvalidInput(
            f"unknown {option('distance', distance)}; use one of {', '.join(DISTANCES)}"
        )
    root = Path(folder)
    if not root.is_dir():
        raise InvalidInput(f"{root}: {'not a folder' if root.exists() else 'no such folder'}")
    out = Descriptors(root, distance, work=work)
    width, width_of = 0, ""
    for done, name in enumerate(sequences):
        if not (root / name).is_dir():
            raise InvalidInput(f"{root / name}: no such sequence folder")
        (work / name).mkdir(parents=True, exist_ok=True)
        for image in IMAGES:
            path = root / name / f"{image}.csv"
            values = _read_file(path, distance)
            if image == "ref":
                out.sizes[name] = values.shape[0]
            elif values.shape[0] != out.sizes[name]:
                raise InvalidInput(
                    f"{path}: {values.shape[0]:,} rows, but {root / name / 'ref.csv'} has "
                    f"{out.sizes[name]:,}: the files of a sequence describe the same patches"
                )
            if not width:
                width, width_of = values.shape[1], str(path)
            elif values.shape[1] != width:
                raise InvalidInput(
                    f"{path}: descriptors of {values.shape[1]} values, but {width_of} has {width}"
                )
            stored = _stored(values, distance)
            out.dim = stored.shape[1]
            np.save(work / name / f"{image}.npy", stored)
        if progress is not None:
            progress("hpatches descriptors", done + 1, len(sequences))
    return out


def _stored(values: np.ndarray, distance: str) -> np.ndarray:
    if distance == "hamming":
        return np.unpackbits(values.astype(np.uint8), axis=1)
    return values.astype(np.float32)


def _read_file(path: Path, distance: str) -> np.ndarray:
    """One descriptor file as float64 values (checked), one row per descriptor."""
    check_file(path)
    try:
        with path.open("rb") as f:
            head = f.readline()
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    sep = ";" if b";" in head and b"," not in head else ","
    width = head.count(sep.encode()) + 1
    schema = {f"c{i}": pl.Float64 for i in range(width)}
    try:
        frame = pl.read_csv(path, has_header=False, schema=schema, separator=sep)
    except READ_ERRORS as exc:
        raise _diagnose(path, sep, width, first_line(exc)) from None
    if frame.height == 0:
        raise InvalidInput(f"{path}: no rows")
    values = frame.to_numpy()
    bad = np.isnan(values).any(axis=1) if values.dtype.kind == "f" else np.zeros(0, bool)
    if frame.null_count().sum_horizontal()[0]:
        raise _diagnose(path, sep, width, "an empty value")
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InvalidInput(f"{path} line {row + 1}: NaN is not a descriptor value")
    with np.errstate(over="ignore"):  # a value beyond float32 becomes inf: refused below
        stored = values.astype(np.float32)
    if not np.isfinite(stored).all():
        row = int(np.flatnonzero(~np.isfinite(stored).all(axis=1))[0])
        raise InvalidInput(
            f"{path} line {row + 1}: a value is infinite (or beyond float32, as the benchmark "
            "stores descriptors)"
        )
    if distance == "hamming":
        byte = (values >= 0) & (values <= 255) & (values == np.round(values))
        if not byte.all():
            row, col = (int(i[0]) for i in np.nonzero(~byte))
            raise InvalidInput(
                f"{path} line {row + 1} column {col + 1}: {values[row, col]:g} is not a byte "
                f"(0..255): {option('distance', 'hamming')} reads packed bits, as the "
                "benchmark's bin_packed"
            )
    if distance == "cosine":
        zero = ~values.any(axis=1)
        if zero.any():
            row = int(np.flatnonzero(zero)[0])
            raise InvalidInput(f"{path} line {row + 1}: a zero descriptor has no cosine distance")
    return values


#: a number as polars reads a Float64 (spaces before it, none after)
_NUMBER = re.compile(r"^\s*[-+]?((\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|inf|infinity|nan)$", re.I)


def _diagnose(path: Path, sep: str, width: int, reason: str) -> InvalidInput:
    """The first line of a file that polars refused, found by reading it line by line.

    Lines end at a ``\n`` (a ``\r`` before it is part of the ending), as polars and the
    readline that found ``width`` split them: a lone ``\r`` or another Unicode line break
    stays inside its line, where it is no number."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        return InvalidInput(f"{path}: cannot read: {exc.strerror or exc}")
    lines = text.removeprefix("\ufeff").split("\n")
    if len(lines) > 1 and not lines[-1]:  # the ending of the last line
        lines.pop()
    for number, line in enumerate((x.removesuffix("\r") for x in lines), start=1):
        if not line.strip():
            return InvalidInput(f"{path} line {number}: an empty line")
        fields = line.split(sep)
        if len(fields) != width:
            return InvalidInput(
                f"{path} line {number}: {len(fields)} values, but line 1 has {width} "
                "(one descriptor per row, all of one length)"
            )
        for col, value in enumerate(fields, start=1):
            if not _NUMBER.match(value):
                what = "an empty value" if not value.strip() else repr(value)
                return InvalidInput(f"{path} line {number} column {col}: {what} is not a number")
    return InvalidInput(f"{path}: cannot read as descriptors: {reason}")


def _block(rows: int, columns: int, dim: int, block_rows: int | None) -> int:
    """Rows of a block: ``block_rows``, or as many as keep a block's work to BLOCK_BYTES."""
    if block_rows is not None:
        if block_rows < 1:
            raise InvalidInput(f"block_rows must be at least 1, got {block_rows}")
        return block_rows
    per_row = 8 * max(columns, 1) + 8 * dim  # the distances and the row's float64 copy
    return max(1, min(rows, BLOCK_BYTES // per_row))


def blocks(
    a: np.ndarray, b: np.ndarray, distance: str, block_rows: int | None = None
) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, distances of rows ``a[first:first + k]`` to every row of ``b``), block by
    block: never the whole ``len(a)`` x ``len(b)`` matrix."""
    # SciPy loads here, not with the package: 0.15 s that no other ingest needs
    from scipy.spatial.distance import cdist

    step = _block(len(a), len(b), a.shape[1], block_rows)
    metric = DISTANCES[distance]
    for start in range(0, len(a), step):
        yield start, cdist(a[start : start + step], b, metric)


def nearest(
    a: np.ndarray, b: np.ndarray, distance: str, block_rows: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``a``: the index of its nearest row of ``b`` (the first of equals, as
    ``np.argmin``) and that distance."""
    idx = np.empty(len(a), np.int64)
    dist = np.empty(len(a), np.float64)
    for start, d in blocks(a, b, distance, block_rows):
        k = np.argmin(d, axis=1)
        idx[start : start + len(k)] = k
        dist[start : start + len(k)] = d[np.arange(len(k)), k]
    return idx, dist


def paired(a: np.ndarray, b: np.ndarray, distance: str) -> np.ndarray:
    """The distance of ``a[i]`` to ``b[i]`` for every i (as ``cdist`` computes each pair)."""
    x = np.asarray(a, np.float64)
    y = np.asarray(b, np.float64)
    if distance in ("l2", "l2sq"):
        diff = x - y
        sq = np.einsum("ij,ij->i", diff, diff)
        return sq if distance == "l2sq" else np.sqrt(sq)
    if distance in ("l1", "hamming"):
        return np.abs(x - y).sum(axis=1)
    uv = np.einsum("ij,ij->i", x, y)
    norms = np.sqrt(np.einsum("ij,ij->i", x, x)) * np.sqrt(np.einsum("ij,ij->i", y, y))
    return np.clip(1.0 - uv / norms, 0.0, 2.0)


def gather(
    descriptors: Descriptors,
    sequences: np.ndarray,
    images: Sequence[str] | pl.Series,
    idx: np.ndarray,
) -> np.ndarray:
    """Rows ``idx[i]`` of image ``images[i]`` of sequence ``sequences[i]``: (n, dim)."""
    dtype = np.uint8 if descriptors.distance == "hamming" else np.float32
    out = np.empty((len(idx), descriptors.dim), dtype)
    frame = pl.DataFrame(
        {"s": sequences, "t": images, "i": idx},
        schema={"s": pl.String, "t": pl.String, "i": pl.Int64},
    ).with_row_index("at")
    for (s, t), part in frame.group_by("s", "t", maintain_order=True):
        rows = descriptors.image(str(s), str(t))
        out[part["at"].to_numpy()] = rows[part["i"].to_numpy()]
    return out
