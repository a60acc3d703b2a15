"""A training run among other processes: a store another process holds locked (the loop is
never blocked; what cannot land waits beside the store), and the end of the training
process: a normal exit, an uncaught exception, sys.exit, SIGTERM and SIGKILL mid-loop. Real
subprocesses; each waits for what it can observe (a line on a pipe, its exit), never a
timer."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalstore
from evalstore import StoreLocked
from evalstore.runs.live import pending_dir

pytestmark = pytest.mark.slow  # subprocesses

HOLD = (
    "import sys\nfrom evalstore import Store\n"
    "store = Store(sys.argv[1]); print('held', flush=True); sys.stdin.readline()\n"
)

TRAIN = """
import sys, evalstore
run = evalstore.init("exp/a", db=sys.argv[1], git_commit=None, flush_every=3600)
for step in range(10):
    run.log({"loss": 1.0 / (step + 1), "acc": step / 10}, step=step)
"""


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()  # test-only SQL
    finally:
        con.close()


def hold(db: Path) -> subprocess.Popen[str]:
    """Another process holding the store until it reads a line."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def status(db: Path) -> str:
    with evalstore.Store(db, read_only=True) as store:
        return str(store.run("exp/a")["status"])


def test_a_locked_store_does_not_block_the_loop(db: Path) -> None:
    run = evalstore.init("exp/a", db=db, git_commit=None, flush_every=0.01, lock_timeout=0.2)
    holder = hold(db)
    for step in range(5_000):  # 20,000 values while the store is locked: every call returns
        run.log({"a": step, "b": -step, "c": 0.5, "d": 1.0}, step=step)
    with pytest.raises(StoreLocked, match="is locked"):
        run.flush()  # waits lock_timeout; the values stay in the buffer
    holder.communicate("release\n")
    run.lock_timeout = 60.0
    run.finish()
    counted = "select count(*), count(distinct step), sum(value) filter (metric = 'b')"
    assert rows(db, f"{counted} from logged_values") == [(20_000, 5_000, -sum(range(5_000)))]
    assert status(db) == "finished"


def test_values_wait_beside_a_store_that_stays_locked(
    db: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = evalstore.init("exp/a", db=db, git_commit=None, flush_every=3600, lock_timeout=0.2)
    for step in range(10):
        run.log({"loss": 1.0 / (step + 1), "acc": step / 10, "lr": 0.1}, step=step)
    holder = hold(db)
    run.finish()  # gives up after 0.2 s: the values and the finish go to a file
    said = capfd.readouterr().err.strip().splitlines()
    waiting = sorted(pending_dir(db).glob("*.jsonl"))
    assert len(waiting) == 1 and len(said) == 1, said
    assert said[0].startswith("evalstore: 30 logged value(s) could not be written")
    assert str(waiting[0]) in said[0] and "`evalstore run flush`" in said[0]
    assert run.status == "finished"
    holder.communicate("release\n")
    assert status(db) == "running"  # not yet
    done = subprocess.run([sys.executable, "-m", "evalstore", "run", "flush", "--db", str(db)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "wrote 30 waiting value(s) of run exp/a and its finish (finished)" in done.stderr
    assert rows(db, "select count(*) from logged_values") == [(30,)]
    assert status(db) == "finished" and not list(pending_dir(db).glob("*.jsonl"))
    again = subprocess.run([sys.executable, "-m", "evalstore", "run", "flush", "--db", str(db)],
                           capture_output=True, text=True)  # fmt: skip
    assert again.stdout.startswith("nothing waits in")


def test_the_next_init_writes_in_what_waits(db: Path) -> None:
    run = evalstore.init("exp/a", db=db, git_commit=None, flush_every=3600, lock_timeout=0.1)
    run.log({"loss": 0.5}, step=0)
    holder = hold(db)
    run.finish("failed")
    holder.communicate("release\n")
    with evalstore.init("exp/b", db=db, git_commit=None, flush_every=3600):
        assert rows(db, "select metric, step, value from logged_values") == [("loss", 0, 0.5)]
    assert status(db) == "failed"


@pytest.mark.parametrize(
    ("end", "code", "shown"),
    [
        ("", 0, "finished"),  # no finish: at exit
        ("sys.exit(0)", 0, "finished"),
        ("raise RuntimeError('boom')", 1, "failed"),
        ("sys.exit(3)", 3, "failed"),
    ],
)
def test_the_end_of_the_process_finishes_the_run(db: Path, end: str, code: int, shown: str) -> None:
    done = subprocess.run([sys.executable, "-c", TRAIN + end, str(db)], capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == code, done.stderr
    assert ("boom" in done.stderr) is (code == 1)  # the exception's traceback is still shown
    assert status(db) == shown
    assert rows(db, "select count(*), max(step) from logged_values") == [(20, 9)]


def test_sigterm_flushes_and_fails_the_run(db: Path) -> None:
    script = TRAIN + "print('ready', flush=True)\nsys.stdin.readline()\n"
    child = subprocess.Popen([sys.executable, "-c", script, str(db)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate()
    assert child.returncode == 128 + signal.SIGTERM, err
    assert status(db) == "failed"
    assert rows(db, "select count(*), max(step) from logged_values") == [(20, 9)]


KILLED = """
import sys, evalstore
run = evalstore.init("exp/a", db=sys.argv[1], git_commit=None, flush_every=0.01)
step = 0
while True:
    run.log({"a": step, "b": 2 * step, "c": 3 * step}, step=step)
    if step % 100 == 99:
        run.flush()
        print(step, flush=True)
    step += 1
"""


def test_sigkill_mid_loop_leaves_whole_steps_and_a_crashed_run(db: Path) -> None:
    """Killed while its thread writes every 10 ms: every step in the store has all three
    values, right; every step it saw flushed is there; the run shows as crashed."""
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(db)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdout is not None
    flushed = [int(child.stdout.readline()) for _ in range(5)]
    child.send_signal(signal.SIGKILL)
    child.communicate()
    assert child.returncode == -signal.SIGKILL
    assert status(db) == "crashed"
    per_step = rows(
        db,
        "select step, count(*), bool_and(value = step * (case metric when 'a' then 1 "
        "when 'b' then 2 else 3 end)) from logged_values group by step order by step",
    )
    assert per_step, "nothing landed"
    assert all(n == 3 and right for _, n, right in per_step), [r for r in per_step if r[1] != 3]
    steps = [s for s, _, _ in per_step]
    assert steps == list(range(len(steps)))  # no gap: batches land in order, whole
    assert steps[-1] >= flushed[-1]


FORKED = """
import os, sys, evalstore
run = evalstore.init("exp/a", db=sys.argv[1], git_commit=None, flush_every=3600)
run.log({"loss": 1.0}, step=0)
child = os.fork()
if child == 0:  # a data loader's worker: it exits through sys.exit, atexit and all
    sys.exit(0)
os.waitpid(child, 0)
with evalstore.Store(sys.argv[1], read_only=True) as store:
    print(store.run("exp/a")["status"], flush=True)
run.log({"loss": 0.5}, step=1)
"""


def test_a_forked_child_finishes_none_of_its_parents_runs(db: Path) -> None:
    done = subprocess.run([sys.executable, "-c", FORKED, str(db)], capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "running"  # the child's exit left it alone
    assert status(db) == "finished"  # the parent's exit finished it, with both values
    assert rows(db, "select step, value from logged_values order by step") == [(0, 1.0), (1, 0.5)]


def test_a_shell_script_tied_to_its_process_shows_crashed_once_gone(db: Path) -> None:
    """`run new --pid $$` ties the run to the script: it logs, then ends without `run
    finish` (as a script killed half-way would)."""
    cli = f"{sys.executable} -m evalstore"
    script = (
        f"set -e\n{cli} run new exp/a --pid $$ --db {db}\n"
        f"for step in 0 1 2; do {cli} log exp/a loss 0.$step --step $step --db {db}; done\n"
        f"{cli} runs --db {db} -f csv\n"
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert ",running,0" in done.stdout  # while the script ran
    assert status(db) == "crashed"
    assert rows(db, "select step, value from logged_values order by step") == [
        (0, 0.0), (1, 0.1), (2, 0.2)
    ]  # fmt: skip
