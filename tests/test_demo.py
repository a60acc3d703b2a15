"""The demo end to end, on real data: every task and metric has values in range, and the
better method wins where it must."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from evalstore import Store, demo
from evalstore.analysis.configurations import groups
from evalstore.cli import app
from evalstore.demo import pose_runs
from evalstore.demo.detection import DETECTORS, run_detector
from evalstore.demo.detection_runs import SEED, demo_dataset
from evalstore.demo.digits import SEEDS
from evalstore.metrics.registry import DEFAULTS, METRICS
from tests.conformance.detsets import run_pycocotools

QUICK = os.environ.get("CI") == "true" or os.environ.get("EVALSTORE_DEMO_FULL") != "1"

pytestmark = pytest.mark.slow  # builds the demo: trains classifiers, computes descriptors

# quick keeps 3 of the 7 classifiers, each with every seed; both modes record every descriptor
CLASSIFIERS = (
    ["naive-bayes", "knn-5", "mlp-128"]
    if QUICK
    else ["naive-bayes", "logreg-c0.001", "logreg-c0.1", "knn-5", "logreg-c1", "mlp-32", "mlp-128"]
)
RUNS = (
    [f"digits/{c}-seed{s}" for c in CLASSIFIERS for s in SEEDS]
    + [f"hpatches/{d}" for d in ("sift", "orb", "akaze", "brisk", "sift_weak")]
    + [f"detection/{d}" for d in ("hough", "log", "dog", "doh")]
    + [f"pose/{m.name}-seed{s}" for m in pose_runs.MATCHERS for s in pose_runs.SEEDS]
)
TASKS = {
    "digits": ["classification"],
    "hpatches": ["verification", "matching", "retrieval", "keypoints"],
    "detection": ["detection"],
    "pose": ["keypoints"],
}
#: No demo object is large (area >= 96^2): COCO's APl and ARl have no ground truth in range,
#: pycocotools' -1, stored as NULL with no list (test_the_detection_truth_has_no_large_object).
UNDEFINED = {("detection", "coco_ap_large"), ("detection", "coco_ar_large")}
PAGES = ["index", "overview", "comparison", "curves", "heatmap", "hpatches"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, demo.DemoResult]:
    folder = tmp_path_factory.mktemp("demo")
    db = folder / "demo.duckdb"
    with Store(db) as store:
        result = demo.build(store, out=folder / "dashboards", quick=QUICK)
    return db, result


def overall(db: Path) -> pl.DataFrame:
    with Store(db, read_only=True) as store:
        return store.con.sql(
            "select run, experiment, task, metric, base_metric, params, value, n_lists "
            "from v_metrics where slice = ''"
        ).pl()


def test_every_task_and_default_metric_has_values(built: tuple[Path, demo.DemoResult]) -> None:
    db, result = built
    assert result.runs == RUNS
    frame = overall(db)
    assert sorted(set(frame["run"])) == sorted(RUNS)
    for run in RUNS:
        tasks = TASKS[run.split("/")[0]]
        assert sorted(set(frame.filter(pl.col("run") == run)["task"])) == sorted(tasks), run
        for task in tasks:
            # the pose runs get the pose metrics: a scene of planes has no homography
            # and the others no pose metric: their pairs have no cameras
            chosen = (
                pose_runs.POSE_METRICS
                if run.startswith("pose/")
                else [m for m in DEFAULTS[task] if METRICS[m].source != "cameras"]
            )
            for metric in chosen:
                rows = frame.filter(
                    pl.col("run") == run, pl.col("task") == task, pl.col("base_metric") == metric
                )
                assert rows.height > 0, (run, task, metric)
                if (task, metric) in UNDEFINED:
                    assert rows["value"].null_count() == rows.height, (run, task, metric)
                    assert (rows["n_lists"] == 0).all(), (run, task, metric)
                else:
                    assert rows["value"].null_count() == 0, (run, task, metric)
    classification = frame.filter(
        pl.col("task") == "classification",
        pl.col("base_metric").is_in(list(DEFAULTS["classification"])),
    )
    assert (classification["n_lists"] == 10).all()  # one list per digit class
    defined = frame.filter(pl.col("value").is_not_null())
    # the overall precision, recall and F1 (ML-GCN's OP, OR, OF1) pool every class's counts,
    # and the pose AUCs every pair's error: the run's value alone, no list's (n_lists 0)
    pooled = [f"{m}{k}" for m in ("op", "or", "of1") for k in ("", "_at_k")]
    pooled += ["pose_auc", "pose_maa"]
    assert (defined.filter(pl.col("base_metric").is_in(pooled))["n_lists"] == 0).all()
    assert (defined.filter(~pl.col("base_metric").is_in(pooled))["n_lists"] > 0).all()
    assert frame.height - defined.height == 2 * 4 * 2  # APl, ARl; 4 runs; default and coco


def test_values_are_in_range(built: tuple[Path, demo.DemoResult]) -> None:
    frame = overall(built[0]).drop_nulls("value")
    error = frame.filter(pl.col("base_metric") == "reprojection_error")
    degrees = frame.filter(pl.col("base_metric") == "pose_error")
    bounded = frame.filter(~pl.col("base_metric").is_in(["reprojection_error", "pose_error"]))
    assert bounded.height > 0
    assert bounded["value"].min() >= 0.0 and bounded["value"].max() <= 1.0
    assert error.height == 5  # one per descriptor, in pixels
    assert error["value"].min() >= 0.0 and error["value"].max() < 100.0
    assert degrees.height == 6  # one per pose run: the median pair's error, in degrees
    assert degrees["value"].min() > 0.0 and degrees["value"].max() < 5.0


def value(
    frame: pl.DataFrame, run: str, task: str, metric: str, params: str | None = None
) -> float:
    rows = frame.filter(
        pl.col("run") == run, pl.col("task") == task, pl.col("base_metric") == metric
    )
    if params is not None:
        rows = rows.filter(pl.col("params") == params)
    else:  # evalstore's defaults, not the values the demo also computes under protocols
        rows = rows.filter(~pl.col("params").str.contains('"protocol"'))
    assert rows.height == 1, (run, task, metric, rows)
    return float(rows["value"][0])


def test_the_demo_shows_values_under_the_official_protocols(
    built: tuple[Path, demo.DemoResult],
) -> None:
    frame = overall(built[0])
    named = frame["params"].str.json_path_match("$.protocol").drop_nulls().unique().to_list()
    assert sorted(named) == sorted(p for ps in demo.PROTOCOLS_SHOWN.values() for p in ps)
    devkit = value(frame, "digits/mlp-128-seed0", "classification", "ap_voc07",
                   '{"protocol":"voc07","ties":"input"}')  # fmt: skip
    assert 0.0 < devkit <= 1.0


def test_the_better_method_wins(built: tuple[Path, demo.DemoResult]) -> None:
    frame = overall(built[0])
    for task in ("matching", "retrieval", "verification"):
        sift = value(frame, "hpatches/sift", task, "ap")
        weak = value(frame, "hpatches/sift_weak", task, "ap")
        assert sift > weak, (task, sift, weak)
    sift = value(frame, "hpatches/sift", "keypoints", "precision_at_sigma", '{"sigma":3.0}')
    weak = value(frame, "hpatches/sift_weak", "keypoints", "precision_at_sigma", '{"sigma":3.0}')
    assert sift > weak
    for seed in SEEDS:
        best = value(frame, f"digits/mlp-128-seed{seed}", "classification", "ap_voc07")
        baseline = value(frame, f"digits/naive-bayes-seed{seed}", "classification", "ap_voc07")
        assert best > baseline, seed


def test_every_digits_configuration_has_its_seeds(built: tuple[Path, demo.DemoResult]) -> None:
    """Each classifier is one configuration of len(SEEDS) runs whose seed changes the result
    (also for the deterministic models: it draws the training subset), on the same test
    images, so that the runs pair item by item."""
    assert len(SEEDS) >= 3
    with Store(built[0], read_only=True) as store:
        frame = groups(store, experiment="digits", metrics=["map_voc07"], compute=False)
        seeds = store.con.sql(
            "select distinct json_type(params, '$.seed') from v_runs where experiment = 'digits'"
        ).fetchall()
        items, per_run = store.con.sql(
            "select count(distinct (s.group_id, s.item_id)), count(*) // count(distinct run_id) "
            "from scores s join runs using (run_id) where experiment = 'digits'"
        ).fetchall()[0]
    assert sorted(frame["group"]) == sorted(f"digits/{c}" for c in CLASSIFIERS)
    assert (frame["n_runs"] == len(SEEDS)).all()
    assert (frame["sd"] > 0).all(), frame.select("group", "sd")
    assert (frame["ci_low"] < frame["ci_high"]).all()
    assert seeds == [("UBIGINT",)]  # an int
    assert items == per_run == 10 * 899  # one list per class over the same held-out images


def test_slices_and_per_class_values(built: tuple[Path, demo.DemoResult]) -> None:
    with Store(built[0], read_only=True) as store:
        slices = {
            s
            for (s,) in store.con.sql(
                "select distinct slice from v_metrics where run = 'hpatches/sift'"
            ).fetchall()
        }
        classes = store.con.sql(
            "select count(distinct group_id) from v_lists where task = 'classification'"
        ).fetchall()[0][0]
    assert {
        "noise=easy",
        "noise=hard",
        "noise=tough",
        "kind=viewpoint",
        "kind=illumination",
    } <= slices
    assert classes == 10


def test_dashboards_are_written(built: tuple[Path, demo.DemoResult]) -> None:
    out = built[0].parent / "dashboards"
    assert sorted(p.name for p in built[1].dashboards) == sorted(f"{n}.html" for n in PAGES)
    assert all(p.parent == out and p.stat().st_size > 1000 for p in built[1].dashboards)
    assert (out / "plotly.min.js").is_file()  # offline: the pages load plotly from beside them
    overview = (out / "overview.html").read_text()
    assert all(run in overview for run in RUNS)


def test_demo_is_deterministic(built: tuple[Path, demo.DemoResult], tmp_path: Path) -> None:
    with Store(tmp_path / "again.duckdb") as store:
        assert demo.build(store, quick=QUICK).runs == RUNS
    keys = ["run", "task", "metric", "params"]
    first = overall(built[0]).sort(keys)
    again = overall(tmp_path / "again.duckdb").sort(keys)
    assert first.height == again.height > 0
    assert first.select(keys).equals(again.select(keys))
    undefined = first["base_metric"].is_in([m for _, m in UNDEFINED])
    assert first["value"].is_null().equals(undefined)
    assert again["value"].is_null().equals(undefined)
    diff = (first["value"] - again["value"]).abs().max()
    assert diff < 1e-12, diff


def per_category(db: Path, metric: str, params: str = "{}") -> dict[tuple[str, str], float]:
    """(run, category) -> the stored value of ``metric`` for that category alone."""
    with Store(db, read_only=True) as store:
        rows = store.con.execute(
            "select run, group_id, value from v_lists "
            "where task = 'detection' and metric = ? and params = ?",
            [metric, params],
        ).fetchall()
    return {(run, category): value for run, category, value in rows}


def test_the_detectors_rank_as_they_detect(built: tuple[Path, demo.DemoResult]) -> None:
    """Measured on the demo's dataset (quick and full): Hough's circles fit the coins best and
    find almost none of hubble's sources, DoH finds the most of those; over both, Hough leads
    in AP, LoG in AP50 (it finds more, less tightly)."""
    frame = overall(built[0])

    def ap(run: str, metric: str = "coco_ap") -> float:
        return value(frame, f"detection/{run}", "detection", metric, '{"protocol":"coco"}')

    assert ap("hough") > ap("log") > ap("doh") > ap("dog") > 0.0
    assert ap("log", "coco_ap50") > ap("hough", "coco_ap50")
    assert ap("hough", "coco_ap75") > ap("log", "coco_ap75")
    cat = per_category(built[0], "coco_ap", '{"protocol":"coco"}')
    assert len(cat) == 4 * 2  # two categories per run
    coin = {r.split("/")[1]: v for (r, c), v in cat.items() if c == "coin"}
    source = {r.split("/")[1]: v for (r, c), v in cat.items() if c == "source"}
    assert coin["hough"] > coin["log"] > coin["doh"] > coin["dog"] and coin["hough"] > 0.5
    assert source["doh"] > source["log"] > source["dog"] > source["hough"]
    assert per_category(built[0], "coco_ap") == cat  # the default evaluation


def test_the_detection_truth_has_no_large_object(built: tuple[Path, demo.DemoResult]) -> None:
    with Store(built[0], read_only=True) as store:
        smallest, largest, runs = store.con.sql(
            "select min(area), max(area), count(distinct run_id) from det_truth"
        ).fetchall()[0]
    assert runs == 4
    assert smallest < 32**2 < largest < 96**2  # small and medium objects, no large one


def test_the_detection_runs_equal_pycocotools(built: tuple[Path, demo.DemoResult]) -> None:
    """The stored runs (ingested as box tables) give pycocotools' 12 numbers and per-category
    AP, run on the demo's own COCO dict and results lists, to 1e-12."""
    frame = overall(built[0])
    cat = per_category(built[0], "coco_ap", '{"protocol":"coco"}')
    dataset = demo_dataset(QUICK)
    names = [c["name"] for c in dataset["categories"]]
    for detector in DETECTORS:
        run = f"detection/{detector}"
        e = run_pycocotools(dataset, run_detector(detector, dataset, SEED))
        for i, metric in enumerate(DEFAULTS["detection"]):
            rows = frame.filter(
                pl.col("run") == run,
                pl.col("base_metric") == metric,
                pl.col("params") == '{"protocol":"coco"}',
            )
            have = rows["value"][0]
            assert (have is None) == (e.stats[i] == -1), (run, metric)
            if have is not None:
                assert have == pytest.approx(e.stats[i], rel=1e-12, abs=1e-15), (run, metric)
        for k, name in enumerate(names):
            s = e.eval["precision"][:, :, k, 0, 2]
            want = float(s[s > -1].mean())
            assert cat[(run, name)] == pytest.approx(want, rel=1e-12, abs=1e-15), (run, name)


def test_the_digits_runs_report_what_classification_papers_do(
    built: tuple[Path, demo.DemoResult],
) -> None:
    """Every digits run has each of demo.DIGITS_METRICS, in range; top-1 accuracy and ECE
    equal scikit-learn's accuracy and a plain 15-bin ECE of the stored probabilities."""
    frame = overall(built[0])
    digits = frame.filter(pl.col("experiment") == "digits")
    for run in digits["run"].unique().to_list():
        found = set(digits.filter(pl.col("run") == run)["base_metric"].to_list())
        assert set(demo.DIGITS_METRICS) <= found, (run, set(demo.DIGITS_METRICS) - found)
    assert digits["value"].drop_nulls().is_between(0.0, 1.0).all()
    with Store(built[0], read_only=True) as store:
        rows = store.con.sql(
            "select s.group_id, s.item_id, s.score, s.label from scores s "
            "join v_runs r using (run_id) where r.run = 'digits/mlp-128-seed0' "
            "order by s.item_id, s.group_id"
        ).pl()
    proba = rows["score"].to_numpy().reshape(-1, 10)
    truth = rows["label"].to_numpy().reshape(-1, 10).argmax(axis=1)
    confidence, predicted = proba.max(axis=1), proba.argmax(axis=1)
    correct = predicted == truth
    # equal-width bins; a confidence on an edge opens the bin above (torch.bucketize, right)
    bins = np.searchsorted(np.linspace(0.0, 1.0, 16), confidence, side="right") - 1
    ece = sum(abs(correct[bins == b].mean() - confidence[bins == b].mean()) * (bins == b).mean()
              for b in np.unique(bins))  # fmt: skip
    top1 = value(frame, "digits/mlp-128-seed0", "classification", "top1_accuracy")
    assert top1 == pytest.approx(correct.mean(), abs=1e-12)
    calibration = value(
        frame, "digits/mlp-128-seed0", "classification", "ece", '{"bins":15.0,"ties":"grouped"}'
    )
    assert calibration == pytest.approx(ece, abs=1e-9)


def test_the_readme_table_is_the_demos(built: tuple[Path, demo.DemoResult]) -> None:
    """The README's digits table is what its command prints, row by row, for every
    configuration the demo built (the quick demo builds 3 of the 7, with the same data)."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    command = next(line for line in readme.splitlines()
                   if line.startswith("evalstore leaderboard -e digits"))  # fmt: skip
    args = command.split()[1:]
    args[args.index("--db") + 1] = str(built[0])
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    printed = {line.split(" | ")[0]: line for line in out.output.splitlines()
               if line.startswith("| digits/")}  # fmt: skip
    header = out.output.splitlines()[0]
    assert header in readme
    assert len(printed) == len(CLASSIFIERS)
    for row in printed.values():
        assert row in readme, row
