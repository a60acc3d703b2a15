"""Ids from text files (CSV, TSV) are stored exactly as written: no number is inferred from
them, so ``000005`` stays ``000005`` and ``007`` and ``7`` are two ids, in ranked lists (with
``--column`` mappings and the groups file), keypoint pairs and outcomes; integer ids of typed
inputs (Parquet, NumPy, JSON numbers) are stored as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from evalstore import Store

H_COLS = [f"h{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]


def ok(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return result


def sql(cli: Any, query: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(ok(cli("sql", query, "--format", "json")).stdout)
    return rows


def row_counts(db: Path) -> dict[str, int]:
    """Rows per row table (int or text item ids), read after the CLI has closed the store."""
    with Store(db) as store:
        return {
            kind: sum(
                store.con.sql(f"select count(*) from list_rows_{kind}_{f}").fetchall()[0][0]
                for f in ("f32", "f64")
            )
            for kind in ("int", "text")
        }


@pytest.mark.parametrize("sep", [",", "\t"], ids=["csv", "tsv"])
def test_leading_zeros_round_trip_through_scores_and_eval(
    cli: Any, db: Path, tmp_path: Path, sep: str
) -> None:
    path = tmp_path / ("run.csv" if sep == "," else "run.tsv")
    rows = [
        ("group_id", "item_id", "score", "label"),
        ("000005", "007", "0.9", "1"),
        ("000005", "7", "0.8", "-1"),
        ("000012", "0", "0.7", "1"),
        ("000012", "00", "0.1", "-1"),
    ]
    path.write_text("".join(sep.join(r) + "\n" for r in rows))
    out = ok(cli("ingest", str(path), "--task", "retrieval", "--run", "r")).stdout
    assert "4 retrieval rows in 2 list(s)" in out  # 007 and 7: two items, no duplicate
    got = sql(cli, "select group_id, item_id from scores order by seq")
    assert [(r["group_id"], r["item_id"]) for r in got] == [tuple(r[:2]) for r in rows[1:]]
    assert row_counts(db) == {"int": 0, "text": 4}  # 007 is no integer
    ok(cli("eval", "r", "--metric", "ap"))
    got = sql(cli, "select group_id, value from list_values order by group_id")
    assert got == [{"group_id": "000005", "value": 1.0}, {"group_id": "000012", "value": 1.0}]


def test_renamed_id_columns_are_read_as_text(cli: Any, tmp_path: Path) -> None:
    # --column names the input's columns: "query" and "doc" are the ids, while the input's
    # column named item_id holds the labels and stays a number
    path = tmp_path / "run.csv"
    path.write_text("query,doc,s,item_id\n000005,007,0.9,1\n000005,7,0.8,-1\n")
    args = ["-c", "group_id=query", "-c", "item_id=doc", "-c", "score=s", "-c", "label=item_id"]
    ok(cli("ingest", str(path), "--task", "retrieval", "--run", "r", *args))
    got = sql(cli, "select group_id, item_id, label from scores order by seq")
    assert got == [
        {"group_id": "000005", "item_id": "007", "label": 1},
        {"group_id": "000005", "item_id": "7", "label": -1},
    ]


def test_ids_keep_signs_spaces_and_quotes(cli: Any, db: Path, tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    path.write_text('group_id,item_id,score,label\n1,7,1,1\n1,+7,1,1\n1, 7,1,1\n1,"7,0",1,1\n')
    ok(cli("ingest", str(path), "--task", "retrieval", "--run", "r"))
    got = sql(cli, "select item_id from scores order by seq")
    assert [r["item_id"] for r in got] == ["7", "+7", " 7", "7,0"]
    assert row_counts(db) == {"int": 0, "text": 4}


def test_plain_integer_ids_from_text_are_stored_compactly(
    cli: Any, db: Path, tmp_path: Path
) -> None:
    # ids that an INTEGER writes back as the same text may be stored as integers
    path = tmp_path / "run.csv"
    path.write_text("group_id,item_id,score,label\n5,7,0.9,1\n5,-8,0.8,-1\n6,0,0.5,1\n")
    ok(cli("ingest", str(path), "--task", "retrieval", "--run", "r"))
    assert row_counts(db) == {"int": 3, "text": 0}
    got = sql(cli, "select group_id, item_id from scores order by seq")
    assert [(r["group_id"], r["item_id"]) for r in got] == [("5", "7"), ("5", "-8"), ("6", "0")]


def test_beyond_int32_ids_from_text_are_text(cli: Any, db: Path, tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    path.write_text("group_id,item_id,score,label\n5,2147483648,0.9,1\n5,1,0.8,-1\n")
    ok(cli("ingest", str(path), "--task", "retrieval", "--run", "r"))
    assert row_counts(db) == {"int": 0, "text": 2}
    got = sql(cli, "select item_id from scores order by seq")
    assert [r["item_id"] for r in got] == ["2147483648", "1"]


def test_groups_file_ids_match_the_lists(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    path.write_text("group_id,item_id,score,label\n000005,1,0.9,1\n5,1,0.9,1\n")
    groups = tmp_path / "groups.tsv"
    groups.write_text("group_id\tn_positives\n000005\t2\n5\t1\n")
    ok(cli("ingest", str(path), "--task", "retrieval", "--run", "r", "--groups", str(groups)))
    got = sql(cli, "select group_id, n_positives, list_id from groups order by group_id")
    assert [(r["group_id"], r["n_positives"]) for r in got] == [("000005", 2), ("5", 1)]
    assert all(r["list_id"] is not None for r in got)  # each metadata row found its list


def test_typed_inputs_keep_their_integer_ids(store: Store, tmp_path: Path) -> None:
    ints = pl.DataFrame({"group_id": [5, 5], "item_id": [7, 8], "score": [0.9, 0.8]})
    ints = ints.with_columns(label=pl.Series([1, -1], dtype=pl.Int8))
    ints.write_parquet(tmp_path / "ints.parquet")
    assert store.ingest(tmp_path / "ints.parquet", task="retrieval", run="p").method == "direct"
    store.ingest({c: ints[c].to_numpy() for c in ints.columns}, task="retrieval", run="n")
    (tmp_path / "ints.ndjson").write_text(
        '{"group_id": 5, "item_id": 7, "score": 0.9, "label": 1}\n'
        '{"group_id": 5, "item_id": 8, "score": 0.8, "label": -1}\n'
    )
    store.ingest(tmp_path / "ints.ndjson", task="retrieval", run="j")
    assert store.con.sql("select count(*) from list_rows_int_f64").fetchall() == [(6,)]
    # ids given as strings in typed inputs are text as they are
    text = ints.with_columns(group_id=pl.lit("000005"), item_id=pl.Series(["007", "7"]))
    text.write_parquet(tmp_path / "text.parquet")
    store.ingest(tmp_path / "text.parquet", task="retrieval", run="pt")
    (tmp_path / "text.ndjson").write_text(
        '{"group_id": "000005", "item_id": "007", "score": 0.9, "label": 1}\n'
        '{"group_id": "000005", "item_id": "7", "score": 0.8, "label": -1}\n'
    )
    store.ingest(tmp_path / "text.ndjson", task="retrieval", run="jt")
    for run in ("pt", "jt"):
        got = store.con.sql(
            "select group_id, item_id from scores where run_id = $r order by seq",
            params={"r": store.resolve(run)},
        ).fetchall()
        assert got == [("000005", "007"), ("000005", "7")]


def test_keypoint_pair_ids_from_text_files(cli: Any, tmp_path: Path) -> None:
    matches = tmp_path / "matches.csv"
    matches.write_text("pid,x0,y0,x1,y1\n007,10,10,15,7\n7,10,10,11,11\n")
    pairs = tmp_path / "pairs.tsv"
    translation = np.array([[1, 0, 5], [0, 1, -3], [0, 0, 1]], dtype=float).reshape(9)
    lines = ["\t".join(["pair_id", *H_COLS])]
    lines += ["\t".join([pid, *(f"{v:g}" for v in h)]) for pid, h in (("007", translation),)]
    lines += ["\t".join(["7", *(f"{v:g}" for v in np.eye(3).reshape(9))])]
    pairs.write_text("\n".join(lines) + "\n")
    args = ["--task", "keypoints", "--run", "k", "-c", "pair_id=pid", "--pairs", str(pairs)]
    ok(cli("ingest", str(matches), *args))
    got = sql(cli, "select pair_id, gt_x1, gt_y1 from v_matches order by seq")
    assert got == [
        {"pair_id": "007", "gt_x1": 15.0, "gt_y1": 7.0},  # 007's homography, not 7's
        {"pair_id": "7", "gt_x1": 10.0, "gt_y1": 10.0},
    ]
    got = sql(cli, "select pair_id from pairs order by pair_id")
    assert [r["pair_id"] for r in got] == ["007", "7"]


def test_keypoint_pair_ids_name_their_homography_files(cli: Any, tmp_path: Path) -> None:
    matches = tmp_path / "matches.csv"
    matches.write_text("pair_id,x0,y0,x1,y1\n007,10,10,15,7\n")
    hdir = tmp_path / "H"
    hdir.mkdir()
    np.savetxt(hdir / "007.txt", np.array([[1, 0, 5], [0, 1, -3], [0, 0, 1]], dtype=float))
    args = ["--task", "keypoints", "--run", "k", "--homography-dir", str(hdir)]
    ok(cli("ingest", str(matches), *args))
    assert sql(cli, "select pair_id, gt_x1 from v_matches") == [{"pair_id": "007", "gt_x1": 15.0}]


@pytest.mark.parametrize(
    "text",
    ["g,tp,fp,fn\n007,1,0,0\n7,0,1,0\n", "g,outcome\n007,tp\n7,fp\n7,tp\n"],
    ids=["counts", "items"],
)
def test_outcome_group_ids_from_text_files(cli: Any, tmp_path: Path, text: str) -> None:
    path = tmp_path / "outcomes.csv"
    path.write_text(text)
    ok(cli("ingest", str(path), "--task", "outcomes", "--run", "o", "-c", "group_id=g"))
    got = sql(cli, "select group_id from outcomes order by group_id")
    assert [r["group_id"] for r in got] == ["007", "7"]
