"""TIDE's breakdown of a stored detection run, through the whole product, against tidecv.

A COCO results file and its annotations (tests/conformance/detsets.py's seeded sets: crowd
regions, tied scores, images without ground truth) are ingested, evaluated under
``--protocol tide`` (the breakdown made on first use and stored in ``det_tide``), and compared
with tidecv 1.0.1 run on the same rows (images registered in id order, as evalstore takes
them): the mAP, each main and special error's dAP, the error counts, and per category the AP
and each dAP (``run.fix_errors`` of that class), exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from tidecv import TIDE
from tidecv.errors.main_errors import FalsePositiveError

from evalstore import Store, check, compare, evaluate
from evalstore.analysis.compare import RUN_VALUE, TIE_TOLERANCE
from evalstore.dashboards.data import compare_stats
from evalstore.metrics.det_references import TIDE_METRICS
from evalstore.runs.meta import RunMeta
from tests.conformance.detsets import make_detset
from tests.conformance.test_tide import per_class, reference


def _columns(gt: dict[str, Any], dets: list[dict[str, Any]]) -> tuple[dict, dict]:
    det = {k: [] for k in ("image_id", "category_id", "score", "x", "y", "w", "h")}
    for d in dets:
        for k, v in zip(("x", "y", "w", "h"), d["bbox"], strict=True):
            det[k].append(v)
        for k in ("image_id", "category_id", "score"):
            det[k].append(d[k])
    truth = {k: [] for k in ("image_id", "category_id", "x", "y", "w", "h", "iscrowd")}
    for a in gt["annotations"]:
        for k, v in zip(("x", "y", "w", "h"), a["bbox"], strict=True):
            truth[k].append(v)
        for k in ("image_id", "category_id", "iscrowd"):
            truth[k].append(a[k])
    return det, truth


@pytest.mark.parametrize("seed", [0, 1, 5])
def test_stored_run_equals_tidecv(db: Path, tmp_path: Path, seed: int) -> None:
    gt, dets = make_detset(seed, n_images=16, n_categories=4)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    det, truth = _columns(gt, dets)
    images = sorted(im["id"] for im in gt["images"])
    run, main, special, counts = reference(det, truth, images=images)
    with Store(db) as store:
        store.ingest_coco(
            tmp_path / "dt.json", tmp_path / "gt.json", meta=RunMeta("det/t", git_commit=False)
        )
        got = evaluate(store, ["det/t"], protocol="tide")
        values = dict(zip(got["metric"].to_list(), got["value"].to_list(), strict=True))
        stored = store.con.sql("select * from det_tide").pl()
    assert set(values) == set(TIDE_METRICS)
    assert values["tide_ap"] == run.ap
    for name, (error, _) in TIDE_METRICS.items():
        if error != "AP":
            assert values[name] == {**main, **special}[error], name
    run_rows = stored.filter(pl.col("category_id").is_null() & (pl.col("error") != "AP"))
    assert dict(zip(run_rows["error"], run_rows["n_errors"], strict=True)) == {
        **counts, "FalsePos": None, "FalseNeg": None,
    }  # fmt: skip
    fixed = {
        e.short_name: run.fix_errors(lambda x, e=e: isinstance(x, e)) for e in TIDE._error_types
    }
    fixed_special = {
        "FalsePos": run.fix_errors(transform=FalsePositiveError.fix),
        "FalseNeg": run.fix_errors(false_neg_dict=run.false_negatives),
    }
    per = stored.filter(pl.col("category_id").is_not_null())
    checked = 0
    for cat, obj in run.ap_data.objs.items():
        rows = per.filter(pl.col("category_id") == str(cat))
        have = dict(zip(rows["error"], rows["value"], strict=True))
        ap = obj.get_ap()
        assert have["AP"] == ap
        for k, v in fixed.items():
            assert have[k] == max(v.objs[cat].get_ap() - ap, 0), (cat, k)
        for k, v in fixed_special.items():
            assert have[k] == v.objs[cat].get_ap() - ap, (cat, k)
        checked += 1
    assert checked >= 3


# ------------------------------------------------------- per category, as per-list values


def _ingest(store: Store, folder: Path, seed: int, name: str, rescore: int | None = None):
    """Seed ``seed``'s set with a category the annotation file names and nothing uses (999),
    stored as run ``name`` (scores redrawn with ``rescore``); tidecv's (run, main, special)
    and its numbers of each class on the same rows."""
    gt, dets = make_detset(seed, n_images=16, n_categories=4)
    gt["categories"].append({"id": 999, "name": "unused"})
    if rescore is not None:
        rng = np.random.default_rng(rescore)
        dets = [d | {"score": round(float(rng.random()), 2)} for d in dets]
    (folder / "gt.json").write_text(json.dumps(gt))
    (folder / f"{name.replace('/', '_')}.json").write_text(json.dumps(dets))
    store.ingest_coco(
        folder / f"{name.replace('/', '_')}.json",
        folder / "gt.json",
        meta=RunMeta(name, git_commit=False),
    )
    det, truth = _columns(gt, dets)
    images = sorted(im["id"] for im in gt["images"])
    run, main, special, _ = reference(det, truth, images=images)
    return {"AP": run.ap, **main, **special}, per_class(run), [c["id"] for c in gt["categories"]]


@pytest.mark.parametrize("seed", [0, 1])
def test_by_category_equals_tidecv_per_class(db: Path, tmp_path: Path, seed: int) -> None:
    """``evaluate(..., protocol="tide", by=["category"])``: the run's value is tidecv's run
    number (not the mean over categories), each category's row its class's number; a category
    tidecv never saw is NULL and counted in n_skipped."""
    with Store(db) as store:
        run, classes, categories = _ingest(store, tmp_path, seed, "det/t")
        got = evaluate(store, ["det/t"], protocol="tide", by=["category"])
        stored = store.con.sql("select * from metric_values where slice = ''").pl()
    assert len(classes) >= 4 and 999 not in classes
    assert set(stored["metric"]) == set(TIDE_METRICS) and stored.height == len(TIDE_METRICS)
    not_a_mean = 0
    for name, (error, _) in TIDE_METRICS.items():
        rows = got.filter(pl.col("metric") == name)
        overall = rows.filter(pl.col("slice") == "").row(0, named=True)
        assert overall["value"] == run[error], name
        assert (overall["n_lists"], overall["n_skipped"]) == (
            len(classes), len(categories) - len(classes)
        )  # fmt: skip
        per = dict(zip(rows["slice"], rows["value"], strict=True))
        assert set(per) == {"", *(f"category={c}" for c in categories)}, name
        for c in categories:
            want = classes[c][error] if c in classes else None
            assert per[f"category={c}"] == want, (name, c)
        values = [v[error] for v in classes.values()]
        not_a_mean += not np.isclose(sum(values) / len(values), run[error], rtol=1e-9)
    assert not_a_mean > 0  # some dAP of the run is not the mean of its categories'


def test_cli_table_and_json_show_the_categories(db: Path, tmp_path: Path, cli: Any) -> None:
    with Store(db) as store:
        run, classes, categories = _ingest(store, tmp_path, 0, "det/t")
    args = ["eval", "det/t", "--protocol", "tide", "--by", "category", "-m", "tide_ap"]
    table = cli(*args)
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    for c in categories:  # run, slice, value (6 digits; blank when NULL), n_lists, n_skipped
        (line,) = [x.split() for x in lines if f" category={c} " in x]
        shown = [f"{classes[c]['AP']:.6g}", "1", "0"] if c in classes else ["0", "1"]
        assert line == ["det/t", f"category={c}", *shown]
    (overall,) = [x.split() for x in lines if x.split()[:1] == ["det/t"] and "=" not in x]
    assert overall == ["det/t", f"{run['AP']:.6g}", str(len(classes)), "1"]
    as_json = cli(*args, "--format", "json")
    assert as_json.exit_code == 0, as_json.output
    rows = {r["slice"]: r for r in json.loads(as_json.output)}
    assert rows[""]["value"] == run["AP"] and rows[""]["metric"] == "tide_ap"
    assert rows[""]["n_lists"] == len(classes)
    for c in categories:
        want = classes[c]["AP"] if c in classes else None
        assert rows[f"category={c}"]["value"] == want
        assert rows[f"category={c}"]["n_skipped"] == (c not in classes)


def test_compare_tests_no_mean_over_categories(db: Path, tmp_path: Path) -> None:
    """compare pairs the runs category by category (wins, ties, losses) but gives no interval
    or p-value: the paired mean over categories is not the runs' difference; check says
    untested."""
    with Store(db) as store:
        run_a, classes_a, _ = _ingest(store, tmp_path, 0, "det/a")
        run_b, classes_b, _ = _ingest(store, tmp_path, 0, "det/b", rescore=7)
        frame = compare(store, ["det/a", "det/b"], protocol="tide")
        regressed, lines, _ = check(store, "det/b", "det/a", protocol="tide")
        panel = pl.DataFrame(  # a dashboard's comparison panel: no interval, and why
            {"run_id": [2], "baseline_id": [1], "task": ["detection"], "metric": ["tide_cls"]}
        ).with_columns(params=pl.lit("{}"))
        stats = compare_stats(store, panel).row(0, named=True)
    assert set(frame["metric"]) == set(TIDE_METRICS)
    for row in frame.iter_rows(named=True):
        error = TIDE_METRICS[row["metric"]][0]
        assert (row["baseline_value"], row["value"]) == (run_a[error], run_b[error])
        assert row["diff"] == run_b[error] - run_a[error]
        assert np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])
        assert row["p_value"] is None and row["p_adj"] is None and row["effect_size"] is None
        assert row["resampled"] == RUN_VALUE
        d = [classes_b[c][error] - classes_a[c][error] for c in classes_a]
        higher = row["metric"] == "tide_ap"
        assert row["wins"] == sum(x > TIE_TOLERANCE if higher else x < -TIE_TOLERANCE for x in d)
        assert row["ties"] == sum(abs(x) <= TIE_TOLERANCE for x in d)
        assert row["n_lists"] == len(classes_a) == len(classes_b)
    assert frame.filter(pl.col("metric") == "tide_ap")["diff"][0] != 0
    assert not regressed
    assert stats["note"] == stats["resampled"] == RUN_VALUE and np.isnan(stats["ci_low"])
    assert stats["mean_diff"] == run_b["Cls"] - run_a["Cls"]
    assert sum(line.startswith("untested detection tide_") for line in lines) == 9
