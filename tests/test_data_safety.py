"""Nothing lost, nothing altered: first ingests that race, failed commands beside a store
another process just created, and interrupted or tampered imports."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import ranked, snapshot

from evalstore import Store
from evalstore.errors import InvalidInput, RunExists
from evalstore.store.facade import write_store

CLI = [sys.executable, "-m", "evalstore"]


def _lists(n_groups: int, n_items: int) -> dict[str, Any]:
    data = ranked(n_groups, n_items)
    data["label"] = np.resize([1, -1, 0], data["label"].size)
    return data


def _good(tmp_path: Path) -> Path:
    path = tmp_path / "good.parquet"
    pl.DataFrame(_lists(4, 6)).write_parquet(path)
    return path


def _bad(tmp_path: Path) -> Path:
    path = tmp_path / "bad.csv"
    path.write_text("group_id,item_id,score,label\n0,0,nan,1\n0,1,0.5,-1\n")
    return path


def _runs(db: Path) -> list[str]:
    with Store(db, read_only=True) as store:
        runs = store.runs()
    return sorted(f"{e}/{n}" for e, n in zip(runs["experiment"], runs["name"], strict=True))


# -- 1. a failed first command never deletes what another process wrote ----------------------


def test_a_failed_first_ingest_leaves_the_store_another_process_created(tmp_path: Path) -> None:
    db = tmp_path / "new.duckdb"
    good = _good(tmp_path)

    def meanwhile(store: Store) -> None:
        # while this command builds its store, another process creates db with a run
        with Store(db) as other:
            other.ingest(good, task="retrieval", run="exp/good")
        store.ingest(_bad(tmp_path), task="retrieval", run="exp/bad")

    with pytest.raises(InvalidInput, match=r"bad\.csv"):
        write_store(db, meanwhile)
    assert _runs(db) == ["exp/good"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "good.parquet", "new.duckdb"]


def test_a_first_ingest_that_lost_the_race_runs_again_on_the_winners_store(
    tmp_path: Path,
) -> None:
    db = tmp_path / "new.duckdb"
    good = _good(tmp_path)
    calls: list[Path] = []

    def ingest(store: Store) -> str:
        calls.append(store.path)
        if len(calls) == 1:
            with Store(db) as other:
                other.ingest(good, task="retrieval", run="exp/first")
        return store.ingest(good, task="retrieval", run="exp/second").ref

    assert write_store(db, ingest) == "exp/second"
    assert calls[0] != db and calls[1] == db
    assert _runs(db) == ["exp/first", "exp/second"]
    # the same name both times: the second is refused there, the first keeps its run
    with pytest.raises(RunExists):
        write_store(
            tmp_path / "other.duckdb",
            lambda store: _race_same_name(store, tmp_path / "other.duckdb", good),
        )
    assert _runs(tmp_path / "other.duckdb") == ["exp/good"]


def _race_same_name(store: Store, db: Path, good: Path) -> None:
    if store.path != db:
        with Store(db) as other:
            other.ingest(good, task="retrieval", run="exp/good")
    store.ingest(good, task="retrieval", run="exp/good")


@pytest.mark.slow  # a real process
def test_a_failed_first_command_leaves_no_file(tmp_path: Path) -> None:
    db = tmp_path / "new.duckdb"
    result = subprocess.run(
        [
            *CLI,
            "ingest",
            str(_bad(tmp_path)),
            "-r",
            "exp/bad",
            "--task",
            "retrieval",
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and result.stderr.startswith("Error: "), result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]
    missing = tmp_path / "no" / "such" / "x.duckdb"
    with pytest.raises(InvalidInput, match="does not exist"):
        write_store(missing, lambda store: None)


@pytest.mark.slow
def test_racing_first_ingests_never_lose_a_committed_run(tmp_path: Path) -> None:
    """Real processes, at most 8 rounds or 60 s: a good and a bad ingest into a new path,
    then two identical ones; the committed run is always there afterwards."""
    good, bad = _good(tmp_path), _bad(tmp_path)
    deadline = time.monotonic() + 60
    for round_ in range(8):
        if time.monotonic() > deadline:
            break
        for second in (bad, good):
            db = tmp_path / f"race-{round_}-{second.stem}.duckdb"
            db_opt = ["--db", str(db)]
            procs = [
                subprocess.Popen(
                    [*CLI, "ingest", str(f), "-r", f"exp/{name}", "--task", "retrieval", *db_opt],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                for f, name in ((good, "good"), (second, "good" if second is good else "bad"))
            ]
            codes = sorted(p.wait(timeout=60) for p in procs)
            for p in procs:
                assert p.stderr is not None
                text = p.communicate()[1].decode()  # and its pipes closed
                assert "Traceback" not in text, text
            assert codes == [0, 1], codes
            assert db.exists(), f"round {round_}: the store was deleted"
            assert _runs(db) == ["exp/good"]
            leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".new")]
            assert leftovers == []


def test_snapshot_helper_sees_an_unchanged_store(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        store.ingest(_lists(2, 3), task="retrieval", run="exp/a")
    before = snapshot(db)
    with pytest.raises(InvalidInput):
        write_store(db, lambda store: store.ingest(_bad(tmp_path), task="retrieval", run="exp/b"))
    assert snapshot(db) == before
