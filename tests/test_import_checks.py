"""Import checks rows as ingest does and is all or nothing: a tampered export (NaN or +inf
scores, label 7, an item twice in a list, scores of lists without a groups row, bad matches
or counts) is refused with one line and the store is unchanged; an import killed part-way
leaves nothing of it, and the re-run imports every run. The whole folder is checked before
anything is written: a damaged manifest, journal or partition, a file of the wrong columns,
a link or a file an export does not hold is one line naming the file."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import export_lists, snapshot, unwritable

from evalstore import Store
from evalstore.errors import EvalstoreError
from evalstore.ingest.lists import MAX_UNLISTED
from evalstore.ingest.outcomes import MAX_COUNT
from evalstore.scale.export import export_runs, partition_path
from evalstore.scale.importer import import_runs

PART = "part-0.parquet"


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    out = tmp_path / "export"
    with Store(tmp_path / "src.duckdb") as store:
        for i in range(3):
            store.ingest(
                export_lists(3, 5, seed=i), task="retrieval", run=f"exp/r{i}", git_commit=None
            )
        store.ingest_keypoints(
            {
                "pair_id": ["p1", "p1", "p2"],
                "x0": [0.0, 1.0, 2.0],
                "y0": [0.0, 1.0, 2.0],
                "x1": [1.0, 2.0, 3.0],
                "y1": [1.0, 2.0, 3.0],
            },
            run="kp/m",
            pairs={"pair_id": ["p1", "p2"], **_identity()},
            git_commit=None,
        )
        store.ingest_outcomes(
            {"group_id": ["g"], "tp": [1], "fp": [2], "fn": [3]}, run="out/o", git_commit=None
        )
        export_runs(store, out)
    return out


def _identity() -> dict[str, list[float]]:
    eye = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    names = [f"h{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]
    return {n: [v, v] for n, v in zip(names, eye, strict=True)}


def _run_id(out: Path, name: str) -> int:
    manifest = json.loads((out / "manifest.json").read_text())
    return next(int(r["run_id"]) for r in manifest["runs"] if r["name"] == name)


def _tamper(out: Path, table: str, name: str, change: Callable[[pl.DataFrame], pl.DataFrame]):
    """Rewrite one partition and the manifest's row count and checksums, as a careful
    tamperer would."""
    run_id = _run_id(out, name)
    path = partition_path(out, table, run_id) / PART
    frame = change(pl.read_parquet(path))
    frame.write_parquet(path)
    manifest = json.loads((out / "manifest.json").read_text())
    for entry in manifest["runs"]:
        if int(entry["run_id"]) == run_id:
            entry["rows"][table] = frame.height
    (out / "manifest.json").write_text(json.dumps(manifest))
    _rehash(out)


def _rehash(out: Path) -> None:
    """Record the SHA-256 of every file as it is now: only the rows' own checks are left."""
    manifest = json.loads((out / "manifest.json").read_text())
    for entry in manifest["runs"]:
        entry["sha256"] = {
            table: hashlib.sha256(
                (partition_path(out, table, entry["run_id"]) / PART).read_bytes()
            ).hexdigest()
            for table, n in entry["rows"].items()
            if n
        }
    (out / "manifest.json").write_text(json.dumps(manifest))


def _first(column: str, value: object) -> Callable[[pl.DataFrame], pl.DataFrame]:
    def change(frame: pl.DataFrame) -> pl.DataFrame:
        first = pl.int_range(pl.len()) == 0
        return frame.with_columns(
            pl.when(first)
            .then(value if isinstance(value, pl.Expr) else pl.lit(value))
            .otherwise(pl.col(column))
            .alias(column)
        )

    return change


CASES: dict[str, tuple[str, str, Callable[[pl.DataFrame], pl.DataFrame], str]] = {
    "nan score": ("scores", "r1", _first("score", float("nan")), r"score nan"),
    "+inf score": ("scores", "r1", _first("score", float("inf")), r"score inf"),
    "label 7": ("scores", "r2", _first("label", 7), r"label 7"),
    "an item twice": (
        "scores",
        "r1",
        lambda f: pl.concat([f, f.head(1).with_columns(pl.col("seq") + 1000)]),
        r"item '0' 2 times in one list",
    ),
    "a list without groups": (
        "scores",
        "r2",
        _first("list_id", 999_999),
        r"has no groups row",
    ),
    "nan coordinate": ("matches", "m", _first("x0", float("nan")), r"NaN or infinite"),
    "a match without its pair": ("matches", "m", _first("pair_no", 9), r"without a pairs row"),
    "a NaN truth": ("matches", "m", _first("gt_x1", float("nan")), r"no finite ground truth"),
    "negative count": ("outcomes", "o", _first("fp", -1), r"negative"),
    # the checks of ingest that import once skipped (each imported with rc 0 before)
    "a negative gain": (
        "scores",
        "r1",
        lambda f: f.with_columns(
            pl.when(pl.int_range(pl.len()) == 0).then(-1.0).otherwise(2.0).alias("gain")
        ),
        r"gain -1\.0 \(gains are relevance grades, finite numbers >= 0\)",
    ),
    "gains for some items only": (
        "scores",
        "r1",
        lambda f: f.with_columns(
            pl.when(pl.int_range(pl.len()) == 0).then(2.0).otherwise(None).alias("gain")
        ),
        r"14 row\(s\) with no gain where other items of the task have one",
    ),
    "n_positives 0 below the positives": (
        "groups",
        "r1",
        _first("n_positives", pl.lit(0, dtype=pl.Int32)),
        r"n_positives 0 but 2 positive labels",
    ),
    "a negative n_positives": (
        "groups",
        "r0",
        _first("n_positives", pl.lit(-1, dtype=pl.Int32)),
        r"n_positives -1 but 2 positive labels",
    ),
    "params given as a JSON list": (
        "runs",
        "r0",
        _first("params", "[1, 2]"),
        r"params \[1, 2\] are not a JSON object of names and values",
    ),
    "a param name with a NUL": (
        "runs",
        "r2",
        _first("params", '{"a\\u0000b": 1}'),
        r"param name 'a\\x00b' holds a NUL character",
    ),
    "an all-zero seq": (
        "scores",
        "r1",
        lambda f: f.with_columns(pl.lit(0, dtype=pl.Int64).alias("seq")),
        r"seq 0 twice in one list \(the input position orders ties\)",
    ),
    "a negative seq": ("scores", "r2", _first("seq", pl.lit(-5, dtype=pl.Int64)), r"seq -5 \("),
    "an all-zero match seq": (
        "matches",
        "m",
        lambda f: f.with_columns(pl.lit(0, dtype=pl.Int32).alias("seq")),
        r"3 row\(s\) with a seq \(the input position\) negative or twice in the run",
    ),
    "a group's outcomes twice": (
        "outcomes",
        "o",
        lambda f: pl.concat([f, f]),
        r"2 row\(s\) with the same group twice \(e\.g\. 'g'\)",
    ),
    # the bounds ingest gained (each imported with rc 0 before)
    "a count above 2^53": (
        "outcomes",
        "o",
        _first("fn", pl.lit(MAX_COUNT + 1, dtype=pl.Int64)),
        r"1 row\(s\) with a TP, FP or FN count above 9,007,199,254,740,992 \(2\^53\)",
    ),
    "counts adding up beyond 2^53": (
        "outcomes",
        "o",
        _first("tp", pl.lit(MAX_COUNT, dtype=pl.Int64)),  # + fp 2 + fn 3
        r"tp \+ fp \+ fn above 9,007,199,254,740,992 .*\(e\.g\. 'g: 9007199254740997'\)",
    ),
    "counts whose sum overflows a BIGINT": (
        "outcomes",
        "o",
        lambda f: f.with_columns(pl.lit(1 << 62, dtype=pl.Int64).alias(c) for c in ("tp", "fp")),
        r"count above 9,007,199,254,740,992",
    ),
    "n_positives adding more than 2^24 positives": (
        "groups",
        "r1",
        _first("n_positives", pl.lit(MAX_UNLISTED + 10, dtype=pl.Int32)),  # the list has 2
        r"column 'n_positives' adds 16,777,224 positives beyond the lists' \+1 labels "
        r"\(list '0' adds 16,777,224\), more than 16,777,216 \(2\^24\)",
    ),
    "a groups row of no list": (
        "groups",
        "r2",
        lambda f: pl.concat(
            [
                f,
                f.head(1).with_columns(
                    pl.lit(999_999, dtype=pl.Int32).alias("list_id"),
                    pl.lit("ghost").alias("group_id"),
                ),
            ]
        ),
        r"1 groups row\(s\) of no list of the run's scores \(e\.g\. list id 999999, group_id "
        r"'ghost'\)",
    ),
}


@pytest.mark.slow_after(3)  # a family of 24 cases: the fast loop runs the first 3
@pytest.mark.parametrize("case", CASES)
def test_a_tampered_export_is_refused_and_the_store_is_unchanged(
    exported: Path, tmp_path: Path, case: str
) -> None:
    table, name, change, message = CASES[case]
    _tamper(exported, table, name, change)
    db = tmp_path / "dst.duckdb"
    with Store(db) as target:
        target.ingest(export_lists(2, 2), task="retrieval", run="mine/kept", git_commit=None)
    before = snapshot(db)
    with Store(db) as target, pytest.raises(EvalstoreError, match=message) as caught:
        import_runs(target, exported)
    text = str(caught.value)
    assert "\n" not in text and "nothing was imported" in text
    assert f"{table}/run_id=" in text
    assert snapshot(db) == before  # the runs before the damaged one are not kept either


@pytest.mark.slow  # real processes
def test_the_cli_refuses_a_tampered_export_with_one_line(exported: Path, tmp_path: Path) -> None:
    _tamper(exported, "scores", "r0", _first("label", 7))
    db = tmp_path / "new.duckdb"
    result = subprocess.run(
        [sys.executable, "-m", "evalstore", "import", str(exported), "--db", str(db)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: "), result.stderr
    assert "label 7" in result.stderr
    assert not db.exists()


def test_a_sound_export_imports_every_run_at_once(exported: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "dst.duckdb") as target:
        names = import_runs(target, exported)
        assert names == ["exp/r0", "exp/r1", "exp/r2", "kp/m", "out/o"]
        assert target.con.sql("select count(*) from scores").fetchall() == [(45,)]


def test_a_metadata_groups_row_without_a_list_id_still_imports(
    exported: Path, tmp_path: Path
) -> None:
    """A groups row with no list id is what ingest wrote for a groups-file row of no list
    before it refused them: a store holding one exports and imports it as it is (a row of a
    list id that no scores row has is refused above)."""
    meta = pl.lit(None, dtype=pl.Int32).alias("list_id"), pl.lit("meta").alias("group_id")
    _tamper(exported, "groups", "r2", lambda f: pl.concat([f, f.head(1).with_columns(*meta)]))
    with Store(tmp_path / "dst.duckdb") as target:
        import_runs(target, exported)
        rows = target.con.sql(
            "select g.group_id, g.list_id from groups g join runs r using (run_id) "
            "where r.name = 'r2' and g.list_id is null"
        ).fetchall()
    assert rows == [("meta", None)]


@pytest.mark.slow
def test_an_import_killed_part_way_leaves_nothing_and_the_rerun_imports_all(
    tmp_path: Path,
) -> None:
    """Real processes killed with SIGKILL at growing delays (at most 6 kills or 60 s): the
    store holds none or all of the 30 runs, never some; the re-run then imports them all."""
    out = tmp_path / "export"
    with Store(tmp_path / "src.duckdb") as store:
        for i in range(30):
            store.ingest(
                export_lists(20, 200, seed=i), task="retrieval", run=f"e/r{i}", git_commit=None
            )
        export_runs(store, out)
    command = [sys.executable, "-m", "evalstore", "import", str(out)]
    deadline = time.monotonic() + 60
    seen = set()
    for kill in range(6):
        if time.monotonic() > deadline:
            break
        db = tmp_path / f"dst-{kill}.duckdb"
        with Store(db) as target:  # an existing store: the kill happens inside it
            target.ingest(export_lists(1, 3), task="retrieval", run="mine/kept", git_commit=None)
        proc = subprocess.Popen([*command, "--db", str(db)], stderr=subprocess.DEVNULL)
        time.sleep(0.8 + 0.4 * kill)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        with Store(db, read_only=True) as target:
            n = target.con.sql("select count(*) from runs").fetchall()[0][0]
        assert n in (1, 31), f"kill {kill}: {n - 1} of 30 runs imported"
        seen.add(n)
        rerun = subprocess.run(
            [*command, "--db", str(db), *(["--replace"] if n == 31 else [])],
            capture_output=True,
            text=True,
        )
        assert rerun.returncode == 0, rerun.stderr
        with Store(db, read_only=True) as target:
            assert target.con.sql("select count(*) from runs").fetchall() == [(31,)]
    assert 1 in seen  # at least one kill landed inside the import


# -- exports of two stores never mix -----------------------------------------------------------


@pytest.mark.slow  # real processes
def test_exporting_another_store_into_an_export_folder_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "export"
    with Store(tmp_path / "a.duckdb") as a:
        a.ingest(export_lists(2, 3, seed=1), task="retrieval", run="exp/a", git_commit=None)
        export_runs(a, out)
        first_id = a.store_id()
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with Store(tmp_path / "b.duckdb") as b:  # run id 1 too, another run
        b.ingest(export_lists(2, 3, seed=2), task="retrieval", run="exp/b", git_commit=None)
        assert b.store_id() != first_id
        with pytest.raises(EvalstoreError, match="export of another store"):
            export_runs(b, out)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["store_id"] == first_id
    assert [r["name"] for r in manifest["runs"]] == ["a"]
    result = subprocess.run(
        [sys.executable, "-m", "evalstore", "export", "--to", str(out), "--db", str(b.path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    # the same store again: its runs are added and re-exported runs replaced, as before
    with Store(tmp_path / "a.duckdb") as a:
        a.ingest(export_lists(1, 2), task="retrieval", run="exp/c", git_commit=None)
        export_runs(a, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [r["name"] for r in manifest["runs"]] == ["a", "c"]


def test_an_export_without_a_store_id_is_checked_by_run_names(tmp_path: Path) -> None:
    out = tmp_path / "export"
    with Store(tmp_path / "a.duckdb") as a:
        a.ingest(export_lists(2, 3, seed=1), task="retrieval", run="exp/a", git_commit=None)
        export_runs(a, out)
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["store_id"]  # written before stores had an identity
    (out / "manifest.json").write_text(json.dumps(manifest))
    with Store(tmp_path / "b.duckdb") as b:
        b.ingest(export_lists(2, 3, seed=2), task="retrieval", run="exp/b", git_commit=None)
        with pytest.raises(EvalstoreError, match="run id 1 as exp/a, which is exp/b"):
            export_runs(b, out)
    with Store(tmp_path / "a.duckdb") as a:
        export_runs(a, out)  # its own old export: taken over, now with the store id
        assert json.loads((out / "manifest.json").read_text())["store_id"] == a.store_id()


def test_every_store_draws_its_own_identity(tmp_path: Path) -> None:
    ids = set()
    for i in range(3):
        with Store(tmp_path / f"s{i}.duckdb") as store:
            ids.add(store.store_id())
    assert len(ids) == 3


def test_an_import_bringing_a_param_name_in_another_case_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "export"
    with Store(tmp_path / "a.duckdb") as a:
        a.ingest(
            export_lists(1, 3), task="retrieval", run="exp/a", params={"LR": 1}, git_commit=None
        )
        export_runs(a, out)
    db = tmp_path / "b.duckdb"
    with Store(db) as b:
        b.ingest(
            export_lists(1, 3), task="retrieval", run="exp/b", params={"lr": 2}, git_commit=None
        )
    before = snapshot(db)
    with Store(db) as b, pytest.raises(EvalstoreError, match="'LR' and 'lr' differ only in case"):
        import_runs(b, out)
    assert snapshot(db) == before


# -- an export checked whole before anything is written -----------------------------------------


def _set_manifest(out: Path, change: Callable[[dict[str, Any]], None]) -> None:
    manifest = json.loads((out / "manifest.json").read_text())
    change(manifest)
    (out / "manifest.json").write_text(json.dumps(manifest))


def _part(out: Path, table: str, name: str) -> Path:
    return partition_path(out, table, _run_id(out, name)) / PART


def _unlisted_extra_run(out: Path) -> None:
    """A scores partition of a run id the manifest does not know, its lists in no groups."""
    extra = partition_path(out, "scores", 77)
    extra.mkdir()
    pl.read_parquet(_part(out, "scores", "r0")).with_columns(
        pl.lit(999, dtype=pl.Int32).alias("list_id")
    ).write_parquet(extra / PART)


def _uncounted(out: Path) -> None:
    """The manifest says r1 has no scores: its partition would be read past."""
    run_id = _run_id(out, "r1")
    _set_manifest(
        out,
        lambda m: next(e for e in m["runs"] if e["run_id"] == run_id)["rows"].update(scores=0),
    )


def _retyped(out: Path) -> None:
    path = _part(out, "scores", "r1")
    pl.read_parquet(path).with_columns(pl.col("label").cast(pl.Int32)).write_parquet(path)
    _rehash(out)


def _renamed(out: Path) -> None:
    path = _part(out, "groups", "r2")
    pl.read_parquet(path).rename({"n_positives": "positives"}).write_parquet(path)
    _rehash(out)


def _link_outside(out: Path) -> None:
    path = _part(out, "scores", "r0")
    outside = out.parent / "elsewhere.parquet"
    shutil.move(path, outside)
    path.symlink_to(outside)  # the same bytes, outside the export


def _link_to_text(out: Path) -> None:
    path = _part(out, "groups", "r0")
    path.unlink()
    path.symlink_to(out.parent / "notes.txt")
    (out.parent / "notes.txt").write_text("not Parquet")


def _journal(out: Path, drop: str) -> None:
    journal = {
        "tag": "0123456789ab",
        "moves": [{"table": "scores", "run_id": 1, "new": True}],
        "manifest": json.loads((out / "manifest.json").read_text()),
    }
    del journal[drop]
    (out / ".journal-0123456789ab.json").write_text(json.dumps(journal))


def _truncated(out: Path) -> None:
    path = _part(out, "matches", "m")
    path.write_bytes(path.read_bytes()[:-100])


def _flipped(out: Path) -> None:
    path = _part(out, "scores", "r1")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def _format_1(out: Path) -> None:
    """The export as evalstore wrote it before checksums (format version 1)."""
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["format_version"] = 1
    del manifest["tables"]["logged_values"]
    for entry in manifest["runs"]:
        del entry["sha256"]
        del entry["rows"]["logged_values"]
    (out / "manifest.json").write_text(json.dumps(manifest))


def _swapped(out: Path) -> None:
    """Two runs' scores files trade places (each still a sound Parquet file of its kind)."""
    a, b = _part(out, "scores", "r0"), _part(out, "scores", "r2")
    data = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(data)


def _other_run_row(out: Path) -> None:
    path = _part(out, "runs", "r2")
    pl.read_parquet(path).with_columns(pl.lit("r0").alias("name")).write_parquet(path)
    _rehash(out)


def _scores_as(out: Path, kind: str, dtype: pl.DataType, first: object) -> None:
    """Every run's scores of the type ``dtype`` (the manifest saying ``kind``), the first of
    r1 ``first``: a careful tamperer's export of scores a float64 does not hold."""
    for name in ("r0", "r1", "r2"):
        path = _part(out, "scores", name)
        frame = pl.read_parquet(path).with_columns(pl.col("score").round().cast(dtype))
        (
            _first("score", pl.lit(first, dtype=dtype))(frame) if name == "r1" else frame
        ).write_parquet(path)

    def retype(manifest: dict[str, Any]) -> None:
        for column in manifest["tables"]["scores"]["columns"]:
            if column["name"] == "score":
                column["type"] = kind

    _set_manifest(out, retype)
    _rehash(out)


def _miscounted(out: Path) -> None:
    run_id = _run_id(out, "m")
    _set_manifest(
        out,
        lambda m: next(e for e in m["runs"] if e["run_id"] == run_id)["rows"].update(pairs=3),
    )


DAMAGE: dict[str, tuple[Callable[[Path], None], str, str]] = {
    # what is done to the export, the file the message names, what it says
    "list ids in no groups row": (
        lambda out: _tamper(out, "scores", "r2", _first("list_id", 424_242)),
        "scores/run_id=3/part-0.parquet",
        r"run exp/r2: list id 424242 \(1 in all\) has no groups row in .*groups/run_id=3/",
    ),
    "a scores partition of an unknown run": (
        _unlisted_extra_run,
        "scores/run_id=77/part-0.parquet",
        r"a run id that is not in .*manifest\.json",
    ),
    "a scores partition counted as none": (
        _uncounted,
        "scores/run_id=2/part-0.parquet",
        r"a partition that .*manifest\.json says has no rows",
    ),
    "a missing partition": (
        lambda out: shutil.rmtree(partition_path(out, "groups", _run_id(out, "r1"))),
        "groups/run_id=2/part-0.parquet",
        r"missing \(3 rows of run exp/r1\)",
    ),
    "an unknown file": (
        lambda out: (out / "notes.txt").write_text("mine"),
        "notes.txt",
        r"not a file of an evalstore export "
        r"\(here: det_boxes, det_categories, det_images, det_matched, det_matches, "
        r"det_positives, det_thresholds, det_tide, det_truth, groups, logged_values, "
        r"manifest\.json, .* only\)",
    ),
    "an unknown file in a partition": (
        lambda out: (_part(out, "pairs", "m").parent / "part-1.parquet").write_bytes(b"PAR1"),
        "pairs/run_id=4/part-1.parquet",
        r"not a file of an evalstore export \(here: part-0\.parquet only\)",
    ),
    "a column of the wrong type": (
        _retyped,
        "scores/run_id=2/part-0.parquet",
        r"column 'label' is INTEGER \(int32\), the manifest says TINYINT",
    ),
    "a column of another name": (
        _renamed,
        "groups/run_id=3/part-0.parquet",
        r"no column 'n_positives'",
    ),
    "a symlink to a file outside": (
        _link_outside,
        "scores/run_id=1/part-0.parquet",
        r"a symbolic link \(to .*elsewhere\.parquet\); an export holds regular files only",
    ),
    "a symlink to a non-Parquet file": (
        _link_to_text,
        "groups/run_id=1/part-0.parquet",
        r"a symbolic link \(to .*notes\.txt\)",
    ),
    "a journal without moves": (
        lambda out: _journal(out, "moves"),
        ".journal-0123456789ab.json",
        r"not a journal evalstore wrote \(no 'moves'\)",
    ),
    "a journal without its manifest": (
        lambda out: _journal(out, "manifest"),
        ".journal-0123456789ab.json",
        r"not a journal evalstore wrote \(no 'manifest'\)",
    ),
    "a truncated Parquet file": (
        _truncated,
        "matches/run_id=4/part-0.parquet",
        r"its SHA-256 is [0-9a-f]{16}\.\.\., the manifest says [0-9a-f]{16}\.\.\.: the file "
        r"changed after it was exported; the export is damaged, nothing was imported",
    ),
    "a truncated Parquet file of an export before checksums": (
        lambda out: (_format_1(out), _truncated(out)),
        "matches/run_id=4/part-0.parquet",
        r"not a readable Parquet file \(.*\)",
    ),
    "a flipped bit": (_flipped, "scores/run_id=2/part-0.parquet", r"its SHA-256 is"),
    "two runs' files swapped": (_swapped, "scores/run_id=1/part-0.parquet", r"its SHA-256 is"),
    "a checksum edited in the manifest": (
        lambda out: _set_manifest(out, lambda m: m["runs"][1]["sha256"].update(runs="0" * 64)),
        "runs/run_id=2/part-0.parquet",
        r"its SHA-256 is [0-9a-f]{16}\.\.\., the manifest says 0000000000000000\.\.\.",
    ),
    "a checksum left out of a version-2 manifest": (
        lambda out: _set_manifest(out, lambda m: m["runs"][2]["sha256"].pop("groups")),
        "manifest.json",
        r"run exp/r2 has groups rows but no SHA-256 of their file; the export is damaged",
    ),
    "a run without checksums in a version-2 manifest": (
        lambda out: _set_manifest(out, lambda m: m["runs"][0].pop("sha256")),
        "manifest.json",
        r"run exp/r0 has no SHA-256 of its files \('sha256'\), which format version 2 records",
    ),
    "a manifest with a wrong count": (
        _miscounted,
        "pairs/run_id=4/part-0.parquet",
        r"2 rows, the manifest says 3",
    ),
    "a runs row of another run": (
        _other_run_row,
        "runs/run_id=3/part-0.parquet",
        r"the runs row is exp/r0, the manifest says exp/r2",
    ),
    "a manifest with a version that is text": (
        lambda out: _set_manifest(out, lambda m: m.update(format_version="1")),
        "manifest.json",
        r"export format version '1' is not a version",
    ),
    "a manifest run without rows": (
        lambda out: _set_manifest(out, lambda m: m["runs"][0].pop("rows")),
        "manifest.json",
        r"has no run_id, experiment, name or rows",
    ),
    "a named pipe": (
        lambda out: os.mkfifo(out / "outcomes" / "pipe"),
        "outcomes/pipe",
        r"not a regular file or folder",
    ),
    # scores a float64 does not hold, which the store's float would round (imported before)
    "integer scores beyond 2^53": (
        lambda out: _scores_as(out, "BIGINT", pl.Int64, (1 << 53) + 1),
        "manifest.json",
        r"column scores\.score is BIGINT; an export's scores are DOUBLE or FLOAT",
    ),
    "scores as text": (
        lambda out: _scores_as(out, "VARCHAR", pl.String, "0.30000000000000000001"),
        "manifest.json",
        r"column scores\.score is VARCHAR; an export's scores are DOUBLE or FLOAT",
    ),
}


@pytest.mark.slow_after(3)  # a family of 26 cases: the fast loop runs the first 3
@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_export_is_one_line_naming_the_file_and_the_store_is_unchanged(
    exported: Path, db: Path, cli: Any, damage: str
) -> None:
    change, where, message = DAMAGE[damage]
    with Store(db) as target:
        target.ingest(export_lists(2, 2), task="retrieval", run="mine/kept", git_commit=None)
    change(exported)
    files = {p: p.read_bytes() for p in exported.rglob("*") if p.is_file() and not p.is_symlink()}
    before = snapshot(db)
    result = cli("import", str(exported))
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    line = result.stderr
    assert line.startswith("Error: ") and line.count("\n") == 1, line
    assert f"{exported}/{where}" in line, line
    assert re.search(message, line), line
    assert snapshot(db) == before
    # nothing of the export was changed either (an unusable journal is not applied)
    assert {p: p.read_bytes() for p in files} == files


def test_the_leftovers_of_a_killed_export_are_read_past(exported: Path, tmp_path: Path) -> None:
    staged = exported / "scores" / ".tmp-run_id=1-0123456789ab"
    staged.mkdir()
    (staged / "part-0.parquet").write_bytes(b"PAR1")
    (exported / ".manifest.json.0123abcd.tmp").write_text("{")
    with Store(tmp_path / "dst.duckdb") as target:
        assert len(import_runs(target, exported)) == 5
    link = staged / "elsewhere"  # but a link is refused wherever it is
    link.symlink_to(tmp_path)
    with Store(tmp_path / "dst2.duckdb") as target, pytest.raises(EvalstoreError, match="link"):
        import_runs(target, exported)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{tmp}/absent", "{tmp}/absent: no such folder"),
        ("{tmp}/file.txt", "{tmp}/file.txt is a file, not an export folder"),
        ("{tmp}/file.txt/sub", "{tmp}/file.txt/sub: no such folder"),
        ("/proc/self", "/proc/self: not an evalstore export (no manifest.json)"),
    ],
)
@pytest.mark.no_store
def test_an_import_path_that_holds_no_export_is_one_line(
    cli: Any, db: Path, tmp_path: Path, source: str, message: str
) -> None:
    (tmp_path / "file.txt").write_text("mine")
    result = cli("import", source.format(tmp=tmp_path))
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert result.stderr == f"Error: {message.format(tmp=tmp_path)}\n"
    assert not db.exists()  # no store made for nothing


def test_an_export_in_a_folder_nobody_can_write_imports(exported: Path, tmp_path: Path) -> None:
    with unwritable(exported), Store(tmp_path / "dst.duckdb") as target:
        assert len(import_runs(target, exported)) == 5


def test_an_export_before_schema_15_imports_its_matches_by_pair_id(
    exported: Path, tmp_path: Path
) -> None:
    """An export written at schema 14 names a match's pair by its text id and has no pair
    numbers: import numbers the pairs in the order of their ids and keeps every match."""
    run_id = _run_id(exported, "m")
    pairs_part = partition_path(exported, "pairs", run_id) / PART
    matches_part = partition_path(exported, "matches", run_id) / PART
    pairs = pl.read_parquet(pairs_part)
    matches = pl.read_parquet(matches_part)
    ids = dict(zip(pairs["pair_no"].to_list(), pairs["pair_id"].to_list(), strict=True))
    old = matches.with_columns(
        pl.col("pair_no").replace_strict(ids, return_dtype=pl.String).alias("pair_id")
    ).drop("pair_no")
    old.select("pair_id", *[c for c in old.columns if c != "pair_id"]).write_parquet(matches_part)
    pairs.drop("pair_no").write_parquet(pairs_part)
    manifest = json.loads((exported / "manifest.json").read_text())
    manifest["schema_version"] = 14
    tables = manifest["tables"]
    tables["pairs"]["columns"] = [c for c in tables["pairs"]["columns"] if c["name"] != "pair_no"]
    tables["matches"]["columns"] = [
        {"name": "pair_id", "type": "VARCHAR", "nullable": False},
        *(c for c in tables["matches"]["columns"] if c["name"] != "pair_no"),
    ]
    (exported / "manifest.json").write_text(json.dumps(manifest))
    _format_1(exported)  # an export of schema 14 was written before checksums
    with Store(tmp_path / "dst.duckdb") as target:
        import_runs(target, exported)
        got = target.con.execute(
            "select v.pair_id, p.pair_no, v.x0, v.seq from v_matches v "
            "join pairs p using (run_id, pair_id) join runs r using (run_id) "
            "where r.name = 'm' order by v.seq"
        ).fetchall()
    assert got == [("p1", 0, 0.0, 0), ("p1", 0, 1.0, 1), ("p2", 1, 2.0, 2)]


# -- logged values, checked as `evalstore log` checks them ---------------------------------------


@pytest.fixture
def logged_export(tmp_path: Path) -> Path:
    out = tmp_path / "logged-export"
    with Store(tmp_path / "logged-src.duckdb") as store:
        store.ingest(export_lists(2, 3), task="retrieval", run="exp/l", git_commit=None)
        for step, loss in enumerate([3.0, 2.0, 1.5]):
            store.log_metric("exp/l", "train_loss", loss, step=step)
        store.log_metric("exp/l", "val_acc", 0.5)
        export_runs(store, out)
    return out


def _where_metric(metric: str, column: str, value: Any) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """Set ``column`` to ``value`` in the first row of ``metric``."""

    def change(frame: pl.DataFrame) -> pl.DataFrame:
        first = (pl.col("metric") == metric) & (pl.int_range(pl.len()) == 0).over("metric")
        new = value if isinstance(value, pl.Expr) else pl.lit(value)
        return frame.with_columns(pl.when(first).then(new).otherwise(pl.col(column)).alias(column))

    return change


LOGGED: dict[str, tuple[Callable[[pl.DataFrame], pl.DataFrame], str]] = {
    "a NaN value": (
        _where_metric("val_acc", "value", float("nan")),
        r"1 logged value\(s\) of val_acc with a value that is not finite \(nan\)",
    ),
    "an infinite value": (
        _where_metric("train_loss", "value", float("inf")),
        r"of train_loss with a value that is not finite \(inf\)",
    ),
    "steps and no steps": (
        _where_metric("train_loss", "step", pl.lit(None, dtype=pl.Int64)),
        r"3 logged value\(s\) of train_loss with steps and no steps \(2 with a step, 1 without\)",
    ),
    "a computed metric's name": (
        _where_metric("val_acc", "metric", "map"),
        r"'map' is the mean of the computed metric ap",
    ),
    "a name that is no identifier": (
        _where_metric("val_acc", "metric", "val acc"),
        r"logged metric name 'val acc' is not a plain identifier",
    ),
    "names differing only in case": (
        _where_metric("val_acc", "metric", "TRAIN_LOSS"),
        r"logged metric 'TRAIN_LOSS' differs only in case from the logged metric 'train_loss'",
    ),
    "a negative step": (
        _where_metric("train_loss", "step", pl.lit(-1, dtype=pl.Int64)),
        r"cannot import run exp/l: Constraint Error: .*step >= 0",
    ),
    "a step twice": (
        _where_metric("train_loss", "step", pl.lit(2, dtype=pl.Int64)),
        r"cannot import run exp/l: Constraint Error: .*duplicate key \"2, train_loss, 2\"",
    ),
}


@pytest.mark.slow_after(2)  # a family of 8 cases: the fast loop runs the first 2
@pytest.mark.parametrize("case", LOGGED)
def test_tampered_logged_values_are_refused_and_the_store_is_unchanged(
    logged_export: Path, tmp_path: Path, case: str
) -> None:
    change, message = LOGGED[case]
    _tamper(logged_export, "logged_values", "l", change)
    db = tmp_path / "dst.duckdb"
    with Store(db) as target:
        target.ingest(export_lists(2, 2), task="retrieval", run="mine/kept", git_commit=None)
    before = snapshot(db)
    with Store(db) as target, pytest.raises(EvalstoreError, match=message) as caught:
        import_runs(target, logged_export)
    text = str(caught.value)
    assert "\n" not in text and "logged_values/run_id=1" in text, text
    assert snapshot(db) == before


def test_logged_values_come_back_with_their_steps(logged_export: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "dst.duckdb") as target:
        import_runs(target, logged_export)
        rows = target.con.sql(
            "select metric, step, value from v_logged order by metric, step"
        ).fetchall()
    assert rows == [
        ("train_loss", 0, 3.0),
        ("train_loss", 1, 2.0),
        ("train_loss", 2, 1.5),
        ("val_acc", None, 0.5),
    ]


# -- exports written before checksums ------------------------------------------------------------


@pytest.mark.slow  # real processes
def test_an_export_without_checksums_imports_with_one_warning_line(
    exported: Path, tmp_path: Path
) -> None:
    _format_1(exported)
    db = tmp_path / "new.duckdb"
    result = subprocess.run(
        [sys.executable, "-m", "evalstore", "import", str(exported), "--db", str(db)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        f"Warning: {exported}/manifest.json: an export of format version 1, written without "
        "checksums: its files cannot be checked for damage (rows are checked as ingest checks "
        "them); export the runs again to add them\n"
    )
    assert "imported 5 run(s)" in result.stdout
    warned: list[str] = []  # the library says it through the callback, and only there
    with Store(tmp_path / "lib.duckdb") as target:
        assert len(import_runs(target, exported, warn=warned.append)) == 5
    assert len(warned) == 1 and "format version 1" in warned[0]
    with Store(tmp_path / "quiet.duckdb") as target:  # a sound version-2 export: no warning
        export_runs(target, tmp_path / "v2")
        import_runs(target, tmp_path / "v2", warn=warned.append)
    assert len(warned) == 1


def test_exporting_into_an_export_before_checksums_adds_them(
    exported: Path, tmp_path: Path
) -> None:
    """The same store exporting into its version-1 folder: the folder becomes version 2,
    the runs already there get the SHA-256 of their files, and the logged_values table."""
    _format_1(exported)
    with Store(tmp_path / "src.duckdb") as store:
        store.log_metric("exp/r0", "train_loss", 0.5, step=3)
        export_runs(store, exported, runs=["exp/r0"])
    manifest = json.loads((exported / "manifest.json").read_text())
    assert manifest["format_version"] == 2 and "logged_values" in manifest["tables"]
    assert all(set(e["sha256"]) == {t for t, n in e["rows"].items() if n} for e in manifest["runs"])
    r0 = next(e for e in manifest["runs"] if e["name"] == "r0")
    assert r0["rows"]["logged_values"] == 1
    warned: list[str] = []
    with Store(tmp_path / "dst.duckdb") as target:
        assert len(import_runs(target, exported, warn=warned.append)) == 5
        assert target.con.sql("select count(*) from logged_values").fetchall() == [(1,)]
    assert warned == []
