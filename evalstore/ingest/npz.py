"""Reading an ``.npz`` file with bounded effort: every member's ``.npy`` header (its shape and
dtype, a few hundred bytes) is read and checked before any array is decompressed, and only the
members an ingest uses are read. A small file that declares arrays out of proportion (a zip
bomb: 2 MB on disk, 2 GB of zeros) is so refused before it takes the memory."""

from __future__ import annotations

import lzma
import os
import tokenize
import warnings
import zipfile
import zlib
from collections.abc import Collection
from pathlib import Path
from typing import IO, NamedTuple

import numpy as np

from evalstore.errors import InvalidInput

__all__ = ["NPY_ERRORS", "NPZ_ERRORS", "memory_budget", "read_npz"]

#: what NumPy's reading of a damaged ``.npy`` array raises: ValueError (a bad header or
#: data, a pickle refused), EOFError, the tokenizer's errors on a header it re-reads as
#: Python 2's, MemoryError for a shape too large to allocate
NPY_ERRORS = (OSError, ValueError, EOFError, SyntaxError, tokenize.TokenError, MemoryError)
#: and of an .npz archive, the zip layer's: a bad header or CRC, damaged compressed data, a
#: compression method, version or flag it cannot read (RuntimeError: the encryption flag)
NPZ_ERRORS = (
    *NPY_ERRORS,
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    NotImplementedError,
    RuntimeError,
)
_MAGIC = b"\x93NUMPY"
# arrays beyond _RATIO_FLOOR bytes that compress more than _MAX_RATIO:1 all together are
# refused: real scores (floats) hardly compress; such a file is nearly all constant columns
_RATIO_FLOOR = 1 << 28
_MAX_RATIO = 100


class _Member(NamedTuple):
    info: zipfile.ZipInfo
    shape: tuple[int, ...]
    dtype: np.dtype


def memory_budget() -> int:
    """The most bytes the arrays of one ``.npz`` file may take once read: half of this
    machine's memory (1 GiB where it cannot be told)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 1 << 30


def _header(stream: IO[bytes]) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype an ``.npy`` stream declares, from its header alone."""
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
    else:  # 3.0 (a UTF-8 header): NumPy reads it with a function of its own
        read = getattr(np.lib.format, "_read_array_header", None)
        if read is None:
            raise ValueError(f".npy format version {version[0]}.{version[1]} is not supported")
        shape, _, dtype = read(stream, version)
    return tuple(int(n) for n in shape), np.dtype(dtype)


def _members(archive: zipfile.ZipFile, label: str) -> dict[str, _Member | None]:
    """Every member by its key (the name without ``.npy``, as NumPy names them): its
    header's shape and dtype, or None for a member that is not an ``.npy`` array."""
    found: dict[str, _Member | None] = {}
    for info in archive.infolist():
        if info.is_dir():
            continue
        key = info.filename.removesuffix(".npy")
        if not info.filename.endswith(".npy"):
            found[key] = None
            continue
        with archive.open(info) as stream:
            shape, dtype = _header(stream)
        if dtype.hasobject:
            raise InvalidInput(
                f"{label}: array {key!r} of dtype {dtype} holds Python objects (pickles), "
                "which are not read"
            )
        found[key] = _Member(info, shape, dtype)
    return found


def _gib(n: int) -> str:
    return f"{n / (1 << 30):,.1f} GiB"


def _check(label: str, members: dict[str, _Member | None], read: list[str], budget: int) -> None:
    """Refuse, from the headers alone, what the arrays read would make a bad input: a member
    that is no array, an array that is not 1-D, lengths that differ, a zip entry too short
    for the data its header declares, arrays of more than 256 MiB that compress more than
    100:1 all together (a zip bomb), arrays beyond the memory budget."""
    for key in read:
        member = members[key]
        if member is None:
            raise InvalidInput(f"{label}: member {key!r} is not a .npy array")
        if len(member.shape) != 1:
            raise InvalidInput(f"{label}: array {key!r} has shape {member.shape}; expected 1-D")
    shaped = {key: m for key, m in members.items() if m is not None and len(m.shape) == 1}
    lengths = {key: m.shape[0] for key, m in shaped.items()}
    if len(set(lengths.values())) > 1:
        raise InvalidInput(f"{label}: arrays have different lengths: {lengths}")
    total = 0
    for key in read:
        member = shaped[key]
        size = member.shape[0] * member.dtype.itemsize
        if member.info.file_size < size:  # the zip entry holds less than the array
            raise InvalidInput(
                f"{label}: cannot read as npz: array {key!r} declares {size:,} bytes of data "
                f"in a member of {member.info.file_size:,} bytes"
            )
        total += size
    packed = sum(shaped[key].info.compress_size for key in read)
    if total > _RATIO_FLOOR and total > _MAX_RATIO * max(packed, 1):
        raise InvalidInput(
            f"{label}: its arrays declare {_gib(total)} once decompressed from "
            f"{packed:,} bytes (over {_MAX_RATIO}:1), out of proportion for rows of an "
            "ingest (a zip bomb?); write the rows to Parquet, which is read in batches"
        )
    if total > budget:
        raise InvalidInput(
            f"{label}: its arrays declare {_gib(total)} once decompressed, more than this "
            f"ingest reads into memory from one .npz file ({_gib(budget)}, half the "
            "machine's memory); write the rows to Parquet, which is read in batches"
        )


def read_npz(
    path: Path, wanted: Collection[str] | None = None, budget: int | None = None
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The arrays of an ``.npz`` file that ``wanted`` names (every one when None), read only
    after every member's header was checked (:func:`_check`); without pickles.

    Returns:
        The arrays read, and the 1-D arrays left unread: their keys and lengths.

    Raises:
        InvalidInput: a file that is not an npz (a single ``.npy`` array, not a zip, damaged),
            an object array, a member that is not 1-D or of another length, arrays beyond
            ``budget`` bytes (default :func:`memory_budget`).
    """
    budget = memory_budget() if budget is None else budget
    try:
        with open(path, "rb") as file:
            if file.read(len(_MAGIC)) == _MAGIC:
                raise InvalidInput(f"{path}: cannot read as npz: a .npy array, not a zip of arrays")
            file.seek(0)
            with zipfile.ZipFile(file) as archive, warnings.catch_warnings():
                # NumPy warns of a header it had to read as Python 2 wrote it: read all the same
                warnings.simplefilter("ignore", UserWarning)
                members = _members(archive, str(path))
                read = [k for k in members if wanted is None or k in wanted]
                _check(str(path), members, read, budget)
                arrays = {}
                for key in read:
                    member = members[key]
                    if member is not None:  # (None: refused by _check)
                        with archive.open(member.info) as stream:
                            arrays[key] = np.lib.format.read_array(stream, allow_pickle=False)
                unread = {
                    k: m.shape[0]
                    for k, m in members.items()
                    if k not in arrays and m is not None and len(m.shape) == 1
                }
                return arrays, unread
    except InvalidInput:
        raise
    except NPZ_ERRORS as exc:
        text = str(exc).strip().splitlines()
        raise InvalidInput(
            f"{path}: cannot read as npz: {text[0] if text else type(exc).__name__}"
        ) from None
