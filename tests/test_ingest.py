from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from conftest import examples, ranked, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstore import InvalidInput, RunExists, Store
from evalstore.db.schema import ROW_TABLES

COLUMNS = ["group_id", "item_id", "score", "label", "seq"]


def stored(store: Store, run: str = "r") -> pl.DataFrame:
    run_id = store.resolve(run)
    return store.con.sql(
        "select group_id, item_id, score, label, seq from scores where run_id = $r order by seq",
        params={"r": run_id},
    ).pl()


def expected(data: dict[str, np.ndarray]) -> pl.DataFrame:
    score = [None if s == -np.inf else float(s) for s in data["score"]]
    return pl.DataFrame(
        {
            "group_id": [str(g) for g in data["group_id"]],
            "item_id": [str(i) for i in data["item_id"]],
            "score": score,
            "label": np.asarray(data["label"], dtype=np.int8),
            "seq": np.arange(len(score), dtype=np.int64),
        }
    )


def write(frame: pl.DataFrame, path: Path) -> Path:
    suffix = path.suffix
    if suffix == ".parquet":
        frame.write_parquet(path)
    elif suffix == ".csv":
        frame.write_csv(path)
    elif suffix == ".tsv":
        frame.write_csv(path, separator="\t")
    elif suffix == ".ndjson":
        frame.write_ndjson(path)
    elif suffix == ".npz":
        np.savez(path, **{c: frame[c].to_numpy() for c in frame.columns})
    return path


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".tsv", ".ndjson", ".npz"])
def test_file_formats_round_trip(store: Store, tmp_path: Path, suffix: str) -> None:
    data = ranked(seed=3)
    path = write(pl.DataFrame(data), tmp_path / f"run{suffix}")
    result = store.ingest(path, task="retrieval", run="r")
    assert (result.rows, result.lists) == (15, 3)
    assert stored(store).equals(expected(data))


@pytest.mark.parametrize(
    "convert",
    [pl.DataFrame, pd.DataFrame, pa.table, dict],
    ids=["polars", "pandas", "pyarrow", "dict"],
)
def test_in_memory_sources_round_trip(store: Store, convert: Any) -> None:
    data = ranked(seed=4)
    store.ingest(convert(data), task="retrieval", run="r")
    assert stored(store).equals(expected(data))


def test_format_option_overrides_extension(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "scores.txt"
    pl.DataFrame(ranked()).write_csv(path)
    store.ingest(path, task="retrieval", run="r", fmt="csv")
    assert stored(store).height == 15


def test_several_files_keep_their_order(store: Store, tmp_path: Path) -> None:
    a, b = ranked(1, 4, seed=1), ranked(1, 4, seed=2)
    b["group_id"] = b["group_id"] + 1
    paths = [write(pl.DataFrame(d), tmp_path / f"{n}.parquet") for n, d in (("a", a), ("b", b))]
    store.ingest(paths, task="retrieval", run="r")
    both = {k: np.concatenate([a[k], b[k]]) for k in a}
    assert stored(store).equals(expected(both))


def test_column_mapping_negation_and_not_retrieved(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("query,doc,distance,label\nq1,a,0.5,1\nq1,b,inf,1\nq2,a,0.25,-1\n")
    result = store.ingest(
        path,
        task="retrieval",
        run="r",
        columns=["group_id=query", "item_id=doc", "score=distance"],
        negate_score=True,
    )
    assert result.not_retrieved == 1
    rows = stored(store).rows()
    assert rows == [("q1", "a", -0.5, 1, 0), ("q1", "b", None, 1, 1), ("q2", "a", -0.25, -1, 2)]


@pytest.mark.parametrize(
    ("convention", "raw", "labels"),
    [
        ("01", [1, 0, 1], [1, -1, 1]),
        ("bool", [True, False, False], [1, -1, -1]),
        ("pm1", [1, -1, 0], [1, -1, 0]),
    ],
)
def test_label_conventions(
    store: Store, convention: str, raw: list[Any], labels: list[int]
) -> None:
    data = {"item_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0], "label": raw}
    store.ingest(data, task="verification", run="r", labels=convention)
    assert stored(store)["label"].to_list() == labels


def test_verification_needs_no_group(store: Store) -> None:
    store.ingest(
        {"item_id": [1, 2], "score": [0.5, 0.1], "label": [1, -1]}, task="verification", run="r"
    )
    assert stored(store)["group_id"].to_list() == [None, None]


def test_groups_file_sets_n_positives_and_slices(store: Store, tmp_path: Path) -> None:
    groups = tmp_path / "groups.csv"
    groups.write_text("group_id,n_positives,sequence,difficulty\n0,7,i_boat,easy\n1,,v_home,hard\n")
    store.ingest(ranked(2, 3), task="matching", run="r", groups=groups, labels="pm1")
    rows = store.con.sql("select group_id, n_positives, slices from groups order by 1").fetchall()
    assert rows == [
        ("0", 7, {"sequence": "i_boat", "difficulty": "easy"}),
        ("1", None, {"sequence": "v_home", "difficulty": "hard"}),
    ]


def test_run_metadata(store: Store) -> None:
    store.ingest(
        ranked(),
        task="retrieval",
        run="exp/r",
        params=["lr=0.001", "arch=resnet", "layers=[1,2]", "flag=true"],
        tags=["a", "b", "a"],
        notes="first try",
        created_at="2026-03-01T10:00:00+02:00",
        git_commit="abc123",
    )
    info = store.run("exp/r")
    assert info["params"] == {"lr": 0.001, "arch": "resnet", "layers": [1, 2], "flag": True}
    assert info["tags"] == ["a", "b"]
    assert info["notes"] == "first try"
    assert info["git_commit"] == "abc123"
    assert info["created_at"].isoformat() == "2026-03-01T08:00:00"
    assert info["tasks"] == [{"task": "retrieval", "rows": 15, "lists": 3}]


def test_replace_is_atomic_and_append_adds_a_task(store: Store) -> None:
    store.ingest(ranked(seed=1), task="retrieval", run="r")
    with pytest.raises(RunExists, match="default/r exists"):
        store.ingest(ranked(seed=2), task="retrieval", run="r")
    result = store.ingest(ranked(seed=2), task="retrieval", run="r", replace=True)
    assert result.replaced
    assert stored(store).equals(expected(ranked(seed=2)))
    store.ingest(ranked(seed=3), task="matching", run="r", append=True)
    assert [t["task"] for t in store.run("r")["tasks"]] == ["matching", "retrieval"]
    with pytest.raises(RunExists, match="already has matching rows"):
        store.ingest(ranked(seed=3), task="matching", run="r", append=True)


def test_failed_replace_keeps_the_old_run(store: Store) -> None:
    store.ingest(ranked(seed=1), task="retrieval", run="r")
    before = snapshot_of(store)
    bad = ranked(seed=2)
    bad["score"][4] = np.nan
    with pytest.raises(InvalidInput, match="row 5 is NaN"):
        store.ingest(bad, task="retrieval", run="r", replace=True)
    assert snapshot_of(store) == before


def snapshot_of(store: Store) -> list[tuple[Any, ...]]:
    return (
        store.con.sql("select * from scores order by run_id, seq").fetchall()
        + store.con.sql("select run_id, name from runs order by 1").fetchall()
    )


# -- bad input through the CLI: one line, exit 1, database unchanged -----------------------

GOOD = "group_id,item_id,score,label\nq1,a,0.9,1\nq1,b,0.5,-1\nq2,a,0.3,0\n"
ZERO_ONE = "group_id,item_id,score,label\nq1,a,0.9,0\nq1,b,0.5,1\nq2,a,0.3,0\n"

BAD_INPUTS = {
    "missing_column": (
        "scores.csv",
        "group_id,item_id,label\nq1,a,1\n",
        [],
        "scores.csv: missing column 'score'",
    ),
    "missing_columns": (
        "scores.csv",
        "item_id,label\na,1\n",
        [],
        "scores.csv: missing columns 'score', 'group_id' (columns: item_id, label); map each "
        "with --column score=NAME --column group_id=NAME",
    ),
    "misnamed_mapping": (
        "scores.csv",
        GOOD,
        ["--column", "score=dist"],
        "missing column 'dist' named by --column",
    ),
    "nan_score": (
        "scores.csv",
        "group_id,item_id,score,label\nq1,a,0.9,1\nq1,b,nan,-1\n",
        [],
        "column 'score' row 2 is NaN",
    ),
    "pos_inf_score": (
        "scores.csv",
        "group_id,item_id,score,label\nq1,a,inf,1\n",
        [],
        "column 'score' row 1 is +inf",
    ),
    "text_score": (
        "scores.csv",
        "group_id,item_id,score,label\nq1,a,high,1\n",
        [],
        "column 'score' row 1: 'high' is not a number",
    ),
    "bad_label": (
        "scores.csv",
        "group_id,item_id,score,label\nq1,a,0.9,1\nq1,b,0.5,2\n",
        [],
        "column 'label' row 2: 2 is not a label",
    ),
    "label_outside_01": (
        "scores.csv",
        GOOD,
        ["--labels", "01"],
        "column 'label' row 2: -1 is not a label under --labels 01",
    ),
    "duplicate": (
        "scores.csv",
        GOOD + "q1,a,0.1,1\n",
        [],
        "scores.csv row 4: duplicate (group_id, item_id) = ('q1', 'a'), first seen at row 1",
    ),
    "empty_file": ("scores.csv", "", [], "scores.csv: empty file"),
    "header_only": ("scores.csv", "group_id,item_id,score,label\n", [], "scores.csv: no rows"),
    "truncated_parquet": ("scores.parquet", None, [], "scores.parquet: cannot read as parquet"),
    "unknown_task": ("scores.csv", GOOD, ["--task", "ranking"], "unknown task 'ranking'"),
    "existing_run": ("scores.csv", GOOD, ["--run", "base"], "run default/base exists"),
    "missing_group": (
        "scores.csv",
        "item_id,score,label\na,1,1\n",
        [],
        "missing column 'group_id'",
    ),
    "no_such_file": ("other.csv", GOOD, ["--", "nothere.csv"], "nothere.csv: no such file"),
    "zero_one_under_default_pm1": (
        "scores.csv",
        ZERO_ONE,
        [],
        "scores.csv: column 'label' has 0 (2 rows) and 1 (1 row) but no -1; under --labels pm1 "
        "every 0 is ignored (not a negative): pass --labels 01 if 0 means negative, or "
        "--labels pm1 explicitly if 0 means ignored",
    ),
    "only_zeros_under_default_pm1": (
        "scores.csv",
        "group_id,item_id,score,label\nq1,a,0.9,0\n",
        [],
        "scores.csv: column 'label' has 0 (1 row) but no 1 or -1; under --labels pm1",
    ),
    "zero_one_in_a_mapped_column": (
        "scores.csv",
        ZERO_ONE.replace("label", "relevant"),
        ["--column", "label=relevant"],
        "scores.csv: column 'relevant' has 0 (2 rows) and 1 (1 row) but no -1",
    ),
}


@pytest.mark.slow_after(4)  # a family of 19 cases: the fast loop runs the first 4
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_and_changes_nothing(
    cli: Any, db: Path, tmp_path: Path, case: str
) -> None:
    base = tmp_path / "base.csv"
    base.write_text(GOOD)
    assert cli("ingest", str(base), "--task", "retrieval", "--run", "base").exit_code == 0
    name, text, extra, message = BAD_INPUTS[case]
    path = tmp_path / name
    if text is None:  # a parquet file cut in the middle
        pl.DataFrame(ranked(50, 50)).write_parquet(tmp_path / "whole.parquet")
        data = (tmp_path / "whole.parquet").read_bytes()
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_text(text)
    before = snapshot(db)
    args = ["ingest", str(path), "--task", "retrieval", "--run", "new", *extra]
    if "--task" in extra:
        args = ["ingest", str(path), "--run", "new", *extra]
    if "--run" in extra:
        args = ["ingest", str(path), "--task", "retrieval", *extra]
    if extra[:1] == ["--"]:
        args = ["ingest", "--task", "retrieval", "--run", "new", str(tmp_path / extra[1])]
    result = cli(*args)
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.output
    assert snapshot(db) == before


# -- labels that cannot be right, the label counts, score columns named like distances ------


def labels_of(db: Path, run: str) -> list[int]:
    with Store(db, read_only=True) as store:
        return stored(store, run)["label"].to_list()


@pytest.mark.no_store
def test_zero_one_labels_need_a_convention_chosen(cli: Any, db: Path, tmp_path: Path) -> None:
    """0/1 labels under the default pm1 are refused (every 0 would be ignored: AP 1 for any
    ranking); --labels 01 reads 0 as negative, an explicit --labels pm1 as ignored."""
    path = tmp_path / "scores.csv"
    path.write_text(ZERO_ONE)
    assert cli("ingest", str(path), "--task", "retrieval", "--run", "base").exit_code == 1
    assert not db.exists()  # the store the failed command would have created is not left
    ok = cli("ingest", str(path), "--task", "retrieval", "--run", "01", "--labels", "01")
    assert ok.exit_code == 0, ok.output
    assert labels_of(db, "01") == [-1, 1, -1]
    ok = cli("ingest", str(path), "--task", "retrieval", "--run", "pm1", "--labels", "pm1")
    assert ok.exit_code == 0, ok.output
    assert ok.stderr == ""
    assert labels_of(db, "pm1") == [0, 1, 0]


def test_the_label_check_is_over_all_inputs_together(cli: Any, db: Path, tmp_path: Path) -> None:
    """A -1 in any input of the ingest is enough; refused, the message names every input and
    counts the labels of all of them."""
    zero_one, other = tmp_path / "a.csv", tmp_path / "b.csv"
    zero_one.write_text(ZERO_ONE)
    other.write_text(ZERO_ONE.replace("q", "p"))
    result = cli("ingest", str(zero_one), str(other), "--task", "retrieval", "--run", "two")
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"Error: {zero_one}, {other}: column 'label' has 0 (4 rows) and 1 (2 rows) but no -1; "
        "under --labels pm1 every 0 is ignored (not a negative): pass --labels 01 if 0 means "
        "negative, or --labels pm1 explicitly if 0 means ignored"
    )
    other.write_text("group_id,item_id,score,label\np1,a,0.9,-1\n")
    result = cli("ingest", str(zero_one), str(other), "--task", "retrieval", "--run", "two")
    assert result.exit_code == 0, result.output
    assert labels_of(db, "two") == [0, 1, 0, -1]


def test_the_library_refuses_as_the_cli_does(store: Store) -> None:
    """Store.ingest: the default labels=None is pm1 with the check, "pm1" is pm1 without;
    refused, the store is as it was. Positives alone (no 0) need no choice."""
    store.ingest(ranked(seed=1), task="retrieval", run="base", git_commit=None)
    before = snapshot_of(store)
    data = {"item_id": [1, 2, 3], "score": [0.5, 0.25, 0.125], "label": [1, 0, 0]}
    with pytest.raises(InvalidInput) as info:
        store.ingest(data, task="verification", run="r", git_commit=None)
    assert str(info.value).startswith(
        "data[0]: column 'label' has 0 (2 rows) and 1 (1 row) but no -1;"
    )
    assert snapshot_of(store) == before
    result = store.ingest(data, task="verification", run="r", labels="pm1", git_commit=None)
    assert (result.positives, result.negatives, result.ignored) == (1, 0, 2)
    only = {"item_id": [1, 2], "score": [0.5, 0.25], "label": [1, 1]}
    assert store.ingest(only, task="verification", run="p", git_commit=None).positives == 2


def test_every_summary_counts_the_labels(cli: Any, tmp_path: Path) -> None:
    """The summary line keeps its start and ends with the label counts; the JSON summary has
    them as fields."""
    path = tmp_path / "s.csv"
    path.write_text(GOOD + "q2,b,0.1,1\n")
    result = cli("ingest", str(path), "--task", "retrieval", "--run", "t")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        "ingested run default/t (id 1): 4 retrieval rows in 2 list(s), 0 not retrieved, "
        "2 positive, 1 negative, 1 ignored"
    )
    json_args = ["--labels", "pm1", "--output-format", "json"]
    result = cli("ingest", str(path), "--task", "retrieval", "--run", "j", *json_args)
    [summary] = json.loads(result.stdout)
    assert {k: summary[k] for k in ("positives", "negatives", "ignored", "warnings")} == {
        "positives": 2,
        "negatives": 1,
        "ignored": 1,
        "warnings": [],
    }


DISTANCE_NAMES = ["distance", "dist", "d", "D", "L2", "l1_dist", "hamming", "descDistance"]
OTHER_NAMES = ["similarity", "neg_distance", "minus_l2", "odds", "distinct", "ld"]


@pytest.mark.slow_after(2)  # a family of 14 cases: the fast loop runs the first 2
@pytest.mark.parametrize("name", DISTANCE_NAMES + OTHER_NAMES)
def test_a_score_named_like_a_distance_gets_a_warning(cli: Any, tmp_path: Path, name: str) -> None:
    """--column score=distance without --negate-score: stored as given, with one warning line
    on stderr (after the column mapping: the input's own name); none with --negate-score, and
    none for other names."""
    path = tmp_path / "s.csv"
    path.write_text(GOOD.replace("score", name))
    mapping = ["--column", f"score={name}"]
    result = cli("ingest", str(path), "--task", "retrieval", "--run", "a", *mapping)
    assert result.exit_code == 0, result.output
    if name in OTHER_NAMES:
        assert result.stderr == ""
        return
    assert result.stderr.strip().splitlines() == [
        f"Warning: {path}: the score column {name!r} is named like a distance (smaller = "
        "closer) but --negate-score is not given: its values are stored as they are, higher "
        "= more confident; pass --negate-score if smaller is better"
    ]
    options = [*mapping, "--negate-score", "--output-format", "json"]
    negated = cli("ingest", str(path), "--task", "retrieval", "--run", "b", *options)
    assert (negated.exit_code, negated.stderr) == (0, "")
    assert json.loads(negated.stdout)[0]["warnings"] == []


def test_the_library_returns_warnings_and_prints_nothing(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    data = {"group_id": [1, 1], "item_id": [1, 2], "dist": [0.5, 0.25], "label": [1, -1]}
    result = store.ingest(
        data, task="retrieval", run="r", columns={"score": "dist"}, git_commit=None
    )
    assert len(result.warnings) == 1 and result.warnings[0].startswith(
        "data[0]: the score column 'dist' is named like a distance"
    )
    assert capsys.readouterr() == ("", "")


# -- hypothesis round trip -------------------------------------------------------------------

ids = st.one_of(st.integers(-(2**40), 2**40).map(str), st.text(min_size=1, max_size=8))
scores = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.just(-math.inf),
)


@pytest.mark.slow  # hypothesis: 40 ingests through the CLI and back
@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rows=st.lists(
        st.tuples(ids, ids, scores, st.sampled_from([-1, 0, 1])),
        min_size=1,
        max_size=60,
        unique_by=lambda r: (r[0], r[1]),
    )
)
def test_what_goes_in_comes_out(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, str, float, int]]
) -> None:
    path = tmp_path_factory.mktemp("h") / "db.duckdb"
    data = {
        "group_id": np.array([r[0] for r in rows], dtype=object),
        "item_id": np.array([r[1] for r in rows], dtype=object),
        "score": np.array([r[2] for r in rows], dtype=np.float64),
        "label": np.array([r[3] for r in rows], dtype=np.int64),
    }
    with Store(path) as store:  # pm1 given: rows of 0 and 1 only are meant as drawn
        store.ingest(pl.DataFrame(data), task="retrieval", run="r", labels="pm1")
        got = stored(store)
    assert got.equals(expected(data))


# -- crashes and concurrent writers -------------------------------------------------------------

CHILD = """
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
from evalstore import Store
with Store(sys.argv[1]) as store:
    def progress(stage, done, total):
        if done >= 2_000_000:
            print("inside", flush=True)
            sys.stdin.readline()  # wait here, mid-transaction, until killed
    store.ingest(sys.argv[2], task="retrieval", run="big", progress=progress)
"""


def big_parquet(path: Path, n: int) -> Path:
    rng = np.random.default_rng(0)
    table = pa.table(
        {
            "group_id": np.repeat(np.arange(n // 1000, dtype=np.int32), 1000),
            "item_id": np.tile(np.arange(1000, dtype=np.int32), n // 1000),
            "score": rng.standard_normal(n).astype(np.float32),
            "label": np.where(rng.random(n) < 0.1, 1, -1).astype(np.int8),
        }
    )
    import pyarrow.parquet as pq

    pq.write_table(table, path)
    return path


@pytest.mark.slow  # a child process ingests 4M rows until killed
def test_kill_9_mid_ingest_leaves_the_database_unchanged(db: Path, tmp_path: Path) -> None:
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="before")
    before = snapshot(db)
    source = big_parquet(tmp_path / "big.parquet", 4_000_000)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(source)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "inside"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.communicate()  # and its pipes closed
    assert child.returncode == -signal.SIGKILL
    assert snapshot(db) == before
    with Store(db) as store:  # openable and writable again
        store.ingest(ranked(seed=9), task="retrieval", run="after")


@pytest.mark.slow  # two CLI processes; the second waits out the lock timeout
def test_second_writer_waits_then_fails_naming_the_file(db: Path, tmp_path: Path) -> None:
    csv = tmp_path / "s.csv"
    csv.write_text(GOOD)
    env = {**os.environ, "EVALSTORE_DB": str(db)}
    cmd = [
        sys.executable,
        "-m",
        "evalstore",
        "ingest",
        str(csv),
        "--task",
        "retrieval",
        "--run",
        "late",
    ]
    with Store(db):
        started = time.monotonic()
        proc = subprocess.run(
            [*cmd, "--lock-timeout", "1.5"], capture_output=True, text=True, env=env
        )
        waited = time.monotonic() - started
    assert proc.returncode == 1
    # one notice that it waits, then the one error line
    notice, error = proc.stderr.strip().splitlines()
    assert f"{db} is locked by process {os.getpid()}; waiting up to 1.5 s" in notice
    assert error.startswith(f"Error: {db} is locked by process {os.getpid()}")
    assert waited >= 1.5
    # once the holder lets go within the timeout, the writer gets through
    holder = Store(db)
    waiter = subprocess.Popen(
        [*cmd, "--lock-timeout", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert waiter.stderr is not None
    notice = waiter.stderr.readline()  # it waits now: the holder lets go (no timer)
    assert "waiting up to 20 s" in notice, notice
    holder.close()
    _, errs = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, errs
    with Store(db, read_only=True) as store:
        assert store.run("late")["tasks"][0]["rows"] == 3


def test_json_summary(cli: Any, tmp_path: Path) -> None:
    csv = tmp_path / "s.csv"
    csv.write_text(GOOD)
    result = cli(
        "ingest", str(csv), "--task", "retrieval", "--run", "e/x", "--output-format", "json"
    )
    assert result.exit_code == 0
    [summary] = json.loads(result.stdout)
    assert (summary["experiment"], summary["name"], summary["rows"], summary["lists"]) == (
        "e",
        "x",
        3,
        2,
    )


# -- storage: float32 scores, list ids ----------------------------------------------------


def row_tables(store: Store) -> dict[str, tuple[int, int]]:
    """The row tables that hold rows: {table: (rows, rows with a score)}."""
    counts = {}
    for table in sorted(ROW_TABLES):
        n, scored = store.con.execute(f"select count(*), count(score) from {table}").fetchone()
        if n:
            counts[table] = (n, scored)
    return counts


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scores_keep_their_precision(store: Store, dtype: type) -> None:
    """float32 inputs are stored as float32 (exactly, in half the space), others as double;
    the scores view shows both as the same doubles the inputs hold."""
    data = ranked(4, 50, seed=3)
    data["score"] = (np.random.default_rng(3).standard_normal(200) / 3).astype(dtype)
    data["score"][7] = -np.inf
    store.ingest(data, task="retrieval", run="r", git_commit=None)
    table = "list_rows_int_f32" if dtype == np.float32 else "list_rows_int_f64"
    assert row_tables(store) == {table: (200, 199)}
    got = stored(store)["score"].to_numpy()
    want = data["score"].astype(np.float64)
    assert np.isnan(got[7]) and np.array_equal(np.delete(got, 7), np.delete(want, 7))


def test_a_mix_of_float32_and_float64_inputs_is_stored_as_double(store: Store) -> None:
    a, b = ranked(2, 5, seed=1), ranked(2, 5, seed=2)
    a["score"] = a["score"].astype(np.float32)
    b["group_id"] = b["group_id"] + 2
    store.ingest([a, b], task="retrieval", run="r", git_commit=None)
    assert row_tables(store) == {"list_rows_int_f64": (20, 20)}
    assert stored(store)["score"].to_list()[:10] == a["score"].astype(np.float64).tolist()


@pytest.mark.parametrize("ids", ["int", "text"])
def test_every_list_has_a_list_id_of_its_own(store: Store, ids: str) -> None:
    """list_id is unique across runs and tasks (metric SQL partitions by it alone) and one to
    one with group_id within a run's task; groups has a row per list."""
    data = ranked(3, 4)
    if ids == "text":
        data["group_id"] = np.array([f"q{g:03d}" for g in data["group_id"]])
    for run in ("a", "b"):
        store.ingest(data, task="retrieval", run=run, git_commit=None)
    store.ingest(
        {"item_id": np.arange(3), "score": [0.1, 0.2, 0.3], "label": [1, -1, 1]},
        task="verification",
        run="a",
        append=True,
    )
    pairs = store.con.sql(
        "select distinct run_id, task, group_id, list_id from scores order by list_id"
    ).fetchall()
    assert len(pairs) == 7 and len({p[3] for p in pairs}) == 7
    groups = store.con.sql(
        "select run_id, task, group_id, list_id from groups order by list_id"
    ).fetchall()
    assert groups == pairs
    assert [p[2] for p in pairs[:3]] == [str(g) if ids == "int" else f"q{g:03d}" for g in range(3)]


def test_a_failed_ingest_leaves_no_reading_thread(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows are read in a thread beside DuckDB's insert; an error mid-stream stops it."""
    import threading

    from evalstore.ingest import sources

    monkeypatch.setattr(sources, "BATCH_ROWS", 500)  # the NaN is in batch 9 of 10
    data = ranked(50, 100)
    data["score"] = data["score"].astype(float)
    data["score"][4321] = np.nan
    with pytest.raises(InvalidInput, match="row 4322 is NaN"):
        store.ingest(data, task="retrieval", run="r", git_commit=None)
    assert not [t for t in threading.enumerate() if t.name == "evalstore-ingest"]
    assert store.runs().height == 0


def test_list_ids_are_never_reused(store: Store) -> None:
    """A removed run's list ids may live on in an export: later lists get new ones."""
    for run in ("a", "b"):
        store.ingest(ranked(3, 4), task="retrieval", run=run, git_commit=None)
    top = store.con.execute("select max(list_id) from groups").fetchone()[0]
    store.remove("b")
    store.ingest(ranked(3, 4), task="retrieval", run="c", git_commit=None)
    got = store.con.execute(
        "select min(list_id) from groups where run_id = $r", {"r": store.resolve("c")}
    ).fetchone()
    assert got == (top + 1,)


def test_two_connections_appending_at_once(db: Path) -> None:
    """Two Store objects on one file, each appending a task while the other writes: list ids
    never end up shared; the second to finish fails with a clear error and writes nothing."""
    from evalstore import StoreLocked, evaluate

    data = {
        "group_id": ["q1"] * 4 + ["q2"] * 4,
        "item_id": list(range(8)),
        "score": [0.9, 0.8, 0.7, 0.6] * 2,
        "label": [1, -1, -1, 1, -1, 1, 1, -1],
    }
    with Store(db) as a, Store(db) as b:
        for run in ("a", "b"):
            a.ingest(
                {"item_id": [1, 2], "score": [0.1, 0.2], "label": [1, -1]},
                task="verification",
                run=run,
                git_commit=None,
            )
        done: list[int] = []

        def meanwhile(stage: str, n: int, total: int | None) -> None:  # a's transaction is open
            if not done:
                done.append(1)
                b.ingest(data, task="retrieval", run="b", append=True, git_commit=None)

        with pytest.raises(StoreLocked, match="at the same time; nothing was written"):
            a.ingest(
                data, task="retrieval", run="a", append=True, git_commit=None, progress=meanwhile
            )
        rows = a.con.execute(
            "select name, cast(task as varchar), list_id from groups join runs using (run_id) "
            "order by list_id"
        ).fetchall()
        assert rows == [
            ("a", "verification", 0),
            ("b", "verification", 1),
            ("b", "retrieval", 2),
            ("b", "retrieval", 3),
        ]
        got = evaluate(a, ["b"], metrics=["ap"])
        assert got.filter(pl.col("task") == "retrieval")["n_lists"].to_list() == [2]
