"""Whether a ranked-list ingest takes the direct path (DuckDB reads Parquet files straight
into the row table) and, when it does not, why.

:data:`REASONS` is a table of ``(predicate, reason)`` rows read from the top: the first
predicate that holds of the inputs sends them down the streaming path (which takes any input
and names any problem with its file, column and row), and its reason is logged at debug level
on ``evalstore.ingest.direct``. A row may take for granted that no row above it held (an item
column is there, a file is readable, no id is NULL). When none holds, :func:`plan_direct`
plans the direct insert from the files' statistics."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import duckdb

from evalstore.db import queries
from evalstore.db.queries import quote_name
from evalstore.ingest.paths import COLUMNS, GLOB, source_columns
from evalstore.ingest.spec import INT32, MAX_ROWS, Spec

__all__ = ["REASONS", "SPARE_IDS", "DirectPlan", "FileStats", "Input", "plan_direct", "planned",
           "streaming_reason"]  # fmt: skip

LOG = logging.getLogger("evalstore.ingest.direct")

_BITMAP_MIN = 1 << 26  # (list, item) pairs the duplicate check may always track
_BITMAP_MAX = 10**9  # the most bitstring_agg takes
_MIN_ROW_GROUP = 8192  # mean rows per row group below which DuckDB's insert is the slower
#: list ids a direct ingest may leave unused (group ids absent from the files) beyond one per
#: list: more, and the streaming path numbers the lists densely instead
SPARE_IDS = 1 << 10
# integer types whose Parquet columns DuckDB reads as integers, that a BIGINT holds (not
# UInt64; nor Int128, which DuckDB reads as bytes); types by polars' names (``str(dtype)``)
_INTEGERS = frozenset({"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32"})


class Input(Protocol):
    """An opened input as the rows of :data:`REASONS` read it: its label, its columns' types
    (polars' dtypes, :class:`evalstore.ingest.sources.Input`, or their names, ``str(dtype)``,
    as :mod:`evalstore.ingest.parquet_direct` gives them without polars), and for a file its
    path and format."""

    @property
    def label(self) -> str: ...
    @property
    def schema(self) -> Mapping[str, Any]: ...
    @property
    def path(self) -> Path | None: ...
    @property
    def kind(self) -> str | None: ...


@dataclass
class DirectPlan:
    """Parquet inputs with integer group ids and integer or text item ids, read by DuckDB
    straight into the row table."""

    files: list[tuple[str, int, bool]]  # (path, rows, whether a score stands for -inf)
    group: str | None  # source columns (group None: a verification run's one list)
    item: str
    score: str
    label: str
    gmin: int
    groups: int  # gmax - gmin + 1: the list ids taken
    imin: int
    items: int  # imax - imin + 1 (text ids: imin and items are 0)
    rows: int
    text_items: bool = False  # item ids are text (stored as they are in a text row table)


class FileStats(NamedTuple):
    """What ``store/direct_stats`` reads of one file, from its statistics where it has them.
    The least and greatest ids are None only in a file without rows or with a NULL id."""

    rows: int
    groups: int  # non-NULL group ids (every row, in a run without a group column)
    items: int  # non-NULL item ids
    low: float | None  # the least and greatest score
    high: float | None
    row_groups: int
    gmin: int
    gmax: int
    imin: int  # 0 for text item ids
    imax: int


@dataclass
class _Inputs:
    """What the rows of :data:`REASONS` ask about: the opened inputs and the ingest's spec,
    the columns they are read from and each file's statistics (read on first use), and the
    input a row found wanting (None: the inputs as a whole)."""

    con: duckdb.DuckDBPyConnection
    opened: Sequence[Input]
    spec: Spec
    culprit: str | None = None

    @cached_property
    def sources(self) -> dict[str, str | None]:
        return source_columns(self.spec.columns, COLUMNS)  # as validate_batch resolves them

    def column(self, ours: str) -> str:
        """The input column of ``ours`` (item_id, score or label), which a row above found."""
        found = self.sources[ours]
        if found is None:
            raise AssertionError(f"no input column for {ours}: a row above should have held")
        return found

    @cached_property
    def has_group(self) -> bool:
        group = self.sources["group_id"]
        return group is not None and all(group in source.schema for source in self.opened)

    @cached_property
    def text_items(self) -> bool:
        """Whether the item ids are text (in every input: a row above saw to that)."""
        item = self.column("item_id")
        return all(_type(source, item) == "String" for source in self.opened)

    @cached_property
    def read(self) -> tuple[list[FileStats], str | None]:
        """Each file's statistics, in order, up to the first that DuckDB cannot read (named
        second; None when it reads them all)."""
        group = quote_name(self.sources["group_id"] or "") if self.has_group else "0"
        item = quote_name(self.column("item_id"))
        found = []
        for source in self.opened:
            text = queries.template(
                "store/direct_stats",
                group=group,
                item=item,
                bound="0" if self.text_items else item,
                score=quote_name(self.column("score")),
                file=queries.literal(str(source.path)),
            )
            try:
                found.append(FileStats(*self.con.execute(text).fetchall()[0]))
            except duckdb.InterruptException:
                raise
            except duckdb.Error:  # unreadable: the streaming path says why
                return found, source.label
        return found, None

    @property
    def stats(self) -> list[FileStats]:
        return self.read[0]

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.stats)

    @property
    def lists(self) -> int:
        """The list ids the group ids span."""
        return max(s.gmax for s in self.stats) - min(s.gmin for s in self.stats) + 1

    @property
    def items(self) -> int:
        """The item ids the files span."""
        return max(s.imax for s in self.stats) - min(s.imin for s in self.stats) + 1


Predicate = Callable[[_Inputs], bool]


def _any_input(test: Callable[[_Inputs, Input], bool]) -> Predicate:
    """A predicate that holds when ``test`` holds of some input, which it names."""

    def holds(inputs: _Inputs) -> bool:
        for source in inputs.opened:
            if test(inputs, source):
                inputs.culprit = source.label
                return True
        return False

    return holds


def _any_file(test: Callable[[FileStats], bool]) -> Predicate:
    """A predicate that holds when ``test`` holds of some file's statistics, which it names."""

    def holds(inputs: _Inputs) -> bool:
        for source, stats in zip(inputs.opened, inputs.stats, strict=True):
            if test(stats):
                inputs.culprit = source.label
                return True
        return False

    return holds


def _unreadable(inputs: _Inputs) -> bool:
    inputs.culprit = inputs.read[1]
    return inputs.culprit is not None


def _mapped_column_missing(inputs: _Inputs, source: Input) -> bool:
    return any(theirs not in source.schema for theirs in inputs.spec.columns.values())


def _names_equal_but_for_case(inputs: _Inputs, source: Input) -> bool:
    return len({name.lower() for name in source.schema}) < len(source.schema)


def _used(inputs: _Inputs) -> list[str]:
    """The input columns of group_id, item_id, score and label that are mapped."""
    return [c for c in inputs.sources.values() if c is not None]


def _group_in(inputs: _Inputs, source: Input) -> bool:
    group = inputs.sources["group_id"]
    return group is not None and group in source.schema


def _lacks_a_column(inputs: _Inputs, source: Input) -> bool:
    return not all(inputs.column(c) in source.schema for c in ("item_id", "score", "label"))


def _type(source: Input, column: str) -> str:
    """The type of ``column`` by polars' name (``Int32``, ``String``, ``Float32``, ...)."""
    return str(source.schema[column])


def _dtype(inputs: _Inputs, source: Input, ours: str) -> str:
    return _type(source, inputs.column(ours))


def _bool_labels(inputs: _Inputs, source: Input) -> bool:
    return _dtype(inputs, source, "label") == "Boolean"


def _item_type(inputs: _Inputs, source: Input) -> str:
    """ "int" (integers a BIGINT holds), "text" (strings) or "other" item ids."""
    dtype = _dtype(inputs, source, "item_id")
    return "int" if dtype in _INTEGERS else "text" if dtype == "String" else "other"


def _bitmap_too_large(inputs: _Inputs) -> bool:
    if inputs.text_items:  # one bit per list, which the rows above keep dense enough
        return False
    room = min(_BITMAP_MAX, max(_BITMAP_MIN, 2 * inputs.rows))
    return inputs.lists * inputs.items > room


#: why the streaming path is taken: the first row whose predicate holds, read from the top
REASONS: tuple[tuple[Predicate, str], ...] = (
    (lambda i: i.spec.gains, "the inputs have gains (relevance grades)"),
    (lambda i: not i.opened, "no input"),
    (_any_input(lambda i, s: s.path is None), "a frame in memory, not a file"),
    (_any_input(lambda i, s: s.kind != "parquet"), "not a Parquet file"),
    (
        _any_input(lambda i, s: GLOB.search(str(s.path)) is not None),
        "the file name holds a character of a pattern (* ? [ ] { })",
    ),
    (_any_input(_mapped_column_missing), "a --column names a column the file lacks"),
    (
        lambda i: len(set(i.spec.columns.values())) < len(i.spec.columns),
        "a --column maps two columns from one",
    ),
    (_any_input(_names_equal_but_for_case), "two column names differ only in case"),
    (
        lambda i: None in (i.sources["item_id"], i.sources["score"], i.sources["label"]),
        "a --column takes the item_id, score or label column for another",
    ),
    (lambda i: any("\x00" in c for c in _used(i)), "a column name holds a NUL character"),
    (
        lambda i: len({_group_in(i, s) for s in i.opened}) > 1,
        "some inputs have the group column and some do not",
    ),
    (
        lambda i: not i.has_group and i.spec.task != "verification",
        "no group column (only a verification run may lack one)",
    ),
    (_any_input(_lacks_a_column), "the file lacks the item_id, score or label column"),
    (
        _any_input(lambda i, s: _item_type(i, s) == "other"),
        "item ids are neither integers that a BIGINT holds nor strings",
    ),
    (
        lambda i: len({_item_type(i, s) for s in i.opened}) > 1,
        "some inputs have integer item ids and some text ones",
    ),
    (
        _any_input(lambda i, s: i.has_group and _dtype(i, s, "group_id") not in _INTEGERS),
        "group ids are not integers that a BIGINT holds",
    ),
    (
        _any_input(lambda i, s: _dtype(i, s, "score") not in ("Float32", "Float64")),
        "scores are not float32 or float64",
    ),
    (
        _any_input(lambda i, s: _bool_labels(i, s) and i.spec.labels != "bool"),
        "labels are booleans but --labels is not bool",
    ),
    (
        _any_input(lambda i, s: not _bool_labels(i, s) and i.spec.labels == "bool"),
        "--labels bool but labels are not booleans",
    ),
    (
        _any_input(lambda i, s: not _bool_labels(i, s) and _dtype(i, s, "label") not in _INTEGERS),
        "labels are neither booleans nor integers",
    ),
    (_unreadable, "DuckDB cannot read the file"),
    (_any_file(lambda f: f.rows == 0), "the file has no rows"),
    (_any_file(lambda f: f.groups < f.rows), "a group id is empty (NULL)"),
    (_any_file(lambda f: f.items < f.rows), "an item id is empty (NULL)"),
    (
        _any_file(lambda f: f.row_groups > 1 and f.rows < _MIN_ROW_GROUP * f.row_groups),
        "many small row groups, which polars reads faster",
    ),
    (lambda i: i.rows > MAX_ROWS, "more rows than a run holds (2^31 - 1)"),
    (
        lambda i: (
            not i.text_items
            and (min(s.imin for s in i.stats) < INT32[0] or max(s.imax for s in i.stats) > INT32[1])
        ),
        "item ids beyond int32",
    ),
    (
        lambda i: i.lists > 2 * i.rows + SPARE_IDS,
        "group ids too sparse (the streaming path numbers the lists densely)",
    ),
    (_bitmap_too_large, "too many (list, item) pairs for the duplicate check's bitmap"),
)


def _first_reason(inputs: _Inputs) -> str | None:
    return next((reason for holds, reason in REASONS if holds(inputs)), None)


def streaming_reason(
    con: duckdb.DuckDBPyConnection, opened: Sequence[Input], spec: Spec
) -> str | None:
    """Why these inputs take the streaming path (the reason of the first row of
    :data:`REASONS` that holds); None when the direct path takes them."""
    return _first_reason(_Inputs(con, opened, spec))


def plan_direct(
    con: duckdb.DuckDBPyConnection, opened: Sequence[Input], spec: Spec
) -> DirectPlan | None:
    """A plan when no row of :data:`REASONS` holds: every input is a Parquet file whose group
    ids are integers, its item ids integers of int32 range (in every file) or text, its
    scores floats and its labels of the declared convention's type, with few enough
    (list, item) pairs for the duplicate check's bitmap and dense enough list ids; else None,
    the reason logged at debug level (the streaming path takes any input)."""
    plan, line = planned(con, opened, spec)
    LOG.debug("%s", line)
    return plan


def planned(
    con: duckdb.DuckDBPyConnection, opened: Sequence[Input], spec: Spec
) -> tuple[DirectPlan | None, str]:
    """:func:`plan_direct`'s plan and the line it logs (``direct path: FILE`` or
    ``streaming path: ...``), nothing logged."""
    inputs = _Inputs(con, opened, spec)
    reason = _first_reason(inputs)
    where = inputs.culprit or ", ".join(source.label for source in opened)
    if reason is not None:
        return None, f"streaming path: {f'{where}: {reason}' if where else reason}"
    score = inputs.column("score")
    spec.float32 = all(_type(source, score) == "Float32" for source in opened)
    spec.int_groups = True
    spec.int_items = not inputs.text_items
    files = [
        # does the stored score (negated or not) take -inf, which stands for "not retrieved"?
        (
            str(source.path),
            int(s.rows),
            s.high == math.inf if spec.negate_score else s.low == -math.inf,
        )
        for source, s in zip(opened, inputs.stats, strict=True)
    ]
    stats = inputs.stats
    plan = DirectPlan(
        files,
        inputs.sources["group_id"] if inputs.has_group else None,
        inputs.column("item_id"),
        score,
        inputs.column("label"),
        min(s.gmin for s in stats),
        inputs.lists,
        min(s.imin for s in stats),
        0 if inputs.text_items else inputs.items,
        inputs.rows,
        inputs.text_items,
    )
    return plan, f"direct path: {where}"
