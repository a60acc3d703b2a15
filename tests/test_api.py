"""The typed entry points: explicit keyword arguments, so a misspelt option fails loudly, and
each kind of raw output has its own method; the SQL a metric runs can be shown."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ranked

from evalstore import InvalidInput, Store
from evalstore.db import queries
from evalstore.ingest import ingest, ingest_keypoints, ingest_outcomes
from evalstore.metrics.registry import METRICS


def _state(store: Store) -> dict[str, int]:
    """Row counts of every table, read on the store's own connection."""
    tables = store.con.sql(
        "select table_name from information_schema.tables where table_type = 'BASE TABLE'"
    ).fetchall()
    return {
        t: store.con.sql(f'select count(*) from "{t}"').fetchall()[0][0]  # test-only SQL
        for (t,) in tables
    }


MATCHES = {
    "pair_id": ["p"] * 4,
    "x0": [1.0, 2.0, 3.0, 4.0],
    "y0": [1.0, 2.0, 3.0, 4.0],
    "x1": [1.0, 2.0, 3.0, 9.0],
    "y1": [1.0, 2.0, 3.0, 9.0],
    "gt_x1": [1.0, 2.0, 3.0, 4.0],
    "gt_y1": [1.0, 2.0, 3.0, 4.0],
}


@pytest.mark.parametrize(
    ("method", "data", "wrong"),
    [
        ("ingest", ranked(), {"task": "retrieval", "negate_scores": True}),  # negate_score
        ("ingest", ranked(), {"task": "retrieval", "homography_dir": "h"}),  # a keypoint option
        ("ingest_keypoints", MATCHES, {"pair": None}),  # pairs
        ("ingest_outcomes", {"group_id": [1], "tp": [1], "fp": [0], "fn": [0]}, {"tag": ["x"]}),
    ],
)
def test_a_misspelt_or_foreign_keyword_is_a_type_error(
    store: Store, method: str, data: Any, wrong: dict[str, Any]
) -> None:
    before = _state(store)
    with pytest.raises(TypeError, match="unexpected keyword"):
        getattr(store, method)(data, run="r", git_commit=None, **wrong)
    assert _state(store) == before


@pytest.mark.parametrize(
    ("method", "function"),
    [
        ("ingest", ingest),
        ("ingest_keypoints", ingest_keypoints),
        ("ingest_outcomes", ingest_outcomes),
    ],
)
def test_store_methods_take_the_library_functions_keywords(method: str, function: Any) -> None:
    """Each Store method passes every keyword of its library function, with the same default,
    and takes no **kwargs."""
    ours = inspect.signature(getattr(Store, method)).parameters
    theirs = inspect.signature(function).parameters
    assert all(p.kind is not p.VAR_KEYWORD for p in (*ours.values(), *theirs.values()))
    assert list(ours)[1:] == list(theirs)[1:]  # self / store
    for name in list(theirs)[2:]:
        assert ours[name].default == theirs[name].default, name
        assert ours[name].kind is inspect.Parameter.KEYWORD_ONLY, name


def test_each_kind_of_output_has_its_method(store: Store) -> None:
    kp = store.ingest_keypoints(MATCHES, run="kp", git_commit=None)
    out = store.ingest_outcomes(
        {"group_id": [1, 2], "tp": [3, 0], "fp": [1, 0], "fn": [0, 2]}, run="out", git_commit=None
    )
    lists = store.ingest(ranked(), task="retrieval", run="lists", git_commit=None)
    assert (kp.task, kp.rows, kp.lists) == ("keypoints", 4, 1)
    assert (out.task, out.rows, out.lists) == ("outcomes", 2, 2)
    assert (lists.task, lists.lists) == ("retrieval", 3)


@pytest.mark.parametrize("task", ["keypoints", "outcomes"])
def test_ingest_of_ranked_lists_names_the_method_for_other_tasks(store: Store, task: str) -> None:
    before = _state(store)
    with pytest.raises(InvalidInput, match=f"Store.ingest_{task}"):
        store.ingest(MATCHES, task=task, run="r", git_commit=None)
    assert _state(store) == before


def test_cli_refuses_an_option_of_another_task(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "lists.ndjson"
    data = ranked()
    path.write_text(
        "".join(
            json.dumps({k: np.asarray(v)[i].item() for k, v in data.items()}) + "\n"
            for i in range(len(data["item_id"]))
        )
    )
    result = cli("ingest", str(path), "--task", "retrieval", "--run", "r", "--pairs", str(path))
    assert result.exit_code == 1
    assert "--pairs does not apply to --task retrieval" in result.output
    result = cli("ingest", str(path), "--task", "keypoints", "--run", "k", "--negate-score")
    assert result.exit_code == 1
    assert "--negate-score does not apply to --task keypoints" in result.output


@pytest.mark.parametrize("name", sorted(METRICS))
def test_show_sql_prints_what_runs(cli: Any, name: str) -> None:
    result = cli("eval", "--show-sql", name)
    assert result.exit_code == 0, result.output
    assert result.output == METRICS[name].query.text
    assert not re.search(r"^--\s*@include", result.output, re.M)  # includes expanded


def test_show_sql_of_a_mean_and_of_an_unknown_metric(cli: Any) -> None:
    assert cli("eval", "--show-sql", "map").output == METRICS["ap"].query.text
    result = cli("eval", "--show-sql", "nope")
    assert result.exit_code == 1
    assert "unknown metric 'nope'" in result.output


def test_the_definition_hash_ignores_comments_and_white_space() -> None:
    query = METRICS["ap_voc07"].query
    commented = query.text.replace("\n", "  -- a remark\n").replace(" ", "   ")
    assert queries.Query(query.name, commented, query.path).sha == query.sha
    assert queries.Query(query.name, query.text.replace("0.1", "0.2"), query.path).sha != query.sha
    # a comment marker inside a string literal is code, not a comment
    a = queries.Query("q", "select '--a' as x", Path("q.sql"))
    b = queries.Query("q", "select '--b' as x", Path("q.sql"))
    assert a.sha != b.sha


def test_many_references_resolve_in_one_query(tmp_path: Path) -> None:
    """resolve_many gives resolve's answers, in order, and its errors."""
    import polars as pl

    from evalstore.errors import RunNotFound
    from evalstore.runs.registry import resolve, resolve_many

    frame = pl.DataFrame({"item_id": ["a", "b"], "score": [1.0, 0.5], "label": [1, -1]})
    frame.write_parquet(tmp_path / "s.parquet")
    with Store(tmp_path / "db.duckdb") as store:
        ids = [
            store.ingest(tmp_path / "s.parquet", task="verification", run=ref).run_id
            for ref in ("x/a", "y/a", "x/b")
        ]
        refs = ["x/a", "y/a", "b", str(ids[0]), f"id:{ids[2]}", "x/b"]
        assert resolve_many(store, refs) == [resolve(store, r) for r in refs]
        assert resolve_many(store, refs) == [ids[0], ids[1], ids[2], ids[0], ids[2], ids[2]]
        with pytest.raises(RunNotFound, match="'a' is ambiguous: x/a, y/a"):
            resolve_many(store, ["x/b", "a"])
        with pytest.raises(RunNotFound, match="no run 'zz'"):
            resolve_many(store, ["zz"])
        assert np.array_equal(resolve_many(store, []), [])
