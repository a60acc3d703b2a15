"""One SQL source, two engines: every registered metric gives the same values on DuckDB and
on Spark (local[2]) over a Parquet export of the same runs, to 1e-12 relative (NULL == NULL).

The fixture holds the edge cases: lists without positives, all-ignored lists, heavy ties,
-0.0 next to 0.0, NULL (not retrieved) scores, n_positives overrides, a global verification
list (group_id NULL), pairs without matches, pairs without a true homography, failed
homography estimates, outcomes with all-zero groups and a run whose groups are all zero.

The golden files tests/golden/spark/<metric>.sql (test data: not under sql/, so neither in the
wheel nor in the query catalogue) and the transpiler need only sqlglot and run in the fast loop;
the engine tests (marked ``spark``) start a Spark session: they need pyspark (a failure without
it, as it is in the [test] extra) and Java (skipped without it, a failure when CI=true).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from evalstore import Store
from evalstore.core.ranking import TIES
from evalstore.db import queries
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.metrics.pose_catalogue import RULED, rules_of
from evalstore.metrics.protocols import PROTOCOLS
from evalstore.metrics.registry import METRICS, unregister
from evalstore.metrics.single_label_catalogue import SAMPLE_CHECK
from evalstore.metrics.user import load_metrics
from evalstore.runs.meta import RunMeta
from evalstore.scale.export import export_runs
from tests.conformance.detsets import make_detset
from tests.pose_runs import ingest_pose_run, seeded_pose_run
from tests.single_label_data import seeded_run
from tools import write_spark_golden as golden

#: the rules a pose metric is read under: the default and every protocol's
POSE_RULES = (None, *(p.pose for p in PROTOCOLS.values() if p.pose is not None))

RTOL = 1e-12
K_VALUES = (1, 3, 50)

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")


# -- golden files and the transpiler (sqlglot only) -------------------------------------------


def test_golden_files_equal_the_current_transpilation() -> None:
    diff = golden.golden_diff()
    hint = "tests/golden/spark/ is stale; run `python tools/write_spark_golden.py`\n"
    assert diff == "", hint + diff


def test_every_metric_has_a_golden_file() -> None:
    folder = golden.golden_dir()
    assert folder == Path(__file__).parent / "golden" / "spark"
    assert sorted(p.stem for p in folder.glob("*.sql")) == golden.golden_metrics()
    assert golden.golden_metrics() == sorted({f for m in METRICS.values() for f in m.sql_files})


def test_the_query_catalogue_holds_no_spark_sql() -> None:
    # the goldens are test data: DuckDB callers cannot load Spark SQL by a catalogue name
    assert queries.load("metrics/ap").path == queries.sql_dir() / "metrics" / "ap.sql"
    with pytest.raises(EvalstoreError, match="no SQL query named 'spark/ap'"):
        queries.load("spark/ap")
    assert queries.names_with_prefix("spark") == []
    assert "metrics/ap" in queries.names_with_prefix("metrics/")
    assert not (queries.sql_dir() / "spark").exists()


@pytest.mark.slow  # about 1 s: transpiles every metric twice
def test_write_golden_and_check(tmp_path: Path) -> None:
    assert len(golden.write_golden(tmp_path)) == len(golden.golden_metrics())
    assert golden.write_golden(tmp_path) == []
    (tmp_path / "ap.sql").write_text("-- edited\n")
    (tmp_path / "gone.sql").write_text("select 1\n")
    assert golden.main(["--check", "--dir", str(tmp_path)]) == 1
    assert golden.main(["--write-golden", "--dir", str(tmp_path)]) == 0
    assert not (tmp_path / "gone.sql").exists()
    assert golden.main(["--check", "--dir", str(tmp_path)]) == 0


def test_parameters_become_spark_markers() -> None:
    from evalstore.scale.transpile import to_spark_sql

    sql = to_spark_sql(
        "select a from t where list_contains($runs, run_id) and task = $task "
        "and b > 0.5::double and s = '$task'"
    )
    assert ":runs" in sql and ":task" in sql and "ARRAY_CONTAINS" in sql
    assert "'$task'" in sql  # a string literal is left alone
    assert "$runs" not in sql


def test_every_metric_transpiles_without_duckdb_leftovers() -> None:
    from evalstore.scale.transpile import spark_sql

    for name in METRICS:
        sql = spark_sql(name)
        assert "$" not in sql, name
        for duckdb_only in ("LIST_CONTAINS", "::", "UNNEST"):
            assert duckdb_only not in sql.upper(), (name, duckdb_only)


def test_missing_pyspark_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalstore.scale import spark

    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(EvalstoreError, match=r"pip install 'evalstore\[spark\]'"):
        spark.spark_session()


def test_missing_java_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from evalstore.scale import spark

    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(EvalstoreError, match="Java 17"):
        spark.spark_session()


def test_ansi_mode_cannot_be_turned_off() -> None:
    from evalstore.scale import spark

    with pytest.raises(InvalidInput, match="ansi"):
        spark.spark_session(**{"spark.sql.ansi.enabled": "false"})


def test_spark_types_of_exported_columns() -> None:
    from evalstore.scale.spark import spark_type

    assert spark_type("VARCHAR[]") == "ARRAY<STRING>"
    assert spark_type("MAP(VARCHAR, VARCHAR)") == "MAP<STRING, STRING>"
    assert spark_type("TIMESTAMP") == "TIMESTAMP_NTZ"
    assert spark_type("TINYINT") == "TINYINT"
    with pytest.raises(EvalstoreError):
        spark_type("HUGEINT")


# -- the fixture: edge cases, exported -----------------------------------------------------------


def _ranking_edge_cases() -> tuple[dict[str, Any], pl.DataFrame]:
    rows: list[tuple[str, str, float, int]] = []

    def add(group: str, scores: list[float], labels: list[int]) -> None:
        for i, (s, lab) in enumerate(zip(scores, labels, strict=True)):
            rows.append((group, f"{group}-{i}", s, lab))

    inf = -np.inf
    add("no_pos", [0.9, 0.5, 0.1], [-1, -1, -1])
    add("all_ignored", [0.9, 0.5, 0.5], [0, 0, 0])
    add("ties", [1, 1, 1, 1, 0, 0, 0, 2, 2], [1, -1, 1, -1, 1, 1, -1, -1, 1])
    add("all_tied", [3] * 7, [1, -1, -1, 1, 0, -1, 1])
    add("null_scores", [0.8, inf, 0.3, inf, 0.3], [1, 1, -1, -1, 1])
    add("all_null", [inf, inf, inf], [1, -1, 1])
    add("override", [0.4, 0.3, 0.2, 0.1], [1, -1, 1, -1])
    add("override_no_pos", [0.4, 0.3], [-1, -1])
    add("single", [0.5], [1])
    add("single_neg", [0.5], [-1])
    add("signed_zero", [0.0, -0.0, -0.0, 0.0, 1.0, -1.0], [1, -1, 1, -1, -1, 1])
    add("ignored_mix", [0.9, 0.9, 0.8, 0.7, 0.7, 0.1], [0, 1, 0, -1, 1, 0])
    add("long", list(np.round(np.linspace(1, 0, 60) ** 2, 2)), [1, -1, -1, 0] * 15)
    add("recall_95", list(np.linspace(1, 0, 25)), [1] * 19 + [-1, 1] + [-1] * 4)  # R = 0.95
    group, item, score, label = zip(*rows, strict=True)
    data = {
        "group_id": np.array(group),
        "item_id": np.array(item),
        "score": np.array(score, dtype=np.float64),
        "label": np.array(label),
    }
    groups = pl.DataFrame(
        {
            "group_id": ["override", "override_no_pos", "ties", "single"],
            "n_positives": [5, 2, None, 1],
            "sequence": ["a", "b", "a", None],
        }
    )
    return data, groups


def _ranking_random(seed: int) -> tuple[dict[str, Any], pl.DataFrame]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 31, size=40)
    lengths[0] = max(lengths[0], 1)
    group = np.repeat(np.arange(lengths.size), lengths)
    scores = rng.integers(0, 5, size=group.size) / 3.0  # few distinct scores: heavy ties
    scores[rng.random(group.size) < 0.1] = -np.inf
    labels = rng.choice([-1, -1, 0, 1], size=group.size)
    present = np.unique(group)
    counts = np.array([(labels[group == g] == 1).sum() for g in present])
    extra = rng.integers(0, 4, size=present.size)
    override = pl.Series(counts + extra).to_list()
    override = [None if i % 2 else v for i, v in enumerate(override)]
    data = {"group_id": group, "item_id": np.arange(group.size), "score": scores, "label": labels}
    return data, pl.DataFrame({"group_id": present, "n_positives": override})


def _multilabel(seed: int) -> dict[str, Any]:
    """A multi-label classification run: 6 classes x 40 images, some (image, class) pairs
    without a row, heavy ties, NULL scores, ignored labels."""
    rng = np.random.default_rng(seed)
    cls, image = np.meshgrid(np.arange(6), np.arange(40))
    keep = rng.random(cls.size) < 0.9
    cls, image = cls.reshape(-1)[keep], image.reshape(-1)[keep]
    scores = rng.integers(-2, 4, size=cls.size) / 3.0
    scores[rng.random(cls.size) < 0.05] = -np.inf
    return {
        "group_id": [f"c{c}" for c in cls],
        "item_id": [f"i{i}" for i in image],
        "score": scores,
        "label": rng.choice([-1, -1, 0, 1], size=cls.size),
    }


def _verification(seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = 80
    scores = np.round(rng.standard_normal(n), 1)
    scores[::9] = -np.inf
    return {"item_id": np.arange(n), "score": scores, "label": rng.choice([-1, 1, 0], size=n)}


_H = [[1.0, 0.02, 4.0], [0.01, 1.0, -2.0], [1e-5, 0.0, 1.0]]


def _keypoints(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Pairs: many matches near a homography (estimation succeeds), no matches, three
    matches (estimation fails), no true homography, offsets exactly on the thresholds."""
    rng = np.random.default_rng(seed)
    h = np.array(_H)
    rows = []
    offsets = [(0.0, 0.0), (3.0, 0.0), (0.0, -3.0), (3.0, 4.0), (6.0, 8.0), (0.5, 0.25), (1, 1)]
    for pid, n in (("p_many", 40), ("p_three", 3), ("p_noh", 12), ("p_exact", 14)):
        for j in range(n):
            x0, y0 = float(rng.integers(0, 600)), float(rng.integers(0, 440))
            w = h @ np.array([x0, y0, 1.0])
            gx, gy = w[0] / w[2], w[1] / w[2]
            dx, dy = offsets[j % len(offsets)]
            if pid == "p_many":
                dx, dy = rng.normal(0, 1.5, size=2)
            rows.append((pid, x0, y0, gx + dx, gy + dy, gx, gy))
    matches = pl.DataFrame(
        rows, schema=["pair_id", "x0", "y0", "x1", "y1", "gt_x1", "gt_y1"], orient="row"
    )
    pairs: dict[str, list[Any]] = {
        "pair_id": ["p_many", "p_none", "p_three", "p_noh", "p_exact"],
        "width": [640, 640, 640, 320, 100],
        "height": [480, 480, 480, 240, 80],
        "kind": ["v", "v", "i", "i", None],
    }
    with_h = [True, True, True, False, True]
    for i in range(3):
        for j in range(3):
            pairs[f"h{i + 1}{j + 1}"] = [_H[i][j] if w else None for w in with_h]
    frame = pl.DataFrame(pairs).with_columns(
        [pl.col(f"h{i}{j}").cast(pl.Float64) for i in (1, 2, 3) for j in (1, 2, 3)]
    )
    return matches, frame


def _ingest_all(store: Store) -> dict[str, list[int]]:
    data, groups = _ranking_edge_cases()
    ids: dict[str, list[int]] = {"retrieval": [], "verification": [], "keypoints": []}
    ids["outcomes"] = []
    r = store.ingest(data, task="retrieval", run="rank/edge", groups=groups, git_commit=None)
    ids["retrieval"].append(r.run_id)
    r = store.ingest(_verification(1), task="verification", run="rank/edge", append=True)
    ids["verification"].append(r.run_id)
    for seed in (11, 12):
        data, groups = _ranking_random(seed)
        r = store.ingest(data, task="retrieval", run=f"rank/random{seed}", groups=groups)
        ids["retrieval"].append(r.run_id)
    r = store.ingest(_verification(2), task="verification", run="rank/verif", git_commit=None)
    ids["verification"].append(r.run_id)
    for seed in (31, 32):
        data = _multilabel(seed)
        r = store.ingest(data, task="classification", run=f"ml/{seed}", git_commit=None)
        ids.setdefault("multilabel", []).append(r.run_id)
    for seed in (21, 22):
        matches, pairs = _keypoints(seed)
        r = store.ingest_keypoints(matches, run=f"kp/{seed}", pairs=pairs, git_commit=None)
        ids["keypoints"].append(r.run_id)
    for seed in (41, 42):  # pairs with cameras and stated pose estimates (tests/pose_runs.py)
        run = seeded_pose_run(np.random.default_rng(seed))
        ids.setdefault("cameras", []).append(ingest_pose_run(store, run, f"pose/{seed}"))
    outcomes = {
        "group_id": ["a", "b", "zero", "c", "zero2"],
        "tp": [3, 0, 0, 10, 0],
        "fp": [1, 2, 0, 0, 0],
        "fn": [0, 5, 0, 1, 0],
    }
    ids["outcomes"].append(store.ingest_outcomes(outcomes, run="out/a").run_id)
    zeros = {"group_id": ["x", "y"], "tp": [0, 0], "fp": [0, 0], "fn": [0, 0]}
    ids["outcomes"].append(store.ingest_outcomes(zeros, run="out/zero").run_id)
    # detection runs (COCO's crowd regions, ties, a category without ground truth, images
    # with more than 100 detections): their matches are made by the export
    for seed in (0, 1):
        gt, dets = make_detset(seed, n_images=14, n_categories=3)
        folder = Path(tempfile.mkdtemp())
        (folder / "gt.json").write_text(json.dumps(gt))
        (folder / "dt.json").write_text(json.dumps(dets))
        meta = RunMeta(f"det/{seed}", git_commit=False)
        ids.setdefault("detection", []).append(
            store.ingest_coco(folder / "dt.json", folder / "gt.json", meta=meta).run_id
        )
        shutil.rmtree(folder)
    # single-label classification runs (one list per class, one +1 per sample; ties, tenths
    # on ece's bin edges, a 1.0, NULL scores in the first)
    for seed, probabilities in ((31, False), (32, True)):
        rows = seeded_run(np.random.default_rng(seed), probabilities=probabilities)
        r = store.ingest(rows, task="classification", run=f"single/{seed}", git_commit=None)
        ids.setdefault("classification" if probabilities else "single_label", []).append(r.run_id)
    # a run that is exported but never asked for: it must not leak into the results
    store.ingest(_ranking_random(99)[0], task="retrieval", run="rank/other", git_commit=None)
    return ids


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = Path(tmp_path_factory.mktemp("spark"))
    with Store(root / "s.duckdb") as store:
        ids = _ingest_all(store)
        export_runs(store, root / "export")
        yield store, root / "export", ids


@pytest.fixture(scope="module")
def spark() -> Any:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if os.environ.get("CI") == "true":
            pytest.fail(
                "no Java for Spark (.ci/run installs openjdk-17-jre-headless)", pytrace=False
            )
        pytest.skip("no Java for Spark (a failure when CI=true)")
    from evalstore.scale.spark import spark_session

    session = spark_session(
        "local[2]",
        **{
            "spark.sql.shuffle.partitions": 2,
            "spark.default.parallelism": 2,
            "spark.ui.enabled": False,
            "spark.driver.memory": "1g",
            # performance only, for tiny data: no adaptive re-planning, no pruning subqueries
            "spark.sql.adaptive.enabled": False,
            "spark.sql.optimizer.dynamicPartitionPruning.enabled": False,
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# -- parity ---------------------------------------------------------------------------------------


def _duckdb(store: Store, name: str, params: dict[str, Any]) -> pl.DataFrame:
    text = METRICS[name].query_for(params.get("ties") or "grouped").text
    return store.con.sql(text, params=queries.bind(text, params)).pl()


def _keys(name: str) -> list[str]:
    metric = METRICS[name]
    if metric.kind == "curve":
        return ["run_id", "group_id", "rn"]
    return ["run_id", "group_id"] + ([metric.sweep.column] if metric.sweep else [])


def _normalised(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    return frame.with_columns(
        pl.col("run_id").cast(pl.Int64), pl.col("group_id").cast(pl.String)
    ).sort(keys, nulls_last=False)


def assert_same(duck: pl.DataFrame, spark: pl.DataFrame, keys: list[str], what: str) -> None:
    assert duck.columns == spark.columns, what
    assert duck.height == spark.height, (what, duck.height, spark.height)
    d, s = _normalised(duck, keys), _normalised(spark, keys)
    for key in keys:
        have, want = s[key].to_list(), d[key].to_list()
        assert have == want, (what, key)
    for column in [c for c in d.columns if c not in keys]:
        want = d[column].cast(pl.Float64).to_numpy()
        have = s[column].cast(pl.Float64).to_numpy()
        assert np.array_equal(np.isnan(want), np.isnan(have)), (what, column, "NULLs differ")
        ok = ~np.isnan(want)
        np.testing.assert_allclose(have[ok], want[ok], rtol=RTOL, atol=0, err_msg=what)


def _cases(ids: dict[str, list[int]]) -> list[tuple[str, str, dict[str, Any]]]:
    """(metric, task, params): every registered metric, on every source it reads.

    The tie policy acts on the ranking points that every ranking metric shares, so ``ap`` and
    ``pr_curve`` (the points themselves) run under all four policies; the metrics computed
    from those points run under ``grouped`` (tied items enter together) and ``input`` (one
    point per rank), with k = 1, 3, 50 under ``grouped`` (cuts through tied groups). The
    verification task (one global list, group_id NULL) runs every ranking metric once, and so
    do the detection runs' lists (made by the export from their boxes, under `input` ties).
    The multi-label metrics run on two classification runs at four thresholds, a negative one
    too, their top-k forms under `grouped` (k = 1, 3), `input` and `docid`.
    """
    cases: list[tuple[str, str, dict[str, Any]]] = []

    def ranking(name: str, task: str, ties: str, k: int | None = None) -> None:
        params = {"runs": ids[task], "task": task, "ties": ties, "k": k}
        cases.append((name, task, params))

    for name, metric in sorted(METRICS.items()):
        if SAMPLE_CHECK in metric.checks:  # single-label runs (of probabilities for ece)
            runs = [*ids["classification"], *([] if metric.sweep else ids["single_label"])]
            for ties in TIES:
                params = {"runs": runs, "task": "classification", "ties": ties, "k": 2}
                if metric.sweep is not None:
                    params[metric.sweep.param] = [1.0, 10.0, 15.0]
                cases.append((name, "classification", params))
        elif metric.tasks == ("classification",):  # multi-label: thresholds; top k with ties
            top_k = [("grouped", 1), ("grouped", 3), ("input", 3), ("docid", 3)]
            for ties, k in top_k if "k" in metric.params else [("grouped", None)]:
                params = {"runs": ids["multilabel"], "task": "classification",
                          "ties": ties, "k": k, "thresholds": [-1.0, 0.0, 1 / 3, 0.5]}  # fmt: skip
                cases.append((name, "classification", params))
        elif metric.source == "scores":
            policies = TIES if name in ("ap", "pr_curve") else ("grouped", "input")
            for ties in policies:
                ks = K_VALUES if "k" in metric.params and ties == "grouped" else (3,)
                for k in ks:
                    ranking(name, "retrieval", ties, k)
            ranking(name, "verification", "grouped", 3)
            ranking(name, "detection", "input", 3)  # the lists the export made from boxes
        elif metric.source in ("pairs", "cameras"):
            key = "keypoints" if metric.source == "pairs" else "cameras"
            params: dict[str, Any] = {"runs": ids[key], "task": "keypoints"}
            if metric.sweep is not None:
                extra = {"sigma": [0.0, 5.0], "threshold": [0.5, 3.0], "eps": [0.0, 2.0]}
                more = {"epipolar_precision": [1e-4, 1e-2], "matching_score": [1e-4, 1e-2],
                        "pose_maa_imc": [5.0]}  # fmt: skip
                values = {*metric.sweep.default, *more.get(name, extra[metric.sweep.column])}
                params[metric.sweep.param] = sorted(values)
            # the pose metrics under the default rules and each protocol's
            for rules in POSE_RULES if name in RULED else [None]:
                binds = rules_of(rules).binds() if name in RULED else {}
                cases.append((name, "keypoints", {**params, **binds}))
        elif metric.source == "detections":
            cases.append((name, "detection", {"runs": ids["detection"], "task": "detection"}))
        else:
            cases.append((name, "outcomes", {"runs": ids["outcomes"], "task": "outcomes"}))
    return cases


def test_fixture_holds_the_edge_cases(source: Any) -> None:
    store, _, ids = source
    ap = _duckdb(store, "ap", {"runs": ids["retrieval"], "task": "retrieval", "ties": "grouped"})
    assert ap["value"].null_count() >= 3  # no positives, all ignored, random empties
    pairs = store.con.sql("select pair_id, e11 from pairs").pl()
    assert pairs["e11"].null_count() >= 2 and pairs["e11"].drop_nulls().len() >= 2
    iou = _duckdb(store, "iou_micro", {"runs": ids["outcomes"]})
    assert iou["value"].null_count() == 1
    params = {"runs": ids["verification"], "task": "verification", "ties": "input"}
    verif = _duckdb(store, "ap", params)
    assert verif["group_id"].null_count() == len(ids["verification"])


@pytest.mark.spark
def test_every_metric_equals_duckdb_on_spark(source: Any, spark: Any) -> None:
    from evalstore.scale.spark import compute_per_list

    store, export, ids = source
    cases = _cases(ids)
    assert {name for name, _, _ in cases} == set(METRICS)
    expected = [_duckdb(store, name, params) for name, _, params in cases]
    assert all(frame.height > 0 for frame in expected)

    def on_spark(case: tuple[str, str, dict[str, Any]]) -> pl.DataFrame:
        name, task, params = case
        return compute_per_list(spark, export, name, task, params["runs"], params)

    started = time.perf_counter()
    # Spark runs jobs of several threads at once: tiny queries mostly wait on scheduling
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(on_spark, cases))
    elapsed = time.perf_counter() - started
    for (name, task, params), duck, got in zip(cases, expected, results, strict=True):
        assert_same(duck, got, _keys(name), f"{name} {task} {params}")
    print(f"\n{len(cases)} Spark queries in {elapsed:.1f} s")


@pytest.mark.spark
def test_engine_hook_checks_the_export(source: Any, spark: Any, tmp_path: Path) -> None:
    from evalstore.scale.spark import SparkEngine

    store, export, ids = source
    engine = SparkEngine(export, store=store, spark=spark)
    params = {"runs": ids["retrieval"], "task": "retrieval", "ties": "grouped"}
    got = engine(METRICS["ap"], "retrieval", ids["retrieval"], params)
    assert_same(_duckdb(store, "ap", params), got, ["run_id", "group_id"], "engine")
    with pytest.raises(EvalstoreError, match="not in the export"):
        engine(METRICS["ap"], "retrieval", [999], params)
    # another store whose run 1 is something else: refused
    with Store(tmp_path / "other.duckdb") as other:
        other.ingest(_verification(5), task="verification", run="x/y", git_commit=None)
        foreign = SparkEngine(export, store=other, spark=spark)
        with pytest.raises(EvalstoreError, match="an export of another store"):
            foreign(METRICS["ap"], "verification", [1], {**params, "task": "verification"})


@pytest.mark.spark
def test_missing_table_folder_is_an_empty_view(source: Any, spark: Any, tmp_path: Path) -> None:
    from evalstore.scale.spark import compute_per_list

    store, _, ids = source
    only = tmp_path / "only-outcomes"
    export_runs(store, only, runs=["out/a"])
    assert not (only / "scores").exists()
    got = compute_per_list(spark, only, "iou", "outcomes", [ids["outcomes"][0]], {})
    assert got.height == 5
    empty = compute_per_list(
        spark, only, "ap", "retrieval", [ids["outcomes"][0]], {"ties": "grouped"}
    )
    assert empty.height == 0 and empty.columns == ["run_id", "group_id", "value"]


@pytest.mark.spark
def test_evaluate_with_the_spark_engine(source: Any, spark: Any) -> None:
    """The hook of evaluate(): values computed on Spark are stored with engine = spark and
    equal the DuckDB path's (means and slices included)."""
    from evalstore import evaluate
    from evalstore.scale.spark import SparkEngine

    store, export, _ = source
    runs = ["rank/edge", "kp/21", "out/zero"]
    keys = ["run", "task", "metric", "slice", "params"]
    duck = evaluate(store, runs, by=["sequence", "kind"], recompute=True).sort(keys)
    engine = SparkEngine(export, store=store, spark=spark)
    got = evaluate(store, runs, by=["sequence", "kind"], engine=engine).sort(keys)
    assert set(duck["engine"]) == {"duckdb"} and set(got["engine"]) == {"spark"}
    assert got.select(keys).equals(duck.select(keys))
    assert got["n_lists"].to_list() == duck["n_lists"].to_list()
    want = duck["value"].cast(pl.Float64).to_numpy()
    have = got["value"].cast(pl.Float64).to_numpy()
    assert np.array_equal(np.isnan(want), np.isnan(have))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(have[ok], want[ok], rtol=RTOL, atol=0)
    # cached per engine: a second call computes nothing on Spark
    again = evaluate(store, runs, by=["sequence", "kind"], engine=engine)
    assert set(again["engine"]) == {"spark"}


@pytest.mark.spark
def test_an_export_before_list_ids_is_refused(source: Any, spark: Any, tmp_path: Path) -> None:
    from evalstore.scale.spark import compute_per_list

    _, export, ids = source
    old = tmp_path / "old"
    shutil.copytree(export, old)
    manifest = json.loads((old / "manifest.json").read_text())
    manifest["schema_version"] = 5
    for table in ("scores", "groups"):
        spec = manifest["tables"][table]
        spec["columns"] = [c for c in spec["columns"] if c["name"] != "list_id"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(EvalstoreError, match="before lists had ids; export the runs again"):
        compute_per_list(spark, old, "ap", "retrieval", ids["retrieval"], {"ties": "grouped"})


@pytest.mark.spark
def test_a_users_metric_runs_on_spark(source: Any, spark: Any) -> None:
    """A metric file of a user (tests/user_metrics/hit_at_1.sql, in the portable subset)
    gives on Spark the values it gives on DuckDB."""
    from evalstore.scale.spark import compute_per_list

    store, export, ids = source
    load_metrics([Path(__file__).parent / "user_metrics"])
    try:
        for ties in ("grouped", "input"):
            params = {"runs": ids["retrieval"], "task": "retrieval", "ties": ties}
            got = compute_per_list(spark, export, "hit_at_1", "retrieval", ids["retrieval"], params)
            want = _duckdb(store, "hit_at_1", params)
            assert want.height > 0
            assert_same(want, got, ["run_id", "group_id"], f"hit_at_1 {ties}")
    finally:
        unregister("hit_at_1")
