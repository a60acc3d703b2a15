"""Ingest of ranked lists (scores and labels) into a run.

Files are read with polars in bounded batches, validated column by column, and inserted in
one transaction per run: a run is either fully there or not at all, whatever goes wrong
(bad input, a crash, ``kill -9``).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from evalstore import queries, runs
from evalstore.errors import InvalidInput

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


def _lazy_file(path: Path, fmt: str) -> pl.LazyFrame | pl.DataFrame:
    if fmt == "parquet":
        return pl.scan_parquet(path)
    if fmt in ("csv", "tsv"):
        return pl.scan_csv(
            path, separator="\t" if fmt == "tsv" else ",", infer_schema_length=10_000
        )
    if fmt == "ndjson":
        return pl.scan_ndjson(path, infer_schema_length=10_000)
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
        return _Input(str(path), frame, schema)
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


@dataclass
class _Spec:
    task: str
    columns: dict[str, str]
    labels: str
    negate_score: bool
    float32: bool = False  # every input's score column is float32: stored as such (exact)
    int_groups: bool = False  # every input's group ids are integers: lists numbered by value
    int_items: bool = False  # every input's item ids are integers (of int64 range): stored so

    def source_column(self, ours: str) -> str:
        return self.columns.get(ours, ours)


def _decide_storage(spec: _Spec, schemas: Sequence[pl.Schema]) -> None:
    """Pick the stored score type and how lists are numbered from the inputs' column types,
    before any row is read (a column of another type is caught later by validation)."""
    score, group = spec.source_column("score"), spec.source_column("group_id")
    spec.float32 = all(schema.get(score) == pl.Float32 for schema in schemas)
    spec.int_groups = all(
        (dtype := schema.get(group)) is None or dtype.is_integer() for schema in schemas
    )
    item = spec.source_column("item_id")
    spec.int_items = all(
        (dtype := schema.get(item)) is not None and dtype.is_integer() and dtype != pl.UInt64
        for schema in schemas
    )


def _nulls(n: int, dtype: pl.DataType) -> pl.Series:
    return pl.repeat(None, n, dtype=dtype, eager=True)


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
    no_item = _nulls(batch.height, pl.String if spec.int_items else pl.Int64)
    no_score = _nulls(batch.height, pl.Float64 if spec.float32 else pl.Float32)
    return pl.DataFrame(
        {
            "list_id": key,
            "item_num": item.cast(pl.Int64) if spec.int_items else no_item,
            "item_key": no_item if spec.int_items else item.cast(pl.String),
            "score": no_score if spec.float32 else score,
            "score32": score if spec.float32 else no_score,
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
    label, frame, _ = _open(source, fmt, 0)
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

_ARROW_SCHEMA = pa.schema(
    [
        ("list_id", pa.int32()),
        ("item_num", pa.int64()),
        ("item_key", pa.large_string()),
        ("score", pa.float64()),
        ("score32", pa.float32()),
        ("label", pa.int8()),
        ("seq", pa.int64()),
    ]
)


def _pair_keys(rows: pl.DataFrame, int_items: bool) -> pl.Series:
    """One 64-bit key per (list_id, item): the pair itself, list_id * 2^32 + item, when the
    item ids are integers in [0, 2^32) (equal keys = duplicates), else a hash (equal keys =
    maybe duplicates, which the store then checks exactly)."""
    if int_items:
        item = rows["item_num"]
        low, high = item.min(), item.max()
        if low is not None and high is not None and low >= 0 and high < 1 << 32:
            return (rows["list_id"].cast(pl.Int64) * (1 << 32) + item).cast(pl.UInt64)
    item_column = "item_num" if int_items else "item_key"
    return rows.select(pl.struct("list_id", item_column).hash(seed=0)).to_series()


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
        self.error: InvalidInput | None = None
        self.spans: list[tuple[str, int, int]] = []  # (label, first seq, end seq)
        self.rows = 0
        self.not_retrieved = 0
        self._hashes: list[pl.Series] = []
        self.first_list_id = first_list_id
        self._list_ids: dict[Any, int] = {}  # group id (int or str) -> list_id
        self._feed: Generator[Any, None, None] | None = None

    def reader(self) -> pa.RecordBatchReader:
        self._feed = _prefetched(self._batches())
        return pa.RecordBatchReader.from_batches(_ARROW_SCHEMA, self._feed)

    def close(self) -> None:
        """Stop the reading thread (when DuckDB stopped pulling before the end)."""
        if self._feed is not None:
            self._feed.close()

    def _batches(self) -> Iterator[pa.RecordBatch]:
        try:
            for label, frame, _ in self.opened:
                start = self.rows
                for batch in _batches(frame, label):
                    clean = _validate(batch, self.spec, label, self.rows - start)
                    n = clean.height
                    clean = clean.with_columns(
                        seq=pl.int_range(self.rows, self.rows + n, dtype=pl.Int64),
                        list_id=self._number_lists(clean["list_id"]),
                    )
                    self.not_retrieved += clean[
                        "score32" if self.spec.float32 else "score"
                    ].null_count()
                    self._hashes.append(_pair_keys(clean, self.spec.int_items))
                    self.rows += n
                    table = clean.to_arrow(compat_level=pl.CompatLevel.oldest())
                    if not table.schema.equals(_ARROW_SCHEMA):
                        table = table.cast(_ARROW_SCHEMA)
                    yield from table.to_batches()
                    if self.progress is not None:
                        self.progress("ingest", self.rows, None)
                if self.rows == start:
                    raise InvalidInput(f"{label}: no rows")
                self.spans.append((label, start, self.rows))
        except InvalidInput as exc:
            self.error = exc
            raise

    def _number_lists(self, group_id: pl.Series) -> pl.Series:
        """The list ids of a batch: ``first_list_id`` + 0, 1, 2, ... in order of first
        appearance of the group ids (NULL included: the one list of a verification run)."""
        seen, first = self._list_ids, self.first_list_id
        keys = group_id.drop_nulls().unique(maintain_order=True).to_list()
        for key in keys:
            seen.setdefault(key, first + len(seen))
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
    exp, name = meta.experiment, meta.name
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
    _decide_storage(spec, [source.schema for source in opened])
    group_frame = _read_groups(groups, groups_format, task) if groups is not None else None

    con = store.con
    with store.transaction():
        run_id, replaced = runs.open_run(
            con,
            meta,
            replace=replace,
            append=append,
            has_task=lambda rid: (
                queries.fetch_rows(con, "store/run_has_task", {"run_id": rid, "task": task})[0][0]
                > 0
            ),
            task=task,
        )
        first_list_id = queries.fetch_rows(con, "store/next_list_id")[0][0]
        stream = _Stream(opened, spec, progress, first_list_id)
        reader = stream.reader()
        con.register("_batch", reader)
        try:
            queries.run(con, "store/insert_scores", {"run_id": run_id, "task": task})
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
        lists = stream.list_names().join(  # metadata rows without scores get no list_id
            group_frame if group_frame is not None else _NO_GROUPS,
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
        spans = stream.spans
        if stream.maybe_duplicates():
            dup = queries.fetch_rows(con, "store/first_duplicate", {"run_id": run_id, "task": task})
            if dup:
                group_id, item_id, first, second = dup[0]
                what = (
                    f"item_id {item_id!r}"
                    if group_id is None
                    else f"(group_id, item_id) = ({group_id!r}, {item_id!r})"
                )
                here, there = _where(spans, second), _where(spans, first)
                if here.rsplit(" row ", 1)[0] == there.rsplit(" row ", 1)[0]:
                    there = "row " + there.rsplit(" row ", 1)[1]
                raise InvalidInput(f"{here}: duplicate {what}, first seen at {there}")
        if group_frame is not None:
            low = queries.fetch_rows(
                con, "store/n_positives_below_labels", {"run_id": run_id, "task": task}
            )
            if low:
                gid, n_pos, count = low[0]
                raise InvalidInput(
                    f"{_label_of(groups)}: list {gid!r} has n_positives {n_pos} but {count} "
                    "positive labels; n_positives may only add positives not retrieved"
                )
        n_lists = stream.n_lists()
        queries.run(con, "store/set_next_list_id", {"next": first_list_id + n_lists})
    return IngestResult(
        run_id=run_id,
        experiment=exp,
        name=name,
        task=task,
        rows=stream.rows,
        lists=n_lists,
        not_retrieved=stream.not_retrieved,
        replaced=replaced,
        files=[label for label, _, _ in spans],
    )


def _label_of(source: Any) -> str:
    return str(source) if isinstance(source, (str, os.PathLike)) else "groups"


def _where(spans: list[tuple[str, int, int]], seq: int) -> str:
    for label, start, end in spans:
        if start <= seq < end:
            return f"{label} row {seq - start + 1}"
    return f"input position {seq}"
