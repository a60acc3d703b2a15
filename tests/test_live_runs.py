"""Runs opened from a training loop (evalstore.init, Store.start_run, `evalstore run new`):
made at once with their metadata, running until finished, the values they log buffered and
written a batch a transaction, their status in `runs` and `show` (crashed when the process is
gone), step runs hidden. What needs other processes (a locked store, exit, signals):
tests/test_live_runs_processes.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import ranked, snapshot

import evalstore
from evalstore import InvalidInput, Run, RunExists, RunNotFound, Store
from evalstore.analysis.compare import history
from evalstore.runs.liveness import HEARTBEAT_LIMIT, shown_status

QUIET = 3600.0  # a Run whose thread never writes by itself in a test: it flushes when told


def values(db: Path, run: str = "exp/a") -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "select metric, step, value from v_logged where run = $run order by step, metric",
            {"run": run},
        ).fetchall()
    finally:
        con.close()


def state(db: Path, run_id: int) -> tuple[Any, ...]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "select status, pid, host, finished_at is not null from run_state where run_id = $id",
            {"id": run_id},
        ).fetchall()
    finally:
        con.close()
    return rows[0]


def test_init_makes_the_run_at_once_running(db: Path) -> None:
    before = datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(seconds=1)
    run = evalstore.init("exp/a", params={"lr": 0.1, "opt": "sgd"}, tags=["base", "gpu"],
                         notes="first", git_commit="c" * 40, db=db,
                         flush_every=QUIET)  # fmt: skip
    assert isinstance(run, Run) and run.ref == "exp/a" and run.status == "running"
    assert run.path == db
    with Store(db, read_only=True) as store:
        info = store.run("exp/a")
        listed = store.runs().to_dicts()
    assert info["params"] == {"lr": 0.1, "opt": "sgd"} and info["tags"] == ["base", "gpu"]
    assert info["notes"] == "first" and info["git_commit"] == "c" * 40
    assert info["status"] == "running" and info["pid"] == os.getpid()
    assert info["host"] == socket.gethostname() and info["finished_at"] is None
    assert info["created_at"] >= before and info["started_at"] >= before
    assert info["tasks"] == [] and info["steps"] == 0
    assert [(r["name"], r["status"], r["steps"], r["n_rows"]) for r in listed] == [
        ("a", "running", 0, 0)
    ]
    assert "state_pid" not in listed[0]
    run.finish()
    assert run.status == "finished"
    assert state(db, run.run_id) == ("finished", os.getpid(), socket.gethostname(), True)
    run.finish()  # again: nothing
    with pytest.raises(InvalidInput, match="run exp/a is finished: it logs nothing more"):
        run.log({"loss": 1.0})


@pytest.mark.no_store
def test_init_makes_the_store_when_there_is_none(db: Path) -> None:
    with pytest.raises(InvalidInput, match="flush_every and heartbeat_every must be > 0"):
        evalstore.init("exp/a", db=db, flush_every=0)
    assert not db.exists()
    with evalstore.init("exp/a", db=db, git_commit=None, flush_every=QUIET) as run:
        run.log({"loss": 0.5}, step=0)
    assert values(db) == [("loss", 0, 0.5)]


def test_a_with_block_finishes_or_fails(db: Path) -> None:
    with evalstore.init("exp/ok", db=db, git_commit=None, flush_every=QUIET) as run:
        run.log({"loss": 1.0}, step=0)
    assert run.status == "finished" and state(db, run.run_id)[0] == "finished"
    with (
        pytest.raises(ZeroDivisionError),
        evalstore.init("exp/bad", db=db, git_commit=None, flush_every=QUIET) as bad,
    ):
        bad.log({"loss": 2.0}, step=0)
        _ = 1 / 0
    assert bad.status == "failed" and state(db, bad.run_id)[0] == "failed"
    assert values(db, "exp/bad") == [("loss", 0, 2.0)]  # flushed on the way out
    told = evalstore.init("exp/told", db=db, git_commit=None, flush_every=QUIET)
    with pytest.raises(InvalidInput, match="finished or failed, not 'done'"):
        told.finish("done")
    told.finish(status="failed")
    with Store(db, read_only=True) as store:
        shown = dict(store.runs().select("name", "status").iter_rows())
    assert shown == {"ok": "finished", "bad": "failed", "told": "failed"}


def test_an_existing_name_needs_resume(db: Path) -> None:
    with evalstore.init("exp/a", params={"lr": 0.1}, db=db, git_commit=None,
                        flush_every=QUIET) as run:  # fmt: skip
        run.log({"loss": 0.9})
        run.log({"loss": 0.8})
    before = snapshot(db)
    with pytest.raises(RunExists, match=r"^run exp/a exists; pass resume=True \(--resume\)"):
        evalstore.init("exp/a", db=db, git_commit=None)
    with pytest.raises(InvalidInput, match=r"has lr=0\.1; resuming it with lr=0\.2 would change"):
        evalstore.init("exp/a", params={"lr": 0.2}, db=db, git_commit=None, resume=True)
    assert snapshot(db) == before
    again = evalstore.init("exp/a", params={"lr": 0.1, "wd": 0.01}, tags=["more"], db=db,
                           git_commit=None, resume=True, flush_every=QUIET)  # fmt: skip
    assert again.run_id == run.run_id and again.resumed
    assert state(db, run.run_id)[0] == "running"
    again.log({"loss": 0.7})  # the counter goes on after the run's last step
    again.finish()
    assert values(db) == [("loss", 0, 0.9), ("loss", 1, 0.8), ("loss", 2, 0.7)]
    with Store(db, read_only=True) as store:
        info = store.run("exp/a")
        assert store.con.execute("select param_wd from v_runs").fetchall() == [(0.01,)]
    assert info["params"] == {"lr": 0.1, "wd": 0.01} and info["tags"] == ["more"]


def test_values_are_buffered_then_written_last_one_winning(db: Path) -> None:
    run = evalstore.init("exp/a", db=db, git_commit=None, flush_every=QUIET)
    run.log({"loss": 0.9, "lr": 0.1})  # step 0
    run.log({"loss": 0.8})  # step 1
    run.log({"loss": 0.75}, step=1)  # replaces
    assert values(db) == []  # buffered
    assert run.flush() == 3
    assert values(db) == [("loss", 0, 0.9), ("lr", 0, 0.1), ("loss", 1, 0.75)]
    run.log({"loss": 0.5}, step=0)  # a written value replaced by the next batch
    run.log({"loss": 0.25}, step=10)
    run.log({"acc": 1})  # an int is a number; the step after the last: 11
    assert run.flush() == 3 and run.flush() == 0
    run.finish()
    got = values(db)
    assert ("loss", 0, 0.5) in got and ("acc", 11, 1.0) in got and len(got) == 5
    with Store(db, read_only=True) as store:
        latest = history(store, "loss").select("run", "value", "params").rows()
    assert latest == [("exp/a", 0.25, '{"step":10}')]


@pytest.mark.parametrize(
    ("logged", "step", "said"),
    [
        ({"loss": float("nan")}, 7, r"^value nan of loss is not a finite number \(step 7 of run"),
        ({"ok": 1.0, "loss": float("inf")}, None, r"not a finite number \(step 0 of run exp/a\)"),
        ({"loss": "0.5"}, 1, "value '0.5' of loss is not a number"),
        ({"train/loss": 1.0}, 1, "'train/loss' is not a plain identifier"),
        ({"map": 1.0}, 1, "'map' is the mean of the computed metric ap"),
        ({"Val_Acc": 1.0}, 1, "differs only in case from the logged metric 'val_acc'"),
        ({"acc": 1.0}, 1, "run exp/a logged acc without a step; a Run logs at steps"),
        ({"loss": 1.0}, -1, "step -1 of run exp/a is not an integer >= 0"),
        ({"loss": 1.0}, 1.5, "step 1.5 of run exp/a is not an integer"),
    ],
)
def test_a_bad_value_is_one_line_and_keeps_nothing_of_the_call(
    db: Path, logged: dict[str, Any], step: Any, said: str
) -> None:
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="exp/other", git_commit=None)
        store.log_metric("exp/other", "val_acc", 0.5)
        store.ingest(ranked(), task="retrieval", run="exp/a", git_commit=None)
        store.log_metric("exp/a", "acc", 0.5)  # without a step
    run = evalstore.init("exp/a", db=db, resume=True, git_commit=None, flush_every=QUIET)
    with pytest.raises(InvalidInput, match=said) as caught:
        run.log(logged, step=step)
    assert "\n" not in str(caught.value)
    assert run.flush() == 0  # nothing of the call was kept
    run.log({"ok": 2.0})
    assert run.flush() == 1
    run.finish()


def test_a_run_writes_while_this_process_holds_the_store(db: Path) -> None:
    """DuckDB shares the database within a process: the Run's own connection writes while
    the user's Store stays open, and that Store sees the values."""
    with Store(db) as store:
        run = store.start_run("exp/a", params={"lr": 0.1}, git_commit=None, flush_every=QUIET)
        for step in range(100):
            run.log({"loss": 1 / (step + 1), "lr": 0.1}, step=step)
        assert run.flush() == 200
        assert store.con.execute("select count(*) from logged_values").fetchall() == [(200,)]
        run.finish()
        assert store.run("exp/a")["status"] == "finished"
    with Store(db, read_only=True) as reader, pytest.raises(InvalidInput, match="read-only"):
        reader.start_run("exp/b")


def test_the_background_thread_writes_the_buffer(db: Path) -> None:
    """With a short period, the values land without a flush; run.flush() then has nothing."""
    run = evalstore.init("exp/a", db=db, git_commit=None, flush_every=0.01)
    run.log({"loss": 0.5}, step=0)
    with Store(db) as store:  # the Run's connections share this one's database
        count = "select count(*) from logged_values"
        while store.con.execute(count).fetchall() == [(0,)]:  # waits for the value itself
            pass
        assert run.flush() == 0
        run.finish()
    assert values(db) == [("loss", 0, 0.5)]


def test_a_run_with_a_dead_process_shows_as_crashed(db: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    run = evalstore.init("exp/a", db=db, git_commit=None, flush_every=QUIET)
    run.finish()
    con = duckdb.connect(str(db))
    con.execute("update run_state set status = 'running', pid = $pid", {"pid": int(dead.stdout)})
    con.close()
    with Store(db, read_only=True) as store:
        assert store.run("exp/a")["status"] == "crashed"
        assert store.runs()["status"].to_list() == ["crashed"]
    now, old = datetime(2026, 1, 1, 12), datetime(2026, 1, 1, 11)
    assert shown_status("running", 1, "other", old, now=now, here="this") == "crashed"
    recent = now - timedelta(seconds=HEARTBEAT_LIMIT - 1)
    assert shown_status("running", 1, "other", recent, now=now, here="this") == "running"
    assert shown_status("running", None, "this", old, now=now, here="this") == "running"
    assert shown_status("running", os.getpid(), "this", old, now=now, here="this") == "running"
    assert shown_status("failed", int(dead.stdout), "this", old, here="this") == "failed"


def test_step_runs_are_hidden_and_counted(db: Path, cli: Any) -> None:
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="exp/a", git_commit=None)
        store.ingest(ranked(seed=1), task="retrieval", run="exp/a@5", git_commit=None)
        store.con.execute("insert into run_steps values (2, 1, 5)")  # test-only SQL
        shown = store.runs().select("name", "status", "steps").rows()
        assert shown == [("a", "finished", 1)]
        assert store.run("exp/a")["steps"] == 1 and store.run("exp/a@5")["steps"] == 0
    table = cli("runs")
    assert table.exit_code == 0 and "a@5" not in table.stdout
    header = next(line for line in table.stdout.splitlines() if "run_id" in line)
    assert header.split()[-1] == "steps"
    assert "steps" in cli("show", "exp/a").stdout


def test_removing_a_live_run_removes_its_state(db: Path, cli: Any) -> None:
    with evalstore.init("exp/a", db=db, git_commit=None, flush_every=QUIET) as run:
        run.log({"loss": 0.5})
    assert cli("rm", "exp/a", "--yes").exit_code == 0
    con = duckdb.connect(str(db), read_only=True)
    left = con.execute("select (select count(*) from run_state), "
                       "(select count(*) from logged_values)").fetchall()  # fmt: skip
    con.close()
    assert left == [(0, 0)]


# -- the command line ---------------------------------------------------------------------------


@pytest.mark.no_store
def test_log_to_a_missing_run_says_how_to_open_it(db: Path, cli: Any) -> None:
    missing = cli("log", "train/new-run2", "loss", "0.5", "--step", "3")
    assert missing.exit_code == 1 and missing.stderr.count("\n") == 1
    assert "no run 'train/new-run2'" in missing.stderr
    assert f"`evalstore run new train/new-run2 --db {db}` opens it" in missing.stderr
    assert not db.exists()  # nothing made
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="exp/a", git_commit=None)
    before = snapshot(db)
    other = cli("log", "train/new-run2", "loss", "0.5", "--step", "3")
    assert other.exit_code == 1 and other.stderr.count("\n") == 1
    assert "`evalstore run new train/new-run2" in other.stderr
    assert snapshot(db) == before


@pytest.mark.no_store
def test_a_shell_script_opens_logs_and_finishes_a_run(db: Path, cli: Any) -> None:
    opened = cli("run", "new", "train/r1", "-p", "lr=0.1", "-p", "opt=adam", "-t", "base",
                 "--notes", "from bash", "--git-commit", "abc")  # fmt: skip
    assert opened.exit_code == 0, opened.output
    lines = opened.stdout.splitlines()
    assert lines[0] == "opened run train/r1 (id 1): running"
    assert lines[1] == f"log to it:  evalstore log train/r1 METRIC VALUE --step N --db {db}"
    assert lines[2] == f"finish it:  evalstore run finish train/r1 [--failed] --db {db}"
    with Store(db, read_only=True) as store:
        info = store.run("train/r1")
    assert info["params"] == {"lr": 0.1, "opt": "adam"} and info["tags"] == ["base"]
    assert info["status"] == "running" and info["pid"] is None and info["git_commit"] == "abc"
    beat = info["heartbeat_at"]
    for step, loss in enumerate([0.9, 0.4]):
        done = cli("log", "train/r1", "loss", str(loss), "--step", str(step))
        assert done.exit_code == 0, done.output
    with Store(db, read_only=True) as store:
        assert store.run("train/r1")["heartbeat_at"] > beat  # a sign of life
    listed = cli("runs", "-f", "csv")
    assert listed.stdout.splitlines()[0].split(",")[-2:] == ["status", "steps"]
    assert ",running,0" in listed.stdout
    assert "running" in cli("runs").stdout
    again = cli("run", "new", "train/r1")
    assert again.exit_code == 1 and again.stderr.count("\n") == 1
    assert "exists; pass resume=True (--resume)" in again.stderr
    finished = cli("run", "finish", "train/r1")
    assert finished.exit_code == 0 and finished.stdout == "run train/r1 (id 1): finished\n"
    shown = cli("show", "train/r1").stdout
    assert "finished_at" in shown and "status" in shown and "finished" in shown
    reopened = cli("run", "new", "train/r1", "--resume", "--pid", str(os.getpid()))
    assert reopened.stdout.startswith(
        f"reopened run train/r1 (id 1): running, tied to process {os.getpid()}"
    )
    assert cli("run", "finish", "train/r1", "--failed").stdout.endswith(": failed\n")
    assert values(db, "train/r1") == [("loss", 0, 0.9), ("loss", 1, 0.4)]


def test_run_commands_refuse_in_one_line(db: Path, cli: Any) -> None:
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="exp/a", git_commit=None)
    before = snapshot(db)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    for args, said in [
        (("run", "finish", "exp/a"), "made by an ingest"),
        (("run", "finish", "exp/zz"), "no run 'exp/zz'"),
        (("run", "new", "exp/b", "--pid", dead.stdout.strip()), "no such process"),
        (("run", "new", "exp/b", "-p", "lr"), "param 'lr' is not key=value"),
    ]:
        bad = cli(*args)
        assert bad.exit_code == 1 and bad.stderr.count("\n") == 1, (args, bad.output)
        assert bad.stderr.startswith("Error: ") and said in bad.stderr, bad.stderr
    assert snapshot(db) == before
    assert cli("run", "flush").stdout.startswith("nothing waits in ")


def test_log_metric_to_a_missing_run_names_start_run(store: Store) -> None:
    """The issue's first try: Store.log_metric to a run that does not exist makes nothing and
    names what opens one, from Python as the command line names `evalstore run new`."""
    with pytest.raises(RunNotFound, match=r"Store\.start_run\('train/new-run'\)"):
        store.log_metric("train/new-run", "loss", 1.0, step=0)
    assert store.runs().height == 0
