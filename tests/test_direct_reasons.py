"""Why an ingest takes the streaming path: each row of ``direct_plan.REASONS`` is met by an
input that holds it and none above it; the reason is returned by ``streaming_reason``, logged
at debug level on ``evalstore.ingest.direct`` naming the file, and shown by ``ingest
--verbose``; an input that takes the direct path logs no reason."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalstore import InvalidInput, Store
from evalstore.ingest import direct_plan, sources, validate
from evalstore.ingest.direct import plan_direct

LOGGER = "evalstore.ingest.direct"


def good(**changes: Any) -> dict[str, Any]:
    """Three lists of four items with the types the direct path takes, ``changes`` applied
    (a column's values as a pyarrow array; None drops the column)."""
    columns: dict[str, Any] = {
        "group_id": pa.array(np.repeat(np.arange(3), 4), pa.int32()),
        "item_id": pa.array(np.tile(np.arange(4), 3), pa.int32()),
        "score": pa.array(np.linspace(0.9, 0.1, 12)),
        "label": pa.array([1, -1, -1, 1] * 3, pa.int8()),
    }
    columns.update(changes)
    return {name: values for name, values in columns.items() if values is not None}


def write(path: Path, columns: dict[str, Any], **options: Any) -> Path:
    pq.write_table(pa.table(columns), path, **options)
    return path


def corrupt(path: Path) -> Path:
    """A file whose footer reads (polars opens it) but whose first item_id page does not."""
    n = 1000
    columns = good(
        group_id=pa.array(np.arange(n) // 10, pa.int32()),
        item_id=pa.array(np.arange(n), pa.int32()),
        score=pa.array(np.linspace(1, 0, n)),
        label=pa.array(np.where(np.arange(n) % 2, 1, -1), pa.int8()),
    )
    write(path, columns, compression="snappy", write_statistics=False)
    column = pq.ParquetFile(path).metadata.row_group(0).column(1)
    at = column.dictionary_page_offset or column.data_page_offset
    raw = bytearray(path.read_bytes())
    raw[at : at + 8] = bytes(b ^ 0xFF for b in raw[at : at + 8])
    path.write_bytes(bytes(raw))
    return path


@dataclass
class Case:
    """Inputs (built in a folder) and the ingest's options; ``named``: the inputs the log
    names, by position (None: all of them, as for a row about the inputs as a whole);
    ``ingest``: whether ``Store.ingest`` asks ``plan_direct`` about them (with gains, or no
    input, it does not)."""

    reason: str
    inputs: Callable[[Path], list[Any]]
    options: dict[str, Any] = field(default_factory=dict)
    named: list[int] | None = None
    ingest: bool = True


def one(name: str = "run.parquet", **changes: Any) -> Callable[[Path], list[Any]]:
    return lambda folder: [write(folder / name, good(**changes))]


def two(second: dict[str, Any]) -> Callable[[Path], list[Any]]:
    """A good file, then one with ``second`` applied."""
    return lambda folder: [
        write(folder / "a.parquet", good()),
        write(folder / "b.parquet", good(**second)),
    ]


def csv_file(folder: Path) -> list[Any]:
    path = folder / "run.csv"
    path.write_text("group_id,item_id,score,label\n0,1,0.5,1\n0,2,0.25,-1\n")
    return [path]


def small_row_groups(folder: Path) -> list[Any]:
    return [write(folder / "run.parquet", good(), row_group_size=4)]


def empty_file(folder: Path) -> list[Any]:
    return [write(folder / "run.parquet", {k: v.slice(0, 0) for k, v in good().items()})]


INT64 = pa.int64()
CASES = {
    "gains": Case(
        "the inputs have gains (relevance grades)",
        one(gain=pa.array(np.ones(12))),
        {"gains": True},
        ingest=False,
    ),
    "no_input": Case("no input", lambda folder: [], ingest=False),
    "in_memory": Case("a frame in memory, not a file", lambda folder: [pa.table(good())]),
    "csv": Case("not a Parquet file", csv_file),
    "glob_name": Case(
        "the file name holds a character of a pattern (* ? [ ] { })", one("run[1].parquet")
    ),
    "mapped_missing": Case(
        "a --column names a column the file lacks", one(), {"columns": {"group_id": "query"}}
    ),
    "two_from_one": Case(
        "a --column maps two columns from one",
        one(id=pa.array(range(12), pa.int32())),
        {"columns": {"item_id": "id", "group_id": "id"}},
    ),
    "case": Case(
        "two column names differ only in case", two({"SCORE": pa.array([0.5] * 12)}), named=[1]
    ),
    "taken": Case(
        "a --column takes the item_id, score or label column for another",
        one(),
        {"columns": {"score": "item_id"}},
    ),
    "nul": Case(
        "a column name holds a NUL character",
        one(score=None, **{"sc\x00re": pa.array(np.linspace(0.9, 0.1, 12))}),
        {"columns": {"score": "sc\x00re"}},
    ),
    "group_in_some": Case(
        "some inputs have the group column and some do not", two({"group_id": None})
    ),
    "no_group": Case("no group column (only a verification run may lack one)", one(group_id=None)),
    "no_label": Case(
        "the file lacks the item_id, score or label column", two({"label": None}), named=[1]
    ),
    "binary_items": Case(
        "item ids are neither integers that a BIGINT holds nor strings",
        two({"item_id": pa.array([f"doc{i}".encode() for i in range(12)])}),
        named=[1],
    ),
    "text_and_int_items": Case(
        "some inputs have integer item ids and some text ones",
        two({"item_id": pa.array([f"doc{i}" for i in range(12)])}),
    ),
    "float_groups": Case(
        "group ids are not integers that a BIGINT holds",
        two({"group_id": pa.array(np.repeat(np.arange(3.0), 4))}),
        named=[1],
    ),
    "int_scores": Case(
        "scores are not float32 or float64",
        two({"score": pa.array(range(12), INT64)}),
        named=[1],
    ),
    "bool_labels_pm1": Case(
        "labels are booleans but --labels is not bool",
        two({"label": pa.array([True, False] * 6)}),
        named=[1],
    ),
    "int_labels_bool": Case("--labels bool but labels are not booleans", one(), {"labels": "bool"}),
    "float_labels": Case(
        "labels are neither booleans nor integers",
        two({"label": pa.array([1.0, -1.0] * 6)}),
        named=[1],
    ),
    "unreadable": Case(
        "DuckDB cannot read the file",
        lambda folder: [write(folder / "a.parquet", good()), corrupt(folder / "b.parquet")],
        named=[1],
    ),
    "no_rows": Case("the file has no rows", empty_file),
    "null_group": Case(
        "a group id is empty (NULL)",
        two({"group_id": pa.array([0, 0, 0, None, 1, 1, 1, 1, 2, 2, 2, 2], pa.int32())}),
        named=[1],
    ),
    "null_item": Case(
        "an item id is empty (NULL)",
        two({"item_id": pa.array([0, 1, 2, 3, 0, None, 2, 3, 0, 1, 2, 3], pa.int32())}),
        named=[1],
    ),
    "row_groups": Case("many small row groups, which polars reads faster", small_row_groups),
    "too_many_rows": Case(  # 24 rows, with MAX_ROWS = 20 (the small_max_rows fixture)
        "more rows than a run holds (2^31 - 1)",
        two({"group_id": pa.array(np.repeat([3, 4, 5], 4), pa.int32())}),
    ),
    "wide_items": Case(
        "item ids beyond int32",
        one(item_id=pa.array(np.tile(np.arange(4), 3) + 2**31, INT64)),
    ),
    "sparse_groups": Case(
        "group ids too sparse (the streaming path numbers the lists densely)",
        one(group_id=pa.array(np.repeat([0, 1, 5000], 4), pa.int32())),
    ),
    "bitmap": Case(
        "too many (list, item) pairs for the duplicate check's bitmap",
        one(item_id=pa.array(np.tile([0, 1, 2, 10**8], 3), pa.int32())),
    ),
}


def spec_of(options: dict[str, Any]) -> validate.Spec:
    spec = validate.Spec(
        options.get("task", "retrieval"),
        dict(options.get("columns", {})),
        options.get("labels", "pm1"),
        False,
    )
    spec.gains = options.get("gains", False)
    return spec


def opened_of(inputs: list[Any]) -> list[sources.Input]:
    return [sources.open_source(source, None, k) for k, source in enumerate(inputs)]


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelname == "DEBUG"]


def expected_line(case: Case, opened: list[sources.Input]) -> str:
    """The log line of a case: the inputs it names, then its reason."""
    named = range(len(opened)) if case.named is None else case.named
    where = ", ".join(opened[k].label for k in named)
    return f"streaming path: {where}: {case.reason}" if where else f"streaming path: {case.reason}"


@pytest.fixture
def small_max_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of at most 20 rows, on the direct path only (12-row inputs still go direct)."""
    monkeypatch.setattr(direct_plan, "MAX_ROWS", 20)


def test_reasons_are_unique_and_each_has_a_case() -> None:
    reasons = [reason for _, reason in direct_plan.REASONS]
    assert len(set(reasons)) == len(reasons)
    assert sorted(case.reason for case in CASES.values()) == sorted(reasons)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_reason_is_given_and_logged(
    store: Store,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    small_max_rows: None,
    name: str,
) -> None:
    """An input meant for one row of the table takes the streaming path for that reason:
    plan_direct gives no plan and logs the reason once, naming the file."""
    case = CASES[name]
    opened = opened_of(case.inputs(tmp_path))
    spec = spec_of(case.options)
    assert direct_plan.streaming_reason(store.con, opened, spec) == case.reason
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    assert plan_direct(store.con, opened, spec) is None
    assert logged(caplog) == [expected_line(case, opened)]
    assert not spec.int_items  # a plan's storage choices are not made


@pytest.mark.parametrize("name", sorted(n for n, case in CASES.items() if case.ingest))
def test_an_ingest_logs_its_reason_and_streams(
    store: Store,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    small_max_rows: None,
    name: str,
) -> None:
    """Through Store.ingest: the same reason is logged, and the run (when the streaming path
    takes it) is stored by the streaming path."""
    case = CASES[name]
    inputs = case.inputs(tmp_path)
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    options = {k: v for k, v in case.options.items() if k != "gains"}
    options.setdefault("task", "retrieval")
    result = None
    with contextlib.suppress(InvalidInput):  # a bad input: the streaming path says why
        result = store.ingest(inputs, run="r", git_commit=None, **options)
    assert [line for line in logged(caplog) if line.startswith("streaming path")] == [
        expected_line(case, opened_of(inputs))
    ]
    assert result is None or result.method == "stream"


def test_the_direct_path_gives_no_reason(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two good files: a plan, no reason, and the ingest goes direct."""
    paths = [
        write(tmp_path / "a.parquet", good()),
        write(tmp_path / "b.parquet", good(group_id=pa.array(np.repeat([3, 4, 5], 4), pa.int32()))),
    ]
    opened = opened_of(paths)
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    assert direct_plan.streaming_reason(store.con, opened, spec_of({})) is None
    plan = plan_direct(store.con, opened, spec_of({}))
    assert plan is not None and (plan.rows, plan.groups, plan.items) == (24, 6, 4)
    result = store.ingest(paths, task="retrieval", run="r", git_commit=None)
    assert result.method == "direct"
    assert logged(caplog) == [f"direct path: {paths[0]}, {paths[1]}"] * 2


def test_a_verification_run_without_groups_goes_direct(store: Store, tmp_path: Path) -> None:
    """The row about a missing group column holds for a retrieval run only."""
    opened = opened_of(one(group_id=None)(tmp_path))
    assert direct_plan.streaming_reason(store.con, opened, spec_of({})) is not None
    spec = spec_of({"task": "verification"})
    assert direct_plan.streaming_reason(store.con, opened, spec) is None


def test_ingest_verbose_prints_the_reason_on_stderr(cli: Any, tmp_path: Path) -> None:
    """`evalstore ingest FILE --verbose` says on stderr why the streaming path was taken."""
    path = write(tmp_path / "run.parquet", good(score=pa.array(range(12), INT64)))
    result = cli("ingest", str(path), "--task", "retrieval", "--run", "r", "--verbose")
    assert result.exit_code == 0, result.output
    assert f"streaming path: {path}: scores are not float32 or float64" in result.stderr
