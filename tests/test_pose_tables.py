"""A keypoint run's cameras and pose estimates (sql/schema/023_pose.sql) go wherever its rows
go: rm and ingest --replace delete them, mv keeps them, export and import carry them (the
estimates are not made again), a staged ingest merges them; a store of schema 22 upgrades."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pose_scenes import scene

from evalstore import Store
from evalstore.analysis.pose_estimates import PoseSetting, ensure_pose_estimates
from evalstore.core import pose
from evalstore.db import schema
from evalstore.runs.meta import RunMeta
from evalstore.scale.export import export_runs, partition_path
from evalstore.scale.importer import import_runs
from evalstore.scale.layout import ALL_TABLES, POSE_TABLES, SPARK_TABLES
from evalstore.store import staging

SETTINGS = [PoseSetting(), PoseSetting(threshold=0.5)]


def _ingest(store: Store, run: str, *, seed: int = 0, **options: Any) -> int:
    matches, cams, _ = scene(seed=seed)
    return store.ingest_keypoints(matches, pairs=cams, run=run, git_commit=None, **options).run_id


def _estimate(store: Store, run_id: int) -> int:
    with store.transaction():
        return ensure_pose_estimates(store, [run_id], SETTINGS, needed_by="test")


def _rows(store: Store, table: str, run_id: int) -> list[tuple[Any, ...]]:
    return store.con.execute(
        f"select * exclude (run_id) from {table} where run_id = $r order by all",  # test SQL
        {"r": run_id},
    ).fetchall()


def _counts(store: Store) -> tuple[int, int]:
    return (
        store.con.sql("select count(*) from pair_cameras").fetchall()[0][0],
        store.con.sql("select count(*) from pose_estimates").fetchall()[0][0],
    )


def test_rm_and_replace_delete_them_and_mv_keeps_them(store: Store) -> None:
    a = _ingest(store, "k/a")
    b = _ingest(store, "k/b", seed=1)
    _estimate(store, a)
    _estimate(store, b)
    assert _counts(store) == (6, 12)
    store.rename("k/a", "other/a")
    assert _counts(store) == (6, 12) and len(_rows(store, "pose_estimates", a)) == 6
    store.remove("other/a")
    assert _counts(store) == (3, 6) and _rows(store, "pair_cameras", a) == []
    new_b = _ingest(store, "k/b", seed=2, replace=True)
    assert _counts(store) == (3, 0)  # the replaced run's estimates went with it
    assert _rows(store, "pair_cameras", b) == [] or new_b == b
    assert _estimate(store, new_b) == 6


def test_an_export_and_its_import_carry_cameras_and_estimates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        run_id = _ingest(store, "k/a")
        _estimate(store, run_id)
        want = {t: _rows(store, t, run_id) for t in POSE_TABLES}
        export_runs(store, tmp_path / "out")
    for table in POSE_TABLES:
        assert (partition_path(tmp_path / "out", table, run_id) / "part-0.parquet").is_file()
    calls: list[int] = []
    monkeypatch.setattr(pose, "estimate_pose", lambda *a, **k: calls.append(1))
    with Store(tmp_path / "copy.duckdb") as copy:
        _ingest(copy, "k/other")  # the imported run gets another id
        import_runs(copy, tmp_path / "out")
        new_id = copy.resolve("k/a")
        assert new_id != run_id
        assert {t: _rows(copy, t, new_id) for t in POSE_TABLES} == want
        assert _estimate(copy, new_id) == 0 and calls == []  # imported, not made again


def test_an_import_refuses_estimates_of_a_pair_without_cameras(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        matches, cams, _ = scene()  # with homographies: the matches keep a truth
        eye = {f"h{i}{j}": float(i == j) for i in (1, 2, 3) for j in (1, 2, 3)}
        pairs = cams.with_columns(**eye)
        run_id = store.ingest_keypoints(matches, pairs=pairs, run="k/a", git_commit=None).run_id
        _estimate(store, run_id)
        store.con.execute("delete from pair_cameras where pair_no = 1")  # a damaged store
        export_runs(store, tmp_path / "out")
    with Store(tmp_path / "copy.duckdb") as copy:
        with pytest.raises(Exception, match="pose estimates of a pair without cameras") as e:
            import_runs(copy, tmp_path / "out")
        assert "\n" not in str(e.value)
        assert _counts(copy) == (0, 0)


def test_the_export_and_spark_tables_list_them() -> None:
    assert set(POSE_TABLES) <= set(ALL_TABLES) and set(POSE_TABLES) <= set(SPARK_TABLES)
    assert ALL_TABLES.index("pair_cameras") < ALL_TABLES.index("pose_estimates")


def test_a_staged_ingest_merges_the_cameras(tmp_path: Path) -> None:
    """``evalstore ingest`` writes in a private store and merges: the cameras come along."""
    matches, cams, _ = scene()
    with Store(tmp_path / "s.duckdb") as store:
        direct = _rows(store, "pair_cameras", _ingest(store, "k/direct"))
    staging.ingest_staged(
        tmp_path / "s.duckdb",
        lambda s: s.ingest_keypoints(matches, pairs=cams, run="k/staged", git_commit=None),
        meta=RunMeta("k/staged", git_commit=None),
    )
    with Store(tmp_path / "s.duckdb") as store:
        assert _rows(store, "pair_cameras", store.resolve("k/staged")) == direct


@pytest.mark.no_store
def test_a_store_of_schema_22_upgrades_keeping_its_pairs(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = schema.migrations()
    monkeypatch.setattr(schema, "migrations", lambda: [f for f in files if f[0] <= 22])
    matches, _, _ = scene()
    eye = {f"h{i}{j}": [float(i == j)] * 3 for i in (1, 2, 3) for j in (1, 2, 3)}
    with Store(db) as store:
        assert store.schema_version() == 22
        pose_sql = next(path for v, _, path in files if v == 23).read_text()
        store.con.execute(pose_sql)  # today's ingest writes pair_cameras
        store.ingest_keypoints(matches, pairs={"pair_id": ["p0", "p1", "p2"], **eye},
                               run="k/old", git_commit=None)  # fmt: skip
        before = store.con.sql("select * from pairs order by all").fetchall()
        store.con.execute("drop table pair_cameras; drop table pose_estimates")
        tables = {t for (t,) in store.con.sql("select table_name from duckdb_tables()").fetchall()}
        assert not tables & set(POSE_TABLES)
    monkeypatch.setattr(schema, "migrations", lambda: files)
    with Store(db) as store:
        assert store.upgraded_from == 22 and store.schema_version() == 23
        assert store.con.sql("select * from pairs order by all").fetchall() == before
        assert _counts(store) == (0, 0)
        run_id = _ingest(store, "k/new")
        assert _estimate(store, run_id) == 6
        old = store.resolve("k/old")
        assert ensure_pose_estimates(store, [old], SETTINGS, needed_by="x") == 0  # no cameras
