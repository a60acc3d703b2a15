"""A detection run's ranked lists (task ``detection``, evalstore/analysis/det_lists.py) are
the lists pycocotools' own ``COCOeval`` ranks (cocodataset/cocoapi, PythonAPI/pycocotools/
cocoeval.py, run here from PyPI), and the metrics of ranked lists read them unchanged.

For area range ``all`` and ``maxDet`` 100, ``evaluateImg`` gives per image and category the
kept detections (``dtIds``, ``dtScores``), the box each matched at IoU threshold ``t``
(``dtMatches[t]``, 0 when none), whether that match is ignored (``dtIgnore[t]``: a crowd
region), and the objects (``gtIds`` with ``gtIgnore`` 0) with the detection that matched each
(``gtMatches[t]``). A list is the category's detections labelled +1 (matched, not ignored),
0 (ignored) or -1, and its objects no detection matched, not retrieved. ``accumulate`` ranks
the detections by ``np.argsort(-dtScores, kind='mergesort')`` and reads precision at 101
recall points: ``ap_coco`` under ``--ties input`` (equal scores in pycocotools' order) equals
its ``eval['precision'][t, :, k, 0, 2]`` mean, for every category and threshold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import training_tables
from typer.testing import CliRunner

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.cli import app
from evalstore.errors import InvalidInput
from evalstore.metrics.references import Params, RankedLists
from evalstore.metrics.registry import METRICS
from tests.conformance.detsets import coco_store, make_detset, run_pycocotools

ALL = [0, 1e10]


def _reference_lists(ev: Any, gt: dict[str, Any]) -> dict[str, set[tuple[str, float, int]]]:
    """group_id "<category>@<IoU>" -> {(item, score or -inf, label)} from ``evalImgs``."""
    out: dict[str, set[tuple[str, float, int]]] = {}
    for e in ev.evalImgs:
        if e is None or list(e["aRng"]) != ALL:
            continue
        assert e["maxDet"] == 100
        for t, iou in enumerate(ev.params.iouThrs):
            items = out.setdefault(f"{e['category_id']}@{iou:.2f}", set())
            for d, s, g, ig in zip(e["dtIds"], e["dtScores"], e["dtMatches"][t],
                                   e["dtIgnore"][t], strict=True):  # fmt: skip
                items.add((f"det:{int(d) - 1}", float(s), 0 if ig else (1 if g > 0 else -1)))
            for g, ig, m in zip(e["gtIds"], e["gtIgnore"], e["gtMatches"][t], strict=True):
                if not ig and m == 0:
                    items.add((f"gt:{int(g)}", -np.inf, 1))
    return {k: v for k, v in out.items() if v}


def _stored_lists(store: Store) -> dict[str, set[tuple[str, float, int]]]:
    rows = store.sql(
        "select group_id, item_id, coalesce(score, '-inf'::double) as score, label "
        "from scores where task = 'detection'"
    )
    out: dict[str, set[tuple[str, float, int]]] = {}
    for group, item, score, label in rows.iter_rows():
        out.setdefault(group, set()).add((item, score, label))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_the_lists_are_pycocotools_own_and_ap_coco_is_its_precision(
    tmp_path: Path, seed: int
) -> None:
    store, gt, dets = coco_store(tmp_path, seed, n_images=12, n_categories=3, crowded=2)
    ev = run_pycocotools(gt, dets)
    with store:
        got = evaluate(store, ["d/x"], metrics=["ap_coco", "ap"], ties="input", by=["category"])
        assert _stored_lists(store) == _reference_lists(ev, gt)
        per_list = got.filter(got["slice"].str.starts_with("category="))
        values = {
            (m, s.removeprefix("category=")): v
            for m, s, v in per_list.select("metric", "slice", "value").iter_rows()
        }
    cats = ev.params.catIds
    checked = 0
    for t, iou in enumerate(ev.params.iouThrs):
        for k, cat in enumerate(cats):
            precision = ev.eval["precision"][t, :, k, 0, 2]
            key = ("ap_coco", f"{cat}@{iou:.2f}")
            if (precision == -1).all():  # no object to find: no value
                assert values.get(key) is None or np.isnan(values[key])
                continue
            assert values[key] == pytest.approx(float(np.mean(precision)), abs=1e-12)
            checked += 1
    assert checked >= 10


def test_every_metric_of_ranked_lists_equals_its_numpy_twin_on_them(tmp_path: Path) -> None:
    store, gt, dets = coco_store(tmp_path, 7, n_images=10, n_categories=3, crowded=1)
    ev = run_pycocotools(gt, dets)
    lists = _reference_lists(ev, gt)
    group = np.array([g for g, items in lists.items() for _ in items])
    flat = [row for items in lists.values() for row in items]
    ranked = RankedLists(
        group,
        np.array([s for _, s, _ in flat]),
        np.array([lab for _, _, lab in flat]),
        items=np.array([i for i, _, _ in flat]),
    )
    names = ["ap", "ap_voc07", "ndcg", "precision_at_k", "recall_at_k", "recip_rank", "fpr95"]
    with store:
        got = evaluate(store, ["d/x"], metrics=names, k=5, by=["category"])
    for name in names:
        metric = METRICS[name]
        want = metric.reference(ranked, Params(ties="grouped", k=5))
        rows = got.filter(
            (got["metric"] == name) & got["slice"].str.starts_with("category=")
        ).select("slice", "value")
        stored = {s.removeprefix("category="): v for s, v in rows.iter_rows()}
        expected = dict(zip(want.group.tolist(), want.value.tolist(), strict=True))
        assert stored.keys() == expected.keys(), name
        for key, value in expected.items():
            if np.isnan(value):
                assert stored[key] is None or np.isnan(stored[key]), (name, key)
            else:
                assert stored[key] == pytest.approx(value, rel=1e-12, abs=1e-15), (name, key)


def test_by_iou_gives_each_thresholds_mean_and_the_cli_reads_them(tmp_path: Path) -> None:
    store, _, dets = coco_store(tmp_path, 2, n_images=8, n_categories=2, crowded=0)
    store.close()
    db = str(tmp_path / "s.duckdb")
    result = CliRunner().invoke(
        app, ["eval", "d/x", "-m", "ap", "--by", "iou", "--db", db, "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    slices = {r["slice"]: r for r in rows}
    assert {f"iou={t:.2f}" for t in np.linspace(0.5, 0.95, 10)} <= slices.keys()
    with Store(tmp_path / "s.duckdb") as s:
        per_list = s.sql(
            "select slices['iou'] as iou, value from v_lists "
            "where metric = 'ap' and task = 'detection' and value is not null"
        )
    for iou, value in slices.items():
        if iou == "":
            continue
        want = per_list.filter(per_list["iou"] == iou.removeprefix("iou="))["value"]
        assert value["value"] == pytest.approx(float(want.mean()), abs=1e-12)
    # the run's row counts stay its detections, not the lists made from them
    runs = CliRunner().invoke(app, ["runs", "--db", db, "--format", "json"])
    assert json.loads(runs.output)[0]["n_rows"] == len(dets)


def test_a_read_only_store_says_how_to_make_them(tmp_path: Path) -> None:
    store, _, _ = coco_store(tmp_path, 1, n_images=4, n_categories=2, crowded=0)
    store.close()
    with Store(tmp_path / "s.duckdb", read_only=True) as ro, pytest.raises(InvalidInput) as e:
        evaluate(ro, ["d/x"], metrics=["ap"])
    assert "d/x" in str(e.value) and "writable" in str(e.value)


def test_schema_18_keeps_a_stores_lists_and_makes_coco_matches_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store of schema 17 opens at 18 with its ranked lists and cached values as they were;
    its COCO matches, made without gt_seq, are dropped and made again on first use."""
    from evalstore.db import schema as store_module

    files = store_module.migrations()
    monkeypatch.setattr(store_module, "migrations", lambda: [f for f in files if f[0] <= 17])
    db = tmp_path / "old.duckdb"
    ranked = {"group_id": ["q1", "q1", "q2"], "item_id": ["a", "b", "c"],
              "score": [0.9, 0.2, 0.5], "label": [1, -1, 1]}  # fmt: skip
    with Store(db) as store:
        assert store.schema_version() == 17
        training_tables(store.con, files)
        store.ingest(ranked, task="retrieval", run="r/a", git_commit=None)
        ap_before = evaluate(store, ["r/a"], metrics=["ap"])["value"].to_list()
        scores_before = store.sql("select * from scores order by list_id, seq").rows()
        store.con.execute(
            "insert into det_matched values (1, 'coco'); insert into det_matches "
            "(run_id, matching, category_id, iou_index, det_id, seq, rank, score, label) "
            "values (1, 'coco', 'c', 0, 0, 0, 0, 0.5, 1)"
        )
        training_tables(store.con, files, drop=True)
    monkeypatch.setattr(store_module, "migrations", lambda: files)
    gt, dets = make_detset(3, n_images=6, n_categories=2, crowded=1)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    with Store(db) as store:
        assert store.schema_version() == store_module.latest_schema_version()
        assert store.sql("select * from scores order by list_id, seq").rows() == scores_before
        cached = store.sql("select value from metric_values where slice = '' and metric = 'ap'")
        assert cached["value"].to_list() == ap_before
        assert store.sql("select count(*) as n from det_matches")["n"][0] == 0
        store.ingest_coco(tmp_path / "dt.json", tmp_path / "gt.json", run="d/x", git_commit=None)
        got = evaluate(store, ["d/x"], metrics=["ap", "coco_ap"])
        assert got["value"].is_not_null().all() and got.height == 2
        assert store.sql("select count(*) as n from scores where task = 'detection'")["n"][0] > 0


def test_compare_pairs_a_detection_runs_lists_by_category(tmp_path: Path) -> None:
    """The ten lists of a category hold the same detections: compare resamples categories
    (the mean over thresholds), whose mean difference is the runs' difference, and refuses
    to resample items (each run ranks its own detections)."""
    from evalstore.analysis.compare import compare

    store, _, dets = coco_store(tmp_path, 4, n_images=40, n_categories=12, crowded=1)
    rng = np.random.default_rng(0)
    noisy = [{**d, "score": float(np.clip(d["score"] + rng.normal(0, 0.2), 0, 1))} for d in dets]
    (tmp_path / "dt2.json").write_text(json.dumps(noisy))
    with store:
        store.ingest_coco(tmp_path / "dt2.json", tmp_path / "gt.json", run="d/y", git_commit=None)
        got = compare(store, ["d/x", "d/y"], metrics=["ap"], n_boot=200)
        per_list = evaluate(store, ["d/x", "d/y"], metrics=["ap"], by=["category"])
        with pytest.raises(InvalidInput, match="resample lists"):
            compare(store, ["d/x", "d/y"], metrics=["ap"], resample="items")
    row = got.row(0, named=True)
    lists = per_list.filter(per_list["slice"].str.starts_with("category="))
    values = {(r, s.removeprefix("category=")): v
              for r, s, v in lists.select("run", "slice", "value").iter_rows()}  # fmt: skip
    categories = {g.rsplit("@", 1)[0] for (_, g), v in values.items() if v is not None}
    assert row["n_lists"] == len(categories) >= 10  # categories, not 10 lists each
    diffs = [
        np.mean([values[("d/y", f"{c}@{t:.2f}")] - values[("d/x", f"{c}@{t:.2f}")]
                 for t in np.linspace(0.5, 0.95, 10)])
        for c in sorted(categories)
    ]  # fmt: skip
    assert row["diff"] == pytest.approx(float(np.mean(diffs)), abs=1e-12)
    assert row["wins"] + row["ties"] + row["losses"] == len(categories)
    assert row["ci_low"] <= row["diff"] <= row["ci_high"] and row["resampled"] == "lists"
