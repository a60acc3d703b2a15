"""One RunMeta: the run-metadata block checked in one place, taken by every ingest entry
point (the old keywords kept as a shim that builds the same value, never both at once); the
ingest options checked by the library; typed run filters; ``ingest --verbose``."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import ranked, snapshot

import evalstore
from evalstore import InvalidInput, RunMeta, Store
from evalstore import ingest as library
from evalstore.ingest import IngestOptions
from evalstore.runs.selection import list_run_rows
from evalstore.store.staging import ingest_staged

WHEN = "2026-01-05T09:00:00"
OUTCOMES = {"group_id": ["a", "b"], "tp": [3, 4], "fp": [1, 0], "fn": [0, 2]}
MATCHES = {
    "pair_id": ["p"] * 4,
    "x0": [1.0, 2.0, 3.0, 4.0],
    "y0": [1.0, 2.0, 3.0, 4.0],
    "x1": [1.0, 2.0, 3.0, 9.0],
    "y1": [1.0, 2.0, 3.0, 9.0],
    "gt_x1": [1.0, 2.0, 3.0, 4.0],
    "gt_y1": [1.0, 2.0, 3.0, 4.0],
}
#: the old keywords of one run's metadata, and the RunMeta they describe
KEYWORDS: dict[str, Any] = {
    "run": "exp/one",
    "params": ["lr=0.1", "name=adam"],
    "tags": ["a", "b", "a"],
    "notes": "n",
    "created_at": WHEN,
    "git_commit": "abc123",
}


def _meta(**changes: Any) -> RunMeta:
    return RunMeta(**{**KEYWORDS, **changes})


def _counts(store: Store) -> dict[str, int]:
    """Row counts of every table, read on the store's own connection."""
    tables = store.con.sql(
        "select table_name from information_schema.tables where table_type = 'BASE TABLE'"
    ).fetchall()
    return {t: store.con.sql(f'select count(*) from "{t}"').fetchall()[0][0] for (t,) in tables}


# -- the value ----------------------------------------------------------------------------


def test_run_meta_is_public_and_parses_its_fields() -> None:
    assert evalstore.RunMeta is RunMeta and "RunMeta" in evalstore.__all__
    meta = _meta()
    assert (meta.run, meta.experiment, meta.name, meta.ref) == (
        "exp/one", "exp", "one", "exp/one"
    )  # fmt: skip
    assert meta.params == {"lr": 0.1, "name": "adam"}
    assert meta.tags == ("a", "b")
    assert meta.created_at == datetime(2026, 1, 5, 9)
    assert (meta.git_commit, meta.notes, meta.replace, meta.append) == ("abc123", "n", False, False)
    bare = RunMeta("one", experiment="other", git_commit=False)
    assert (bare.experiment, bare.name, bare.git_commit) == ("other", "one", None)
    assert RunMeta("one", git_commit=None).experiment == "default"
    aware = datetime(2026, 1, 5, 10, tzinfo=timezone(timedelta(hours=1)))
    assert RunMeta("x", created_at=aware, git_commit=None).created_at == datetime(2026, 1, 5, 9)
    with pytest.raises(dataclasses.FrozenInstanceError):
        meta.notes = "changed"  # type: ignore[misc]


def test_a_changed_copy_is_checked_again() -> None:
    meta = _meta()
    copy = dataclasses.replace(meta, params={"lr": 0.2}, append=True)
    assert (copy.ref, copy.params, copy.append, copy.created_at) == (
        "exp/one", {"lr": 0.2}, True, meta.created_at
    )  # fmt: skip
    with pytest.raises(InvalidInput, match="a tag cannot be empty"):
        dataclasses.replace(meta, tags=["ok", " "])
    with pytest.raises(InvalidInput, match="replace=True and append=True exclude each other"):
        dataclasses.replace(copy, replace=True)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"run": ""}, "run name '' is empty"),
        ({"run": "exp/"}, "run name 'exp/' is empty"),
        ({"run": "a/b", "experiment": "c"}, "run 'a/b' names experiment 'a' but experiment=\"c\""),
        ({"tags": ["x", ""]}, "a tag cannot be empty"),
        ({"params": ["lr"]}, "param 'lr' is not key=value"),
        ({"params": ["lr=1", "lr=2"]}, "param 'lr' given twice"),
        ({"params": {"a\x00b": 1}}, "param name 'a\\x00b' holds a NUL character"),
        ({"created_at": "yesterday"}, 'created_at="yesterday" is not an ISO 8601 time'),
        ({"replace": True, "append": True}, "replace=True and append=True exclude each other"),
    ],
)
def test_bad_metadata_is_one_line_naming_the_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        _meta(**changes)
    text = str(caught.value)
    assert text.startswith(message) and "\n" not in text
    field = next(iter(changes)).replace("_", "-").rstrip("s")  # params -> param, tags -> tag
    assert field.replace("-", "_") in text or (field == "run" and "run name" in text)


# -- the entry points: meta=, or the old keywords -------------------------------------------

Ingest = Callable[..., Any]

ENTRY_POINTS: dict[str, tuple[Ingest, Any, dict[str, Any]]] = {
    "Store.ingest": (Store.ingest, ranked(), {"task": "retrieval"}),
    "Store.ingest_keypoints": (Store.ingest_keypoints, MATCHES, {}),
    "Store.ingest_outcomes": (Store.ingest_outcomes, OUTCOMES, {}),
    "ingest.ingest": (library.ingest, ranked(), {"task": "retrieval"}),
    "ingest.ingest_keypoints": (library.ingest_keypoints, MATCHES, {}),
    "ingest.ingest_outcomes": (library.ingest_outcomes, OUTCOMES, {}),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_the_old_keywords_and_meta_give_the_same_run(tmp_path: Path, entry: str) -> None:
    function, data, options = ENTRY_POINTS[entry]
    old, new = tmp_path / "old.duckdb", tmp_path / "new.duckdb"
    with Store(old) as store:
        before = function(store, data, **options, **KEYWORDS)
        replaced = function(store, data, **options, **{**KEYWORDS, "replace": True})
    with Store(new) as store:
        after = function(store, data, **options, meta=_meta())
        again = function(store, data, **options, meta=_meta(replace=True))
    assert vars(before) == vars(after) and vars(replaced) == vars(again)
    assert again.replaced and again.ref == "exp/one"
    store_rows = ("store_info", "schema_version")  # the store's id and creation time
    rows = {k: v for k, v in snapshot(new).items() if k not in store_rows}
    assert rows == {k: v for k, v in snapshot(old).items() if k not in store_rows}
    (run,) = rows["runs"]
    assert "exp" in run and "one" in run and "abc123" in run and ["a", "b"] in run


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize(
    "keyword", [{"run": "exp/one"}, {"git_commit": None}, {"tags": ["t"]}, {"append": True}]
)
def test_meta_and_a_keyword_together_are_refused(
    store: Store, entry: str, keyword: dict[str, Any]
) -> None:
    function, data, options = ENTRY_POINTS[entry]
    before = _counts(store)
    with pytest.raises(TypeError) as caught:
        function(store, data, **options, meta=_meta(), **keyword)
    text = str(caught.value)
    assert "given twice" in text and f"{next(iter(keyword))}=" in text and "\n" not in text
    assert _counts(store) == before and before["runs"] == 0


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_no_run_at_all_is_refused(store: Store, entry: str) -> None:
    function, data, options = ENTRY_POINTS[entry]
    with pytest.raises(TypeError, match=r"^missing the run: pass meta=RunMeta\(\.\.\.\)"):
        function(store, data, **options, git_commit=None)


def test_the_hpatches_entry_points_take_meta_and_refuse_append(store: Store) -> None:
    meta = _meta(append=True)
    for function in (Store.ingest_hpatches, library.ingest_hpatches):
        with pytest.raises(
            InvalidInput, match=r"^append=True does not apply to Store.ingest_hpatches"
        ):
            function(store, "desc", tasks_dir="tasks", meta=meta)
        with pytest.raises(TypeError, match="given twice, as meta= and as replace="):
            function(store, "desc", tasks_dir="tasks", meta=_meta(), replace=True)


def test_ingest_staged_takes_meta(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    meta = _meta()
    result = ingest_staged(db, lambda s: s.ingest(ranked(), task="retrieval", meta=meta), meta=meta)
    assert result.ref == "exp/one" and not result.replaced
    again = ingest_staged(
        db,
        lambda s: s.ingest(ranked(seed=1), task="retrieval", meta=_meta(replace=True)),
        meta=_meta(replace=True),
    )
    assert again.replaced and again.run_id == result.run_id  # a replaced run keeps its id
    with pytest.raises(TypeError, match="given twice"):
        ingest_staged(db, lambda s: result, meta=meta, ref=("exp", "one"))
    with pytest.raises(TypeError, match="missing the run"):
        ingest_staged(db, lambda s: result)


def test_a_name_with_a_slash_survives_the_merge(tmp_path: Path) -> None:
    """A staged run's metadata is read back as a RunMeta: ``exp/a/b`` names run ``a/b``."""
    db = tmp_path / "s.duckdb"
    meta = _meta(run="exp/a/b")
    result = ingest_staged(db, lambda s: s.ingest(ranked(), task="retrieval", meta=meta), meta=meta)
    with Store(db) as store:
        run = store.run(result.run_id)
    assert (run["experiment"], run["name"], run["tags"]) == ("exp", "a/b", ["a", "b"])
    assert run["params"] == {"lr": 0.1, "name": "adam"}


# -- the ingest options: which applies to which task -------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"task": "retrieval", "pairs": "p.csv"}, 'pairs= does not apply to task="retrieval"'),
        ({"task": "outcomes", "estimate": True}, 'estimate= does not apply to task="outcomes"'),
        ({"task": "keypoints", "labels": "01"}, 'labels= does not apply to task="keypoints"'),
        ({"task": "matching", "distance": "l1"}, 'distance= applies only with fmt="hpatches"'),
        ({"fmt": "hpatches", "groups": "g"}, 'groups= does not apply to fmt="hpatches"'),
        ({"fmt": "hpatches"}, 'fmt="hpatches" needs hpatches_tasks= DIR'),
        ({"fmt": "hpatches", "hpatches_tasks": "t", "columns": ["score=d"]}, "columns= does not"),
        ({"fmt": "hpatches", "hpatches_tasks": "t", "task": "keypoints"}, 'task="keypoints" is '),
        ({"fmt": "hpatches", "hpatches_tasks": "t", "hpatches_distractors": "0"}, "a count from"),
        ({}, 'task= is required unless fmt="hpatches" is given'),
    ],
)
def test_options_of_another_task_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        IngestOptions(**options)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_options_name_their_kind() -> None:
    given = (("retrieval", None), ("keypoints", None), ("outcomes", None), (None, "hpatches"))
    kinds = [IngestOptions(task=t, fmt=f, hpatches_tasks="t" if f else None).kind for t, f in given]
    assert kinds == ["ranked", "keypoints", "outcomes", "hpatches"]
    hp = IngestOptions(fmt="hpatches", hpatches_tasks="t")
    assert hp.distractors() == 2000
    assert dataclasses.replace(hp, hpatches_distractors=" ALL ").distractors() is None
    assert dataclasses.replace(hp, hpatches_distractors="15").distractors() == 15
    with pytest.raises(TypeError):
        IngestOptions("retrieval")  # type: ignore[misc]  # keywords only


# -- typed run filters ---------------------------------------------------------------------


def test_a_misspelt_run_filter_is_a_type_error(store: Store) -> None:
    store.ingest(ranked(), task="retrieval", meta=RunMeta("a/x", git_commit=None))
    store.ingest(ranked(), task="retrieval", meta=RunMeta("b/y", git_commit=None, tags=["t"]))
    with pytest.raises(TypeError, match="experimnt"):
        list_run_rows(store, experimnt="a")  # type: ignore[call-arg]
    columns, rows = list_run_rows(store, experiment="a")
    assert [r[columns.index("name")] for r in rows] == ["x"]
    columns, rows = list_run_rows(store, tag="t", sort="name")
    assert [r[columns.index("name")] for r in rows] == ["y"]
    assert len(list_run_rows(store, limit=1)[1]) == 1


# -- ingest --verbose ----------------------------------------------------------------------


def test_verbose_prints_debug_lines_on_stderr_alone(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "r.csv"
    data.write_text("group_id,item_id,score,label\na,1,0.5,1\na,2,0.4,-1\nb,3,0.3,1\n")
    quiet = cli("ingest", str(data), "-t", "retrieval", "-r", "e/q", "--git-commit", "c")
    loud = cli("ingest", str(data), "-t", "retrieval", "-r", "e/v", "--git-commit", "c", "-v")
    assert quiet.exit_code == 0 and loud.exit_code == 0, loud.output
    assert quiet.stderr == ""
    assert loud.stdout == quiet.stdout.replace("e/q (id 1)", "e/v (id 2)")
    lines = loud.stderr.splitlines()
    assert lines and all(line.startswith("evalstore: ") for line in lines), lines
    assert "evalstore: --task retrieval: 1 input(s) into run e/v" in lines
    assert any(line.startswith("evalstore: staging run e/v in ") for line in lines)
    logger = logging.getLogger("evalstore")  # as it was: no handler left, no level kept
    assert logger.level == logging.NOTSET and not logger.handlers
    long = cli("ingest", str(data), "-t", "retrieval", "-r", "e/w", "--git-commit", "c",
               "--verbose", "--output-format", "json")  # fmt: skip
    assert long.exit_code == 0 and long.stdout.lstrip().startswith("[")
    assert long.stderr.splitlines() and all(
        line.startswith("evalstore: ") for line in long.stderr.splitlines()
    )
