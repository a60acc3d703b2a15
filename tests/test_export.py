"""Export to Parquet and import back: every raw table round-trips bit for bit under new run
ids; re-exporting a run replaces its folders atomically; the manifest describes the export."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import export_lists, ranked, snapshot

from evalstore import Store
from evalstore.errors import EvalstoreError, RunExists, SchemaError
from evalstore.scale import export
from evalstore.scale.export import TABLES, export_runs, partition_path, read_manifest
from evalstore.scale.importer import import_runs


def _fill(store: Store) -> None:
    """Every table, with the awkward values: NULL and -0.0 scores, unicode ids, a map with a
    NULL value, nested JSON params, tags, a global verification list (group_id NULL)."""
    groups = pl.DataFrame(
        {
            "group_id": [0, 1, 2],
            "n_positives": [7, None, 3],
            "sequence": ["i_ajuntament", "v_wall", None],
            "noise": ["easy", "hard", "tough"],
        }
    )
    store.ingest(
        ranked(3, 6, seed=1),
        task="retrieval",
        run="exp/a",
        groups=groups,
        params={"lr": 0.1, "nested": {"x": [1, 2.5, None]}, "name": 'é ü "q"'},
        tags=["baseline", "ünï"],
        notes="line 1\nline 2",
        created_at="2026-03-01T10:00:00.123456",
        git_commit=None,
    )
    store.ingest(
        {
            "item_id": ["x/1", "x/2", "x/3", "x/4"],
            "score": np.array([1.0, -0.0, 0.0, -np.inf]),
            "label": [1, -1, 1, -1],
            "gain": [2.0, 0.0, 0.5, 0.0],  # graded: the round trip keeps the gains
        },
        task="verification",
        run="exp/a",
        append=True,
    )
    matches = pl.DataFrame(
        {
            "pair_id": ["p1"] * 5 + ["p2"] * 2,
            "x0": [0.0, 10.0, 20.0, 30.0, 15.5, 1.0, 2.0],
            "y0": [0.0, 5.0, 30.0, 10.0, 7.25, 1.0, 2.0],
            "x1": [4.0, 14.0, 24.5, 34.0, 19.5, 5.0, 6.0],
            "y1": [-2.0, 3.0, 28.0, 8.0, 5.25, -1.0, 0.0],
            "score": [0.5, -0.0, 0.25, 1.0, 0.0, 0.1, 0.2],
        }
    )
    pairs = pl.DataFrame(
        {
            "pair_id": ["p1", "p2", "p3"],
            **{
                f"h{i}{j}": [v, v, None]
                for (i, j), v in zip(
                    [(a, b) for a in (1, 2, 3) for b in (1, 2, 3)],
                    [1.0, 0.0, 4.0, 0.0, 1.0, -2.0, 0.0, 0.0, 1.0],
                    strict=True,
                )
            },
            "width": [640, 320, 100],
            "height": [480, 240, 80],
            "kind": ["viewpoint", None, "illumination"],
        }
    ).with_columns([pl.col(f"h{i}{j}").cast(pl.Float64) for i in (1, 2, 3) for j in (1, 2, 3)])
    store.ingest_keypoints(matches, run="kp/b", pairs=pairs, git_commit="abc123")
    store.ingest_outcomes(
        {"group_id": ["g1", "g2"], "tp": [3, 0], "fp": [1, 0], "fn": [0, 0]},
        run="out/c",
        git_commit=None,
    )
    # values logged with `evalstore log`: with steps, without, on runs of each kind
    for step, loss in [(0, 2.5), (100, 0.75), (2**40, -0.0)]:
        store.log_metric("exp/a", "train_loss", loss, step=step)
    store.log_metric("exp/a", "val_acc", 0.875)
    store.log_metric("kp/b", "wall_seconds", 12.0)


def as_format_1(manifest: dict[str, Any]) -> dict[str, Any]:
    """An export's manifest as evalstore wrote it before checksums and logged values."""
    manifest["format_version"] = 1
    del manifest["tables"]["logged_values"]
    for entry in manifest["runs"]:
        del entry["sha256"]
        del entry["rows"]["logged_values"]
    return manifest


def _float_key(value: Any) -> Any:
    """Floats compared bit for bit (-0.0 is not 0.0; NaN equals NaN)."""
    if isinstance(value, float):
        return ("f", value.hex() if not math.isnan(value) else "nan")
    if isinstance(value, dict):
        return ("m", tuple(sorted((k, _float_key(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return tuple(_float_key(v) for v in value)
    return value


def _rows(store: Store, table: str) -> dict[str, list[tuple[Any, ...]]]:
    """Rows per EXPERIMENT/NAME, without run_id, as comparable tuples."""
    cols = [c["name"] for c in export.table_columns(store.con, table)]
    names = {r[0]: f"{r[1]}/{r[2]}" for r in store.con.sql("select * from runs").fetchall()}
    out: dict[str, list[tuple[Any, ...]]] = {}
    select = ", ".join(f'"{c}"' for c in cols)
    raw: dict[str, list[tuple[Any, ...]]] = {}
    for row in store.con.sql(f"select run_id, {select} from {table}").fetchall():  # test SQL
        raw.setdefault(names[row[0]], []).append(row[1:])
    at = cols.index("list_id") if "list_id" in cols else None
    for run, rows in raw.items():
        if at is not None:  # list ids are the store's own: compare their order within the run
            order = {v: i for i, v in enumerate(sorted({r[at] for r in rows if r[at] is not None}))}
            rows = [(*r[:at], order.get(r[at]), *r[at + 1 :]) for r in rows]
        out[run] = [_float_key(r) for r in rows]
    return {k: sorted(v, key=repr) for k, v in out.items()}


@pytest.fixture
def source(tmp_path: Path):
    with Store(tmp_path / "src.duckdb") as store:
        _fill(store)
        yield store


def test_round_trip_into_a_new_store_gives_every_table_row_for_row(
    source: Store, tmp_path: Path
) -> None:
    """Every table of the store (but its identity) is the same after an export and an import
    into a new store: runs, ranked rows of every task, gains, groups, keypoint pairs with
    their estimates, matches, outcomes, tags, params, notes, logged values with and without
    steps, and the list index built from them."""
    out = tmp_path / "export"
    summary = export_runs(source, out)
    assert summary["rows"]["logged_values"] == 5
    source.close()
    db = tmp_path / "dst.duckdb"
    with Store(db) as target:
        assert import_runs(target, out) == ["exp/a", "kp/b", "out/c"]
    want, have = snapshot(source.path), snapshot(db)
    assert have.pop("store_info") != want.pop("store_info")  # each store its own identity
    versions = [[r[0] for r in rows.pop("schema_version")] for rows in (want, have)]
    assert versions[0] == versions[1]  # the same migrations, applied at other times
    # a run's ranked rows go to one row table (the leanest that holds all its tasks' items
    # exactly), where ingest chose one per task: compared through the scores view
    for name in [t for t in want if t.startswith("list_rows_")]:
        want.pop(name), have.pop(name)
    for rows, path in ((want, source.path), (have, db)):
        with duckdb.connect(str(path), read_only=True) as con:
            rows["scores"] = sorted(con.sql("select * from scores").fetchall(), key=repr)
    assert sorted(have) == sorted(want)
    assert want["logged_values"] and want["pairs"] and want["outcomes"] and want["positive_ranks"]
    for table in want:
        assert [_float_key(r) for r in have[table]] == [_float_key(r) for r in want[table]], table


@pytest.mark.slow  # over 1 s: exports and imports every table
def test_round_trip_every_table_bit_equal_with_new_ids(source: Store, tmp_path: Path) -> None:
    out = tmp_path / "export"
    summary = export_runs(source, out)
    assert [r["name"] for r in summary["runs"]] == ["a", "b", "c"]
    assert summary["rows"]["scores"] == 18 + 4 and summary["rows"]["pairs"] == 3
    with Store(tmp_path / "dst.duckdb") as target:
        for i in range(4):  # occupy ids 1..4 so that the imported runs get others
            target.ingest(ranked(1, 2), task="retrieval", run=f"pad/{i}", git_commit=None)
        imported = import_runs(target, out)
        assert imported == ["exp/a", "kp/b", "out/c"]
        for table in TABLES:
            want, have = _rows(source, table), _rows(target, table)
            for ref, rows in want.items():
                assert have[ref] == rows, (table, ref)
        # imported lists got list ids of their own, shared by their scores and groups rows
        assert target.con.sql(
            "select count(*) from (select list_id from groups where list_id is not null "
            "group by list_id having count(*) > 1)"
        ).fetchall() == [(0,)]
        assert target.con.sql(
            "select count(*) from scores s left join groups g on g.list_id = s.list_id "
            "where g.run_id is distinct from s.run_id or g.group_id is distinct from s.group_id"
        ).fetchall() == [(0,)]
        old = dict(source.con.sql("select experiment || '/' || name, run_id from runs").fetchall())
        new = dict(target.con.sql("select experiment || '/' || name, run_id from runs").fetchall())
        assert all(new[ref] != old[ref] for ref in imported)
        # the JSON text and the typed view survive
        params = target.con.sql("select params, param_lr from v_runs where name = 'a'").fetchall()[
            0
        ]
        assert json.loads(params[0])["nested"] == {"x": [1, 2.5, None]}
        assert params[1] == 0.1
        # and the metrics computed from imported rows are the same
        from evalstore import evaluate

        a = evaluate(source, ["exp/a", "kp/b", "out/c"]).select("run", "metric", "value", "slice")
        b = evaluate(target, ["exp/a", "kp/b", "out/c"]).select("run", "metric", "value", "slice")
        assert a.sort("run", "metric", "slice").equals(b.sort("run", "metric", "slice"))


def test_layout_is_hive_partitioned_without_run_id_in_files(source: Store, tmp_path: Path) -> None:
    out = tmp_path / "export"
    export_runs(source, out)
    run_id = source.resolve("exp/a")
    part = partition_path(out, "scores", run_id) / "part-0.parquet"
    assert part.is_file() and part.parent.name == f"run_id={run_id}"
    names = pq.read_schema(part).names
    assert "run_id" not in names and names[0] == "task"
    assert (
        pq.read_schema(partition_path(out, "runs", run_id) / "part-0.parquet").field("params").type
        == "string"
    )
    # no folder for a table the run has no rows in
    assert not partition_path(out, "matches", run_id).exists()
    assert not partition_path(out, "outcomes", run_id).exists()
    # polars reads the layout back with run_id from the path
    frame = pl.scan_parquet(out / "scores", hive_partitioning=True).collect()
    assert set(frame["run_id"].unique()) == {run_id}
    assert set(frame["task"].unique()) == {"retrieval", "verification"}


def test_manifest_content(source: Store, tmp_path: Path) -> None:
    out = tmp_path / "export"
    export_runs(source, out, runs=["exp/a", "out/c"])
    manifest = read_manifest(out)
    assert manifest["format"] == "evalstore-export" and manifest["format_version"] == 2
    assert manifest["schema_version"] == source.schema_version()
    detection = {"det_images", "det_categories", "det_truth", "det_boxes"}  # schema 17
    derived = {"det_thresholds", "det_positives", "det_matches", "det_matched", "det_tide"}
    training = {"run_state", "run_steps"}  # schema 22
    pose = {"pair_cameras", "pose_estimates"}  # schema 23
    assert set(manifest["tables"]) == {
        *TABLES, "logged_values", *training, *detection, *derived, *pose
    }  # fmt: skip
    cols = {t: {c["name"]: c for c in s["columns"]} for t, s in manifest["tables"].items()}
    assert all("run_id" not in c for c in cols.values())
    assert cols["scores"]["task"]["type"] == "VARCHAR"
    assert cols["scores"]["task"]["source_type"].startswith("ENUM(")
    assert cols["runs"]["params"] == {
        "name": "params",
        "type": "VARCHAR",
        "nullable": False,
        "source_type": "JSON",
    }
    assert cols["runs"]["tags"]["type"] == "VARCHAR[]"
    assert cols["groups"]["slices"]["type"] == "MAP(VARCHAR, VARCHAR)"
    assert cols["scores"]["label"]["type"] == "TINYINT"
    assert manifest["partition_column"] == {"name": "run_id", "type": "INTEGER"}
    runs = {r["name"]: r for r in manifest["runs"]}
    assert sorted(runs) == ["a", "c"]
    assert runs["a"]["run_id"] == source.resolve("exp/a")
    assert runs["a"]["rows"] == {
        "runs": 1,
        "scores": 22,
        "groups": 4,  # one per list: 3 retrieval lists and the verification list
        "matches": 0,
        "pairs": 0,
        "outcomes": 0,
        "logged_values": 4,  # train_loss at 3 steps, val_acc without one
        **dict.fromkeys(training | detection | derived | pose, 0),
    }
    # the SHA-256 of each file written, as sha256sum gives it
    assert sorted(runs["a"]["sha256"]) == ["groups", "logged_values", "runs", "scores"]
    for table, digest in runs["a"]["sha256"].items():
        part = partition_path(out, table, runs["a"]["run_id"]) / "part-0.parquet"
        assert hashlib.sha256(part.read_bytes()).hexdigest() == digest
    # exporting more runs into the folder adds them
    export_runs(source, out, runs=["kp/b"])
    assert [r["name"] for r in read_manifest(out)["runs"]] == ["a", "b", "c"]


def test_failure_mid_export_leaves_the_old_partition(
    source: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "export"
    export_runs(source, out, runs=["exp/a"])
    run_id = source.resolve("exp/a")
    folder = partition_path(out, "scores", run_id)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    manifest = (out / "manifest.json").read_text()

    real = export._write_partition

    def failing(con: Any, table: str, *args: Any) -> int:
        if table == "groups":  # scores of the run are already staged
            raise OSError("disk full")
        return real(con, table, *args)

    monkeypatch.setattr(export, "_write_partition", failing)
    with pytest.raises(EvalstoreError, match=r"cannot write the export \(disk full\)"):
        export_runs(source, out, runs=["exp/a"])
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert (out / "manifest.json").read_text() == manifest
    hidden = [p for p in out.rglob(".*") if p.name != ".evalstore-export.lock"]
    assert hidden == []  # no staging folder, no journal left
    monkeypatch.setattr(export, "_write_partition", real)
    export_runs(source, out, runs=["exp/a"])
    assert (
        read_manifest(out)["runs"][0]["exported_at"]
        >= json.loads(manifest)["runs"][0]["exported_at"]
    )


@pytest.mark.parametrize("finish", ["export", "import"])
def test_crash_during_the_swap_is_rolled_forward(
    source: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, finish: str
) -> None:
    out = tmp_path / "export"
    export_runs(source, out, runs=["exp/a"])
    # the run gains rows (another task), then the swap of its new export crashes half-way
    source.ingest(ranked(2, 3, seed=5), task="classification", run="exp/a", append=True)
    renames = []
    real_rename = os.rename

    def crashing(src: Any, dst: Any) -> None:
        renames.append((src, dst))
        if len(renames) == 3:  # scores moved aside, new scores in, groups not yet
            raise KeyboardInterrupt
        real_rename(src, dst)

    monkeypatch.setattr(export.os, "rename", crashing)
    with pytest.raises(KeyboardInterrupt):
        export_runs(source, out, runs=["exp/a"])
    monkeypatch.setattr(export.os, "rename", real_rename)
    assert list(out.glob(".journal-*.json"))  # the swap is journaled
    # the next export (of any run) or import finishes the swap first
    with Store(tmp_path / "dst.duckdb") as target:
        if finish == "export":
            export_runs(source, out, runs=["out/c"])
        import_runs(target, out)
        assert _rows(target, "scores")["exp/a"] == _rows(source, "scores")["exp/a"]
    assert not list(out.glob(".journal-*.json"))
    assert [p for p in out.rglob(".*") if p.name != ".evalstore-export.lock"] == []
    entry = next(r for r in read_manifest(out)["runs"] if r["name"] == "a")
    assert entry["rows"]["scores"] == 22 + 6 and entry["rows"]["groups"] == 4 + 2


def test_replaced_run_supersedes_its_old_export(source: Store, tmp_path: Path) -> None:
    out = tmp_path / "export"
    export_runs(source, out)
    old_id = source.resolve("out/c")
    source.ingest_outcomes(
        {"group_id": ["g9"], "tp": [1], "fp": [1], "fn": [1]},
        run="out/c",
        replace=True,
    )
    new_id = source.resolve("out/c")
    assert new_id == old_id  # a replaced run keeps its id
    export_runs(source, out, runs=["out/c"])
    entries = [r for r in read_manifest(out)["runs"] if r["name"] == "c"]
    assert [r["run_id"] for r in entries] == [new_id]
    assert entries[0]["rows"]["outcomes"] == 1  # the new rows alone, the old ones gone
    assert partition_path(out, "outcomes", new_id).exists()


def test_import_conflicts_and_replace(source: Store, tmp_path: Path) -> None:
    out = tmp_path / "export"
    export_runs(source, out)
    with Store(tmp_path / "dst.duckdb") as target:
        target.ingest(ranked(1, 2), task="retrieval", run="out/c", git_commit=None)
        before = _rows(target, "runs")
        with pytest.raises(RunExists, match="out/c"):
            import_runs(target, out)
        assert _rows(target, "runs") == before  # checked before anything is imported
        assert import_runs(target, out, replace=True) == ["exp/a", "kp/b", "out/c"]
        assert _rows(target, "outcomes")["out/c"] == _rows(source, "outcomes")["out/c"]
        assert "out/c" not in _rows(target, "scores")


def test_damaged_export_imports_nothing_of_that_run(source: Store, tmp_path: Path) -> None:
    out = tmp_path / "export"
    export_runs(source, out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["runs"][0]["rows"]["groups"] = 99  # the file holds 3
    (out / "manifest.json").write_text(json.dumps(manifest))
    with Store(tmp_path / "dst.duckdb") as target:
        with pytest.raises(EvalstoreError, match="damaged"):
            import_runs(target, out)
        assert target.con.sql("select count(*) from runs").fetchall() == [(0,)]
        assert target.con.sql("select count(*) from scores").fetchall() == [(0,)]


def test_refuses_foreign_folders_and_newer_schemas(source: Store, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(EvalstoreError, match="not empty"):
        export_runs(source, foreign)
    with (
        Store(tmp_path / "dst.duckdb") as target,
        pytest.raises(EvalstoreError, match=r"no manifest\.json"),
    ):
        import_runs(target, foreign)
    out = tmp_path / "export"
    export_runs(source, out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["schema_version"] = 999
    (out / "manifest.json").write_text(json.dumps(manifest))
    with Store(tmp_path / "dst2.duckdb") as target, pytest.raises(SchemaError, match="newer"):
        import_runs(target, out)
    # a newer schema with the same raw tables takes more runs; other columns do not
    export_runs(source, out, runs=["exp/a"])
    assert read_manifest(out)["schema_version"] == 999
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["tables"]["scores"]["columns"].pop()
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(EvalstoreError, match="other raw tables or columns"):
        export_runs(source, out)


def test_export_from_a_read_only_store_and_progress(tmp_path: Path) -> None:
    path = tmp_path / "ro.duckdb"
    with Store(path) as store:
        _fill(store)
    seen = []
    with Store(path, read_only=True) as ro:
        summary = export_runs(ro, tmp_path / "export", progress=lambda *a: seen.append(a))
    assert len(summary["runs"]) == 3
    assert seen[-1] == ("export", 3, 3)


def test_an_export_written_before_list_ids_imports(source: Store, tmp_path: Path) -> None:
    """Exports of schema 5 have no list_id and groups rows only for lists with metadata:
    the import numbers the lists, adds their groups rows, and the metrics are the same."""
    out = tmp_path / "export"
    export_runs(source, out, runs=["exp/a", "out/c"])
    manifest = as_format_1(json.loads((out / "manifest.json").read_text()))
    shutil.rmtree(out / "logged_values")  # exports of format 1 had none
    manifest["schema_version"] = 5
    for table in ("scores", "groups"):
        spec = manifest["tables"][table]
        spec["columns"] = [c for c in spec["columns"] if c["name"] != "list_id"]
    for entry in manifest["runs"]:
        for table in ("scores", "groups"):
            part = partition_path(out, table, entry["run_id"]) / "part-0.parquet"
            if not part.exists():
                continue
            keep = (  # schema 5 kept groups rows with metadata only
                "n_positives is not null or cardinality(slices) > 0"
                if table == "groups"
                else "true"
            )
            con = duckdb.connect()
            rows = con.sql(  # test SQL over a temporary file
                f"select * exclude (list_id) "
                f"from read_parquet('{part}', hive_partitioning = false) where {keep}"
            ).to_arrow_table()
            con.close()
            pq.write_table(rows, part)
            entry["rows"][table] = rows.num_rows
    (out / "manifest.json").write_text(json.dumps(manifest))
    with Store(tmp_path / "dst.duckdb") as target:
        target.ingest(  # ranked() draws +1/-1/0: pm1, whether or not a -1 came up
            ranked(2, 3), task="retrieval", run="pad/0", labels="pm1", git_commit=None
        )
        assert import_runs(target, out) == ["exp/a", "out/c"]
        pairs = target.con.sql(
            "select distinct run_id, task, group_id, list_id from scores"
        ).fetchall()
        assert len({p[3] for p in pairs}) == len(pairs) == 2 + 4  # pad/0 and exp/a
        groups = target.con.sql("select count(*) from groups where list_id is not null").fetchall()
        assert groups == [(len(pairs),)]
        from evalstore import evaluate

        runs = ["exp/a", "out/c"]
        a = evaluate(source, runs).select("run", "metric", "value", "slice")
        b = evaluate(target, runs).select("run", "metric", "value", "slice")
        assert a.sort("run", "metric", "slice").equals(b.sort("run", "metric", "slice"))


@pytest.mark.parametrize(
    ("items", "scores", "table"),
    [
        ([1, 2, 3], np.array([0.5, 0.25, -np.inf], dtype=np.float32), "list_rows_int_f32"),
        ([1, 2, 3], np.array([1e300, -1e39, 0.1]), "list_rows_int_f64"),
        (["a", "b", "c"], np.array([0.1, 0.2, 0.3]), "list_rows_text_f64"),
        (["a", "b", "c"], np.array([0.5, 0.25, 0.125]), "list_rows_text_f32"),  # float32-exact
        (
            [1, 2, 3_000_000_000],
            np.array([0.5, 0.25, 0.125], dtype=np.float32),
            "list_rows_text_f32",
        ),
    ],
)
def test_an_imported_run_is_stored_as_exactly_as_it_was(
    tmp_path: Path, items: list[Any], scores: np.ndarray, table: str
) -> None:
    """An imported run's items go to the leanest row table that holds them exactly, scores
    beyond float32's range (1e300) included, and read back the same."""
    data = {
        "group_id": np.array([7, 7, 8]),
        "item_id": np.array(items),
        "score": scores,
        "label": np.array([1, -1, 0]),
    }
    with Store(tmp_path / "a.duckdb") as source:
        source.ingest(data, task="retrieval", run="x/r", git_commit=None)
        want = source.con.execute(
            "select group_id, item_id, score, label, seq from scores order by seq"
        ).fetchall()
        export_runs(source, tmp_path / "out")
    with Store(tmp_path / "b.duckdb") as target:
        import_runs(target, tmp_path / "out")
        got = target.con.execute(
            "select group_id, item_id, score, label, seq from scores order by seq"
        ).fetchall()
        held = target.con.execute(f"select count(*) from {table}").fetchone()
    assert got == want and held == (3,)


def test_an_export_is_the_same_bytes_whatever_batches_duckdb_hands_over(tmp_path: Path) -> None:
    """Row groups of BATCH_ROWS rows each, the rest last, however DuckDB's threads and the
    store's row groups (122,880 rows) cut a run's rows: the sixth run of 24,000 rows
    straddles two of them and came as two batches. Two exports of the same store are the
    same files, so the SHA-256 in their manifests agree (a killed export's re-run writes
    what a clean export writes)."""
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        for i in range(6):
            store.ingest(export_lists(24, 1000, seed=i), task="retrieval", run=f"e/r{i}")
    digests = []
    for threads in (1, 2):
        folder = tmp_path / f"t{threads}"
        with Store(db, read_only=True) as store:
            store.con.execute(f"set threads = {threads}")
            export_runs(store, folder)
        runs = read_manifest(folder)["runs"]
        digests.append([r["sha256"] for r in runs])
        for run in runs:
            part = pq.ParquetFile(
                partition_path(folder, "scores", run["run_id"]) / "part-0.parquet"
            )
            assert part.num_row_groups == 1, (threads, run["name"])
    assert digests[0] == digests[1]
