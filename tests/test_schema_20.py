"""Schema 20 (sql/schema/020_row_compression.sql): the four row tables declare the
compression of float32 scores and of gains (ALP). A new store has them; a store written at
schema 19 opens with each row table written again, its rows in the same order, the views over
them and every metric value as before; and the declared methods are the ones DuckDB stores
the rows with."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import training_tables

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.db import schema as schema_module
from evalstore.db.schema import ROW_TABLES

#: column -> declared method (None: DuckDB chooses), per kind of table
DECLARED = {
    "int_f32": (None, None, "ALP", None, None, "ALP"),
    "int_f64": (None, None, None, None, None, "ALP"),
    "text_f32": (None, None, "ALP", None, None, "ALP"),
    "text_f64": (None, None, None, None, None, "ALP"),
}
COLUMNS = ("list_id", "item", "score", "label", "seq", "gain")


def _declared(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str | None, ...]]:
    """Each row table's declared compression per column, read from its CREATE statement."""
    found = {}
    for table, sql in con.execute(
        "select table_name, sql from duckdb_tables() where table_name like 'list_rows_%'"
    ).fetchall():
        inside = sql[sql.index("(") + 1 : sql.rindex(")")]
        methods = []
        for column, text in zip(COLUMNS, inside.split(", "), strict=True):
            words = text.split()
            assert words[0].strip('"') == column
            methods.append(
                words[words.index("COMPRESSION") + 1] if "COMPRESSION" in words else None
            )
        found[table.removeprefix("list_rows_")] = tuple(methods)
    return found


def _files(tmp_path: Path, rng: np.random.Generator) -> dict[str, Path]:
    """One Parquet file per row table: 3 lists of 2,000 rows (a few not retrieved), scores of
    2 decimals (ties), graded gains in the text/f32 one."""
    files = {}
    n = 6_000
    for kind in DECLARED:
        items, scores = kind.split("_")
        item = rng.permutation(10 * n)[:n].astype(np.int32)
        score = np.round(rng.standard_normal(n), 2).astype(
            np.float32 if scores == "f32" else np.float64
        )
        table = pa.table(
            {
                "group_id": np.repeat(np.array(["q1", "q2", "q3"]), n // 3),
                "item_id": item if items == "int" else pa.array(item.astype(str)),
                "score": pa.array(score, mask=rng.random(n) < 0.01),
                "label": rng.choice(np.array([1, -1], np.int8), n, p=[0.1, 0.9]),
            }
        )
        if kind == "text_f32":  # graded: gain 0-4, label +1 where gain > 0
            gain = rng.choice(5, n, p=[0.8, 0.08, 0.06, 0.04, 0.02]).astype(np.float64)
            table = table.drop_columns("label").append_column("gain", pa.array(gain))
        files[kind] = tmp_path / f"{kind}.parquet"
        pq.write_table(table, files[kind])
    return files


def _state(store: Store) -> dict[str, object]:
    """What the upgrade must keep: each row table's rows in their stored order, the views
    over them, the derived tables and the ap and ndcg of every run."""
    con = store.con
    state: dict[str, object] = {
        table: con.execute(f"select * from {table} order by rowid").fetchall()
        for table in sorted(ROW_TABLES)
    }
    state["scores"] = con.execute("select * from scores order by all").fetchall()
    state["score_items"] = con.execute("select * from score_items order by all").fetchall()
    for table in ("list_stats", "positive_ranks", "tied_ranks", "groups"):
        state[table] = con.execute(f"select * from {table} order by all").fetchall()
    runs = [f"x/{kind}" for kind in DECLARED if kind != "int_f64"]  # int_f64 removed
    values = evaluate(store, runs, metrics=["ap", "ndcg"], by=["query"])
    state["values"] = sorted(values.select("run", "metric", "slice", "value").rows())
    return state


@pytest.mark.no_store
def test_schema_20_rewrites_row_tables_keeping_rows(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written at schema 19 (runs in all four row tables, one removed: rowid gaps)
    opens at schema 20 with the declared compression, the same rows in the same order, the
    same views, derived tables and metric values; a new store declares the same."""
    files = schema_module.migrations()
    monkeypatch.setattr(schema_module, "migrations", lambda: [f for f in files if f[0] <= 19])
    parquet = _files(tmp_path, np.random.default_rng(20))
    with Store(db) as store:
        assert store.schema_version() == 19
        assert set(_declared(store.con).values()) == {(None,) * 6}
        training_tables(store.con, files)
        for kind, path in parquet.items():
            store.ingest(path, task="retrieval", run=f"x/{kind}")
        store.remove("x/int_f64")
        assert store.con.execute("select count(*) from list_rows_int_f64").fetchone() == (0,)
        store.ingest(parquet["int_f64"], task="retrieval", run="y/int_f64")  # after the gap
        before = _state(store)
        training_tables(store.con, files, drop=True)
    monkeypatch.setattr(schema_module, "migrations", lambda: files)
    with Store(db) as store:
        assert store.upgraded_from == 19
        assert store.schema_version() == schema_module.latest_schema_version() >= 20
        assert _declared(store.con) == DECLARED
        after = _state(store)
        assert store.con.execute("select count(*) from list_rows_int_f64").fetchone() == (6_000,)
    assert after == before
    assert all(before[table] for table in ROW_TABLES)
    with Store(tmp_path / "new.duckdb") as store:
        assert _declared(store.con) == DECLARED


def test_declared_methods_are_the_stored_ones(store: Store, tmp_path: Path) -> None:
    """After an ingest and a checkpoint, each column of a row table is stored with its
    declared method (or as one constant segment: a binary run's NULL gains); where DuckDB
    chooses (the integer and text columns, float64 scores), whatever it chose."""
    parquet = _files(tmp_path, np.random.default_rng(3))
    for kind, path in parquet.items():
        store.ingest(path, task="retrieval", run=f"x/{kind}")
    store.con.execute("checkpoint")
    for kind, declared in DECLARED.items():
        stored = dict(
            store.con.execute(
                "select column_name, list(distinct compression order by compression) "
                "from pragma_storage_info(?) where segment_type <> 'VALIDITY' group by all",
                [f"list_rows_{kind}"],
            ).fetchall()
        )
        for column, method in zip(COLUMNS, declared, strict=True):
            if method is None:
                continue
            constant = column == "gain" and kind != "text_f32"  # all NULL
            assert stored[column] == (["Constant"] if constant else [method]), (kind, column)
