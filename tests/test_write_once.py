"""A first ingest writes each row once (issue 32): with no store yet, the staging store is
published as the store, nothing is merged; a store that another process creates meanwhile
gets the run merged into it, both runs kept. The staging store's memory limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ranked

import evalstore.store.staging as staging
from evalstore import Store
from evalstore.ingest import IngestResult
from evalstore.store.staging import INGEST_MEMORY, ingest_memory_limit, ingest_staged


def _runs(db: Path) -> list[str]:
    with Store(db, read_only=True) as store:
        return sorted(store.runs()["name"].to_list())


def test_a_new_store_is_the_staging_store_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_merge(*args: object, **kwargs: object) -> None:
        raise AssertionError("a new store was merged into")

    monkeypatch.setattr(staging, "merge_staged", no_merge)
    db = tmp_path / "s.duckdb"
    saved: list[int] = []
    result = ingest_staged(
        db,
        lambda s: s.ingest(ranked(seed=1), task="retrieval", run="e/a", git_commit=None),
        ref=("e", "a"),
        on_commit=saved.append,
    )
    assert _runs(db) == ["a"] and saved == [result.run_id] and not result.replaced
    with Store(db, read_only=True) as store:
        n = store.con.sql("select count(*) from scores").fetchall()[0][0]
        points = store.con.sql("select count(*) from positive_ranks").fetchall()[0][0]
    assert n == ranked(seed=1)["score"].size and points > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.duckdb"]  # no .stage left


def test_a_store_created_meanwhile_gets_the_run_merged(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"

    def action(store: Store) -> IngestResult:
        with Store(db) as other:  # another process makes the store while this one stages
            other.ingest(ranked(seed=2), task="retrieval", run="e/first", git_commit=None)
        return store.ingest(ranked(seed=3), task="retrieval", run="e/second", git_commit=None)

    saved: list[int] = []
    result = ingest_staged(db, action, ref=("e", "second"), on_commit=saved.append)
    assert _runs(db) == ["first", "second"] and saved == [result.run_id]
    with Store(db, read_only=True) as store:
        unique = store.con.sql("select count(distinct list_id) = count(*) from groups")
        assert unique.fetchall() == [(True,)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.duckdb"]


def test_the_staging_memory_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALSTORE_MEMORY_LIMIT", raising=False)
    limit = ingest_memory_limit()
    assert limit.endswith("MiB") and 0 < int(limit[:-3]) <= INGEST_MEMORY >> 20
    monkeypatch.setenv("EVALSTORE_MEMORY_LIMIT", "3GB")
    assert ingest_memory_limit() == "3GB"
