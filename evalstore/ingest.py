"""Ingest of ranked lists (scores and labels) into a run.

Parquet files with integer ids are read by DuckDB straight into the store and checked in one
pass afterwards (the direct path); any other input, and any input the direct path refuses, is
read with polars in bounded batches and validated column by column (the streaming path, which
reports what is wrong with its file, column and row). Either way a run is written in one
transaction: it is fully there or not at all, whatever goes wrong (bad input, a crash,
``kill -9``).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import queue
import re
import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from evalstore import queries, runs
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.queries import quote_name

if TYPE_CHECKING:
    from evalstore.store import Progress, Store

__all__ = [
    "FORMATS",
    "LABEL_CONVENTIONS",
    "TASKS",
    "IngestResult",
    "Source",
    "ingest",
    "parse_columns",
]

Source = str | os.PathLike | pl.DataFrame | pl.LazyFrame | Mapping[str, Any] | Any
"""A path, a polars/pandas frame, a pyarrow Table, or a dict of equal-length arrays."""

TASKS = ("verification", "matching", "retrieval", "classification")
LABEL_CONVENTIONS = ("pm1", "01", "bool")
FORMATS = ("parquet", "csv", "tsv", "ndjson", "npz", "voc")
_EXTENSIONS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".ndjson": "ndjson",
    ".jsonl": "ndjson",
    ".npz": "npz",
}
_COLUMNS = ("group_id", "item_id", "score", "label")
BATCH_ROWS = 1 << 20


@dataclass
class IngestResult:
    """What an ingest wrote."""

    run_id: int
    experiment: str
    name: str
    task: str
    rows: int
    lists: int
    not_retrieved: int
    replaced: bool = False
    files: list[str] = field(default_factory=list)
    method: str = "stream"  # "direct": DuckDB read the Parquet files; "stream": batches via polars

    @property
    def ref(self) -> str:
        return f"{self.experiment}/{self.name}"


def parse_columns(
    items: Sequence[str] | Mapping[str, str] | None, known: Sequence[str] = _COLUMNS
) -> dict[str, str]:
    """``["score=distance"]`` -> ``{"score": "distance"}`` (our column = the input's column)."""
    if items is None:
        return {}
    if isinstance(items, Mapping):
        mapping = dict(items)
    else:
        mapping = {}
        for item in items:
            ours, sep, theirs = item.partition("=")
            if not sep or not ours.strip() or not theirs.strip():
                raise InvalidInput(f"--column {item!r} is not OURS=THEIRS (e.g. score=distance)")
            mapping[ours.strip()] = theirs.strip()
    unknown = sorted(set(mapping) - set(known))
    if unknown:
        raise InvalidInput(
            f"--column maps unknown column {unknown[0]!r}; evalstore's columns here are "
            + ", ".join(known)
        )
    return mapping


# -- reading -----------------------------------------------------------------------------


class _Input(NamedTuple):
    label: str  # file path or a short description of an in-memory source
    frame: pl.LazyFrame | pl.DataFrame
    schema: pl.Schema
    path: Path | None = None  # a file's path, and its format
    kind: str | None = None


def _format_of(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in FORMATS:
            raise InvalidInput(f"unknown --format {fmt!r}; use one of {', '.join(FORMATS)}")
        return fmt
    found = _EXTENSIONS.get(path.suffix.lower())
    if found is None:
        raise InvalidInput(
            f"{path}: cannot tell the format from the extension {path.suffix!r}; "
            f"pass --format ({', '.join(FORMATS)})"
        )
    return found


_GLOB = re.compile(r"[*?\[\]{}]")  # what polars and DuckDB would expand in a file name


def _lazy_file(path: Path, fmt: str) -> pl.LazyFrame | pl.DataFrame:
    """The file itself, never the files its name would match as a pattern."""
    if fmt == "parquet":
        return pl.scan_parquet(path, glob=False)
    if fmt in ("csv", "tsv"):
        return pl.scan_csv(
            path, separator="\t" if fmt == "tsv" else ",", infer_schema_length=10_000, glob=False
        )
    if fmt == "ndjson":  # scan_ndjson has no glob=False; a name like run[1].ndjson is read whole
        source = io.BytesIO(path.read_bytes()) if _GLOB.search(str(path)) else path
        return pl.scan_ndjson(source, infer_schema_length=10_000)
    with np.load(path, allow_pickle=False) as npz:
        return _frame_from_mapping({k: npz[k] for k in npz.files}, str(path))


def _frame_from_mapping(data: Mapping[str, Any], label: str) -> pl.DataFrame:
    columns = {}
    for key, values in data.items():
        arr = np.asarray(values)
        if arr.ndim != 1:
            raise InvalidInput(f"{label}: array {key!r} has shape {arr.shape}; expected 1-D")
        columns[key] = arr
    lengths = {k: len(v) for k, v in columns.items()}
    if len(set(lengths.values())) > 1:
        raise InvalidInput(f"{label}: arrays have different lengths: {lengths}")
    return pl.DataFrame(columns)


def _batches(frame: pl.LazyFrame | pl.DataFrame, label: str) -> Iterator[pl.DataFrame]:
    if isinstance(frame, pl.DataFrame):
        if frame.height == 0:
            yield frame
        for offset in range(0, frame.height, BATCH_ROWS):
            yield frame.slice(offset, BATCH_ROWS)
        return
    try:
        yield from frame.collect_batches(chunk_size=BATCH_ROWS)
    except pl.exceptions.PolarsError as exc:
        raise InvalidInput(f"{label}: cannot read: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _open(source: Source, fmt: str | None, index: int) -> _Input:
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise InvalidInput(f"{path}: no such file")
        if path.stat().st_size == 0:
            raise InvalidInput(f"{path}: empty file")
        kind = _format_of(path, fmt)
        try:
            frame = _lazy_file(path, kind)
            schema = _schema(frame)
        except InvalidInput:
            raise
        except (pl.exceptions.PolarsError, OSError, ValueError, EOFError) as exc:
            raise InvalidInput(f"{path}: cannot read as {kind}: {_first_line(exc)}") from None
        if not schema:
            raise InvalidInput(f"{path}: no columns")
        return _Input(str(path), frame, schema, path, kind)
    label = f"input #{index + 1}"
    if isinstance(source, (pl.DataFrame, pl.LazyFrame)):
        frame = source
    elif isinstance(source, Mapping):
        frame = _frame_from_mapping(source, label)
    else:
        try:
            frame = pl.from_pandas(source) if _is_pandas(source) else pl.from_arrow(source)  # type: ignore[assignment]
        except (TypeError, ValueError) as exc:
            raise InvalidInput(
                f"{label}: unsupported data of type {type(source).__name__}: {_first_line(exc)}"
            ) from None
    return _Input(label, frame, _schema(frame))


def _schema(frame: pl.LazyFrame | pl.DataFrame) -> pl.Schema:
    return frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema


def _is_pandas(obj: Any) -> bool:
    return type(obj).__module__.startswith("pandas")


# -- validation --------------------------------------------------------------------------


#: The tables of ranked items (sql/schema/007_lean_rows.sql): item ids as int32 integers or
#: as text, scores as float32 or float64. An ingest writes all its rows to one of them.
def row_table(int_items: bool, float32: bool) -> str:
    """The row table of int32 item ids or text ones, float32 scores or float64 ones."""
    return f"list_rows_{'int' if int_items else 'text'}_{'f32' if float32 else 'f64'}"


ROW_TABLES = frozenset(row_table(i, f) for i in (True, False) for f in (True, False))
_INT32 = (-(1 << 31), (1 << 31) - 1)
MAX_ROWS = (1 << 31) - 1  # seq is an INTEGER: the input position within a run's task


@dataclass
class _Spec:
    task: str
    columns: dict[str, str]
    labels: str
    negate_score: bool
    float32: bool = False  # every input's score column is float32: stored as such (exact)
    int_groups: bool = False  # every input's group ids are integers
    int_items: bool = False  # every input's item ids are integers of int32 range: stored so

    def source_column(self, ours: str) -> str:
        return self.columns.get(ours, ours)

    @property
    def table(self) -> str:
        """The table this ingest writes its rows to."""
        return row_table(self.int_items, self.float32)


def _decide_storage(spec: _Spec, opened: Sequence[_Input]) -> None:
    """Pick the stored score and item types from the inputs' column types (and, for 64-bit
    integer item ids, their range), before the rows are streamed (a column of another type is
    caught later by validation)."""
    score, group = spec.source_column("score"), spec.source_column("group_id")
    spec.float32 = all(source.schema.get(score) == pl.Float32 for source in opened)
    spec.int_groups = all(
        (dtype := source.schema.get(group)) is None or dtype.is_integer() for source in opened
    )
    item = spec.source_column("item_id")
    spec.int_items = all(_int32_column(source, item) for source in opened)


def _int32_column(source: _Input, column: str) -> bool:
    """Whether ``column`` holds integers that fit an INTEGER (reading it when its type does
    not say)."""
    dtype = source.schema.get(column)
    if dtype is None or not dtype.is_integer():
        return False
    if dtype in (pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16):
        return True
    try:
        bounds = source.frame.select(
            pl.col(column).min().alias("lo"), pl.col(column).max().alias("hi")
        )
        lo, hi = (bounds.collect() if isinstance(bounds, pl.LazyFrame) else bounds).row(0)
    except pl.exceptions.PolarsError:  # the streaming read reports what is wrong
        return False
    return lo is None or (lo >= _INT32[0] and hi <= _INT32[1])


def _first_row(mask: pl.Series) -> int:
    return int(mask.arg_true()[0])


def _validate(batch: pl.DataFrame, spec: _Spec, label: str, offset: int) -> pl.DataFrame:
    """Check one batch and return it in the stored layout (without seq)."""
    rename = {theirs: ours for ours, theirs in spec.columns.items()}
    missing_sources = [t for t in rename if t not in batch.columns]
    if missing_sources:
        raise InvalidInput(
            f"{label}: missing column {missing_sources[0]!r} named by --column "
            f"(columns: {', '.join(batch.columns)})"
        )
    shadowed = [c for c in batch.columns if c in set(spec.columns) and c not in rename]
    batch = batch.drop(shadowed).rename(rename)
    required = ["item_id", "score", "label"] + ([] if spec.task == "verification" else ["group_id"])
    for col in required:
        if col not in batch.columns:
            raise InvalidInput(
                f"{label}: missing column {col!r} (columns: {', '.join(batch.columns)}); "
                f"map one with --column {col}=NAME"
            )
    if "group_id" not in batch.columns:
        batch = batch.with_columns(group_id=pl.lit(None, dtype=pl.Int32))

    def where(col: str, mask: pl.Series) -> str:
        return f"{label}: column {col!r} row {offset + _first_row(mask) + 1}"

    for col in ("group_id", "item_id"):
        dtype = batch.schema[col]
        if dtype.is_float():
            raise InvalidInput(
                f"{label}: column {col!r} holds floats ({dtype}); ids must be integers or strings"
            )
        if dtype.is_nested():
            raise InvalidInput(
                f"{label}: column {col!r} holds {dtype}; ids must be integers or strings"
            )
    group, item = batch["group_id"], batch["item_id"]
    if item.null_count():
        raise InvalidInput(f"{where('item_id', item.is_null())} is empty")
    if spec.task != "verification" and group.null_count():
        raise InvalidInput(
            f"{where('group_id', group.is_null())} is empty (task {spec.task} needs a list id)"
        )

    score = batch["score"]
    if score.dtype == pl.String:  # text files: "nan", "inf", "-inf" or a typo
        parsed = score.str.strip_chars().cast(pl.Float64, strict=False)
        bad = parsed.is_null() & score.is_not_null() & (score.str.strip_chars() != "")
        if bad.any():
            raise InvalidInput(f"{where('score', bad)}: {score[_first_row(bad)]!r} is not a number")
        score = parsed
    if not (score.dtype.is_numeric() or score.dtype == pl.Null):
        raise InvalidInput(f"{label}: column 'score' must be numeric, found {score.dtype}")
    score = score.cast(pl.Float32 if spec.float32 else pl.Float64)
    if spec.negate_score:
        score = -score
    nan = score.is_nan().fill_null(False)
    if nan.any():
        raise InvalidInput(
            f"{where('score', nan)} is NaN; scores must be numbers (-inf = not retrieved)"
        )
    pos_inf = (score == np.inf).fill_null(False)
    if pos_inf.any():
        which = "-inf before --negate-score" if spec.negate_score else "+inf"
        raise InvalidInput(
            f"{where('score', pos_inf)} is {which}; only -inf (= not retrieved) is allowed"
        )
    score = pl.select(
        pl.when(score == -np.inf).then(None).otherwise(score).alias("score")
    ).to_series()

    labels = _labels(batch["label"], spec.labels, label, offset)
    # the stream numbers the lists by this key; integer item ids stay integers
    key = group if spec.int_groups else group.cast(pl.String)
    return pl.DataFrame(
        {
            "list_id": key,
            "item": item.cast(pl.Int32) if spec.int_items else item.cast(pl.String),
            "score": score,
            "label": labels,
        }
    )


_CONVENTION_TEXT = {
    "pm1": "1 (positive), -1 (negative) or 0 (ignored)",
    "01": "1 (positive) or 0 (negative)",
    "bool": "true (positive) or false (negative)",
}


def _labels(raw: pl.Series, convention: str, label: str, offset: int) -> pl.Series:
    if raw.null_count():
        row = offset + _first_row(raw.is_null()) + 1
        raise InvalidInput(f"{label}: column 'label' row {row} is empty")
    expect = _CONVENTION_TEXT[convention]
    if convention == "bool":
        if raw.dtype == pl.Boolean:
            out = raw
        elif raw.dtype == pl.String:
            lowered = raw.str.to_lowercase()
            bad = ~lowered.is_in(["true", "false"])
            if bad.any():
                row = offset + _first_row(bad) + 1
                raise InvalidInput(
                    f"{label}: column 'label' row {row}: {raw[_first_row(bad)]!r} is not a label "
                    f"under --labels bool (expected {expect})"
                )
            out = lowered == "true"
        else:
            raise InvalidInput(
                f"{label}: column 'label' holds {raw.dtype}; --labels bool expects {expect}"
            )
        return pl.select(
            pl.when(out).then(1).otherwise(-1).cast(pl.Int8).alias("label")
        ).to_series()
    if raw.dtype == pl.Boolean:
        raise InvalidInput(
            f"{label}: column 'label' holds booleans; pass --labels bool to read them as "
            "true = positive, false = negative"
        )
    if not raw.dtype.is_numeric():
        raise InvalidInput(f"{label}: column 'label' must be numeric ({expect}), found {raw.dtype}")
    allowed = [1, -1, 0] if convention == "pm1" else [1, 0]
    as_float = raw.cast(pl.Float64)
    bad = ~as_float.is_in([float(a) for a in allowed])
    if bad.any():
        i = _first_row(bad)
        hint = "; pass --labels 01 for 0/1 labels" if convention == "pm1" else ""
        raise InvalidInput(
            f"{label}: column 'label' row {offset + i + 1}: {raw[i]!r} is not a label under "
            f"--labels {convention} (expected {expect}){hint}"
        )
    out = as_float.cast(pl.Int8)
    if convention == "01":
        out = pl.select(
            pl.when(out == 1).then(1).otherwise(-1).cast(pl.Int8).alias("label")
        ).to_series()
    return out.alias("label")


# -- groups ------------------------------------------------------------------------------


def _read_groups(source: Source, fmt: str | None, task: str) -> pl.DataFrame:
    label, frame = _open(source, fmt, 0)[:2]
    if isinstance(frame, pl.LazyFrame):
        try:
            frame = frame.collect()
        except pl.exceptions.PolarsError as exc:
            raise InvalidInput(f"{label}: cannot read: {_first_line(exc)}") from None
    if "group_id" not in frame.columns:
        raise InvalidInput(
            f"{label}: missing column 'group_id' (columns: {', '.join(frame.columns)})"
        )
    if frame["group_id"].dtype.is_float():
        raise InvalidInput(
            f"{label}: column 'group_id' holds floats; ids must be integers or strings"
        )
    gid = frame["group_id"].cast(pl.String)
    if gid.null_count() and task != "verification":
        raise InvalidInput(
            f"{label}: column 'group_id' row {_first_row(gid.is_null()) + 1} is empty"
        )
    dup = gid.is_duplicated()
    if dup.any():
        raise InvalidInput(
            f"{label}: column 'group_id' row {_first_row(dup) + 1}: "
            f"{gid[_first_row(dup)]!r} appears twice"
        )
    if "n_positives" in frame.columns:
        npos = frame["n_positives"]
        if not npos.dtype.is_integer() and not (
            npos.dtype.is_float() and (npos.drop_nulls() == npos.drop_nulls().round()).all()
        ):
            raise InvalidInput(
                f"{label}: column 'n_positives' must hold whole numbers, found {npos.dtype}"
            )
        npos = npos.cast(pl.Int64)
        bad = (npos < 0).fill_null(False)
        if bad.any():
            raise InvalidInput(
                f"{label}: column 'n_positives' row {_first_row(bad) + 1} is negative"
            )
    else:
        npos = pl.Series("n_positives", [None] * frame.height, dtype=pl.Int64)
    slice_cols = [c for c in frame.columns if c not in ("group_id", "n_positives")]
    keys = pl.Series("keys", [slice_cols] * frame.height, dtype=pl.List(pl.String))
    values = (
        frame.select(
            pl.concat_list([pl.col(c).cast(pl.String) for c in slice_cols]).alias("values")
        )["values"]
        if slice_cols
        else pl.Series("values", [[]] * frame.height, dtype=pl.List(pl.String))
    )
    return pl.DataFrame(
        {"group_id": gid, "n_positives": npos.cast(pl.Int32), "keys": keys, "values": values}
    )


_NO_GROUPS = pl.DataFrame(
    schema={
        "group_id": pl.String,
        "n_positives": pl.Int32,
        "keys": pl.List(pl.String),
        "values": pl.List(pl.String),
    }
)

# -- streaming into DuckDB ---------------------------------------------------------------


def _arrow_schema(spec: _Spec) -> pa.Schema:
    """The columns of ``spec.table``, as the stream hands them to DuckDB."""
    return pa.schema(
        [
            ("list_id", pa.int32()),
            ("item", pa.int32() if spec.int_items else pa.large_string()),
            ("score", pa.float32() if spec.float32 else pa.float64()),
            ("label", pa.int8()),
            ("seq", pa.int32()),
        ]
    )


def _pair_keys(rows: pl.DataFrame, int_items: bool) -> pl.Series:
    """One 64-bit key per (list_id, item): for int32 item ids the pair itself,
    list_id * 2^32 + (item + 2^31) (equal keys = duplicates), else a hash (equal keys = maybe
    duplicates, which the store then checks exactly). The same kind of key for every batch of
    an ingest, so that pairs repeated across batches compare."""
    if int_items:
        return (
            rows["list_id"].cast(pl.Int64) * (1 << 32) + (rows["item"].cast(pl.Int64) + (1 << 31))
        ).cast(pl.UInt64)
    return rows.select(pl.struct("list_id", "item").hash(seed=0)).to_series()


def _prefetched(items: Iterator[Any], depth: int = 2) -> Generator[Any, None, None]:
    """``items``, produced by a thread up to ``depth`` ahead: reading and validating the next
    batch (polars, without the GIL) overlaps DuckDB's insert of the current one. An error of
    the producer is raised here, where the consumer is; closing this generator stops it."""
    done = object()
    slots: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def hand_over(entry: tuple[bool, Any]) -> bool:
        """Queue an entry unless the consumer has stopped; False when it has."""
        while not stop.is_set():
            try:
                slots.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not hand_over((True, item)):
                    return
            hand_over((True, done))
        except BaseException as exc:  # handed to the consumer, which raises it
            hand_over((False, exc))

    worker = threading.Thread(target=produce, name="evalstore-ingest", daemon=True)
    worker.start()
    try:
        while True:
            ok, item = slots.get()
            if not ok:
                raise item
            if item is done:
                return
            yield item
    finally:
        stop.set()
        worker.join()


class _Stream:
    """Validated batches of every input as one Arrow stream, so that DuckDB inserts them in a
    single statement with bounded memory. Errors raised while DuckDB pulls batches are kept in
    ``error`` (DuckDB wraps them) and re-raised by the caller."""

    def __init__(
        self,
        opened: list[_Input],
        spec: _Spec,
        progress: Progress | None,
        first_list_id: int,
    ) -> None:
        self.opened = opened
        self.spec = spec
        self.progress = progress
        self.error: EvalstoreError | None = None
        self.spans: list[tuple[str, int, int]] = []  # (label, first seq, end seq)
        self.rows = 0
        self.not_retrieved = 0
        self._hashes: list[pl.Series] = []
        self.first_list_id = first_list_id
        self._list_ids: dict[Any, int] = {}  # group id (int or str) -> list_id
        self._feed: Generator[Any, None, None] | None = None
        self.schema = _arrow_schema(spec)

    def reader(self) -> pa.RecordBatchReader:
        self._feed = _prefetched(self._batches())
        return pa.RecordBatchReader.from_batches(self.schema, self._feed)

    def close(self) -> None:
        """Stop the reading thread (when DuckDB stopped pulling before the end)."""
        if self._feed is not None:
            self._feed.close()

    def _batches(self) -> Iterator[pa.RecordBatch]:
        try:
            for label, frame, *_ in self.opened:
                start = self.rows
                for batch in _batches(frame, label):
                    clean = _validate(batch, self.spec, label, self.rows - start)
                    n = clean.height
                    if self.rows + n > MAX_ROWS:
                        raise InvalidInput(
                            f"{label}: more than {MAX_ROWS:,} rows for one task of a run; "
                            "split them over several runs"
                        )
                    clean = clean.with_columns(
                        list_id=self._number_lists(clean["list_id"]),
                        seq=pl.int_range(self.rows, self.rows + n, dtype=pl.Int32),
                    )
                    self.not_retrieved += clean["score"].null_count()
                    self._hashes.append(_pair_keys(clean, self.spec.int_items))
                    self.rows += n
                    table = clean.to_arrow(compat_level=pl.CompatLevel.oldest())
                    if not table.schema.equals(self.schema):
                        table = table.cast(self.schema)
                    yield from table.to_batches()
                    if self.progress is not None:
                        self.progress("ingest", self.rows, None)
                if self.rows == start:
                    raise InvalidInput(f"{label}: no rows")
                self.spans.append((label, start, self.rows))
        except EvalstoreError as exc:
            self.error = exc
            raise

    def _number_lists(self, group_id: pl.Series) -> pl.Series:
        """The list ids of a batch: ``first_list_id`` + 0, 1, 2, ... in order of first
        appearance of the group ids (NULL included: the one list of a verification run)."""
        seen, first = self._list_ids, self.first_list_id
        keys = group_id.drop_nulls().unique(maintain_order=True).to_list()
        for key in keys:
            seen.setdefault(key, first + len(seen))
        _check_list_ids(first, len(seen) + 1)
        ids = group_id.replace_strict(
            keys, [seen[k] for k in keys], default=None, return_dtype=pl.Int32
        )
        if group_id.null_count():  # rows without a list id form one list of their own
            ids = ids.fill_null(seen.setdefault(None, first + len(seen)))
        return ids.alias("list_id")

    def list_names(self) -> pl.DataFrame:
        """One row per list: its group id as stored (text, or NULL) and its list id."""
        return pl.DataFrame(
            {
                "group_id": [None if k is None else str(k) for k in self._list_ids],
                "list_id": list(self._list_ids.values()),
            },
            schema={"group_id": pl.String, "list_id": pl.Int32},
        )

    def maybe_duplicates(self) -> bool:
        """False when every (list_id, item) key is distinct, which proves no duplicate."""
        if not self._hashes:
            return False
        hashes = pl.concat(self._hashes)
        return hashes.n_unique() < hashes.len()

    def n_lists(self) -> int:
        return len(self._list_ids)


# -- the transaction ---------------------------------------------------------------------


def ingest(
    store: Store,
    data: Source | Sequence[Source],
    *,
    task: str,
    run: str,
    experiment: str | None = None,
    fmt: str | None = None,
    columns: Sequence[str] | Mapping[str, str] | None = None,
    negate_score: bool = False,
    labels: str = "pm1",
    groups: Source | None = None,
    groups_format: str | None = None,
    voc_gt: str | os.PathLike[str] | None = None,
    pairs: Source | None = None,
    replace: bool = False,
    append: bool = False,
    params: Sequence[str] | Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
    notes: str | None = None,
    created_at: str | datetime | None = None,
    git_commit: str | bool | None = True,
    progress: Progress | None = None,
    **geometry_options: Any,
) -> IngestResult:
    """Ingest ranked lists into a run, all or nothing.

    Args:
        store: an open, writable :class:`~evalstore.Store`.
        data: one source or several (their rows are concatenated in the given order): a path
            (Parquet, CSV, TSV, NDJSON, ``.npz``), a polars or pandas frame, a pyarrow Table or
            a dict of 1-D arrays. Columns ``group_id`` (optional for verification),
            ``item_id``, ``score``, ``label``.
        task: ``verification``, ``matching``, ``retrieval`` or ``classification`` (ranked
            lists); ``keypoints`` and ``outcomes`` go to :mod:`evalstore.keypoints`, with
            ``pairs`` and the ``geometry_options`` (``homography_dir``, ``disparity_dir``,
            ``disparity_scale``, ``ransac_threshold``).
        run: ``NAME`` or ``EXPERIMENT/NAME``.
        experiment: the experiment when ``run`` is a bare name (default ``default``).
        fmt: file format, overriding the extension; ``voc`` reads PASCAL VOC classification
            result files (``comp1_cls_test_<class>.txt``) with ground truth from ``voc_gt``.
        columns: ``{"score": "distance"}`` or ``["score=distance"]``: where our columns are.
        negate_score: store ``-score`` (for distances: smaller = better).
        labels: ``pm1`` (+1/-1/0, default), ``01`` (1 = positive, 0 = negative) or ``bool``.
        groups: per-list metadata (``group_id``, optional ``n_positives``, slice columns).
        voc_gt: with ``fmt="voc"``, the folder of ``<class>_<set>.txt`` ground-truth files.
        replace: replace an existing run of that name (atomically).
        append: add this task to an existing run that does not have it yet.
        params, tags, notes, created_at, git_commit: run metadata (``git_commit=True`` reads
            the commit of the current directory).
        progress: called with (stage, rows done, total or None).

    Returns:
        An :class:`IngestResult`.

    Raises:
        InvalidInput: bad data or options; nothing is written.
        RunExists: the run exists and neither ``replace`` nor ``append`` was given.
    """
    if task in ("keypoints", "outcomes"):
        from evalstore import keypoints

        common = dict(
            run=run,
            experiment=experiment,
            fmt=fmt,
            columns=columns,
            replace=replace,
            append=append,
            params=params,
            tags=tags,
            notes=notes,
            created_at=created_at,
            git_commit=git_commit,
            progress=progress,
        )
        if task == "outcomes":
            return keypoints.ingest_outcomes(store, data, **common)
        return keypoints.ingest_keypoints(store, data, pairs=pairs, **geometry_options, **common)
    if task not in TASKS:
        raise InvalidInput(
            f"unknown task {task!r}; use one of {', '.join((*TASKS, 'keypoints', 'outcomes'))}"
        )
    if labels not in LABEL_CONVENTIONS:
        raise InvalidInput(
            f"unknown --labels {labels!r}; use one of {', '.join(LABEL_CONVENTIONS)}"
        )
    if replace and append:
        raise InvalidInput("--replace and --append exclude each other")
    meta = runs.RunMeta.build(run, experiment, params, tags, notes, created_at, git_commit)
    spec = _Spec(task, parse_columns(columns), labels, negate_score)
    sources = list(data) if isinstance(data, (list, tuple)) else [data]
    if not sources:
        raise InvalidInput("nothing to ingest: no input given")
    if fmt == "voc":
        from evalstore.formats.voc import read_classification

        if task != "classification":
            raise InvalidInput(f"--format voc holds classification results, not {task}")
        if voc_gt is None:
            raise InvalidInput("--format voc needs --voc-gt DIR (the folder of <class>_<set>.txt)")
        sources, fmt, spec.columns, spec.labels = (
            [read_classification(sources, voc_gt)],
            None,
            {},
            "pm1",
        )
    opened = [_open(s, fmt, i) for i, s in enumerate(sources)]
    group_frame = _read_groups(groups, groups_format, task) if groups is not None else None
    target = _Target(meta, replace, append, group_frame, groups)
    plan = _direct_plan(store.con, opened, spec)
    if plan is not None:
        try:
            return _write(
                store,
                target,
                spec,
                lambda first: _insert_direct(store.con, plan, spec, first, progress),
            )
        except _Recheck:
            pass  # the streaming path below finds the same and says where
    _decide_storage(spec, opened)
    return _write(
        store, target, spec, lambda first: _insert_stream(store.con, opened, spec, first, progress)
    )


@dataclass
class _Target:
    """The run an ingest writes, and its list metadata."""

    meta: runs.RunMeta
    replace: bool
    append: bool
    group_frame: pl.DataFrame | None
    groups_source: Source | None


@dataclass
class _Written:
    """What one insert of a run's rows did."""

    rows: int
    not_retrieved: int
    names: pl.DataFrame  # group_id (text or NULL) and list_id of each list
    ids: int  # list ids taken, from the first one on (at least the number of lists)
    spans: list[tuple[str, int, int]]  # (input label, first seq, end seq)
    maybe_duplicates: bool
    method: str


def _write(
    store: Store, target: _Target, spec: _Spec, insert: Callable[[int], _Written]
) -> IngestResult:
    """One transaction: the run, its rows (``insert``, given the first free list id), its
    groups rows and the checks that need them."""
    con, task, meta = store.con, spec.task, target.meta
    with store.transaction():
        run_id, replaced = runs.open_run(
            con,
            meta,
            replace=target.replace,
            append=target.append,
            has_task=lambda rid: (
                queries.fetch_rows(con, "store/run_has_task", {"run_id": rid, "task": task})[0][0]
                > 0
            ),
            task=task,
        )
        first_list_id = queries.fetch_rows(con, "store/next_list_id")[0][0]
        written = insert(first_list_id)
        lists = written.names.join(  # metadata rows without scores get no list_id
            target.group_frame if target.group_frame is not None else _NO_GROUPS,
            on="group_id",
            how="full",
            coalesce=True,
            nulls_equal=True,
        )
        con.register("_groups_raw", lists.to_arrow())
        try:
            con.execute(queries.load("store/stage_groups").text)
            queries.run(con, "store/insert_groups", {"run_id": run_id, "task": task})
        finally:
            with contextlib.suppress(duckdb.Error):
                con.execute("drop view if exists _groups")
            with contextlib.suppress(duckdb.Error):
                con.unregister("_groups_raw")
        if written.maybe_duplicates:
            _check_duplicates(con, spec.table, first_list_id, written)
        if target.group_frame is not None:
            low = queries.fetch_rows(
                con, "store/n_positives_below_labels", {"run_id": run_id, "task": task}
            )
            if low:
                gid, n_pos, count = low[0]
                raise InvalidInput(
                    f"{_label_of(target.groups_source)}: list {gid!r} has n_positives {n_pos} "
                    f"but {count} positive labels; n_positives may only add positives not "
                    "retrieved"
                )
        queries.run(con, "store/set_next_list_id", {"next": first_list_id + written.ids})
    return IngestResult(
        run_id=run_id,
        experiment=meta.experiment,
        name=meta.name,
        task=task,
        rows=written.rows,
        lists=written.names.height,
        not_retrieved=written.not_retrieved,
        replaced=replaced,
        files=[label for label, _, _ in written.spans],
        method=written.method,
    )


def rows_sql(name: str, table: str, **parts: str) -> str:
    """A query written for any row table (``{rows}``), for ``table`` (queries.template)."""
    return queries.template(name, rows=queries.quote_ident(table, ROW_TABLES), **parts)


def _check_list_ids(first: int, n: int) -> None:
    """Refuse to give out list ids beyond INTEGER (the next free one must fit too)."""
    if first + n > _INT32[1]:
        raise EvalstoreError(
            f"this store has given out {first:,} list ids and has too few left for "
            f"{n:,} more; export its runs and import them into a new store (which numbers "
            "the lists again from 0)"
        )


def _check_duplicates(
    con: duckdb.DuckDBPyConnection, table: str, first_list_id: int, written: _Written
) -> None:
    text = rows_sql("store/first_duplicate", table)
    params = {"lo": first_list_id, "hi": first_list_id + written.ids}
    dup = con.execute(text, queries.bind(text, params)).fetchall()
    if not dup:
        return
    group_id, item_id, first, second = dup[0]
    what = (
        f"item_id {item_id!r}"
        if group_id is None
        else f"(group_id, item_id) = ({group_id!r}, {item_id!r})"
    )
    here, there = _where(written.spans, second), _where(written.spans, first)
    if here.rsplit(" row ", 1)[0] == there.rsplit(" row ", 1)[0]:
        there = "row " + there.rsplit(" row ", 1)[1]
    raise InvalidInput(f"{here}: duplicate {what}, first seen at {there}")


def _insert_stream(
    con: duckdb.DuckDBPyConnection,
    opened: list[_Input],
    spec: _Spec,
    first_list_id: int,
    progress: Progress | None,
) -> _Written:
    """The streaming path: every input (any format) validated batch by batch, all of them
    one DuckDB statement's source."""
    stream = _Stream(opened, spec, progress, first_list_id)
    con.register("_batch", stream.reader())
    try:
        con.execute(rows_sql("store/insert_rows", spec.table))
    except duckdb.Error:
        if stream.error is not None:
            raise stream.error from None
        raise
    finally:
        stream.close()
        with contextlib.suppress(duckdb.Error):  # fails in an aborted transaction
            con.unregister("_batch")
    if stream.error is not None:  # raised where DuckDB did not pass it on
        raise stream.error
    return _Written(
        rows=stream.rows,
        not_retrieved=stream.not_retrieved,
        names=stream.list_names(),
        ids=stream.n_lists(),
        spans=stream.spans,
        maybe_duplicates=stream.maybe_duplicates(),
        method="stream",
    )


# -- the direct path for Parquet ----------------------------------------------------------


class _Recheck(Exception):
    """The direct path met something (a bad value, a duplicate, an unreadable file) that the
    streaming path then finds again and reports with its file, column and row."""


_RECHECK = "evalstore-recheck"  # the error() text of a value the direct insert refuses
_BITMAP_MIN = 1 << 26  # (list, item) pairs the duplicate check may always track
_BITMAP_MAX = 10**9  # the most bitstring_agg takes
_MIN_ROW_GROUP = 8192  # mean rows per row group below which DuckDB's insert is the slower
# list ids a direct ingest may leave unused (group ids absent from the files) beyond one per
# list: more, and the streaming path numbers the lists densely instead
_SPARE_IDS = 1 << 10


@dataclass
class _DirectPlan:
    """Parquet inputs with integer ids, read by DuckDB straight into the row table."""

    files: list[tuple[str, int, bool]]  # (path, rows, whether a score stands for -inf)
    group: str | None  # source columns (group None: a verification run's one list)
    item: str
    score: str
    label: str
    gmin: int
    groups: int  # gmax - gmin + 1: the list ids taken
    imin: int
    items: int  # imax - imin + 1
    rows: int


def _direct_plan(
    con: duckdb.DuckDBPyConnection, opened: Sequence[_Input], spec: _Spec
) -> _DirectPlan | None:
    """A plan when every input is a Parquet file whose ids are integers of int32 range, its
    scores floats and its labels of the declared convention's type, with few enough (list,
    item) pairs for the duplicate check's bitmap and dense enough list ids; else None (the
    streaming path takes any input)."""
    if not opened or any(
        source.kind != "parquet" or source.path is None or _GLOB.search(str(source.path))
        for source in opened
    ):
        return None
    sources = _sources(spec)
    if any(s not in source.schema for s in spec.columns.values() for source in opened):
        return None  # a --column names a missing column: the streaming path says so
    if len(set(spec.columns.values())) < len(spec.columns):
        return None  # two of our columns from one: the streaming path decides
    for source in opened:  # DuckDB matches names without case, polars with it
        if len({name.lower() for name in source.schema}) < len(source.schema):
            return None
    group, item, score, label = (sources[c] for c in _COLUMNS)
    if item is None or score is None or label is None:
        return None
    if any("\x00" in c for c in (group, item, score, label) if c is not None):
        return None  # no SQL identifier holds a NUL
    with_group = {group is not None and group in source.schema for source in opened}
    if len(with_group) != 1 or (with_group == {False} and spec.task != "verification"):
        return None
    has_group = with_group == {True}
    for source in opened:
        schema = source.schema
        if not all(c in schema for c in (item, score, label)):
            return None
        ids = [schema[item]] + ([schema[group]] if has_group else [])
        if not all(d.is_integer() and d != pl.UInt64 for d in ids):
            return None
        if schema[score] not in (pl.Float32, pl.Float64):
            return None
        if (schema[label] == pl.Boolean) != (spec.labels == "bool") or not (
            schema[label] == pl.Boolean or schema[label].is_integer()
        ):
            return None
    files, bounds = [], []
    for source in opened:
        path = str(source.path)
        text = queries.template(
            "store/direct_stats",
            group=quote_name(group) if has_group else "0",
            item=quote_name(item),
            score=quote_name(score),
            file=queries.literal(path),
        )
        try:
            stats = con.execute(text).fetchall()[0]
        except duckdb.InterruptException:
            raise
        except duckdb.Error:  # unreadable: the streaming path says why
            return None
        n, n_groups, n_items, low, high, row_groups = stats[:6]
        if n == 0 or n_groups < n or n_items < n:  # the streaming path says which row
            return None
        if row_groups > 1 and n < _MIN_ROW_GROUP * row_groups:
            return None  # many tiny row groups: polars reads them faster
        # does the stored score (negated or not) take -inf, which stands for "not retrieved"?
        not_retrieved = (high == math.inf) if spec.negate_score else (low == -math.inf)
        files.append((path, int(n), not_retrieved))
        bounds.append(stats[6:])
    rows = sum(n for _, n, _ in files)
    gmin, gmax = min(b[0] for b in bounds), max(b[1] for b in bounds)
    imin, imax = min(b[2] for b in bounds), max(b[3] for b in bounds)
    n_groups, n_items = gmax - gmin + 1, imax - imin + 1
    if (
        rows > MAX_ROWS
        or imin < _INT32[0]
        or imax > _INT32[1]
        or n_groups > 2 * rows + _SPARE_IDS  # too sparse for any count of lists
        or n_groups * n_items > min(_BITMAP_MAX, max(_BITMAP_MIN, 2 * rows))
    ):
        return None
    spec.float32 = all(source.schema[score] == pl.Float32 for source in opened)
    spec.int_items = spec.int_groups = True
    return _DirectPlan(
        files, group if has_group else None, item, score, label, gmin, n_groups, imin, n_items, rows
    )


_OPTIMIZER_LOCK = threading.Lock()  # one direct insert at a time changes the setting


@contextlib.contextmanager
def _unplanned_casts(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """DuckDB's statistics propagation drops the range checks of casts that a file's min/max
    statistics say cannot fail (an int64 id cast to INTEGER, a label to TINYINT); statistics
    that lie would then truncate values silently. Without it, such a value stops the insert.
    The setting is global to the database instance: it is set and restored on a connection of
    its own (the ingest's transaction may have failed by then), whatever stops the insert."""
    with _OPTIMIZER_LOCK:
        side = con.cursor()
        try:
            kept = str(queries.fetch_rows(side, "store/disabled_optimizers")[0][0] or "")
            names = [n.strip() for n in kept.split(",") if n.strip()]
            if "statistics_propagation" not in names:
                names.append("statistics_propagation")
            queries.run(side, "store/set_disabled_optimizers", {"names": ",".join(names)})
            try:
                yield
            finally:
                queries.run(side, "store/set_disabled_optimizers", {"names": kept})
        finally:
            side.close()


def _marks(
    bitmap: bytes, lists: int, items: int, slice_bits: int = 1 << 24
) -> tuple[int, np.ndarray]:
    """From the (list, item) bitmap of direct_check (a bitstring as bytes: bit list * items +
    item, after the padding bits that fill its first byte), the number of pairs marked and
    the lists with a mark. Unpacked at most about ``slice_bits`` bits at a time."""
    packed = np.frombuffer(bitmap, dtype=np.uint8)
    pad = len(packed) * 8 - lists * items
    if not 0 <= pad < 8:
        raise AssertionError(f"a bitmap of {len(packed)} bytes for {lists} x {items} pairs")

    def unpack(lo: int, hi: int) -> np.ndarray:  # bits [lo, hi) of the list-item range
        lo, hi = lo + pad, hi + pad
        return np.unpackbits(packed[lo // 8 : (hi + 7) // 8])[lo % 8 : lo % 8 + hi - lo]

    pairs, present = 0, np.zeros(lists, dtype=np.bool_)
    if items <= slice_bits:  # whole lists per slice
        step = slice_bits // items
        for first in range(0, lists, step):
            last = min(lists, first + step)
            bits = unpack(first * items, last * items)
            pairs += int(np.count_nonzero(bits))
            present[first:last] = bits.reshape(last - first, items).any(axis=1)
    else:  # a list over several slices
        for list_ in range(lists):
            for lo in range(list_ * items, (list_ + 1) * items, slice_bits):
                n = int(np.count_nonzero(unpack(lo, min((list_ + 1) * items, lo + slice_bits))))
                pairs += n
                present[list_] |= n > 0
    return pairs, np.flatnonzero(present)


def _sources(spec: _Spec) -> dict[str, str | None]:
    """The input column each of our columns is read from, as _validate resolves them: a
    mapped column from its source; an unmapped one from the column of its own name, unless
    that column is the source of another mapping (None: no such column)."""
    mapped_from = set(spec.columns.values())
    return {
        ours: spec.columns.get(ours, None if ours in mapped_from else ours) for ours in _COLUMNS
    }


def _direct_sql(plan: _DirectPlan, spec: _Spec, path: str, not_retrieved: bool) -> str:
    """The insert of one file. Scores and +1/-1/0 labels are stored as they are and checked
    afterwards (direct_check); -inf becomes NULL only in a file that has one, and 0/1 or
    boolean labels are turned into +1/-1 (any other value stops the insert)."""
    score = quote_name(plan.score)
    if spec.negate_score:
        score = f"(-{score})"
    if not_retrieved:
        score = f"case when {score} = '-inf' then null else {score} end"
    label = quote_name(plan.label)
    labels = {
        "pm1": label,
        "01": f"case {label} when 1 then 1 when 0 then -1 else error('{_RECHECK}') end",
        "bool": f"case when {label} then 1 when not {label} then -1 else error('{_RECHECK}') end",
    }
    return rows_sql(
        "store/insert_parquet",
        spec.table,
        group=quote_name(plan.group) if plan.group is not None else "0",
        item=quote_name(plan.item),
        score=score,
        label=labels[spec.labels],
        file=queries.literal(path),
    )


def _insert_direct(
    con: duckdb.DuckDBPyConnection,
    plan: _DirectPlan,
    spec: _Spec,
    first_list_id: int,
    progress: Progress | None,
) -> _Written:
    """DuckDB reads the files into the row table (a 0/1 or boolean label of another value
    aborts the insert); one pass over the inserted rows then marks each (list, item) pair in
    a bitmap (fewer marks than rows: a duplicate), which also gives the lists that occur, and
    counts the values the streaming path refuses. A list's id is its group id + a fixed
    offset. The plan's ranges come from the files' statistics, which are not trusted: a row
    outside them stops the insert or is missed by the count, and either way the streaming
    path runs instead."""
    if first_list_id + plan.groups + 1 > _INT32[1]:
        raise _Recheck  # the streaming path takes one id per list, or says none are left
    try:
        with _unplanned_casts(con):
            seq = 0
            for path, n, not_retrieved in plan.files:
                if progress is not None:
                    progress("ingest", seq, plan.rows)
                text = _direct_sql(plan, spec, path, not_retrieved)
                params = {"list_offset": first_list_id - plan.gmin, "seq_offset": seq}
                con.execute(text, queries.bind(text, params))
                seq += n
    except duckdb.InterruptException:
        raise  # the user stopped it: not a reason to try the streaming path
    except duckdb.Error:
        raise _Recheck from None
    text = rows_sql("store/direct_check", spec.table)
    params = {"lo": first_list_id, "lists": plan.groups, "items": plan.items, "imin": plan.imin}
    try:
        bitmap, rows, bad, not_retrieved = con.execute(text, queries.bind(text, params)).fetchall()[
            0
        ]
    except duckdb.InterruptException:
        raise
    except duckdb.Error:  # an item id outside the range the statistics gave
        raise _Recheck from None
    if rows != plan.rows:  # a list id outside the range the statistics gave
        raise _Recheck
    pairs, present = _marks(bitmap, plan.groups, plan.items)
    if bad or pairs < rows or plan.groups > 2 * len(present) + _SPARE_IDS:
        # a bad value or a duplicate (the streaming path says where), or sparse group ids
        # (the streaming path numbers the lists densely)
        raise _Recheck
    names = pl.DataFrame(
        {
            "group_id": pl.Series(present + plan.gmin).cast(pl.String)
            if plan.group is not None
            else pl.Series([None], dtype=pl.String),
            "list_id": pl.Series(present + first_list_id).cast(pl.Int32),
        }
    )
    if progress is not None:
        progress("ingest", plan.rows, plan.rows)
    spans, start = [], 0
    for path, n, _ in plan.files:
        spans.append((path, start, start + n))
        start += n
    return _Written(
        rows=plan.rows,
        not_retrieved=int(not_retrieved),
        names=names,
        ids=plan.groups,
        spans=spans,
        maybe_duplicates=False,
        method="direct",
    )


def _label_of(source: Any) -> str:
    return str(source) if isinstance(source, (str, os.PathLike)) else "groups"


def _where(spans: list[tuple[str, int, int]], seq: int) -> str:
    for label, start, end in spans:
        if start <= seq < end:
            return f"{label} row {seq - start + 1}"
    return f"input position {seq}"
