"""The streaming path: every input (any format) read with polars in bounded batches,
validated, numbered into lists and handed to DuckDB as one Arrow stream, so that one
statement inserts a run's rows with bounded memory. Reading and validating the next batch
runs in a thread beside DuckDB's insert of the current one."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from evalstore.db.schema import rows_sql
from evalstore.errors import InvalidInput
from evalstore.ingest.handoff import handed_over
from evalstore.ingest.sources import Input, batches, parquet_rows
from evalstore.ingest.validate import MAX_ROWS, Spec, validate_batch
from evalstore.ingest.write import Written, check_list_ids

if TYPE_CHECKING:
    from evalstore.db.connection import Progress

__all__ = ["Stream", "insert_stream"]


def _arrow_schema(spec: Spec) -> pa.Schema:
    """The columns of ``spec.table``, as the stream hands them to DuckDB."""
    return pa.schema(
        [
            ("list_id", pa.int32()),
            ("item", pa.int32() if spec.int_items else pa.large_string()),
            ("score", pa.float32() if spec.float32 else pa.float64()),
            ("label", pa.int8()),
            *([("gain", pa.float64())] if spec.gains else []),
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
    return handed_over(lambda put: all(put(item) for item in items), depth=depth,
                       name="evalstore-ingest")  # fmt: skip


class Stream:
    """Validated batches of every input as one Arrow stream, so that DuckDB inserts them in a
    single statement with bounded memory. Whatever stops the stream while DuckDB pulls its
    batches (an error, a KeyboardInterrupt, in any thread) is kept in ``error``, since DuckDB
    wraps it in an error of its own, and re-raised by the caller: never an end of input."""

    def __init__(
        self,
        opened: list[Input],
        spec: Spec,
        progress: Progress | None,
        first_list_id: int,
    ) -> None:
        self.opened = opened
        self.spec = spec
        self.progress = progress
        self.error: BaseException | None = None
        self.spans: list[tuple[str, int, int]] = []  # (label, first seq, end seq)
        self.rows = 0
        self.not_retrieved = 0
        self.positives = 0
        self.negatives = 0
        self._hashes: list[pl.Series] = []
        self.first_list_id = first_list_id
        self._list_ids: dict[Any, int] = {}  # group id (int or str) -> list_id
        self._feed: Generator[Any, None, None] | None = None
        self.schema = _arrow_schema(spec)

    def reader(self) -> pa.RecordBatchReader:
        self._feed = _prefetched(self._rows())
        return pa.RecordBatchReader.from_batches(self.schema, self._kept(self._feed))

    def _kept(self, feed: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``feed``, with what stops it kept in ``error`` (where the consumer pulls)."""
        try:
            yield from feed
        except GeneratorExit:
            raise
        except BaseException as exc:
            self.error = self.error or exc
            raise

    def close(self) -> None:
        """Stop the reading thread (when DuckDB stopped pulling before the end)."""
        if self._feed is not None:
            self._feed.close()

    def _rows(self) -> Iterator[pa.RecordBatch]:
        try:
            for label, frame, _, path, kind in self.opened:
                start = self.rows
                for batch in batches(frame, label):
                    clean = validate_batch(batch, self.spec, label, self.rows - start)
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
                    self.positives += int((clean["label"] == 1).sum())
                    self.negatives += int((clean["label"] == -1).sum())
                    self._hashes.append(_pair_keys(clean, self.spec.int_items))
                    self.rows += n
                    table = clean.to_arrow(compat_level=pl.CompatLevel.oldest())
                    if not table.schema.equals(self.schema):
                        table = table.cast(self.schema)
                    yield from table.to_batches()
                    if self.progress is not None:
                        self.progress("ingest", self.rows, None)
                if kind == "parquet" and path is not None:
                    expected = parquet_rows(path)
                    if self.rows - start != expected:
                        raise InvalidInput(
                            f"{label}: cannot read as parquet: read {self.rows - start:,} of "
                            f"its {expected:,} rows"
                        )
                if self.rows == start:
                    raise InvalidInput(f"{label}: no rows")
                self.spans.append((label, start, self.rows))
        except GeneratorExit:  # closed: the consumer stopped
            raise
        except BaseException as exc:  # kept where it happened: DuckDB wraps what it pulls
            self.error = self.error or exc
            raise

    def _number_lists(self, group_id: pl.Series) -> pl.Series:
        """The list ids of a batch: ``first_list_id`` + 0, 1, 2, ... in order of first
        appearance of the group ids (NULL included: the one list of a verification run)."""
        seen, first = self._list_ids, self.first_list_id
        uniques = group_id.drop_nulls().unique(maintain_order=True)
        keys = uniques.to_list()
        for key in keys:
            seen.setdefault(key, first + len(seen))
        check_list_ids(first, len(seen) + 1)
        # the old values as a Series of the ids' type: a list of Python ints would be read
        # as Int64, which an Int128 id (a Parquet file's 10^30) does not fit
        ids = group_id.replace_strict(
            uniques, [seen[k] for k in keys], default=None, return_dtype=pl.Int32
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
        """False when every (list_id, item) key is distinct, which proves no duplicate. The
        keys sorted (NumPy's SIMD sort of uint64 values: 1e7 keys 0.2 CPU s, polars'
        ``n_unique`` 0.4-0.5), then neighbours compared."""
        if not self._hashes:
            return False
        keys = np.concatenate([hashes.to_numpy() for hashes in self._hashes])
        keys.sort()
        return bool(np.any(keys[1:] == keys[:-1]))

    def n_lists(self) -> int:
        return len(self._list_ids)


def insert_stream(
    con: duckdb.DuckDBPyConnection,
    opened: list[Input],
    spec: Spec,
    first_list_id: int,
    progress: Progress | None,
) -> Written:
    """The streaming path: every input (any format) validated batch by batch, all of them
    one DuckDB statement's source."""
    stream = Stream(opened, spec, progress, first_list_id)
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
    return Written(
        rows=stream.rows,
        not_retrieved=stream.not_retrieved,
        positives=stream.positives,
        negatives=stream.negatives,
        names=stream.list_names().to_arrow(),
        ids=stream.n_lists(),
        spans=stream.spans,
        maybe_duplicates=stream.maybe_duplicates(),
        method="stream",
    )
