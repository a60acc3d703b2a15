from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from evalstore import SchemaError, Store, StoreLocked
from evalstore.db.schema import latest_schema_version
from tools.write_fresh_schema import DRAWN


def test_new_store_records_every_schema_file(db: Path) -> None:
    with Store(db) as store:
        versions = store.con.execute("select version from schema_version order by 1").fetchall()
    assert [v[0] for v in versions] == list(range(1, latest_schema_version() + 1))


def test_reopening_applies_nothing_twice(db: Path) -> None:
    Store(db).close()
    with Store(db) as store:
        assert store.schema_version() == latest_schema_version()
        n = store.con.execute("select count(*) from schema_version").fetchone()
    assert n == (latest_schema_version(),)


def test_newer_schema_is_refused(db: Path) -> None:
    Store(db).close()
    con = duckdb.connect(str(db))
    con.execute("insert into schema_version (version, name) values (999, 'future')")
    con.close()
    with pytest.raises(SchemaError, match="schema version 999, newer"):
        Store(db)


@pytest.mark.no_store
def test_foreign_duckdb_file_is_refused(db: Path) -> None:
    con = duckdb.connect(str(db))
    con.execute("create table something (x int)")
    con.close()
    with pytest.raises(SchemaError, match="not an evalstore store"):
        Store(db)


def test_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.duckdb"
    path.write_text("hello, I am text\n" * 100)
    with pytest.raises(SchemaError, match="cannot open"):
        Store(path)


def test_read_only_needs_an_existing_file(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no evalstore database"):
        Store(tmp_path / "missing.duckdb", read_only=True)


def test_default_path_follows_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALSTORE_DB", str(tmp_path / "env.duckdb"))
    with Store() as store:
        assert store.path == tmp_path / "env.duckdb"
    assert (tmp_path / "env.duckdb").exists()


# holds the lock until its stdin closes (killed at the end of the test): no timer
HOLD = (
    "import duckdb, sys; c = duckdb.connect({path!r}); print('held', flush=True); sys.stdin.read()"
)


@pytest.mark.slow  # a real process holds the lock
def test_lock_timeout_names_the_file(db: Path) -> None:
    import subprocess
    import sys

    Store(db).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            HOLD.format(path=str(db)),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreLocked, match=f"{db.name} is locked by process {holder.pid}"):
            Store(db, lock_timeout=0.3)
    finally:
        holder.kill()
        holder.communicate()  # and its stdout closed (else a ResourceWarning)


@pytest.mark.no_store
def test_schema_6_migrates_stored_lists(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written at schema 5 (text keys only, groups rows for metadata only) opens with
    list ids unique across runs and tasks, a groups row per list, and the same metric values."""
    import numpy as np

    from evalstore.analysis.evaluate import evaluate
    from evalstore.core.ranking import ap
    from evalstore.db import schema as store_module

    files = store_module.migrations()
    monkeypatch.setattr(store_module, "migrations", lambda: [f for f in files if f[0] <= 5])
    lists = {"q1": ([3.0, 2.0, 1.0], [1, -1, 1]), "q2": ([0.5, 0.5, 0.1], [-1, 1, 1])}
    with Store(db) as store:
        assert store.schema_version() == 5
        for run_id, name in ((1, "a"), (2, "b")):
            store.con.execute(
                "insert into runs (run_id, experiment, name, created_at) values (?, 'x', ?, now())",
                [run_id, name],
            )
            seq = 0
            for gid, (scores, labels) in lists.items():
                for i, (s, lab) in enumerate(zip(scores, labels, strict=True)):
                    store.con.execute(
                        "insert into scores values (?, 'retrieval', ?, ?, ?, ?, ?)",
                        [run_id, gid, f"i{i}", s, lab, seq],
                    )
                    seq += 1
            store.con.execute(
                "insert into scores values (?, 'verification', null, 'p', 1.0, 1, ?)", [run_id, seq]
            )
        store.con.execute(  # an override: q2 of run a has 4 positives, 2 of them not retrieved
            "insert into groups (run_id, task, group_id, n_positives, slices) "
            "values (1, 'retrieval', 'q2', 4, map(['split'], ['test']))"
        )
    monkeypatch.setattr(store_module, "migrations", lambda: files)
    with Store(db) as store:
        assert store.schema_version() == latest_schema_version()
        rows = store.con.execute(
            "select run_id, cast(task as varchar), group_id, list_id, n_positives, slices "
            "from groups order by run_id, task, group_id"
        ).fetchall()
        assert len(rows) == 6 and len({r[3] for r in rows}) == 6  # a list id per list
        meta = next(r for r in rows if r[:3] == (1, "retrieval", "q2"))
        assert meta[4:] == (4, {"split": "test"})
        mismatch = store.con.execute(
            "select count(*) from scores s join groups g on g.list_id = s.list_id "
            "where g.run_id <> s.run_id or g.task <> s.task "
            "or g.group_id is distinct from s.group_id"
        ).fetchone()
        assert mismatch == (0,)
        got = evaluate(store, ["x/a", "x/b"], metrics=["ap"], by=["query"])
        values = {(r["run"], r["slice"]): r["value"] for r in got.iter_rows(named=True)}
    for run in ("x/a", "x/b"):
        for gid, (scores, labels) in lists.items():
            n_pos = 4 if (run, gid) == ("x/a", "q2") else None
            want = ap(np.array(scores), np.array(labels), n_positives=n_pos)
            assert values[(run, f"query={gid}")] == pytest.approx(want, rel=1e-12)


# -- the fresh schema and migrations ---------------------------------------------------------


def catalogue(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[object, ...]]]:
    """What a schema defines: columns (of tables and views), constraints, types, sequences,
    indexes, recorded versions and the rows of every table."""
    queries = {
        "columns": "select table_name, column_index, column_name, data_type, is_nullable, "
        "column_default from duckdb_columns() where database_name = current_database()",
        "constraints": "select table_name, constraint_type, constraint_text "
        "from duckdb_constraints() where database_name = current_database()",
        "types": "select type_name, logical_type, labels from duckdb_types() "
        "where not internal and database_name = current_database()",
        "sequences": "select sequence_name, start_value, increment_by, min_value, max_value "
        "from duckdb_sequences() where database_name = current_database()",
        "indexes": "select table_name, index_name from duckdb_indexes() "
        "where database_name = current_database()",
        "views": "select view_name from duckdb_views() where not internal "
        "and database_name = current_database()",
        "versions": "select version, name from schema_version",
    }
    found = {k: sorted(con.execute(q).fetchall(), key=repr) for k, q in queries.items()}
    tables = con.execute(
        "select table_name from duckdb_tables() where database_name = current_database() "
        "and table_name <> 'schema_version' order by 1"
    ).fetchall()
    found["rows"] = [  # what the migrations put in the tables (the next list id)
        (t, sorted(con.execute(f'select * from "{t}"').fetchall(), key=repr))
        for (t,) in tables
        if t not in DRAWN
    ]
    found["drawn"] = [  # a value drawn per store (its identity): one row, a UUID
        (t, [len(str(v)) for (v,) in con.execute(f'select * from "{t}"').fetchall()])
        for (t,) in tables
        if t in DRAWN
    ]
    return found


def test_fresh_schema_file_is_what_the_migrations_build() -> None:
    """sql/schema/fresh.sql is up to date: regenerated from the migrations, it is unchanged
    (fails after a new migration until `python tools/write_fresh_schema.py` is run)."""
    from evalstore.db.queries import sql_dir
    from evalstore.db.schema import FRESH_SCHEMA, fresh_schema
    from tools.write_fresh_schema import fresh_schema_text

    assert fresh_schema()[0] == latest_schema_version()
    assert (sql_dir() / "schema" / FRESH_SCHEMA).read_text() == fresh_schema_text()


def test_a_new_store_has_the_catalogue_of_the_replayed_migrations(tmp_path: Path) -> None:
    """A new store applies fresh.sql at once; its catalogue equals that of every migration
    applied in order (types by name, defaults, constraints, views)."""
    from evalstore.db.schema import refresh_views, replayed_schema

    with Store(tmp_path / "fresh.duckdb") as store:
        fresh = catalogue(store.con)
    con = duckdb.connect(str(tmp_path / "replayed.duckdb"))
    try:
        replayed_schema(con)
        refresh_views(con)
        replayed = catalogue(con)
    finally:
        con.close()
    assert fresh["columns"] and fresh == replayed


@pytest.mark.no_store
def test_schema_7_moves_rows_to_the_lean_tables(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written at schema 6 (one row table with NULL columns for the other kind of id
    and score) opens at schema 7 with the same `scores` rows, each list whole in the row table
    of its kinds: int32 item ids as integers (others as text), float32 scores as FLOAT."""
    from evalstore.db import schema as store_module
    from evalstore.db.schema import ROW_TABLES

    files = store_module.migrations()
    monkeypatch.setattr(store_module, "migrations", lambda: [f for f in files if f[0] <= 6])
    # (list_id, group, item_num, item_key, score, score32): one list per kind of storage
    rows = [
        (0, "a", 7, None, None, 0.5),  # int items, float32 scores (one not retrieved)
        (0, "a", -3, None, None, None),
        (1, "b", 8, None, 0.25, None),  # int items, float64 scores
        (2, "c", 1 << 40, None, 1.5, None),  # an item id beyond int32: text
        (2, "c", 5, None, None, None),
        (3, "d", None, "x1", None, 2.5),  # text items, float32
        (4, "e", None, "y1", 3.0, None),  # text items, float64
        (5, "f", 9, None, None, None),  # nothing retrieved
    ]
    with Store(db) as store:
        assert store.schema_version() == 6
        store.con.execute(
            "insert into runs (run_id, experiment, name, created_at) values (1, 'x', 'a', now())"
        )
        for seq, (list_id, _, num, key, score, score32) in enumerate(rows):
            store.con.execute(
                "insert into score_rows (run_id, task, list_id, item_num, item_key, score, "
                "score32, label, seq) values (1, 'retrieval', ?, ?, ?, ?, ?, ?, ?)",
                [list_id, num, key, score, score32, 1 if seq % 2 else -1, seq],
            )
        for list_id, group in sorted({(r[0], r[1]) for r in rows}):
            store.con.execute(
                "insert into groups (run_id, task, group_id, list_id) "
                "values (1, 'retrieval', ?, ?)",
                [group, list_id],
            )
        store.con.execute("update list_id_next set next = 6")
        before = store.con.execute("select * from scores order by seq").fetchall()
    monkeypatch.setattr(store_module, "migrations", lambda: files)
    with Store(db) as store:
        assert store.schema_version() == latest_schema_version()
        after = store.con.execute(
            "select * exclude (gain) from scores order by seq"  # gains came with schema 16
        ).fetchall()
        where = {
            table: sorted(
                {r[0] for r in store.con.execute(f"select list_id from {table}").fetchall()}
            )
            for table in sorted(ROW_TABLES)
        }
    assert after == before and len(after) == len(rows)
    assert where == {
        "list_rows_int_f32": [0],
        "list_rows_int_f64": [1, 5],
        "list_rows_text_f32": [3],
        "list_rows_text_f64": [2, 4],
    }


@pytest.mark.no_store
def test_a_store_schema_7_cannot_hold_stays_as_it_was(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schema-6 task of 2^31 rows or more (seq beyond INTEGER) cannot move to schema 7: the
    upgrade stops with one line naming the file and the schema, and the store is unchanged."""
    from evalstore.db import schema as store_module

    files = store_module.migrations()
    monkeypatch.setattr(store_module, "migrations", lambda: [f for f in files if f[0] <= 6])
    with Store(db) as store:
        store.con.execute(
            "insert into runs (run_id, experiment, name, created_at) values (1, 'x', 'a', now())"
        )
        store.con.execute(
            "insert into score_rows (run_id, task, list_id, item_num, score, label, seq) "
            "values (1, 'retrieval', 0, 1, 0.5, 1, 2147483648)"
        )
        store.con.execute(
            "insert into groups (run_id, task, group_id, list_id) values (1, 'retrieval', 'q', 0)"
        )
    monkeypatch.setattr(store_module, "migrations", lambda: files)
    with pytest.raises(SchemaError) as info:
        Store(db)
    message = str(info.value)
    assert message.startswith(f"{db}: cannot upgrade to schema 7 (lean_rows): ")
    assert "2,147,483,647 rows" in message and "\n" not in message
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("select max(version) from schema_version").fetchone() == (6,)
        assert con.execute("select seq from score_rows").fetchall() == [(2147483648,)]
    finally:
        con.close()


@pytest.mark.no_store
def test_schema_15_numbers_pairs_and_keeps_every_match(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keypoint rows written at schema 14 (matches keyed by the pair's text id, the truth
    stored) open with each match under its pair's number, the stored truth kept, and the
    same metric values; a run ingested after the upgrade stores no truth a homography gives."""
    from evalstore.analysis.evaluate import evaluate
    from evalstore.db import schema as store_module

    files = store_module.migrations()
    monkeypatch.setattr(store_module, "migrations", lambda: [f for f in files if f[0] <= 14])
    eye = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    with Store(db) as store:
        assert store.schema_version() == 14
        for run_id, name in ((101, "a"), (102, "b")):  # ids the sequence does not give
            store.con.execute(
                "insert into runs (run_id, experiment, name, created_at) values (?, 'x', ?, now())",
                [run_id, name],
            )
            for pair in ("7", "007", "p"):  # "007" sorts first: it becomes pair 0
                store.con.execute(
                    "insert into pairs (run_id, pair_id, h11, h12, h13, h21, h22, h23, h31, h32, "
                    "h33, width, height) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 64, 48)",
                    [run_id, pair, *eye],
                )
        # run a: pair 7 has matches 0, 2 and 5 px from their truth; 007 one at 4 px; p none
        rows = [(101, "7", 0.0, 0), (101, "7", 2.0, 1), (101, "7", 5.0, 2), (101, "007", 4.0, 3)]
        rows += [(102, "p", 1.0, 0)]
        for run_id, pair, d, seq in rows:
            store.con.execute(
                "insert into matches values (?, ?, 10, 10, ?, 10, null, 10, 10, ?)",
                [run_id, pair, 10.0 + d, seq],
            )
    monkeypatch.setattr(store_module, "migrations", lambda: files)
    with Store(db) as store:
        assert store.schema_version() == latest_schema_version()
        numbers = store.con.execute(
            "select run_id, pair_id, pair_no from pairs order by run_id, pair_no"
        ).fetchall()
        assert numbers == [
            (101, "007", 0),
            (101, "7", 1),
            (101, "p", 2),
            (102, "007", 0),
            (102, "7", 1),
            (102, "p", 2),
        ]
        kept = store.con.execute(
            "select run_id, pair_id, x1 - gt_x1, seq from v_matches order by run_id, seq"
        ).fetchall()
        assert kept == [(r, p, d, s) for r, p, d, s in rows]
        got = evaluate(store, ["x/a"], metrics=["precision_at_sigma"], by=["pair"])
        values = {r["slice"]: r["value"] for r in got.iter_rows(named=True) if "3.0" in r["params"]}
        assert values["pair=7"] == pytest.approx(2 / 3) and values["pair=007"] == 0.0
        assert values["pair=p"] == 0.0  # a pair without matches scores 0
        store.ingest_keypoints(
            {"pair_id": ["q"], "x0": [1.0], "y0": [2.0], "x1": [1.0], "y1": [2.0]},
            run="x/c",
            pairs={
                "pair_id": ["q"],
                **{f"h{i}{j}": [float(i == j)] for i in (1, 2, 3) for j in (1, 2, 3)},
            },
            git_commit=None,
        )
        new = store.con.execute(
            "select m.pair_no, m.gt_x1, v.gt_x1 from matches m join runs r using (run_id) "
            "join v_matches v using (run_id, seq) where r.name = 'c'"
        ).fetchall()
        assert new == [(0, None, 1.0)]
