"""Run references: one rule for every command (evalstore.runs.registry.resolve). ``id:N`` is the run
with id N, ``EXPERIMENT/NAME`` that run, a bare number the id only when no run is named so;
a number that is one run's name and another run's id is refused as ambiguous, naming both,
and a destructive command deletes nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ingest_lists, snapshot

from evalstore import Store
from evalstore.errors import RunNotFound

LISTS = {"q1": ([3.0, 2.0], [1, -1]), "q2": ([3.0, 1.0], [-1, 1])}


@pytest.fixture
def numbered(tmp_path: Path) -> Path:
    """exp/a (id 1), exp/b (id 2), other/2 (id 3: named as run 2's id), x/id:1 (id 4)."""
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        for run in ("exp/a", "exp/b", "other/2", "x/id:1"):
            ingest_lists(store, run, LISTS)
        assert [store.resolve(r) for r in ("exp/a", "exp/b", "other/2", "x/id:1")] == [1, 2, 3, 4]
    return db


def evalstore(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalstore", *args], capture_output=True, text=True, timeout=120
    )


def names(db: Path) -> list[str]:
    with Store(db, read_only=True) as store:
        return sorted(f"{e}/{n}" for e, n in store.runs().select("experiment", "name").rows())


@pytest.mark.slow  # real processes
def test_rm_of_a_number_that_is_a_name_and_an_id_deletes_nothing(numbered: Path) -> None:
    before = snapshot(numbered)
    done = evalstore("rm", "2", "--yes", "--db", str(numbered))
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "'2' is ambiguous" in lines[0]
    assert "other/2 (id 3)" in lines[0] and "id 2 (exp/b)" in lines[0]
    assert "id:2" in lines[0]  # the explicit forms are named
    assert snapshot(numbered) == before


@pytest.mark.slow  # real processes
def test_the_explicit_forms_delete_the_run_they_name(numbered: Path) -> None:
    by_id = evalstore("rm", "id:2", "--yes", "--db", str(numbered))
    assert by_id.returncode == 0, by_id.stderr
    assert by_id.stdout.strip() == "deleted run exp/b (id 2)"
    assert names(numbered) == ["exp/a", "other/2", "x/id:1"]
    by_path = evalstore("rm", "other/2", "--yes", "--db", str(numbered))
    assert by_path.returncode == 0 and "deleted run other/2 (id 3)" in by_path.stdout
    assert names(numbered) == ["exp/a", "x/id:1"]


def test_once_unambiguous_a_bare_number_resolves(numbered: Path) -> None:
    with Store(numbered) as store:
        store.remove("exp/b")  # id 2 is gone: "2" is the name of other/2 alone
        assert store.resolve("2") == 3
        with pytest.raises(RunNotFound, match="no run 'id:2'"):
            store.resolve("id:2")  # never falls back to the run named 2
        store.remove("other/2")
        assert store.resolve("4") == 4  # no run named 4: the id


@pytest.mark.slow  # real processes
def test_every_command_follows_the_rule(numbered: Path) -> None:
    for command in (["show", "2"], ["tag", "2", "t"], ["mv", "2", "z"], ["eval", "2"],
                    ["set", "2", "--notes", "n"], ["metrics", "2"]):  # fmt: skip
        done = evalstore(*command, "--db", str(numbered))
        assert done.returncode == 1, (command, done.stdout)
        assert done.stderr.startswith("Error: run '2' is ambiguous"), (command, done.stderr)
    shown = evalstore("show", "id:2", "--format", "json", "--db", str(numbered))
    assert shown.returncode == 0 and '"name": "b"' in shown.stdout


def test_python_ids_and_the_id_prefix_are_ids_only(numbered: Path) -> None:
    with Store(numbered) as store:
        assert store.resolve(2) == 2  # an int from Python: the id, not the run named 2
        assert store.resolve(np.int64(3)) == 3  # type: ignore[arg-type]
        assert store.resolve("id:1") == 1  # not the run named "id:1"
        assert store.resolve("x/id:1") == 4
        assert store.resolve("3") == 3  # no run named 3
        with pytest.raises(RunNotFound, match=r"'2' is ambiguous: the run named other/2"):
            store.resolve("2")
        with pytest.raises(RunNotFound, match="no run 'id:9'"):
            store.resolve("id:9")


def test_a_name_of_several_experiments_and_an_id_names_them_all(numbered: Path) -> None:
    with Store(numbered) as store:
        ingest_lists(store, "more/2", LISTS)
        with pytest.raises(RunNotFound) as caught:
            store.resolve("2")
    said = str(caught.value)
    assert "other/2, more/2" in said and "id 2 is exp/b" in said and "id:2" in said
