"""How the pose estimates read what they need (evalstore.analysis.pose_estimates): the matches
of each pair in seq order whatever the order the table holds them in, a pair without matches
a failed estimate, and no pandas loaded on the way (pyarrow's ``pa.array`` of a NumPy array
imports it: 0.4 CPU seconds of a process that estimates MegaDepth-1500's poses)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pose_scenes import scene

from evalstore import Store
from evalstore.analysis.pose_estimates import PoseSetting, ensure_pose_estimates

ROOT = Path(__file__).resolve().parent.parent


def _estimates(store: Store) -> dict[tuple[str, str], tuple[Any, ...]]:
    rows = store.con.execute(
        "select r.name, p.pair_id, e.r11, e.r12, e.r13, e.r21, e.r22, e.r23, e.r31, e.r32, "
        "e.r33, e.t1, e.t2, e.t3, e.err_t, e.err_r, e.n_inliers from pose_estimates e "
        "join pairs p using (run_id, pair_no) join runs r using (run_id)"
    ).fetchall()
    return {(r[0], r[1]): r[2:] for r in rows}


def _two_runs(path: Path) -> tuple[Store, list[int]]:
    store = Store(path)
    ids = []
    for name, seed in (("a", 1), ("b", 2)):
        matches, cams, _ = scene(n_pairs=4, n_matches=40, seed=seed, noise=1.0, outliers=0.2)
        ids.append(store.ingest_keypoints(matches, run=f"k/{name}", pairs=cams,
                                          git_commit=None).run_id)  # fmt: skip
    return store, ids


def test_the_estimates_read_each_pairs_matches_in_seq_order_whatever_the_tables_order(
    tmp_path: Path,
) -> None:
    """The same runs in two stores, the second's matches table rewritten in the reverse order
    of (run, pair, seq) and one pair's matches deleted: the same estimates, bit for bit, but
    for that pair, which has none (a failed estimate)."""
    with _two_runs(tmp_path / "a.duckdb")[0] as store:
        store_ids = [store.resolve("k/a"), store.resolve("k/b")]
        with store.transaction():
            ensure_pose_estimates(store, store_ids, [PoseSetting()], needed_by="x")
        want = _estimates(store)
    store, ids = _two_runs(tmp_path / "b.duckdb")
    with store:
        store.con.execute(  # test-only: the rows stored in another order
            "create temp table shuffled as select * from matches "
            "order by run_id desc, pair_no desc, seq desc; delete from matches; "
            "insert into matches select * from shuffled; delete from matches where "
            "run_id = $r and pair_no = (select pair_no from pairs where run_id = $r "
            "and pair_id = 'p2')",
            {"r": ids[1]},
        )
        first, _ = store.con.execute("select run_id, seq from matches limit 1").fetchall()[0]
        assert first == ids[1]  # the table now starts with the last run's last match
        with store.transaction():
            made = ensure_pose_estimates(store, ids, [PoseSetting()], needed_by="x")
        got = _estimates(store)
    assert made == 8 and set(got) == set(want)
    assert got.pop(("b", "p2")) == (*[None] * 12, np.inf, np.inf, 0)
    assert want.pop(("b", "p2"))[-1] > 0
    assert got == want


def test_a_pending_subset_reads_its_own_pairs(tmp_path: Path) -> None:
    """Estimates already stored for some pairs: the others are made from their own matches
    (the spans of the pending pairs among all the runs' matches)."""
    with _two_runs(tmp_path / "a.duckdb")[0] as store:
        ids = [store.resolve("k/a"), store.resolve("k/b")]
        with store.transaction():
            ensure_pose_estimates(store, ids, [PoseSetting()], needed_by="x")
        want = _estimates(store)
        store.con.execute(
            "delete from pose_estimates e where exists (select 1 from pairs p where "
            "p.run_id = e.run_id and p.pair_no = e.pair_no and p.pair_id in ('p0', 'p3'))"
        )
        with store.transaction():
            made = ensure_pose_estimates(store, ids, [PoseSetting()], needed_by="x")
        assert made == 4 and _estimates(store) == want


CHILD = """
import json, sys
from evalstore import Store
from evalstore.analysis.evaluate import evaluate
sys.path.insert(0, "tests")
from pose_scenes import scene

matches, cams, _ = scene(n_pairs=3, n_matches=30, seed=0)
with Store(sys.argv[1]) as store:
    store.ingest_keypoints(matches, run="k/a", pairs=cams, git_commit=None)
    loaded = "pandas" in sys.modules
    values = evaluate(store, ["k/a"], metrics=["pose_auc"])
print(json.dumps({"before": loaded, "after": "pandas" in sys.modules, "rows": values.height}))
"""


@pytest.mark.slow  # a fresh process
def test_estimating_poses_loads_no_pandas(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "s.duckdb")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"before": False, "after": False, "rows": 3}
