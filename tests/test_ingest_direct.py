"""The direct path of Parquet ingest (DuckDB reads the files straight into a row table)
against the streaming path (polars batches, validated row by row): the same input must leave
the same store behind, and the same one-line error when it is bad."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import examples, ranked
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from evalstore import InvalidInput, Store
from evalstore.db.schema import ROW_TABLES
from evalstore.ingest import IngestResult, direct_plan, sources, validate
from evalstore.ingest import direct as direct_ingest
from evalstore.ingest import ranked as ranked_ingest

ROWS = "select group_id, item_id, score, label, seq from scores where run_id = $r order by seq"
GROUPS = (
    "select cast(task as varchar), group_id, n_positives, slices, list_id is null "
    "from groups where run_id = $r"
)
NO_GIT = {"git_commit": None}  # no `git` call per ingest: the tests compare runs, not commits


# -- helpers -------------------------------------------------------------------------------


def parquet(path: Path, table: pa.Table | dict[str, Any], **options: Any) -> Path:
    """Write ``table`` (or a dict of columns) as a Parquet file with pyarrow."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table if isinstance(table, pa.Table) else pa.table(table), path, **options)
    return path


def contents(store: Store, run: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """A run's `scores` rows in input order and its `groups` rows, without run_id/list_id."""
    run_id = store.resolve(run)
    rows = store.con.execute(ROWS, {"r": run_id}).fetchall()
    groups = sorted(store.con.execute(GROUPS, {"r": run_id}).fetchall(), key=repr)
    return rows, groups


def summary(result: IngestResult) -> tuple[Any, ...]:
    """What an ingest reports, apart from run_id, name, method and the input labels."""
    return (
        result.experiment,
        result.task,
        result.rows,
        result.lists,
        result.not_retrieved,
        result.replaced,
        len(result.files),
        result.positives,
        result.negatives,
        result.ignored,
        len(result.warnings),
    )


def state(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table and view, through the store's own connection."""
    names = store.con.execute(
        "select table_name from information_schema.tables order by 1"
    ).fetchall()
    return {
        name: sorted(store.con.execute(f'select * from "{name}"').fetchall(), key=repr)
        for (name,) in names
    }


def row_counts(store: Store) -> dict[str, int]:
    """Rows in each of the four row tables."""
    return {
        table: store.con.execute(f"select count(*) from {table}").fetchone()[0]
        for table in sorted(ROW_TABLES)
    }


def next_list_id(store: Store) -> int:
    return store.con.execute("select next from list_id_next").fetchone()[0]


def failure(store: Store, data: Any, **options: Any) -> str:
    """The message of the InvalidInput an ingest raises."""
    with pytest.raises(InvalidInput) as info:
        store.ingest(data, **options, **NO_GIT)
    return str(info.value)


def in_memory_labels(message: str, paths: Sequence[Path]) -> str:
    """A message about files as it reads for the same data given in memory."""
    for k, path in enumerate(paths):
        message = message.replace(str(path), f"data[{k}]")
    return message


def expected_rows(table: pa.Table, labels: str, negate: bool) -> list[tuple[Any, ...]]:
    """The `scores` rows an ingest of ``table`` must store, worked out in Python."""
    out = []
    for seq, row in enumerate(table.to_pylist()):
        score = row["score"]
        if score is not None:
            score = -score if negate else score
            score = None if score == -math.inf else score
        raw = row["label"]
        label = int(raw) if labels == "pm1" else (1 if raw in (1, True) else -1)
        group = row.get("group_id")
        out.append((None if group is None else str(group), str(row["item_id"]), score, label, seq))
    return out


@pytest.fixture
def direct_attempts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each direct insert an ingest tries: "done", or "abandoned" when it fell back."""
    calls: list[str] = []
    real = direct_ingest.insert_direct

    def spy(*args: Any, **kwargs: Any) -> Any:
        try:
            written = real(*args, **kwargs)
        except direct_ingest.Recheck:
            calls.append("abandoned")
            raise
        calls.append("done")
        return written

    monkeypatch.setattr(ranked_ingest, "insert_direct", spy)
    return calls


def lists_table(
    n_groups: int = 3, n_items: int = 4, seed: int = 0, *, groups: Any = np.int32
) -> pa.Table:
    """``ranked`` as an Arrow table of the types the direct path takes."""
    data = ranked(n_groups, n_items, seed)
    return pa.table(
        {
            "group_id": data["group_id"].astype(groups),
            "item_id": data["item_id"].astype(np.int32),
            "score": data["score"].astype(np.float64),
            "label": data["label"].astype(np.int8),
        }
    )


# -- 1. a plain Parquet file ---------------------------------------------------------------


@pytest.mark.parametrize("ids", [np.int32, np.int64])
@pytest.mark.parametrize(
    ("scores", "table"), [(np.float32, "list_rows_int_f32"), (np.float64, "list_rows_int_f64")]
)
def test_plain_parquet_goes_direct_and_stores_what_the_stream_stores(
    store: Store, tmp_path: Path, ids: type, scores: type, table: str
) -> None:
    """Integer ids, float scores and int8 labels: DuckDB reads the file into the row table of
    its score type, and the run equals the streamed ingest of the same arrays."""
    data = ranked(4, 6, seed=1)
    data = {
        "group_id": data["group_id"].astype(ids) - 2,
        "item_id": data["item_id"].astype(ids) * 3 - 5,
        "score": data["score"].astype(scores),
        "label": data["label"].astype(np.int8),
    }
    data["score"][[3, 10]] = -np.inf
    path = parquet(tmp_path / "run.parquet", data)

    direct = store.ingest(path, task="retrieval", run="d", **NO_GIT)
    assert direct.method == "direct"
    assert {t: n for t, n in row_counts(store).items() if n} == {table: 24}
    streamed = store.ingest(data, task="retrieval", run="s", **NO_GIT)
    assert streamed.method == "stream"
    assert {t: n for t, n in row_counts(store).items() if n} == {table: 48}

    assert contents(store, "d") == contents(store, "s")
    assert contents(store, "d")[0] == expected_rows(pa.table(data), "pm1", negate=False)
    assert summary(direct) == summary(streamed)
    assert (direct.rows, direct.lists, direct.not_retrieved) == (24, 4, 2)
    assert (direct.files, streamed.files) == ([str(path)], ["data[0]"])


# -- 2. any lists: direct = stream ---------------------------------------------------------

LABEL_VALUES = {"pm1": [-1, 0, 1], "01": [0, 1], "bool": [False, True]}


@st.composite
def parquet_lists(draw: st.DrawFn) -> dict[str, Any]:
    """Ranked lists of the types the direct path takes (integer or text item ids), with a
    random label convention, maybe negated scores, maybe duplicates, maybe split over two
    files."""
    base = draw(st.sampled_from([0, -7, 2**31 - 3, -(2**40), 2**62]))
    span = draw(st.sampled_from([0, 4, 300]))  # gaps between group ids
    group = st.integers(0, span).map(lambda g: base + g)
    if draw(st.sampled_from([True, True, True, False])):  # item ids near each other
        low = draw(st.integers(-(2**31), 2**31 - 1 - 1000))
        item = st.integers(0, draw(st.sampled_from([3, 1000]))).map(lambda i: low + i)
    else:  # anywhere in int32: too many (list, item) pairs for the direct path's bitmap
        item = st.integers(-(2**31), 2**31 - 1)
    unique = draw(st.sampled_from([True, True, False]))  # else maybe duplicates
    pairs = draw(st.lists(st.tuples(group, item), min_size=1, max_size=40, unique=unique))
    groups, items = [g for g, _ in pairs], [i for _, i in pairs]
    n = len(pairs)

    float32, negate = draw(st.booleans()), draw(st.booleans())
    finite = st.floats(allow_nan=False, allow_infinity=False, width=32 if float32 else 64)
    not_retrieved = math.inf if negate else -math.inf
    score = st.one_of(finite, st.sampled_from([0.0, 0.5, -2.0]), st.just(not_retrieved), st.none())
    scores = draw(st.lists(score, min_size=n, max_size=n))

    labels = draw(st.sampled_from(sorted(LABEL_VALUES)))
    explicit = labels != "pm1" or draw(st.booleans())  # else the default: pm1, checked
    values = LABEL_VALUES[labels]
    if labels == "pm1" and draw(st.booleans()):
        values = [0, 1]  # 0/1 labels read under pm1: refused unless pm1 is given explicitly
    label_type = (
        pa.bool_()
        if labels == "bool"
        else draw(st.sampled_from([pa.int8(), pa.int16(), pa.int64()]))
    )
    fits = all(-(2**31) <= g < 2**31 for g in groups)
    group_type = draw(st.sampled_from([pa.int32(), pa.int64()])) if fits else pa.int64()
    if draw(st.sampled_from([False, False, True])):  # text item ids, stored as written
        prefix = draw(st.sampled_from(["", "doc", "é", " ", "\x00", "'"]))
        item_ids = pa.array([f"{prefix}{i}" for i in items], pa.string())
    else:
        item_ids = pa.array(items, draw(st.sampled_from([pa.int32(), pa.int64()])))
    table = pa.table(
        {
            "group_id": pa.array(groups, group_type),
            "item_id": item_ids,
            "score": pa.array(scores, pa.float32() if float32 else pa.float64()),
            "label": pa.array(
                draw(st.lists(st.sampled_from(values), min_size=n, max_size=n)),
                label_type,
            ),
        }
    )
    split = draw(st.integers(1, n - 1)) if n > 1 and draw(st.booleans()) else n
    parts = [table.slice(0, split)] + ([table.slice(split)] if split < n else [])
    return {
        "table": table,
        "parts": parts,
        "labels": labels,
        "explicit": explicit,
        "negate": negate,
        "row_group_size": draw(st.sampled_from([None, 3])),  # file_row_number across groups
    }


def has_duplicates(table: pa.Table) -> bool:
    pairs = list(zip(table["group_id"].to_pylist(), table["item_id"].to_pylist(), strict=True))
    return len(set(pairs)) < len(pairs)


def direct_expected(table: pa.Table) -> bool:
    """Whether the direct path must keep an ingest of these valid lists (no NULL ids, dense
    group ids): no duplicate, and (integer item ids) few enough (list, item) pairs for its
    bitmap."""
    groups, items = table["group_id"].to_pylist(), table["item_id"].to_pylist()
    if pa.types.is_string(table["item_id"].type):
        return not has_duplicates(table)
    pairs = (max(groups) - min(groups) + 1) * (max(items) - min(items) + 1)
    return not has_duplicates(table) and pairs <= max(1 << 26, 2 * len(groups))


@pytest.mark.slow  # hypothesis: 60 Parquet files, each ingested twice
@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(case=parquet_lists())
def test_parquet_ingest_equals_in_memory_ingest(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, case: dict[str, Any]
) -> None:
    """Random lists through Parquet files (direct) and as Arrow tables (stream) store the same
    rows, groups and counts; with a duplicate both refuse with the same message. (Any row
    group size goes direct here, to test the direct path on many layouts.)"""
    monkeypatch.setattr(direct_plan, "_MIN_ROW_GROUP", 1)
    folder = tmp_path_factory.mktemp("direct")
    table, parts = case["table"], case["parts"]
    paths = [
        parquet(folder / f"part{k}.parquet", part, row_group_size=case["row_group_size"])
        for k, part in enumerate(parts)
    ]
    options = {
        "task": "retrieval",
        "labels": case["labels"] if case["explicit"] else None,
        "negate_score": case["negate"],
    }
    values = set(table["label"].to_pylist())
    refused = not case["explicit"] and 0 in values and -1 not in values
    with Store(folder / "db.duckdb") as store:
        if has_duplicates(table):
            event("duplicates: both refuse")
            empty = state(store)
            from_files = failure(store, paths, run="p", **options)
            assert state(store) == empty
            from_memory = failure(store, parts, run="m", **options)
            assert state(store) == empty
            assert "duplicate (group_id, item_id)" in from_files
            assert in_memory_labels(from_files, paths) == from_memory
            return
        if refused:
            event("0 labels without -1 under the default: both refuse")
            empty = state(store)
            from_files = failure(store, paths, run="p", **options)
            from_memory = failure(store, parts, run="m", **options)
            assert state(store) == empty
            assert "but no" in from_files and '-1; under labels="pm1"' in from_files
            assert in_memory_labels(from_files, paths) == from_memory
            return
        direct = store.ingest(paths, run="p", **options, **NO_GIT)
        streamed = store.ingest(parts, run="m", **options, **NO_GIT)
        text = pa.types.is_string(table["item_id"].type)
        event(f"{len(paths)} file(s), {'text' if text else 'int'} items, {direct.method}")
        assert direct.method == ("direct" if direct_expected(table) else "stream")
        assert streamed.method == "stream"
        assert contents(store, "p") == contents(store, "m")
        assert contents(store, "p")[0] == expected_rows(table, case["labels"], case["negate"])
        assert summary(direct) == summary(streamed)
        assert direct.files == [str(p) for p in paths]
        kind = "f32" if table["score"].type == pa.float32() else "f64"
        items = "text" if pa.types.is_string(table["item_id"].type) else "int"
        assert {t: n for t, n in row_counts(store).items() if n} == {
            f"list_rows_{items}_{kind}": 2 * table.num_rows
        }


# -- 3. bad input: the streaming path's message, nothing written ----------------------------


def _with(table: pa.Table, column: str, values: Any, type_: pa.DataType | None = None) -> pa.Table:
    array = pa.array(values, type_ or table.schema.field(column).type)
    return table.set_column(table.schema.get_field_index(column), column, array)


def _set(table: pa.Table, column: str, row: int, value: Any, type_: Any = None) -> pa.Table:
    values = table[column].to_pylist()
    values[row] = value
    return _with(table, column, values, type_)


GOOD = lists_table(3, 4, seed=5)  # 12 rows: groups 0, 1, 2 of items 0..3
ZERO_ONE = _with(GOOD, "label", [1, 0, 0, 1] * 3)
ZERO_ONE_NEXT = _with(ZERO_ONE, "group_id", np.repeat(np.arange(3, 6, dtype=np.int32), 4))

# name: (the input files, options, how the message starts ({0}, {1}: the files), direct tried)
BAD = {
    "nan_score": (
        [_set(GOOD, "score", 5, math.nan)],
        {},
        "{0}: column 'score' row 6 is NaN",
        ["abandoned"],
    ),
    "pos_inf_score": (
        [_set(GOOD, "score", 5, math.inf)],
        {},
        "{0}: column 'score' row 6 is +inf",
        ["abandoned"],
    ),
    "neg_inf_negated": (
        [_set(GOOD, "score", 5, -math.inf)],
        {"negate_score": True},
        "{0}: column 'score' row 6 is -inf before --negate-score",
        ["abandoned"],
    ),
    "label_5_pm1": (
        [_set(GOOD, "label", 7, 5)],
        {},
        "{0}: column 'label' row 8: 5 is not a label under labels=\"pm1\"",
        ["abandoned"],
    ),
    "label_300_int16": (
        [_set(GOOD, "label", 7, 300, pa.int16())],
        {},
        "{0}: column 'label' row 8: 300 is not a label under labels=\"pm1\"",
        ["abandoned"],
    ),
    "label_2_under_01": (
        [_set(ZERO_ONE, "label", 7, 2)],
        {"labels": "01"},
        "{0}: column 'label' row 8: 2 is not a label under labels=\"01\"",
        ["abandoned"],
    ),
    "null_label": (
        [_set(GOOD, "label", 2, None)],
        {},
        "{0}: column 'label' row 3 is empty",
        ["abandoned"],
    ),
    "null_bool_label": (
        [_set(_with(GOOD, "label", [True, False] * 6, pa.bool_()), "label", 9, None)],
        {"labels": "bool"},
        "{0}: column 'label' row 10 is empty",
        ["abandoned"],
    ),
    "duplicate_in_one_file": (
        [_set(GOOD, "item_id", 6, 1)],
        {},
        "{0} row 7: duplicate (group_id, item_id) = ('1', '1'), first seen at row 6",
        ["abandoned"],
    ),
    "duplicate_across_files": (
        [GOOD, _with(GOOD.slice(5, 2), "score", [0.25, 0.75])],
        {},
        "{1} row 1: duplicate (group_id, item_id) = ('1', '1'), first seen at {0} row 6",
        ["abandoned"],
    ),
    "null_item_id": (
        [_set(GOOD, "item_id", 3, None)],
        {},
        "{0}: column 'item_id' row 4 is empty",
        [],
    ),
    "null_group_id": (
        [_set(GOOD, "group_id", 3, None)],
        {},
        "{0}: column 'group_id' row 4 is empty (task retrieval needs a list id)",
        [],
    ),
    # stored by the direct insert, then refused in the same transaction
    "zero_one_under_default_pm1": (
        [ZERO_ONE],
        {},
        "{0}: column 'label' has 0 (6 rows) and 1 (6 rows) but no -1; under labels=\"pm1\" "
        'every 0 is ignored (not a negative): pass labels="01" if 0 means negative, or '
        'labels="pm1" explicitly if 0 means ignored',
        ["done"],
    ),
    "zero_one_in_two_files": (
        [ZERO_ONE, ZERO_ONE_NEXT],
        {},
        "{0}, {1}: column 'label' has 0 (12 rows) and 1 (12 rows) but no -1;",
        ["done"],
    ),
    "only_zeros_under_default_pm1": (
        [_with(GOOD, "label", [0] * 12)],
        {},
        "{0}: column 'label' has 0 (12 rows) but no 1 or -1;",
        ["done"],
    ),
}


@pytest.mark.slow_after(4)  # a family of 15 cases: the fast loop runs the first 4
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_parquet_gives_the_stream_message_and_changes_nothing(
    store: Store, tmp_path: Path, direct_attempts: list[str], case: str
) -> None:
    """A bad value the direct insert meets makes it give up: the error is the streaming
    path's one line naming the file, column and row, and the store is as it was."""
    tables, options, start, attempts = BAD[case]
    store.ingest(GOOD, task="retrieval", run="base", **NO_GIT)
    paths = [parquet(tmp_path / f"in{k}.parquet", t) for k, t in enumerate(tables)]
    before = state(store)

    message = failure(store, paths, task="retrieval", run="new", **options)
    assert state(store) == before
    assert direct_attempts == attempts
    assert len(message.splitlines()) == 1
    assert message.startswith(start.format(*map(str, paths))), message

    from_memory = failure(store, tables, task="retrieval", run="new", **options)
    assert state(store) == before
    assert in_memory_labels(message, paths) == from_memory


@pytest.mark.parametrize("labels", ["pm1", "01"])
def test_an_explicit_convention_takes_zero_one_labels_on_both_paths(
    store: Store, tmp_path: Path, direct_attempts: list[str], labels: str
) -> None:
    """The files the default refuses, with --labels pm1 (0 = ignored) or 01 (0 = negative):
    direct, the same rows and counts as streamed."""
    tables = [ZERO_ONE, ZERO_ONE_NEXT]
    paths = [parquet(tmp_path / f"in{k}.parquet", t) for k, t in enumerate(tables)]
    direct = store.ingest(paths, task="retrieval", run="file", labels=labels, **NO_GIT)
    streamed = store.ingest(tables, task="retrieval", run="memory", labels=labels, **NO_GIT)
    assert (direct.method, direct_attempts) == ("direct", ["done"])
    assert contents(store, "file") == contents(store, "memory")
    assert summary(direct) == summary(streamed)
    assert (direct.positives, direct.negatives, direct.ignored) == (
        (12, 0, 12) if labels == "pm1" else (12, 12, 0)
    )


def test_a_negative_in_another_file_is_enough(store: Store, tmp_path: Path) -> None:
    """The label check is over the whole ingest: 0/1 labels in one file and a -1 in the
    other go direct under the default convention, counted as the stream counts them."""
    other = _with(ZERO_ONE_NEXT, "label", [1, 0, 0, -1] * 3)
    paths = [parquet(tmp_path / "a.parquet", ZERO_ONE), parquet(tmp_path / "b.parquet", other)]
    direct = store.ingest(paths, task="retrieval", run="file", **NO_GIT)
    streamed = store.ingest([ZERO_ONE, other], task="retrieval", run="memory", **NO_GIT)
    assert direct.method == "direct"
    assert summary(direct) == summary(streamed)
    assert (direct.positives, direct.negatives, direct.ignored) == (9, 3, 12)


def test_a_distance_column_gets_the_same_warning_on_both_paths(
    store: Store, tmp_path: Path
) -> None:
    """columns={"score": "l2_distance"} without negate_score: stored as given, with the same
    warning (naming the input) from a file (direct) as from memory."""
    table = GOOD.rename_columns(["group_id", "item_id", "l2_distance", "label"])
    path = parquet(tmp_path / "d.parquet", table)
    options = {"task": "retrieval", "columns": {"score": "l2_distance"}}
    direct = store.ingest(path, run="file", **options, **NO_GIT)
    streamed = store.ingest(table, run="memory", **options, **NO_GIT)
    assert direct.method == "direct"
    assert [in_memory_labels(w, [path]) for w in direct.warnings] == streamed.warnings
    assert direct.warnings[0].startswith(f"{path}: the score column 'l2_distance' is named like")
    assert contents(store, "file") == contents(store, "memory")


# -- 4. sparse and dense group ids ---------------------------------------------------------


def test_sparse_group_ids_are_streamed_and_take_one_list_id_each(
    store: Store, tmp_path: Path, direct_attempts: list[str]
) -> None:
    """Group ids 0, 10M, 20M: no direct insert (its list ids would span the range); the
    stream numbers the 3 lists densely."""
    table = _with(lists_table(3, 4), "group_id", np.repeat([0, 10_000_000, 20_000_000], 4))
    path = parquet(tmp_path / "sparse.parquet", table)
    store.ingest(GOOD, task="retrieval", run="base", **NO_GIT)
    first = next_list_id(store)
    result = store.ingest(path, task="retrieval", run="sparse", **NO_GIT)
    assert (result.method, result.lists, direct_attempts) == ("stream", 3, [])
    assert next_list_id(store) == first + 3
    assert contents(store, "sparse")[0] == expected_rows(table, "pm1", negate=False)


def test_dense_group_ids_go_direct_and_take_their_range(store: Store, tmp_path: Path) -> None:
    """Group ids 0, 5, 9: the direct path gives list id = first + group id and moves the
    next list id on by the range, 10."""
    table = _with(lists_table(3, 4), "group_id", np.repeat([0, 5, 9], 4))
    path = parquet(tmp_path / "dense.parquet", table)
    store.ingest(GOOD, task="retrieval", run="base", **NO_GIT)
    first = next_list_id(store)
    result = store.ingest(path, task="retrieval", run="dense", **NO_GIT)
    assert (result.method, result.lists) == ("direct", 3)
    assert next_list_id(store) == first + 10
    ids = store.con.execute(
        "select group_id, list_id from groups where run_id = $r order by list_id",
        {"r": result.run_id},
    ).fetchall()
    assert ids == [("0", first), ("5", first + 5), ("9", first + 9)]
    assert contents(store, "dense")[0] == expected_rows(table, "pm1", negate=False)


@pytest.mark.slow  # about 1.5 s: ingests a large sparse file twice
def test_group_ids_sparse_among_many_rows_are_restreamed(
    store: Store, tmp_path: Path, direct_attempts: list[str]
) -> None:
    """2M rows in 4096 lists 32 ids apart: the range passes the first test (rows / 16) but
    not the one after the insert (2 x lists + 65536), so the stream stores them, densely."""
    lists, items = 4096, 512
    rng = np.random.default_rng(0)
    table = pa.table(
        {
            "group_id": np.repeat(np.arange(lists, dtype=np.int32) * 32, items),
            "item_id": np.tile(np.arange(items, dtype=np.int32), lists),
            "score": rng.standard_normal(lists * items).astype(np.float32),
            "label": np.where(rng.random(lists * items) < 0.1, 1, -1).astype(np.int8),
        }
    )
    path = parquet(tmp_path / "big.parquet", table)
    first = next_list_id(store)
    result = store.ingest(path, task="retrieval", run="big", **NO_GIT)
    assert (result.method, result.lists, result.rows) == ("stream", lists, lists * items)
    assert direct_attempts == ["abandoned"]
    assert next_list_id(store) == first + lists
    assert row_counts(store)["list_rows_int_f32"] == lists * items
    last = store.con.execute(
        "select group_id, item_id, seq from scores where seq = $s", {"s": lists * items - 1}
    ).fetchall()
    assert last == [(str((lists - 1) * 32), str(items - 1), lists * items - 1)]


# -- 5. several files ----------------------------------------------------------------------


def test_several_files_continue_seq_and_are_listed(store: Store, tmp_path: Path) -> None:
    """Two files in one direct ingest: seq runs on from the first file into the second (a
    list may span both), and `files` names both in order."""
    a = lists_table(2, 3, seed=1)
    b = _with(lists_table(2, 3, seed=2), "item_id", np.arange(6, dtype=np.int32) + 10)
    paths = [parquet(tmp_path / "a.parquet", a), parquet(tmp_path / "b.parquet", b)]
    result = store.ingest(paths, task="retrieval", run="two", **NO_GIT)
    assert result.method == "direct"
    assert (result.files, result.rows, result.lists) == ([str(p) for p in paths], 12, 2)
    rows, _ = contents(store, "two")
    assert [r[4] for r in rows] == list(range(12))
    assert rows == expected_rows(pa.concat_tables([a, b]), "pm1", negate=False)
    store.ingest([a, b], task="retrieval", run="mem", **NO_GIT)
    assert contents(store, "two") == contents(store, "mem")


def test_a_duplicate_across_files_names_both(store: Store, tmp_path: Path) -> None:
    """The second file repeats the first file's (group 1, item 2): refused, naming the row
    of each file, nothing written."""
    a = lists_table(2, 3, seed=1)
    b = _with(lists_table(2, 3, seed=2), "item_id", np.array([10, 11, 12, 13, 2, 14], np.int32))
    paths = [parquet(tmp_path / "a.parquet", a), parquet(tmp_path / "b.parquet", b)]
    before = state(store)
    message = failure(store, paths, task="retrieval", run="two")
    assert message == (
        f"{paths[1]} row 5: duplicate (group_id, item_id) = ('1', '2'), "
        f"first seen at {paths[0]} row 6"
    )
    assert state(store) == before


# -- 6. verification: one list without a group id ------------------------------------------


@pytest.mark.parametrize(
    ("labels", "raw", "stored"),
    [
        ("pm1", pa.array([1, -1, 0, 1], pa.int8()), [1, -1, 0, 1]),
        ("bool", pa.array([True, False, False, True]), [1, -1, -1, 1]),
        ("01", pa.array([1, 0, 0, 1], pa.int16()), [1, -1, -1, 1]),
    ],
)
def test_verification_without_group_id_goes_direct(
    store: Store, tmp_path: Path, labels: str, raw: pa.Array, stored: list[int]
) -> None:
    """No group_id column: one list with a NULL group id, labels turned into +1/-1 as the
    stream does."""
    table = pa.table(
        {
            "item_id": pa.array([7, 3, 9, 1], pa.int64()),
            "score": pa.array([0.5, -math.inf, 0.25, None], pa.float32()),
            "label": raw,
        }
    )
    path = parquet(tmp_path / "pairs.parquet", table)
    result = store.ingest(path, task="verification", run="v", labels=labels, **NO_GIT)
    assert (result.method, result.lists, result.not_retrieved) == ("direct", 1, 2)
    rows, groups = contents(store, "v")
    assert rows == [
        (None, "7", 0.5, stored[0], 0),
        (None, "3", None, stored[1], 1),
        (None, "9", 0.25, stored[2], 2),
        (None, "1", None, stored[3], 3),
    ]
    assert groups == [("verification", None, None, {}, False)]
    streamed = store.ingest(table, task="verification", run="m", labels=labels, **NO_GIT)
    assert contents(store, "m") == (rows, groups)
    assert summary(streamed) == summary(result)


# -- 7. column mapping ---------------------------------------------------------------------


def test_mapped_columns_are_read_not_their_namesakes(store: Store, tmp_path: Path) -> None:
    """columns={"score": "distance", "item_id": "patch"} with a `score` column in the file
    too: the direct path reads `distance` and `patch`, as the stream does."""
    table = pa.table(
        {
            "group_id": pa.array([0, 0, 1, 1], pa.int32()),
            "patch": pa.array([4, 5, 4, 6], pa.int32()),
            "item_id": pa.array([0, 0, 0, 0], pa.int32()),  # would be duplicates if read
            "distance": pa.array([0.5, 0.75, 0.125, math.inf]),
            "score": pa.array([9.0, 9.0, 9.0, 9.0]),
            "label": pa.array([1, -1, -1, 1], pa.int8()),
        }
    )
    path = parquet(tmp_path / "mapped.parquet", table)
    options = {
        "task": "retrieval",
        "columns": {"score": "distance", "item_id": "patch"},
        "negate_score": True,
    }
    result = store.ingest(path, run="file", **options, **NO_GIT)
    assert (result.method, result.not_retrieved) == ("direct", 1)
    rows, _ = contents(store, "file")
    assert rows == [
        ("0", "4", -0.5, 1, 0),
        ("0", "5", -0.75, -1, 1),
        ("1", "4", -0.125, -1, 2),
        ("1", "6", None, 1, 3),
    ]
    store.ingest(table, run="memory", **options, **NO_GIT)
    assert contents(store, "memory") == contents(store, "file")


# -- 8. groups metadata --------------------------------------------------------------------


def test_groups_metadata_is_the_same_through_the_direct_path(store: Store, tmp_path: Path) -> None:
    """groups= with n_positives overrides and slices, and a list without one: the same
    `groups` rows as the streamed ingest; a groups row of no list is refused by both."""
    table = lists_table(3, 4, seed=2)
    positives = [
        sum(
            1
            for g, lab in zip(
                table["group_id"].to_pylist(), table["label"].to_pylist(), strict=True
            )
            if g == k and lab == 1
        )
        for k in range(3)
    ]
    meta = tmp_path / "groups.csv"
    meta.write_text(f"group_id,n_positives,sequence\n0,{positives[0] + 3},i_boat\n1,,v_home\n")
    path = parquet(tmp_path / "run.parquet", table)
    typo = tmp_path / "typo.csv"
    typo.write_text(meta.read_text() + "7,2,i_none\n")
    before = state(store)
    message = failure(store, path, task="retrieval", run="file", groups=typo)
    assert message == failure(store, table, task="retrieval", run="memory", groups=typo)
    assert "typo.csv: 1 row matches no list of the retrieval rows ingested: group_id '7'" in message
    assert state(store) == before
    result = store.ingest(path, task="retrieval", run="file", groups=meta, **NO_GIT)
    assert result.method == "direct"
    store.ingest(table, task="retrieval", run="memory", groups=meta, **NO_GIT)
    _, groups = contents(store, "file")
    assert groups == contents(store, "memory")[1]
    assert groups == sorted(
        [
            ("retrieval", "0", positives[0] + 3, {"sequence": "i_boat"}, False),
            ("retrieval", "1", None, {"sequence": "v_home"}, False),
            ("retrieval", "2", None, {}, False),
        ],
        key=repr,
    )


def test_n_positives_below_the_labels_is_refused_on_the_direct_path(
    store: Store, tmp_path: Path
) -> None:
    """An n_positives override below a list's +1 labels: the same error as the stream's,
    and nothing written."""
    table = _with(lists_table(2, 3), "label", np.array([1, 1, -1, -1, 1, 0], np.int8))
    meta = tmp_path / "groups.csv"
    meta.write_text("group_id,n_positives\n0,1\n1,4\n")
    path = parquet(tmp_path / "run.parquet", table)
    before = state(store)
    message = failure(store, path, task="retrieval", run="file", groups=meta)
    assert state(store) == before
    assert message == failure(store, table, task="retrieval", run="memory", groups=meta)
    assert "list '0' has n_positives 1 but 2 positive labels" in message


# -- 9. Parquet the direct path leaves to the stream ---------------------------------------


def _column(name: str, values: Any, type_: pa.DataType | None = None) -> Any:
    return lambda t: _with(t, name, values, type_)


STREAMED = {
    "text_group_ids": _column("group_id", [f"q{i // 4}" for i in range(12)], pa.string()),
    "uint64_item_ids": _column("item_id", list(range(12)), pa.uint64()),
    "item_ids_beyond_int32": _column("item_id", [2**40 + i for i in range(12)], pa.int64()),
    "integer_scores": _column("score", list(range(12)), pa.int64()),
    "float_group_ids": _column("group_id", [float(i // 4) for i in range(12)], pa.float64()),
    "bool_labels_under_pm1": _column("label", [True, False] * 6, pa.bool_()),
}


@pytest.mark.parametrize("case", sorted(STREAMED))
def test_other_parquet_types_are_streamed(
    store: Store, tmp_path: Path, direct_attempts: list[str], case: str
) -> None:
    """Text group ids, uint64 or wide item ids, integer scores, float group ids, boolean labels
    under pm1: the stream reads the file, storing or refusing it as for the same table."""
    table = STREAMED[case](GOOD)
    path = parquet(tmp_path / "run.parquet", table)
    try:
        result = store.ingest(path, task="retrieval", run="file", **NO_GIT)
    except InvalidInput as exc:
        assert str(exc).startswith(f"{path}: column ")
        assert in_memory_labels(str(exc), [path]) == failure(
            store, table, task="retrieval", run="memory"
        )
        assert case in ("float_group_ids", "bool_labels_under_pm1")
        assert store.runs().height == 0
    else:
        assert result.method == "stream"
        store.ingest(table, task="retrieval", run="memory", **NO_GIT)
        assert contents(store, "file") == contents(store, "memory")
        assert contents(store, "file")[0] == expected_rows(table, "pm1", negate=False)
    assert direct_attempts == []


def text_items(table: pa.Table, prefix: str = "doc") -> pa.Table:
    """``table`` with its item ids as text: ``prefix`` + the integer."""
    ids = [f"{prefix}{i}" for i in table["item_id"].to_pylist()]
    return _with(table, "item_id", ids, pa.string())


@pytest.mark.parametrize("scores", [np.float32, np.float64])
def test_text_item_ids_go_direct_and_store_what_the_stream_stores(
    store: Store, tmp_path: Path, direct_attempts: list[str], scores: type
) -> None:
    """Integer group ids and text item ids: DuckDB reads the file into the text row table,
    and the run equals the streamed ingest of the same table (rows, groups, counts)."""
    table = text_items(lists_table(4, 5, seed=3))
    score_type = pa.float32() if scores == np.float32 else pa.float64()
    table = _with(table, "score", table["score"].to_numpy().astype(scores), score_type)
    table = _set(table, "score", 2, -math.inf)
    path = parquet(tmp_path / "run.parquet", table)
    direct = store.ingest(path, task="retrieval", run="d", **NO_GIT)
    streamed = store.ingest(table, task="retrieval", run="s", **NO_GIT)
    assert (direct.method, streamed.method, direct_attempts) == ("direct", "stream", ["done"])
    kind = "f32" if scores == np.float32 else "f64"
    assert {t: n for t, n in row_counts(store).items() if n} == {f"list_rows_text_{kind}": 40}
    assert contents(store, "d") == contents(store, "s")
    assert contents(store, "d")[0] == expected_rows(table, "pm1", negate=False)
    assert summary(direct) == summary(streamed)
    assert direct.not_retrieved == 1


@pytest.mark.parametrize("case", ["duplicate", "nan", "mixed"])
def test_text_item_ids_the_direct_path_refuses_are_streamed(
    store: Store, tmp_path: Path, direct_attempts: list[str], case: str
) -> None:
    """A duplicate (list, item) pair or a bad value in a file of text item ids: the direct
    insert gives up and the streaming path's message stands, nothing written; text item ids
    in one file and integer ones in another: streamed (stored as text), as from memory."""
    base = lists_table(3, 4, seed=5)
    store.ingest(GOOD, task="retrieval", run="base", **NO_GIT)
    before = state(store)
    if case == "mixed":
        tables = [text_items(base), lists_table(1, 3, seed=6)]
        tables[1] = _with(tables[1], "group_id", [7, 7, 7], pa.int32())
    elif case == "duplicate":
        tables = [text_items(_set(base, "item_id", 5, base["item_id"][4].as_py()))]
    else:
        tables = [text_items(_set(base, "score", 7, math.nan))]
    paths = [parquet(tmp_path / f"in{k}.parquet", t) for k, t in enumerate(tables)]
    if case == "mixed":
        result = store.ingest(paths, task="retrieval", run="f", **NO_GIT)
        store.ingest(tables, task="retrieval", run="m", **NO_GIT)
        assert (result.method, direct_attempts) == ("stream", [])
        assert contents(store, "f") == contents(store, "m")
        return
    message = failure(store, paths, task="retrieval", run="new")
    assert state(store) == before
    assert direct_attempts == ["abandoned"]
    assert len(message.splitlines()) == 1
    assert ("duplicate" if case == "duplicate" else "is NaN") in message
    from_memory = failure(store, tables, task="retrieval", run="new")
    assert in_memory_labels(message, paths) == from_memory


def test_csv_with_integer_ids_is_streamed(store: Store, tmp_path: Path) -> None:
    """Only Parquet files go direct: the same kind of lists as CSV are streamed, as given."""
    path = tmp_path / "run.csv"
    path.write_text("group_id,item_id,score,label\n0,1,0.5,1\n0,2,-inf,-1\n1,1,0.25,0\n")
    result = store.ingest(path, task="retrieval", run="csv", **NO_GIT)
    assert result.method == "stream"
    assert contents(store, "csv")[0] == [
        ("0", "1", 0.5, 1, 0),
        ("0", "2", None, -1, 1),
        ("1", "1", 0.25, 0, 2),
    ]


# -- 10. remove and replace ----------------------------------------------------------------


def test_remove_and_replace_a_direct_run(store: Store, tmp_path: Path) -> None:
    """Removing a run ingested directly deletes its row-table and groups rows (and no
    other run's); replace=True ingests new data directly in its place."""
    store.ingest(lists_table(2, 3, seed=9), task="retrieval", run="keep", **NO_GIT)
    kept, counts = contents(store, "keep"), row_counts(store)

    old = parquet(tmp_path / "old.parquet", lists_table(3, 4, seed=1))
    result = store.ingest(old, task="retrieval", run="d", **NO_GIT)
    assert result.method == "direct"
    assert row_counts(store)["list_rows_int_f64"] == counts["list_rows_int_f64"] + 12
    store.remove("d")
    assert row_counts(store) == counts
    n_groups = store.con.execute(
        "select count(*) from groups where run_id = $r", {"r": result.run_id}
    ).fetchone()
    assert n_groups == (0,)
    assert contents(store, "keep") == kept

    store.ingest(old, task="retrieval", run="d", **NO_GIT)
    new_table = lists_table(2, 5, seed=4)
    new = parquet(tmp_path / "new.parquet", new_table)
    replaced = store.ingest(new, task="retrieval", run="d", replace=True, **NO_GIT)
    assert (replaced.method, replaced.replaced) == ("direct", True)
    assert row_counts(store)["list_rows_int_f64"] == counts["list_rows_int_f64"] + 10
    assert contents(store, "d")[0] == expected_rows(new_table, "pm1", negate=False)
    assert contents(store, "keep") == kept


# -- evalstore bugs these tests found --------------------------------------------------------


@pytest.mark.parametrize("ids", ["int", "text"])  # int ids: the direct path; text: the stream
def test_a_file_name_with_brackets_is_that_file(store: Store, tmp_path: Path, ids: str) -> None:
    """A path names one file, not a glob pattern: `run[1].parquet` must not be read as its
    neighbour `run1.parquet`."""
    wanted = lists_table(1, 3, seed=1)
    other = lists_table(2, 5, seed=2)
    if ids == "text":
        wanted = _with(wanted, "group_id", ["q"] * 3, pa.string())
        other = _with(other, "group_id", ["other"] * 10, pa.string())
    path = parquet(tmp_path / "run[1].parquet", wanted)
    parquet(tmp_path / "run1.parquet", other)
    result = store.ingest(path, task="retrieval", run="r", **NO_GIT)
    assert result.rows == 3
    assert contents(store, "r")[0] == expected_rows(wanted, "pm1", negate=False)


@pytest.mark.parametrize("column", ["label", "score"])
def test_a_folder_named_like_a_column_does_not_change_it(
    store: Store, tmp_path: Path, column: str
) -> None:
    """A file in a folder `label=1` (or `score=0`) is read as it is: the folder name is not a
    hive partition value that replaces the file's own column."""
    table = lists_table(3, 4, seed=6)
    path = parquet(
        tmp_path / f"{column}={'1' if column == 'label' else '0'}" / "run.parquet", table
    )
    store.ingest(path, task="retrieval", run="r", **NO_GIT)
    assert contents(store, "r")[0] == expected_rows(table, "pm1", negate=False)


def test_a_column_mapped_away_is_not_read_under_its_own_name(store: Store, tmp_path: Path) -> None:
    """columns={"item_id": "group_id"} (verification): the stream reads `group_id` as the
    item ids only (one list); the direct path must not also make it the list id."""
    table = pa.table(
        {
            "group_id": pa.array([3, 1, 2], pa.int32()),
            "score": pa.array([0.5, 0.25, 0.125]),
            "label": pa.array([1, -1, 0], pa.int8()),
        }
    )
    path = parquet(tmp_path / "pairs.parquet", table)
    options = {"task": "verification", "columns": {"item_id": "group_id"}}
    store.ingest(table, run="memory", **options, **NO_GIT)
    store.ingest(path, run="file", **options, **NO_GIT)
    assert contents(store, "file") == contents(store, "memory")


def test_a_group_mapping_to_a_missing_column_is_refused(store: Store, tmp_path: Path) -> None:
    """columns={"group_id": "pair"} without a `pair` column (verification): the stream
    refuses it; the direct path must not ingest it as one list."""
    table = pa.table(
        {
            "item_id": pa.array([1, 2, 3], pa.int32()),
            "score": pa.array([0.5, 0.25, 0.125]),
            "label": pa.array([1, -1, 0], pa.int8()),
        }
    )
    path = parquet(tmp_path / "pairs.parquet", table)
    options = {"task": "verification", "columns": {"group_id": "pair"}}
    from_memory = failure(store, table, run="memory", **options)
    assert "missing column 'pair' named by columns=" in from_memory
    assert in_memory_labels(failure(store, path, run="file", **options), [path]) == from_memory


@pytest.mark.parametrize("source", ["parquet", "memory", "batches"])
def test_a_duplicate_across_batches_with_a_negative_item_id_is_refused(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    direct_attempts: list[str],
    source: str,
) -> None:
    """(group 0, item 0) in one batch and again in another, one of them with item -1: the
    stream must refuse it (the direct path gives up on it and leaves it to the stream)."""
    a = pa.table(
        {
            "group_id": pa.array([0], pa.int32()),
            "item_id": pa.array([0], pa.int32()),
            "score": pa.array([0.5]),
            "label": pa.array([1], pa.int8()),
        }
    )
    b = pa.table(
        {
            "group_id": pa.array([0, 0], pa.int32()),
            "item_id": pa.array([-1, 0], pa.int32()),
            "score": pa.array([0.25, 0.125]),
            "label": pa.array([-1, 0], pa.int8()),
        }
    )
    labels: list[str] = ["data[0]", "data[1]"]
    data: Any = [a, b]
    if source == "parquet":
        data = [parquet(tmp_path / "a.parquet", a), parquet(tmp_path / "b.parquet", b)]
        labels = [str(p) for p in data]
    elif source == "batches":  # one input, read in batches of two rows: a + b[0], b[1]
        monkeypatch.setattr(sources, "BATCH_ROWS", 2)
        data = pa.concat_tables([a, b])
    before = state(store)
    message = failure(store, data, task="retrieval", run="r")
    assert state(store) == before
    if source == "batches":
        assert message == (
            "data[0] row 3: duplicate (group_id, item_id) = ('0', '0'), first seen at row 1"
        )
    else:
        assert message == (
            f"{labels[1]} row 2: duplicate (group_id, item_id) = ('0', '0'), "
            f"first seen at {labels[0]} row 1"
        )
    assert direct_attempts == (["abandoned"] if source == "parquet" else [])


@pytest.mark.slow  # hypothesis: 60 bitmaps written and read back
@settings(max_examples=examples(60), deadline=None)
@given(
    lists=st.integers(1, 40),
    items=st.integers(1, 40),
    density=st.floats(0.0, 1.0),
    slice_bits=st.sampled_from([1, 7, 64, 1 << 24]),
    seed=st.integers(0, 2**32 - 1),
)
def test_pair_bitmap_reads_back_the_marked_pairs_and_lists(
    lists: int, items: int, density: float, slice_bits: int, seed: int
) -> None:
    """direct_check's bitmap (DuckDB's bitstring_agg as bytes) read back by _marks: the
    number of distinct (list, item) pairs and the lists holding one, for any shape and any
    slicing (slices start anywhere within a byte)."""
    import duckdb

    rng = np.random.default_rng(seed)
    marked = rng.random((lists, items)) < density
    listed, item = np.nonzero(marked)
    rows = np.concatenate([listed * items + item, listed[:3] * items + item[:3]])  # repeats
    con = duckdb.connect()
    blob = con.execute(
        "select cast(bitstring_agg(k, 0, $n - 1) as blob) from (select unnest($keys) as k)",
        {"n": lists * items, "keys": rows.tolist()},
    ).fetchall()[0][0]
    if not rows.size:  # no rows, no bitmap: direct_check always has rows
        assert blob is None
        return
    pairs, present = direct_ingest._marks(blob, lists, items, slice_bits=slice_bits)
    assert pairs == int(marked.sum())
    assert present.tolist() == np.flatnonzero(marked.any(axis=1)).tolist()


# -- what the direct path must not trust or misread -------------------------------------------


def patch_footer(path: Path, old: bytes, new: bytes) -> None:
    """Rewrite ``old`` as ``new`` in a Parquet file's footer (its statistics), not its data."""
    import struct

    raw = bytearray(path.read_bytes())
    start = len(raw) - 8 - struct.unpack("<i", raw[-8:-4])[0]
    assert raw[start:].count(old) >= 1
    raw[start:] = raw[start:].replace(old, new)
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("lie", ["group max", "item max", "score min"])
def test_statistics_that_lie_do_not_change_what_is_stored(
    store: Store, tmp_path: Path, lie: str
) -> None:
    """The direct path plans from the footer's min/max statistics; when they are wrong (a
    group or item id beyond the max, a -inf below the min), the rows stored and the list ids
    given out are still those of the data: no row outside the run's lists, no list id used
    twice."""
    import struct

    import duckdb

    table = {
        "group_id": pa.array([1_000_000, 1_000_000, 1_000_001, 1_000_005], pa.int32()),
        "item_id": pa.array([70_001, 70_002, 70_001, 70_009], pa.int32()),
        "score": pa.array([-math.inf, 0.2, 0.3, 0.4]),
        "label": pa.array([1, -1, 1, 1], pa.int8()),
    }
    path = parquet(tmp_path / "lie.parquet", table, use_dictionary=False)
    column, old, new, query = {
        "group max": ("group_id", 1_000_005, 1_000_001, "max"),
        "item max": ("item_id", 70_009, 70_002, "max"),
        "score min": ("score", -math.inf, -1.0, "min"),
    }[lie]
    kind = "<d" if column == "score" else "<i"
    patch_footer(path, struct.pack(kind, old), struct.pack(kind, new))
    said = duckdb.sql(f"select {query}({column}) from read_parquet('{path}')").fetchall()[0]
    assert said == (new,)  # DuckDB answers from the statistics: the plan sees the lie
    result = store.ingest(path, task="retrieval", run="file", **NO_GIT)
    store.ingest(table, task="retrieval", run="memory", **NO_GIT)
    assert contents(store, "file") == contents(store, "memory")
    assert result.rows == 4 and result.not_retrieved == 1
    other = store.ingest(
        {"group_id": [10, 11, 12, 13], "item_id": [7] * 4, "score": [0.5] * 4, "label": [1] * 4},
        task="retrieval",
        run="other",
        **NO_GIT,
    )
    assert contents(store, "other")[0] == [
        (str(g), "7", 0.5, 1, i) for i, g in enumerate(range(10, 14))
    ]
    ids = store.con.execute("select list_id from groups where list_id is not null").fetchall()
    assert len(ids) == len(set(ids)) == 3 + 3 + 4
    orphans = store.con.execute(
        "select count(*) from (select list_id from list_rows_int_f64 union all "
        "select list_id from list_rows_int_f32) r where r.list_id not in "
        "(select list_id from groups where list_id is not null)"
    ).fetchone()
    assert orphans == (0,) and other.lists == 4


def test_a_corrupt_data_page_is_one_line_and_changes_nothing(store: Store, tmp_path: Path) -> None:
    """A file whose footer reads but whose data does not: the same one-line error as the
    streaming path, nothing written."""
    n = 1000
    table = {
        "group_id": pa.array(np.arange(n) // 10, pa.int32()),
        "item_id": pa.array(np.arange(n), pa.int32()),
        "score": pa.array(np.random.default_rng(0).random(n)),
        "label": pa.array(np.where(np.arange(n) % 2, 1, -1), pa.int8()),
    }
    path = parquet(tmp_path / "c.parquet", table, compression="snappy", write_statistics=False)
    column = pq.ParquetFile(path).metadata.row_group(0).column(1)  # item_id's first page
    at = column.dictionary_page_offset or column.data_page_offset
    raw = bytearray(path.read_bytes())
    raw[at : at + 8] = bytes(b ^ 0xFF for b in raw[at : at + 8])
    path.write_bytes(bytes(raw))
    before = state(store)
    message = failure(store, path, task="retrieval", run="r")
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert state(store) == before


def test_column_names_equal_but_for_case_are_read_as_named(store: Store, tmp_path: Path) -> None:
    """`SCORE` and `score` in one file: DuckDB matches names without case, polars with it;
    the stored scores are those of `score`."""
    table = pa.table(
        {
            "group_id": pa.array([0, 0, 1, 1], pa.int32()),
            "item_id": pa.array([1, 2, 1, 2], pa.int32()),
            "SCORE": pa.array([100.0, 200.0, 300.0, 400.0]),
            "score": pa.array([0.1, 0.2, 0.3, 0.4]),
            "label": pa.array([1, -1, 1, -1], pa.int8()),
        }
    )
    path = parquet(tmp_path / "case.parquet", table)
    store.ingest(path, task="retrieval", run="file", **NO_GIT)
    store.ingest(table, task="retrieval", run="memory", **NO_GIT)
    assert contents(store, "file") == contents(store, "memory")
    assert [row[2] for row in contents(store, "file")[0]] == [0.1, 0.2, 0.3, 0.4]


def test_two_columns_mapped_to_one_source_are_refused_as_the_stream_does(
    store: Store, tmp_path: Path
) -> None:
    """columns={"item_id": "id", "group_id": "id"}: the same error from a file as in memory."""
    table = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int32()),
            "score": pa.array([0.5, 0.25, 0.125]),
            "label": pa.array([1, -1, 0], pa.int8()),
        }
    )
    path = parquet(tmp_path / "one.parquet", table)
    options = {"task": "retrieval", "columns": {"item_id": "id", "group_id": "id"}}
    from_memory = failure(store, table, run="memory", **options)
    assert in_memory_labels(failure(store, path, run="file", **options), [path]) == from_memory


@pytest.mark.parametrize("path", ["direct", "stream"])
def test_running_out_of_list_ids_is_one_line(store: Store, tmp_path: Path, path: str) -> None:
    """A store that has given out nearly 2^31 list ids refuses more with one clear error and
    stays as it was."""
    from evalstore import EvalstoreError

    store.con.execute("update list_id_next set next = 2147483647 - 3")
    before = state(store)
    table = lists_table(5, 2, seed=3)
    data = parquet(tmp_path / "l.parquet", table) if path == "direct" else table
    with pytest.raises(EvalstoreError, match="too few left") as info:
        store.ingest(data, task="retrieval", run="r", **NO_GIT)
    assert "\n" not in str(info.value)
    assert state(store) == before


@pytest.mark.parametrize("lie", ["groups", "items", "no -inf"])
def test_a_plan_narrower_than_the_data_is_abandoned(store: Store, tmp_path: Path, lie: str) -> None:
    """The direct insert checks the ranges it planned from the files' statistics: a group id
    beyond them (its row would land outside the run's lists), an item id beyond them or a
    -inf where the statistics showed none makes it give up, for the streaming path to run."""
    import dataclasses

    table = {
        "group_id": pa.array([0, 0, 1, 5], pa.int32()),
        "item_id": pa.array([1, 2, 1, 9], pa.int32()),
        "score": pa.array([-math.inf, 0.2, 0.3, 0.4]),
        "label": pa.array([1, -1, 1, 1], pa.int8()),
    }
    path = parquet(tmp_path / "t.parquet", table)
    spec = validate.Spec("retrieval", {}, "pm1", False)
    plan = direct_ingest.plan_direct(store.con, [sources.open_source(path, None, 0)], spec)
    assert plan is not None and (plan.groups, plan.items) == (6, 9)
    narrowed = {
        "groups": dataclasses.replace(plan, groups=2),
        "items": dataclasses.replace(plan, items=2),
        "no -inf": dataclasses.replace(plan, files=[(str(path), 4, False)]),
    }[lie]
    store.con.execute("begin transaction")
    try:
        with pytest.raises(direct_ingest.Recheck):
            direct_ingest.insert_direct(store.con, narrowed, spec, 0, None)
    finally:
        store.con.execute("rollback")
    full = direct_ingest.insert_direct  # the same plan unnarrowed goes through
    store.con.execute("begin transaction")
    try:
        assert full(store.con, plan, spec, 0, None).rows == 4
    finally:
        store.con.execute("rollback")


@pytest.mark.parametrize("lie", ["int64 group id", "int16 label", "item beyond max"])
def test_values_beyond_lying_statistics_are_not_truncated(
    store: Store, tmp_path: Path, lie: str
) -> None:
    """Statistics that put a value within range (an int64 group id of 2^32 + 2 said to be at
    most 2, a label 257 said to be at most 1, an item id 3 said to be at most 2, whose bit in
    the pair bitmap would be another list's) must not store a value truncated or make up a
    list: the same rows and lists, or the same error, as from memory."""
    import struct

    import duckdb

    groups, items, labels = [0, 0, 1, 2**32 + 2], [5, 6, 5, 5], [1, -1, 1, 1]
    if lie == "int16 label":
        groups, labels = [0, 0, 1, 1], [1, -1, 1, 257]
    if lie == "item beyond max":
        groups, items = [0, 0, 2, 2], [1, 3, 1, 2]
    table = pa.table(
        {
            "group_id": pa.array(groups, pa.int64()),
            "item_id": pa.array(items, pa.int32()),
            "score": pa.array([0.1, 0.2, 0.3, 0.4]),
            "label": pa.array(labels, pa.int16()),
        }
    )
    path = parquet(tmp_path / "lie.parquet", table, use_dictionary=False)
    old, new, query = {
        "int64 group id": (struct.pack("<q", 2**32 + 2), struct.pack("<q", 2), "max(group_id)"),
        "int16 label": (struct.pack("<i", 257), struct.pack("<i", 1), "max(label)"),
        "item beyond max": (struct.pack("<i", 3), struct.pack("<i", 2), "max(item_id)"),
    }[lie]
    patch_footer(path, old, new)
    said = duckdb.sql(f"select {query} from read_parquet('{path}')").fetchall()[0][0]
    assert said == struct.unpack("<q" if len(new) == 8 else "<i", new)[0]
    if lie == "int16 label":
        from_memory = failure(store, table, task="retrieval", run="memory")
        assert in_memory_labels(failure(store, path, task="retrieval", run="file"), [path]) == (
            from_memory
        )
        return
    store.ingest(path, task="retrieval", run="file", **NO_GIT)
    store.ingest(table, task="retrieval", run="memory", **NO_GIT)
    assert contents(store, "file") == contents(store, "memory")


def test_a_file_name_is_never_read_as_sql(store: Store, tmp_path: Path) -> None:
    """A newline in a file's name (which the queries quote) runs nothing: the other runs of
    the store keep their rows."""
    store.ingest(lists_table(2, 3, seed=1), task="retrieval", run="kept", **NO_GIT)
    kept = contents(store, "kept")
    table = lists_table(2, 3, seed=2)
    path = parquet(
        tmp_path / "r\ndelete from list_rows_int_f64;\ndelete from groups;--.parquet", table
    )
    result = store.ingest(path, task="retrieval", run="named", **NO_GIT)
    assert result.method == "direct" and result.rows == 6
    assert contents(store, "kept") == kept


def test_near_the_last_list_id_the_direct_path_defers_to_the_stream(
    store: Store, tmp_path: Path
) -> None:
    """Group ids 0 and 100 would take 101 list ids on the direct path; with 60 left, the
    streaming path takes 2 and the ingest succeeds."""
    store.con.execute("update list_id_next set next = 2147483647 - 60")
    table = {
        "group_id": pa.array([0, 100], pa.int32()),
        "item_id": pa.array([1, 1], pa.int32()),
        "score": pa.array([0.5, 0.25]),
        "label": pa.array([1, -1], pa.int8()),
    }
    result = store.ingest(
        parquet(tmp_path / "s.parquet", table), task="retrieval", run="r", **NO_GIT
    )
    assert (result.method, result.lists) == ("stream", 2)
    assert next_list_id(store) == 2147483647 - 58


def test_importing_past_the_last_list_id_is_one_line(store: Store, tmp_path: Path) -> None:
    """An import that needs more list ids than the store has left: one line, with what to do,
    and the store unchanged."""
    from evalstore import EvalstoreError
    from evalstore.scale.export import export_runs
    from evalstore.scale.importer import import_runs

    with Store(tmp_path / "source.duckdb") as source:
        source.ingest(lists_table(3, 2, seed=4), task="retrieval", run="r", **NO_GIT)
        export_runs(source, tmp_path / "out")
    store.con.execute("update list_id_next set next = 2147483647 - 3")
    before = state(store)
    with pytest.raises(EvalstoreError, match="too few left") as info:
        import_runs(store, tmp_path / "out")
    assert "\n" not in str(info.value) and "import them into a new store" in str(info.value)
    assert state(store) == before


def test_a_nul_in_a_mapped_column_name_is_streamed(store: Store, tmp_path: Path) -> None:
    """A column name with a NUL (which no SQL identifier holds) is read by the stream."""
    table = pa.table(
        {
            "group_id": pa.array([0, 0], pa.int32()),
            "item_id": pa.array([1, 2], pa.int32()),
            "s\x00core": pa.array([0.5, 0.25]),
            "label": pa.array([1, -1], pa.int8()),
        }
    )
    options = {"task": "retrieval", "columns": {"score": "s\x00core"}}
    result = store.ingest(parquet(tmp_path / "n.parquet", table), run="file", **options, **NO_GIT)
    store.ingest(table, run="memory", **options, **NO_GIT)
    assert result.method == "stream" and contents(store, "file") == contents(store, "memory")


@pytest.mark.parametrize(
    ("rows", "row_group_size", "method"), [(2000, 100, "stream"), (40_000, 20_000, "direct")]
)
def test_many_tiny_row_groups_are_streamed(
    store: Store, tmp_path: Path, rows: int, row_group_size: int, method: str
) -> None:
    """A file of many tiny row groups (a writer called once per query) is read faster by
    polars than by DuckDB's insert: it is streamed; large row groups go direct. Same rows."""
    table = lists_table(rows // 20, 20, seed=8)
    path = parquet(tmp_path / "g.parquet", table, row_group_size=row_group_size)
    result = store.ingest(path, task="retrieval", run="file", **NO_GIT)
    store.ingest(table, task="retrieval", run="memory", **NO_GIT)
    assert result.method == method
    assert contents(store, "file") == contents(store, "memory")


def test_a_failed_direct_insert_restores_the_optimizer_setting(
    store: Store, tmp_path: Path
) -> None:
    """The direct insert turns DuckDB's statistics propagation off for itself only: after it
    fails (a 0/1 label of 2), the setting is what it was, a user's own value included."""
    store.con.execute("set disabled_optimizers = 'join_order'")
    table = {
        "group_id": pa.array([0, 0], pa.int32()),
        "item_id": pa.array([1, 2], pa.int32()),
        "score": pa.array([0.5, 0.25]),
        "label": pa.array([1, 2], pa.int8()),
    }
    path = parquet(tmp_path / "l.parquet", table)
    message = failure(store, path, task="retrieval", run="r", labels="01")
    assert "row 2" in message
    setting = store.con.execute("select current_setting('disabled_optimizers')").fetchall()
    assert setting == [("join_order",)]
    good = parquet(tmp_path / "good.parquet", lists_table(2, 3, seed=5))
    assert store.ingest(good, task="retrieval", run="ok", **NO_GIT).method == "direct"
    after = store.con.execute("select current_setting('disabled_optimizers')").fetchall()
    assert after == [("join_order",)]


def test_an_interrupted_direct_insert_stops_the_ingest(store: Store, tmp_path: Path) -> None:
    """One interrupt of DuckDB (what Ctrl-C does) while the direct insert runs stops the
    ingest: no retry on the streaming path, nothing written, the optimizer setting as it
    was."""
    import threading
    import time

    import duckdb

    n = 3_000_000
    rng = np.random.default_rng(0)
    table = {
        "group_id": pa.array(np.repeat(np.arange(n // 1000, dtype=np.int32), 1000)),
        "item_id": pa.array(np.tile(np.arange(1000, dtype=np.int32), n // 1000)),
        "score": pa.array(rng.standard_normal(n).astype(np.float32)),
        "label": pa.array(np.where(rng.random(n) < 0.1, 1, -1).astype(np.int8)),
    }
    path = parquet(tmp_path / "big.parquet", table)
    before = state(store)
    # the store turns DuckDB's progress off; on, it says when a query runs (not printed)
    store.con.execute("set enable_progress_bar = true; set enable_progress_bar_print = false")
    reported = threading.Event()
    seen: list[float] = []

    def interrupt_the_insert() -> None:
        """Once the insert runs (DuckDB reports its progress: -1 while no query runs), one
        interrupt; no timer, so a loaded machine neither interrupts too early (an interrupt
        before a query is forgotten) nor too late."""
        assert reported.wait(timeout=60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (done := store.con.query_progress()) >= 0:
                seen.append(done)
                store.con.interrupt()
                return
            time.sleep(0.001)

    def progress(stage: str, done: int, total: int | None) -> None:
        if not reported.is_set():  # the direct path reports (0, rows) just before its insert
            assert (done, total) == (0, n)
            reported.set()

    interrupter = threading.Thread(target=interrupt_the_insert)
    interrupter.start()
    try:
        with pytest.raises((duckdb.InterruptException, RuntimeError)):
            store.ingest(path, task="retrieval", run="big", progress=progress, **NO_GIT)
    finally:
        reported.set()
        interrupter.join()
    assert seen and seen[0] < 100, seen  # interrupted while the insert ran
    assert state(store) == before
    assert store.con.execute("select current_setting('disabled_optimizers')").fetchall() == [("",)]
