"""evalstore eval / metrics: tasks, defaults, caching by definition SHA, slices, VOC input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import snapshot

from evalstore import InvalidInput, Store
from evalstore.analysis.evaluate import evaluate, stored_metrics
from evalstore.core import ranking
from evalstore.db import queries
from evalstore.metrics.registry import METRICS


def lists(
    seed: int, n_lists: int = 6, n_items: int = 40, quality: float = 1.0
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(n_lists), n_items)
    labels = rng.choice([-1, -1, -1, 0, 1], size=group.size)
    scores = np.round(rng.standard_normal(group.size) + quality * (labels == 1), 1)
    return {"group_id": group, "item_id": np.arange(group.size), "score": scores, "label": labels}


def eval_json(cli: Any, *args: str) -> list[dict[str, Any]]:
    result = cli("eval", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_default_metrics_per_task(store: Store) -> None:
    for task in ("verification", "matching", "retrieval", "classification"):
        data = lists(1)
        if task == "verification":
            data = {k: v for k, v in data.items() if k != "group_id"}
        store.ingest(data, task=task, run=f"r/{task}")
    frame = evaluate(store, None, all_runs=True)
    got = sorted(set(zip(frame["task"], frame["metric"], strict=True)))
    assert got == [
        ("classification", "map"),
        ("classification", "map_voc07"),
        ("classification", "map_voc10"),
        ("matching", "map"),
        ("retrieval", "map"),
        ("verification", "ap"),
        ("verification", "fpr95"),
    ]


def test_json_fields_and_values_match_numpy(cli: Any, db: Path) -> None:
    data = lists(2)
    with Store(db) as store:
        store.ingest(data, task="retrieval", run="exp/a")
    rows = eval_json(cli, "exp/a", "--metric", "ap", "--metric", "precision_at_k", "--k", "5")
    for row in rows:
        assert {
            "run",
            "experiment",
            "task",
            "metric",
            "slice",
            "value",
            "n_lists",
            "n_skipped",
        } <= set(row)
    by_metric = {r["metric"]: r for r in rows}
    _, aps = ranking.per_list("ap", data["group_id"], data["score"], data["label"])
    assert by_metric["map"]["value"] == pytest.approx(np.nanmean(aps), rel=1e-12)
    assert by_metric["map"]["n_lists"] + by_metric["map"]["n_skipped"] == 6
    assert by_metric["precision_at_k"]["params"] == {"k": 5, "ties": "grouped"}
    assert by_metric["map"]["run"] == "exp/a" and by_metric["map"]["experiment"] == "exp"


def test_lists_without_positives_are_left_out_and_counted(store: Store) -> None:
    data = lists(3)
    data["label"][data["group_id"] == 2] = -1
    data["label"][data["group_id"] == 4] = 0
    store.ingest(data, task="retrieval", run="r")
    [row] = evaluate(store, ["r"]).to_dicts()
    assert (row["n_lists"], row["n_skipped"]) == (4, 2)


def test_cache_is_reused_then_invalidated_by_a_changed_definition(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.ingest(lists(4), task="retrieval", run="r")
    first = evaluate(store, ["r"])
    computed_at = store.con.sql("select computed_at from metric_values").fetchall()
    again = evaluate(store, ["r"])
    assert store.con.sql("select computed_at from metric_values").fetchall() == computed_at
    assert first["value"].to_list() == again["value"].to_list()
    # a comment or a re-indent does not change the definition ...
    original = queries.load("metrics/ap")
    reworded = "-- reworded\n" + original.text.replace("\n", "\n  ") + "\n-- revised\n"
    assert queries.Query(original.name, reworded, original.path).sha == original.sha
    # ... a changed SQL text (new SHA) makes the stored value stale ...
    code = original.text.rstrip().rstrip(";") + "\nlimit 1000000000"
    changed = queries.Query(original.name, code, original.path)
    monkeypatch.setattr(
        queries, "load", lambda name: changed if name == "metrics/ap" else original_load(name)
    )
    stale = stored_metrics(store, ["r"])
    assert stale["stale"].to_list() == [True]
    # ... and eval recomputes it from the raw rows under the new SHA
    fresh = evaluate(store, ["r"])
    assert fresh["stale"].to_list() == [False]
    assert fresh["definition_sha"][0] == METRICS["ap"].sha != first["definition_sha"][0]


original_load = queries.load


def test_recompute_and_all(store: Store) -> None:
    store.ingest(lists(5), task="retrieval", run="a")
    store.ingest(lists(6), task="retrieval", run="b")
    evaluate(store, ["a"])
    before = store.con.sql("select computed_at from metric_values where run_id = 1").fetchall()[0]
    frame = evaluate(store, None, all_runs=True, recompute=True)
    assert sorted(frame["run"].to_list()) == ["default/a", "default/b"]
    after = store.con.sql("select computed_at from metric_values where run_id = 1").fetchall()[0]
    assert after > before


def test_ties_are_part_of_the_cache_key(store: Store) -> None:
    data = lists(7)
    store.ingest(data, task="retrieval", run="r")
    values = {t: evaluate(store, ["r"], ties=t)["value"][0] for t in ranking.TIES}
    assert values["pessimistic"] <= values["input"] <= values["optimistic"]
    assert values["pessimistic"] <= values["docid"] <= values["optimistic"]
    assert values["pessimistic"] < values["optimistic"]  # the scores are rounded: many ties
    assert store.con.sql("select count(*) from metric_values").fetchall()[0] == (len(ranking.TIES),)


def test_by_slice_and_by_list(store: Store, tmp_path: Path) -> None:
    data = lists(8)
    groups = tmp_path / "groups.csv"
    groups.write_text("group_id,difficulty\n0,easy\n1,easy\n2,hard\n3,hard\n4,tough\n5,tough\n")
    store.ingest(data, task="matching", run="r", groups=groups)
    frame = evaluate(store, ["r"], by=["difficulty", "pair"])
    _, aps = ranking.per_list("ap", data["group_id"], data["score"], data["label"])
    by_slice = dict(zip(frame["slice"], frame["value"], strict=True))
    assert by_slice["difficulty=easy"] == pytest.approx(np.mean(aps[:2]), rel=1e-12)
    assert by_slice["difficulty=tough"] == pytest.approx(np.mean(aps[4:]), rel=1e-12)
    assert by_slice["pair=3"] == pytest.approx(aps[3], rel=1e-12)
    names = dict(zip(frame["slice"], frame["metric"], strict=True))
    assert names[""] == "map" and names["difficulty=easy"] == "map" and names["pair=3"] == "ap"


def test_n_positives_override_lowers_recall(store: Store) -> None:
    data = lists(9)
    counts = [(data["label"][data["group_id"] == g] == 1).sum() for g in range(6)]
    store.ingest(data, task="matching", run="plain")
    store.ingest(
        data,
        task="matching",
        run="override",
        groups=pl.DataFrame({"group_id": np.arange(6), "n_positives": np.array(counts) + 10}),
    )
    frame = evaluate(store, ["plain", "override"])
    plain, override = frame.sort("run_id")["value"].to_list()
    assert override < plain


def test_n_positives_below_the_labels_is_refused(db: Path) -> None:
    data = lists(10)
    Store(db).close()
    before = snapshot(db)
    store = Store(db)
    with pytest.raises(InvalidInput, match="list '0' has n_positives 0 but"):
        store.ingest(
            data,
            task="matching",
            run="r",
            groups=pl.DataFrame({"group_id": [0], "n_positives": [0]}),
        )
    store.close()
    assert snapshot(db) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["r", "--metric", "nope"], "unknown metric 'nope'"),
        (["r", "--ties", "random"], "unknown --ties 'random'"),
        (["r", "--k", "0"], "--k must be >= 1"),
        (["missing"], "no run 'missing'"),
        ([], "name at least one run, or pass --all"),
        (["r", "--metric", "pr_curve"], "pr_curve is a curve"),
    ],
)
def test_eval_errors(cli: Any, db: Path, args: list[str], message: str) -> None:
    with Store(db) as store:
        store.ingest(lists(11), task="retrieval", run="r")
    result = cli("eval", *args)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert message in result.stderr


def test_metrics_command_reads_the_cache(cli: Any, db: Path) -> None:
    with Store(db) as store:
        store.ingest(lists(12), task="classification", run="c")
    computed = eval_json(cli, "c", "--by", "class")
    result = cli("metrics", "c", "--format", "json")
    assert result.exit_code == 0
    stored = json.loads(result.stdout)
    assert {r["metric"] for r in stored} == {"map", "map_voc07", "map_voc10"}
    assert {r["metric"] for r in computed} == {
        "map", "map_voc07", "map_voc10", "ap", "ap_voc07", "ap_voc10",
    }  # fmt: skip
    assert all(r["stale"] is False for r in stored)
    table = cli("eval", "c")
    assert table.exit_code == 0 and "map_voc07" in table.stdout


# -- PASCAL VOC files --------------------------------------------------------------------------

GT = {
    "cat": "000005 -1\n000007  1\n000009  0\n000012  1\n",
    "dog": "000005 -1\n000007 -1\n000009  1\n000012 -1\n",
}
RESULTS = {
    "cat": "000005 0.9\n000007 0.8\n000009 0.1\n000012 0.5\n",
    "dog": "000005 0.2\n000007 0.3\n000009 0.7\n000012 0.1\n",
}


def voc_files(tmp_path: Path, results: dict[str, str] = RESULTS) -> tuple[list[str], Path]:
    gt = tmp_path / "Main"
    gt.mkdir(exist_ok=True)
    for cls, text in GT.items():
        (gt / f"{cls}_test.txt").write_text(text)
    paths = []
    for cls, text in results.items():
        path = tmp_path / f"comp1_cls_test_{cls}.txt"
        path.write_text(text)
        paths.append(str(path))
    return paths, gt


def test_voc_classification(cli: Any, tmp_path: Path) -> None:
    paths, gt = voc_files(tmp_path)
    result = cli(
        "ingest",
        *paths,
        "--format",
        "voc",
        "--voc-gt",
        str(gt),
        "--task",
        "classification",
        "--run",
        "voc/m",
    )
    assert result.exit_code == 0, result.output
    rows = {(r["metric"], r["slice"]): r["value"] for r in eval_json(cli, "voc/m", "--by", "class")}
    # cat: ranked 0.9 (-1), 0.8 (+1), 0.5 (+1); 000009 is difficult (0), ignored.
    #   points (R, P): (0, 0), (1/2, 1/2), (1, 2/3); envelope 2/3 everywhere:
    #   VOC07 = 11 * (2/3) / 11 = 2/3; VOC10 = (1/2)(2/3) + (1/2)(2/3) = 2/3
    # dog: the one positive ranked first: AP = 1
    assert rows[("ap_voc07", "class=cat")] == pytest.approx(2 / 3, rel=1e-15)
    assert rows[("ap_voc10", "class=cat")] == pytest.approx(2 / 3, rel=1e-15)
    assert rows[("ap_voc07", "class=dog")] == 1.0
    assert rows[("map_voc10", "")] == pytest.approx((2 / 3 + 1) / 2, rel=1e-15)


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ({"cat": RESULTS["cat"] + "000099 0.3\n"}, "line 5: image '000099' is not in"),
        ({"cat": RESULTS["cat"] + "000007 0.1\n"}, "image '000007' appears twice"),
        ({"cat": "000005 0.9\n000007\n"}, "line 2: expected '<image_id> <confidence>'"),
        ({"cat": "000005 high\n"}, "line 1: 'high' is not a valid confidence"),
        ({"cow": "000005 0.9\n"}, "cow_test.txt: no such file"),
    ],
)
def test_voc_errors(
    cli: Any, db: Path, tmp_path: Path, results: dict[str, str], message: str
) -> None:
    paths, gt = voc_files(tmp_path, results)
    before = snapshot(db)
    result = cli(
        "ingest",
        *paths,
        "--format",
        "voc",
        "--voc-gt",
        str(gt),
        "--task",
        "classification",
        "--run",
        "v",
    )
    assert result.exit_code == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert snapshot(db) == before


def test_every_registered_metric_is_documented() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "metrics.md").read_text()
    for name in METRICS:
        assert f"`{name}`" in doc


def test_voc_missing_images_rank_last_in_ground_truth_order(cli: Any, tmp_path: Path) -> None:
    """The devkit's out=-Inf for images without a result: ranked last (ground-truth order
    among themselves) and counted, one warning per class; equal confidences keep the
    ground-truth order under --ties input."""
    gt = tmp_path / "Main"
    gt.mkdir()
    (gt / "cat_test.txt").write_text("a -1\nb 1\nc 1\nd -1\ne 1\n")
    res = tmp_path / "comp1_cls_test_cat.txt"
    res.write_text("d 0.5\nb 0.5\na 0.9\n")  # c and e missing; d and b tie
    result = cli(
        "ingest", str(res), "--format", "voc", "--voc-gt", str(gt),
        "--task", "classification", "--run", "voc/m",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stderr.count("Warning:") == 1 and "2 image(s)" in result.stderr
    rows = {r["metric"]: r["value"] for r in eval_json(cli, "voc/m", "--ties", "input")}
    # devkit ranking: a(-) 0.9, then b(+) before d(-) (gt order of the tie), then c(+), e(+)
    # at -Inf: P at each positive: 1/2, 2/4, 3/5; R 1/3, 2/3, 1
    # VOC10: (1/3)(0.6) * 3 = 0.6 (the envelope is 0.6 from the first positive on)
    assert rows["map_voc10"] == pytest.approx(0.6, rel=1e-15)
    # VOC07 (devkit grid): every t in 0..1 is reached with envelope 0.6 -> 0.6
    assert rows["map_voc07"] == pytest.approx(0.6, rel=1e-15)
    # plain AP tells the tie order apart: b first (1/2 + 2/4 + 3/5) / 3; d first would give
    # (1/3 + 2/4 + 3/5) / 3
    ap = eval_json(cli, "voc/m", "--ties", "input", "-m", "ap")[0]["value"]
    assert ap == pytest.approx((1 / 2 + 2 / 4 + 3 / 5) / 3, rel=1e-15)
