"""evalstore diff: the lists whose value moved most between two runs, and the items of one
list whose rank moved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ingest_lists

from evalstore import Store
from evalstore.core.ranking import ap


@pytest.fixture
def two(db: Path) -> Path:
    # list q1: a finds both positives first (AP 1), b ranks them 2nd and 4th (AP 0.5);
    # list q2: the same in both runs; list q3: a ranks its positive 3rd (AP 1/3), b ties it
    # with a negative at the top (AP 0.5 with the tie grouped)
    a = {
        "q1": ([4, 3, 2, 1], [1, 1, -1, -1]),
        "q2": ([2, 1], [1, -1]),
        "q3": ([3, 2, 1], [-1, -1, 1]),
    }
    b = {
        "q1": ([4, 3, 2, 1], [-1, 1, -1, 1]),
        "q2": ([2, 1], [1, -1]),
        "q3": ([3, 3, 1], [1, -1, -1]),
    }
    with Store(db) as store:
        for run, lists in (("e/a", a), ("e/b", b)):
            ingest_lists(store, run, lists)
    return db


def test_lists_by_how_much_their_value_moved(cli: Any, two: Path) -> None:
    got = cli("diff", "e/a", "e/b", "--format", "json")
    assert got.exit_code == 0, got.output
    rows = json.loads(got.stdout)
    assert [r["group_id"] for r in rows] == ["q1", "q3", "q2"]
    want = {
        "q1": (1.0, ap(np.array([4.0, 3, 2, 1]), np.array([-1, 1, -1, 1]))),
        "q2": (1.0, 1.0),
        "q3": (1 / 3, ap(np.array([3.0, 3, 1]), np.array([1, -1, -1]))),
    }
    for r in rows:
        va, vb = want[r["group_id"]]
        assert r["value_a"] == pytest.approx(va) and r["value_b"] == pytest.approx(vb)
        assert r["diff"] == pytest.approx(vb - va)
        assert r["metric"] == "ap" and r["task"] == "retrieval"
    one = cli("diff", "e/a", "e/b", "-n", "1", "--format", "json")
    assert [r["group_id"] for r in json.loads(one.stdout)] == ["q1"]


def test_items_by_how_far_their_rank_moved(cli: Any, two: Path) -> None:
    got = cli("diff", "e/a", "e/b", "--items", "q3", "--format", "json")
    assert got.exit_code == 0, got.output
    rows = {r["item_id"]: r for r in json.loads(got.stdout)}
    # a: scores 3, 2, 1 -> ranks 1, 2, 3; b: 3, 3, 1 -> a tie at rank 1, then 3
    assert {k: (r["rank_a"], r["rank_b"], r["moved"]) for k, r in rows.items()} == {
        "q3-0": (1, 1, 0),
        "q3-1": (2, 1, -1),
        "q3-2": (3, 3, 0),
    }
    assert rows["q3-0"]["label_a"] == -1 and rows["q3-0"]["label_b"] == 1
    assert next(iter(json.loads(got.stdout)))["item_id"] == "q3-1"  # the one that moved


def test_diff_errors_are_one_line(cli: Any, two: Path) -> None:
    for args, message in [
        (("--items", "nope"), 'has a retrieval list "nope"'),
        (("-m", "mapp"), "did you mean"),
        (("--task", "matching"), "no matching values"),
        (("-n", "0"), "--limit must be >= 1"),
    ]:
        bad = cli("diff", "e/a", "e/b", *args)
        assert bad.exit_code == 1, (args, bad.output)
        lines = bad.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, bad.stderr)
