"""``--replace`` keeps a run's id and tags (unless told otherwise), and errors name options as
the caller spells them: keyword arguments from Python, flags from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ranked

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.errors import InvalidInput, RunExists
from evalstore.runs.meta import RunMeta

NO_GIT = {"git_commit": None}


def _lists(store: Store, run_id: int) -> set[int]:
    rows = store.con.execute("select list_id from groups where run_id = ?", [run_id]).fetchall()
    return {int(r[0]) for r in rows}


def _values(store: Store, run_id: int) -> list[Any]:
    query = "select metric, value from metric_values where run_id = ? order by all"
    return store.con.execute(query, [run_id]).fetchall()


def test_replace_keeps_the_id_and_the_tags(db: Path) -> None:
    with Store(db) as store:
        first = store.ingest(ranked(seed=1), task="retrieval", run="exp/a", tags=["old"],
                             params={"lr": 1}, notes="first", **NO_GIT)  # fmt: skip
        other = store.ingest(ranked(seed=2), task="retrieval", run="exp/b", **NO_GIT)
        evaluate(store, ["exp/a"], metrics=["map"])
        before, lists = _values(store, first.run_id), _lists(store, first.run_id)
        again = store.ingest(ranked(seed=5, n_groups=4), task="retrieval", run="exp/a",
                             tags=["new", "old"], params={"lr": 2}, replace=True,
                             created_at="2026-01-02T03:04", **NO_GIT)  # fmt: skip
        assert again.replaced and again.run_id == first.run_id != other.run_id
        run = store.run("exp/a")
        assert run["tags"] == ["old", "new"]  # the old ones first, the new added
        assert run["params"] == {"lr": 2} and run["notes"] is None  # the new ingest's
        assert str(run["created_at"]).startswith("2026-01-02 03:04")
        assert _values(store, first.run_id) == []  # the old values are gone
        new_lists = _lists(store, first.run_id)
        assert len(new_lists) == 4 and not new_lists & lists  # new list ids
        evaluate(store, ["exp/a"], metrics=["map"])
        assert _values(store, first.run_id) not in ([], before)  # recomputed from the new rows
        assert store.con.execute("select count(*) from runs").fetchall() == [(2,)]


def test_keep_tags_false_gives_the_new_tags_alone(db: Path) -> None:
    with Store(db) as store:
        first = store.ingest(ranked(), task="retrieval", run="a", tags=["x", "y"], **NO_GIT)
        store.ingest(ranked(seed=3), task="retrieval", run="a", tags=["z"], replace=True,
                     keep_tags=False, **NO_GIT)  # fmt: skip
        assert store.run("a")["tags"] == ["z"] and store.resolve("a") == first.run_id
        with pytest.raises(InvalidInput, match=r"^keep_tags=False goes with replace=True$"):
            RunMeta("a", keep_tags=False)


def _file(tmp_path: Path, seed: int) -> Path:
    data = ranked(seed=seed)
    path = tmp_path / f"r{seed}.parquet"
    pq.write_table(pa.table({k: np.asarray(v) for k, v in data.items()}), path)
    return path


def test_the_cli_replace_keeps_the_id_and_replace_tags_drops_the_tags(
    cli: Any, db: Path, tmp_path: Path
) -> None:
    made = cli("ingest", str(_file(tmp_path, 1)), "-r", "a", "-t", "retrieval", "--tag", "keep",
               "--git-commit", "")  # fmt: skip
    assert made.exit_code == 0, made.output
    with Store(db) as store:
        run_id = store.resolve("a")
    kept = cli("ingest", str(_file(tmp_path, 2)), "-r", "a", "-t", "retrieval", "--replace",
               "--tag", "more")  # fmt: skip
    assert kept.exit_code == 0, kept.output
    assert f"replaced run default/a (id {run_id})" in kept.stdout
    with Store(db) as store:
        assert store.run("a")["tags"] == ["keep", "more"]
    dropped = cli("ingest", str(_file(tmp_path, 3)), "-r", "a", "-t", "retrieval", "--replace",
                  "--replace-tags", "--tag", "only")  # fmt: skip
    assert dropped.exit_code == 0, dropped.output
    with Store(db) as store:
        assert store.run("a")["tags"] == ["only"] and store.resolve("a") == run_id


def test_errors_name_keywords_from_python_and_flags_from_the_cli(
    cli: Any, db: Path, tmp_path: Path
) -> None:
    path = _file(tmp_path, 1)
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="a", **NO_GIT)
        with pytest.raises(RunExists) as exists:
            store.ingest(ranked(), task="retrieval", run="a", **NO_GIT)
        assert "use replace=True to overwrite it or append=True" in str(exists.value)
        with pytest.raises(InvalidInput) as labels:
            store.ingest(ranked(), task="retrieval", run="b", labels="yes", **NO_GIT)
        assert str(labels.value).startswith('unknown labels="yes"')
        with pytest.raises(InvalidInput) as columns:
            store.ingest(ranked(), task="retrieval", run="b", columns=["score"], **NO_GIT)
        assert str(columns.value).startswith("columns= entry 'score'")
        data = {"item_id": [1, 2], "score": [0.5, 0.25], "label": [1, 0]}
        with pytest.raises(InvalidInput) as pm1:
            store.ingest(data, task="verification", run="b", **NO_GIT)
        assert str(pm1.value).startswith("data[0]: ") and 'pass labels="01"' in str(pm1.value)
        assert "--" not in str(pm1.value)
    got = cli("ingest", str(path), "-r", "a", "-t", "retrieval")
    assert got.exit_code == 1
    assert "use --replace to overwrite it or --append to add a task" in got.output
    got = cli("ingest", str(path), "-r", "b", "-t", "retrieval", "--labels", "yes")
    assert got.exit_code == 1 and "unknown --labels 'yes'" not in got.output
    assert "unknown --labels yes" in got.output or "Invalid value" in got.output
