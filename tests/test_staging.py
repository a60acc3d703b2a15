"""Ingest in a staging store, then a short merge: the same store as a direct ingest, the
lock held for the merge alone, many writers at once, and kill -9 or Ctrl-C at any point."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest
from conftest import ranked

from evalstore import RunExists, Store
from evalstore.analysis.evaluate import evaluate
from evalstore.db.private_files import remove_stale
from evalstore.ingest import IngestResult
from evalstore.store.staging import ingest_staged

H = {f"h{i}{j}": float(i == j) for i in (1, 2, 3) for j in (1, 2, 3)}

Action = Callable[[Store], IngestResult]


def actions(tmp_path: Path) -> dict[str, tuple[tuple[str, str], Action]]:
    """One ingest of each kind of run, with slices, groups files, text and integer items,
    float32 and float64 scores."""
    rng = np.random.default_rng(7)
    groups = tmp_path / "groups.csv"
    pl.DataFrame(
        {
            "group_id": ["0", "1", "2", "5"],
            "n_positives": [40, None, 50, 20],
            "kind": ["a", "b", "a", "b"],
        }
    ).write_csv(groups)
    text = ranked(4, 30, seed=3)
    text["item_id"] = np.array([f"doc-{v}" for v in text["item_id"]])
    f32 = ranked(5, 20, seed=4)
    f32["score"] = rng.random(f32["score"].size).astype(np.float32)
    pairs = tmp_path / "pairs.csv"
    pl.DataFrame(
        {
            "pair_id": ["p", "q"],
            **{k: [v, v] for k, v in H.items()},
            "width": [64, 64],
            "height": [48, 48],
            "view": ["v", "i"],
        }
    ).write_csv(pairs)
    x0 = rng.uniform(0, 60, 40)
    y0 = rng.uniform(0, 40, 40)
    matches = {
        "pair_id": ["p"] * 25 + ["q"] * 15,
        "x0": x0,
        "y0": y0,
        "x1": x0 + rng.normal(0, 2, 40),
        "y1": y0 + rng.normal(0, 2, 40),
        "score": rng.random(40),
    }
    outcomes = {"group_id": ["a", "b"], "tp": [3, 4], "fp": [1, 0], "fn": [0, 2]}
    meta: dict[str, Any] = {
        "git_commit": "abc123",
        "tags": ["t1"],
        "notes": "n",
        "created_at": "2026-01-05T09:00:00",
        "params": {"lr": 0.1, "seed": 2},
    }
    return {
        "retrieval": (
            ("e", "r"),
            lambda s: s.ingest(
                ranked(6, 40, seed=1), task="retrieval", run="e/r", groups=groups, **meta
            ),
        ),
        "text items": (
            ("e", "t"),
            lambda s: s.ingest(text, task="classification", run="e/t", **meta),
        ),
        "float32": (("f", "x"), lambda s: s.ingest(f32, task="matching", run="f/x", **meta)),
        "keypoints": (
            ("k", "m"),
            lambda s: s.ingest_keypoints(matches, pairs=pairs, run="k/m", **meta),
        ),
        "outcomes": (("o", "c"), lambda s: s.ingest_outcomes(outcomes, run="o/c", **meta)),
    }


CONTENT = {
    # what a run holds, without its ids: each query's rows, sorted
    "run": "select experiment, name, created_at, git_commit, params::varchar, tags, notes "
    "from runs where run_id = $r",
    "groups": "select task, group_id, n_positives, slices from groups where run_id = $r",
    "rows": "select task, group_id, item_id, score, label, seq from scores where run_id = $r",
    "stats": "select g.group_id, s.* exclude (list_id) from list_stats s join groups g "
    "using (list_id) where g.run_id = $r",
    "ranks": "select g.group_id, p.tp, p.n from positive_ranks p join groups g using (list_id) "
    "where g.run_id = $r",
    "pairs": "select * exclude (run_id) from pairs where run_id = $r",
    "matches": "select * exclude (run_id) from matches where run_id = $r",
    "outcomes": "select * exclude (run_id) from outcomes where run_id = $r",
    "metrics": "select task, metric, params, slice, value, n_lists from metric_values "
    "where run_id = $r",
}


def content(store: Store, run_id: int) -> dict[str, list[tuple[Any, ...]]]:
    return {
        k: sorted(store.con.execute(q, {"r": run_id}).fetchall(), key=repr)
        for k, q in CONTENT.items()
    }


@pytest.mark.slow  # about 3 s: every kind of run ingested twice and evaluated
def test_a_staged_run_is_the_run_a_direct_ingest_writes(tmp_path: Path) -> None:
    """Every kind of run, ingested on the store and through a staging store into a store
    that holds other runs (so the ids move): the same rows, list index and metric values."""
    todo = actions(tmp_path)
    direct, staged = tmp_path / "direct.duckdb", tmp_path / "staged.duckdb"
    with Store(staged) as store:  # other runs first: the staged lists get new ids
        store.ingest(ranked(3, 7, seed=9), task="retrieval", run="z/first", git_commit=None)
    ids = {}
    for name, (ref, action) in todo.items():
        with Store(direct) as store:
            ids[name] = (action(store).run_id, 0)
        result = ingest_staged(staged, action, ref=ref)
        ids[name] = (ids[name][0], result.run_id)
    with Store(direct) as a, Store(staged) as b:
        evaluate(a, None, all_runs=True)
        evaluate(b, None, all_runs=True)
        unique = "select count(distinct list_id) = count(list_id) from groups"
        assert b.con.sql(unique).fetchall() == [(True,)]
        for name, (ida, idb) in ids.items():
            got, want = content(b, idb), content(a, ida)
            assert got == want, name
            assert any(want[k] for k in ("rows", "matches", "outcomes")), name
    assert not [p for p in tmp_path.iterdir() if ".stage" in p.name]


def test_replace_merges_in_place_of_the_old_run(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    first = ingest_staged(
        db,
        lambda s: s.ingest(ranked(seed=1), task="retrieval", run="e/a", git_commit=None),
        ref=("e", "a"),
    )
    with pytest.raises(RunExists, match="run e/a exists"):
        ingest_staged(
            db,
            lambda s: s.ingest(ranked(seed=2), task="retrieval", run="e/a", git_commit=None),
            ref=("e", "a"),
        )
    again = ingest_staged(
        db,
        lambda s: s.ingest(
            ranked(seed=2), task="retrieval", run="e/a", replace=True, git_commit=None
        ),
        ref=("e", "a"),
        replace=True,
    )
    assert again.replaced and not first.replaced and again.run_id == first.run_id  # id kept
    with Store(db) as store:
        assert store.runs()["run_id"].to_list() == [again.run_id]
        n = store.con.sql("select count(*) from scores").fetchall()[0][0]
    assert n == ranked(seed=2)["score"].size


def test_an_existing_run_is_refused_before_the_work(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ingest_staged(
        db,
        lambda s: s.ingest(ranked(), task="retrieval", run="e/a", git_commit=None),
        ref=("e", "a"),
    )
    called = []

    def action(store: Store) -> IngestResult:
        called.append(store.path)
        raise AssertionError("the ingest ran")

    with pytest.raises(RunExists):
        ingest_staged(db, action, ref=("e", "a"))
    assert called == []


def test_stale_staging_files_are_removed(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    stale = tmp_path / f".s.duckdb.{dead}-0000aaaa.stage"
    live = tmp_path / f".s.duckdb.{os.getppid()}-0000bbbb.stage"  # a process that runs
    for path in (stale, stale.with_name(stale.name + ".wal"), live):
        path.write_bytes(b"x")
    assert remove_stale(db) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name]


# -- many processes ------------------------------------------------------------------------


def _big(path: Path, n_lists: int, n_items: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    n = n_lists * n_items
    pl.DataFrame(
        {
            "group_id": np.repeat(np.arange(n_lists, dtype=np.int32), n_items),
            "item_id": np.tile(np.arange(n_items, dtype=np.int32), n_lists),
            "score": rng.random(n),
            "label": np.where(rng.random(n) < 0.1, 1, -1).astype(np.int8),
        }
    ).write_parquet(path)
    return path


def _ingest(db: Path, data: Path, run: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evalstore",
            "ingest",
            str(data),
            "--task",
            "retrieval",
            "--run",
            run,
            "--db",
            str(db),
            "--git-commit",
            "x",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ran(job: subprocess.Popen[str]) -> int:
    """The exit code of a finished job, its pipes read and closed."""
    job.communicate(timeout=600)
    return job.returncode


def counts(db: Path) -> dict[str, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            "runs": con.sql("select count(*) from runs").fetchall()[0][0],
            "groups": con.sql("select count(*) from groups").fetchall()[0][0],
            "rows": con.sql("select count(*) from scores").fetchall()[0][0],
            "stats": con.sql("select coalesce(sum(n_rows), 0) from list_stats").fetchall()[0][0],
            "distinct lists": con.sql("select count(distinct list_id) from groups").fetchall()[0][
                0
            ],
        }
    finally:
        con.close()


@pytest.mark.slow
def test_eight_concurrent_ingests_all_land(tmp_path: Path) -> None:
    """8 processes ingest 1 M rows each into one store at once: all succeed without a retry,
    every row once."""
    db = tmp_path / "s.duckdb"
    data = _big(tmp_path / "d.parquet", 1000, 1000)
    jobs = [_ingest(db, data, f"e/r{k}") for k in range(8)]
    for job in jobs:
        _, stderr = job.communicate(timeout=600)
        assert job.returncode == 0, stderr
    assert counts(db) == {
        "runs": 8,
        "groups": 8000,
        "rows": 8_000_000,
        "stats": 8_000_000,
        "distinct lists": 8000,
    }
    assert not [p for p in tmp_path.iterdir() if ".stage" in p.name]


@pytest.mark.slow
def test_readers_are_not_kept_out_by_a_long_ingest(tmp_path: Path) -> None:
    """While a 4 M-row ingest runs (reading, checks, sorting: seconds), `evalstore runs`
    answers: the store is locked only for the merge."""
    db = tmp_path / "s.duckdb"
    small = _big(tmp_path / "small.parquet", 10, 10)
    assert _ran(_ingest(db, small, "e/small")) == 0
    job = _ingest(db, _big(tmp_path / "d.parquet", 4000, 1000), "e/big")
    took = []
    t0 = time.monotonic()
    while job.poll() is None:
        start = time.monotonic()
        reader = subprocess.run(
            [sys.executable, "-m", "evalstore", "runs", "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert reader.returncode == 0, reader.stderr
        took.append(time.monotonic() - start)
    total = time.monotonic() - t0
    _, errs = job.communicate()  # and its pipes closed
    assert job.returncode == 0, errs
    assert len(took) >= 3, (took, total)  # readers ran while the ingest did
    assert max(took) < total / 2, (took, total)  # none waited for the whole ingest


def _store_state(db: Path, before: dict[str, int], run_rows: int) -> str:
    """'before' when the store is as it was, 'whole' when it holds the run complete."""
    now = counts(db)
    if now == before:
        return "before"
    whole = {
        **before,
        "runs": before["runs"] + 1,
        "rows": before["rows"] + run_rows,
        "stats": before["stats"] + run_rows,
    }
    assert now["groups"] == now["distinct lists"]
    assert {k: now[k] for k in whole if k not in ("groups", "distinct lists")} == {
        k: whole[k] for k in whole if k not in ("groups", "distinct lists")
    }, (now, before)
    return "whole"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_stopped_at_any_point_the_store_is_before_or_whole(tmp_path: Path, sig: int) -> None:
    """kill -9 or Ctrl-C at points across reading, staging and the merge: the store is as it
    was, or holds the whole run; Ctrl-C says which, in one line, with exit 130."""
    db = tmp_path / "s.duckdb"
    assert _ran(_ingest(db, _big(tmp_path / "small.parquet", 10, 10), "e/small")) == 0
    data = _big(tmp_path / "d.parquet", 2000, 1000)
    start = time.monotonic()
    assert _ran(_ingest(db, data, "e/timed")) == 0
    whole_time = time.monotonic() - start
    seen = set()
    for k, frac in enumerate((0.2, 0.45, 0.6, 0.75, 0.85, 0.95)):
        before = counts(db)
        job = _ingest(db, data, f"e/stopped{k}")
        time.sleep(frac * whole_time)
        job.send_signal(sig)
        stdout, stderr = job.communicate(timeout=120)
        state = _store_state(db, before, 2_000_000)
        seen.add(state)
        if job.returncode == 0:  # it had finished
            assert state == "whole"
            continue
        if job.returncode == -signal.SIGINT:
            # the signal came as the interpreter shut down, after the command had done its
            # work and said so (Python no longer handles signals then)
            assert state == "whole" and f"ingested run e/stopped{k}" in stdout, (stdout, stderr)
            continue
        if sig == signal.SIGINT:
            lines = stderr.strip().splitlines()
            assert job.returncode == 130 and len(lines) == 1, stderr
            assert ("complete in the store" in lines[0]) == (state == "whole"), (lines, state)
            assert ("as it was" in lines[0]) == (state == "before"), (lines, state)
        else:
            assert job.returncode == -signal.SIGKILL
    remove_stale(db)
    assert not [p for p in tmp_path.iterdir() if ".stage" in p.name]
    assert "before" in seen


@pytest.mark.slow
def test_a_command_that_waits_for_the_lock_says_so_once(tmp_path: Path) -> None:
    """Another process holds the store: `evalstore runs` waits its turn, says so in one line,
    then answers once the holder lets go; with a short --lock-timeout it gives up in one line.
    The holder lets go when told, after the waiting command has said it waits (no timer)."""
    db = tmp_path / "s.duckdb"
    assert _ran(_ingest(db, _big(tmp_path / "small.parquet", 10, 10), "e/small")) == 0
    hold = (
        "import sys, duckdb\n"
        "con = duckdb.connect(sys.argv[1]); print('held', flush=True); sys.stdin.readline()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    runs = [sys.executable, "-m", "evalstore", "runs", "--db", str(db)]
    quick = subprocess.run([*runs, "--lock-timeout", "0.5"], capture_output=True, text=True)
    waiter = subprocess.Popen(runs, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert waiter.stderr is not None
    first = waiter.stderr.readline()  # the notice: it waits now
    holder.communicate("release\n")  # lets go, and its pipes are closed
    out, rest = waiter.communicate(timeout=120)
    waited = subprocess.CompletedProcess(runs, waiter.returncode, out, first + rest)
    assert quick.returncode == 1
    lines = quick.stderr.strip().splitlines()
    assert len(lines) == 2 and "waiting up to 0.5 s" in lines[0], quick.stderr
    assert lines[1].startswith("Error: ") and "gave up after 0.5 s" in lines[1]
    assert waited.returncode == 0 and "small" in waited.stdout, waited.stderr
    notice = waited.stderr.strip().splitlines()
    assert len(notice) == 1 and "is locked by process" in notice[0], waited.stderr
    assert "waiting up to 60 s" in notice[0]
