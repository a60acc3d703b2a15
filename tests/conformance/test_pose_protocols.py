"""Protocols ``superglue``, ``loftr`` and ``gluefactory`` against transcriptions of their
reference code: random two-view scenes ingested with their cameras, the relative poses
estimated by evalstore at the protocol's setting and stored, then every number the protocol
reports, through the store and the metric SQL, equal to the transcribed code run on the same
stored estimates (the same estimate given, the arithmetic of the reference) to 1e-12.

The transcriptions are reference_pose.py's (the references' lines quoted there, with their
repositories and commits); the references' numbers are fractions here (SuperGlue and LoFTR
print 100 times them). Where a reference is written for torch (LoFTR's
``symmetric_epipolar_distance``, glue-factory's ``homography_corner_error``), the same lines
run on NumPy float64 arrays.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from tests.conformance import reference_pose as ref
from tests.pose_scenes import scene

# -- the references' collation of their per-pair numbers, with reference_pose.py's functions -----


def sg_match_pairs(pairs: list[dict[str, Any]]) -> dict[str, float]:
    """SuperGlue's match_pairs.py on the stored estimates: each pair's matching half
    (``ref.sg_match_pairs_matching``: ``len(kpts0)``, the number of image 0's keypoints, is
    the stored n_keypoints0), its stored errors, then the collated table
    (``ref.sg_match_pairs_summary``, without its 100x)."""
    results = []
    for p in pairs:
        kpts0 = np.zeros((p["n_kpts0"], 2))  # only their number is read
        _, precision, matching_score, _ = ref.sg_match_pairs_matching(
            p["mkpts0"], p["mkpts1"], kpts0, p["T"], p["K0"], p["K1"]
        )
        results.append({"error_t": p["error_t"], "error_R": p["error_R"],
                        "precision": precision, "matching_score": matching_score})  # fmt: skip
    auc5, auc10, auc20, prec, ms = ref.sg_match_pairs_summary(results)
    return {"auc@5": auc5, "auc@10": auc10, "auc@20": auc20, "prec": float(prec), "ms": float(ms)}


def loftr_aggregate(pairs: list[dict[str, Any]]) -> dict[str, float]:
    """LoFTR's ``aggregate_metrics``: ``pose_errors = np.max(np.stack([R_errs, t_errs]),
    axis=0)``, ``error_auc(pose_errors, [5, 10, 20])``, ``epidist_prec(epi_errs, [thr])``
    (each pair's errors from ``compute_symmetrical_epipolar_errors``: ``E = Tx @ T[:3, :3]``)."""
    r_errs = [p["error_R"] for p in pairs]
    t_errs = [p["error_t"] for p in pairs]
    pose_errors = np.max(np.stack([r_errs, t_errs]), axis=0)
    out = ref.loftr_error_auc(pose_errors, [5, 10, 20])
    epi = [
        ref.loftr_symmetric_epipolar_distance(
            p["mkpts0"], p["mkpts1"], ref.loftr_essential(p["T"]), p["K0"], p["K1"]
        )
        for p in pairs
    ]
    for thr in (1e-4, 5e-4):
        out[f"prec@{thr:.0e}"] = ref.loftr_epidist_prec(epi, [thr])[0]
    return out


# -- through the store ---------------------------------------------------------------------------


def _store_pairs(store: Store, run: str, threshold: float) -> list[dict[str, Any]]:
    """Each pair's matches, cameras, n_keypoints0 and stored errors at ``threshold`` px."""
    run_id = store.resolve(run)
    cams = store.con.sql(  # test-only reads of the stored rows
        "select p.pair_id, c.* from pair_cameras c join pairs p using (run_id, pair_no)"
        " where c.run_id = $r order by p.pair_id", params={"r": run_id}).pl()  # fmt: skip
    est = store.con.sql(
        "select p.pair_id, e.err_t, e.err_r from pose_estimates e join pairs p"
        " using (run_id, pair_no) where e.run_id = $r and e.threshold = $t order by p.pair_id",
        params={"r": run_id, "t": threshold},
    ).pl()
    matches = store.con.sql(
        "select p.pair_id, m.x0, m.y0, m.x1, m.y1 from matches m join pairs p"
        " using (run_id, pair_no) where m.run_id = $r order by m.seq",
        params={"r": run_id}).pl()  # fmt: skip
    out = []
    for row, e in zip(cams.to_dicts(), est.to_dicts(), strict=True):
        mine = matches.filter(pl.col("pair_id") == row["pair_id"])
        T = np.eye(4)
        T[:3] = np.array([row[f"t_{i}{j}"] for i in (1, 2, 3) for j in (1, 2, 3, 4)]).reshape(3, 4)
        out.append({
            "K0": np.array([row[f"k0_{i}{j}"] for i in (1, 2, 3) for j in (1, 2, 3)]).reshape(3, 3),
            "K1": np.array([row[f"k1_{i}{j}"] for i in (1, 2, 3) for j in (1, 2, 3)]).reshape(3, 3),
            "T": T, "n_kpts0": row["n_keypoints0"],
            "mkpts0": mine.select("x0", "y0").to_numpy(),
            "mkpts1": mine.select("x1", "y1").to_numpy(),
            "error_t": e["err_t"], "error_R": e["err_r"],
        })  # fmt: skip
    return out


def _values(frame: pl.DataFrame) -> dict[tuple[str, float | None], float]:
    out = {}
    for row in frame.to_dicts():
        params = json.loads(row["params"])
        out[(row["metric"], params.get("threshold"))] = row["value"]
    return out


def _run(tmp_path: Path, seed: int, **kw: Any) -> Store:
    matches, cams, _ = scene(n_pairs=kw.pop("n_pairs", 6), n_matches=kw.pop("n_matches", 40),
                             seed=seed, **kw)  # fmt: skip
    cams = cams.with_columns(n_keypoints0=pl.Series([50 + 7 * i for i in range(cams.height)]))
    store = Store(tmp_path / f"s{seed}.duckdb")
    store.ingest_keypoints(matches, run="m/a", pairs=cams, git_commit=None)
    return store


SCENES = [(0, {}), (1, {"noise": 2.0, "outliers": 0.4}), (2, {"n_matches": 8, "outliers": 0.5}),
          (3, {"noise": 5.0, "outliers": 0.6, "n_pairs": 9})]  # fmt: skip


@pytest.mark.parametrize(("seed", "kw"), SCENES)
def test_superglue_is_match_pairs(tmp_path: Path, seed: int, kw: dict[str, Any]) -> None:
    with _run(tmp_path, seed, **kw) as store:
        got = _values(evaluate(store, ["m/a"], protocol="superglue"))
        want = sg_match_pairs(_store_pairs(store, "m/a", 1.0))
    for t in (5, 10, 20):
        assert got[("pose_auc", float(t))] == pytest.approx(want[f"auc@{t}"], rel=1e-12, abs=1e-15)
    assert got[("epipolar_precision", 5e-4)] == pytest.approx(want["prec"], rel=1e-12, abs=1e-15)
    assert got[("matching_score", 5e-4)] == pytest.approx(want["ms"], rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(("seed", "kw"), SCENES)
def test_loftr_is_aggregate_metrics(tmp_path: Path, seed: int, kw: dict[str, Any]) -> None:
    with _run(tmp_path, seed, **kw) as store:
        got = _values(evaluate(store, ["m/a"], protocol="loftr"))
        want = loftr_aggregate(_store_pairs(store, "m/a", 0.5))
    for t in (5, 10, 20):
        assert got[("pose_auc", float(t))] == pytest.approx(want[f"auc@{t}"], rel=1e-12, abs=1e-15)
    for thr in (1e-4, 5e-4):
        assert got[("epipolar_precision", thr)] == pytest.approx(
            want[f"prec@{thr:.0e}"], rel=1e-12, abs=1e-15
        )


@pytest.mark.parametrize(("seed", "kw"), SCENES)
def test_gluefactory_is_eval_poses(tmp_path: Path, seed: int, kw: dict[str, Any]) -> None:
    with _run(tmp_path, seed, **kw) as store:
        got = _values(evaluate(store, ["m/a"], protocol="gluefactory"))
        pose_results: dict[float, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for th in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0):  # run_eval's test_thresholds, in order
            for p in _store_pairs(store, "m/a", th):
                pose_results[th]["rel_pose_error"].append(max(p["error_R"], p["error_t"]))
        summaries, best_th = ref.gf_eval_poses(pose_results, [5, 10, 20], "rel_pose_error")
    assert got[("pose_ransac_threshold", None)] == best_th
    for t in (5, 10, 20):
        assert got[("pose_auc", float(t))] == summaries[f"rel_pose_error@{t}°"]
    assert got[("pose_maa", None)] == pytest.approx(summaries["rel_pose_error_mAA"], rel=1e-12)
    assert got[("pose_error", None)] == summaries["mrel_pose_error"]


def test_gluefactory_homography_auc_is_its_hpatches_eval(tmp_path: Path) -> None:
    """hpatches.py: ``AUCMetric([1, 3, 5], H_error_ransac).compute()`` of the pairs' corner
    errors (``homography_corner_error(M, H_gt, image_size)``, +inf where estimation failed),
    the estimate evalstore stored (``pairs.e11..e33``)."""
    rng = np.random.default_rng(5)
    rows, pairs = [], []
    for p in range(7):
        h = np.array([[1 + rng.normal(0, 0.05), rng.normal(0, 0.05), rng.uniform(-20, 20)],
                      [rng.normal(0, 0.05), 1 + rng.normal(0, 0.05), rng.uniform(-20, 20)],
                      [rng.normal(0, 1e-4), rng.normal(0, 1e-4), 1.0]])  # fmt: skip
        n = 3 if p == 6 else 30  # too few matches: estimation fails
        xy = rng.uniform(0, 300, (n, 2))
        w = (h @ np.c_[xy, np.ones(n)].T).T
        xy1 = w[:, :2] / w[:, 2:] + rng.normal(0, [0.1, 1.0, 3.0][p % 3], (n, 2))
        rows += [(f"p{p}", *a, *b) for a, b in zip(xy.tolist(), xy1.tolist(), strict=True)]
        pairs.append({"pair_id": f"p{p}", **{f"h{i + 1}{j + 1}": h[i, j] for i in range(3)
                      for j in range(3)}, "width": 320, "height": 240})  # fmt: skip
    matches = pl.DataFrame(rows, schema=["pair_id", "x0", "y0", "x1", "y1"], orient="row")
    with Store(tmp_path / "h.duckdb") as store:
        store.ingest_keypoints(matches, run="h/a", pairs=pl.DataFrame(pairs), git_commit=None)
        got = _values(evaluate(store, ["h/a"], protocol="gluefactory", metrics=["homography_auc"]))
        stored = store.con.sql(
            "select * from pairs where run_id = $r order by pair_id",
            params={"r": store.resolve("h/a")},
        ).pl()  # test-only: the estimates and truths as stored
    errors = []
    for row in stored.to_dicts():
        H_gt = np.array([row[f"h{i}{j}"] for i in (1, 2, 3) for j in (1, 2, 3)]).reshape(3, 3)
        if row["e11"] is None:  # eval_homography_robust: error_r = float("inf")
            errors.append(float("inf"))
            continue
        M = np.array([row[f"e{i}{j}"] for i in (1, 2, 3) for j in (1, 2, 3)]).reshape(3, 3)
        errors.append(float(ref.gf_homography_corner_error(M, H_gt, np.array([320.0, 240.0]))))
    assert errors[-1] == float("inf") and min(errors) < 5
    want = ref.gf_cal_error_auc(errors, [1, 3, 5])
    for t, w in zip((1, 3, 5), want, strict=True):
        assert got[("homography_auc", float(t))] == pytest.approx(float(w), rel=1e-12, abs=1e-15)


EXAMPLE = """
import json, sys, tempfile
from pathlib import Path
from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from tests.conformance import reference_pose as ref
from tests.pose_scenes import scene

matches, cams, _ = scene(n_pairs=8, n_matches=60, seed=4, noise=2.0, outliers=0.3)
out = {}
with Store(Path(tempfile.mkdtemp()) / "s.duckdb") as store:
    store.ingest_keypoints(matches, run="m/a", pairs=cams, git_commit=None)
    for protocol in ("superglue", "loftr", "gluefactory"):
        for r in evaluate(store, ["m/a"], protocol=protocol).to_dicts():
            at = json.loads(r["params"]).get("threshold")
            out[f"{protocol} {r['metric']} {at}"] = r["value"]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_worked_example_of_docs_protocols_holds() -> None:
    """docs/protocols.md's pose example, run as the page says: in a fresh process (OpenCV's
    RANSAC samples from a generator whose state is the process's)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", EXAMPLE], cwd=root, capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(root)})  # fmt: skip
    got = json.loads(done.stdout)
    doc = {
        "superglue pose_auc 5.0": 0.0, "superglue pose_auc 10.0": 0.187767,
        "superglue pose_auc 20.0": 0.494352, "loftr pose_auc 5.0": 0.0,
        "loftr pose_auc 10.0": 0.10641, "loftr pose_auc 20.0": 0.42181,
        "gluefactory pose_auc 5.0": 0.1959, "gluefactory pose_auc 10.0": 0.3462,
        "gluefactory pose_auc 20.0": 0.5411, "gluefactory pose_maa None": 0.361067,
        "gluefactory pose_error None": 8.766, "gluefactory pose_ransac_threshold None": 2.0,
    }  # fmt: skip
    for key, value in doc.items():
        assert round(got[key], 6) == value, key
    text = (root / "docs" / "protocols.md").read_text()
    for value in ("0.187767", "0.494352", "0.10641", "0.42181", "0.1959", "0.361067", "8.766"):
        assert value in text, value
