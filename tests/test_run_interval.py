"""The interval of one run's value (``evalstore eval --ci``, evalstore/analysis/intervals.py).

Fast: each path on tiny data (lists, items within lists, a run value recomputed on resampled
items), seeded bit for bit, never outside the metric's range, the warning below 5 lists, the
refusals; the quantile rule and the resample against a transcription of torchmetrics'
``BootStrapper``. Slow: the coverage of the 95% interval on data with a known answer
(docs/statistics.md, "The interval of one run's value").
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import average_precision_score
from typer.testing import CliRunner

from evalstore import Store, evaluate
from evalstore.analysis import intervals, run_draws
from evalstore.analysis.intervals import CI, mean_replicates
from evalstore.analysis.statistics import percentile_interval
from evalstore.cli import app
from evalstore.errors import InvalidInput
from evalstore.metrics.registry import (
    METRICS,
    KeypointRun,
    Outcomes,
    Params,
    RankedLists,
    Result,
)

# -- torchmetrics' BootStrapper, transcribed -------------------------------------------------
# Lightning-AI/torchmetrics src/torchmetrics/wrappers/bootstrapping.py at
# e910a6e5bda49fa4a2417efc3824994e0b9bbbf5:
#
#     def _bootstrap_sampler(size, sampling_strategy="poisson"):
#         if sampling_strategy == "poisson":
#             p = torch.distributions.Poisson(1)
#             n = p.sample((size,))
#             return torch.arange(size).repeat_interleave(n.long(), dim=0)
#         if sampling_strategy == "multinomial":
#             return torch.multinomial(torch.ones(size), num_samples=size, replacement=True)
#     ...
#     sample_idx = _bootstrap_sampler(size, sampling_strategy=self.sampling_strategy)
#     new_args = apply_to_collection(args, Tensor, torch.index_select, dim=0, index=sample_idx)
#     self.metrics[idx].update(*new_args, **new_kwargs)
#     ...
#     computed_vals = torch.stack([m.compute() for m in self.metrics], dim=0)
#     output_dict["quantile"] = torch.quantile(computed_vals, self.quantile)
#
# torch.quantile (pytorch/pytorch aten/src/ATen/native/Sorting.cpp at
# 8b375c70628d06532cc797877a6a7d0a61fa7f05, quantile_impl, interpolation "linear"):
#
#     sorted = std::get<0>(self.flatten().sort());
#     ranks = q * last_index;                       // last_index = sorted.size(-1) - 1
#     Tensor ranks_below = ranks.toType(kLong);
#     Tensor values_below = sorted.gather(-1, ranks_below);
#     Tensor weights = ranks - ranks_below;
#     Tensor ranks_above = ranks.ceil_().toType(kLong);
#     Tensor values_above = sorted.gather(-1, ranks_above);
#     values_below.lerp_(values_above, weights);
#
# and lerp (aten/src/ATen/native/Lerp.h):
#
#     return is_lerp_weight_small(weight)             // std::abs(weight) < 0.5
#         ? self + weight * (end - self)
#         : end - (end - self) * (opmath_t(1) - weight);


def _torch_quantile(values: np.ndarray, q: float) -> float:
    ordered = np.sort(values)
    rank = q * (ordered.size - 1)
    below = int(rank)
    weight = rank - below
    low, high = ordered[below], ordered[math.ceil(rank)]
    if abs(weight) < 0.5:
        return float(low + weight * (high - low))
    return float(high - (high - low) * (1.0 - weight))


def _poisson_sample(counts: np.ndarray) -> np.ndarray:
    """``_bootstrap_sampler``'s "poisson" index: ``arange(size).repeat_interleave(n)``."""
    return np.repeat(np.arange(counts.size), counts)


@pytest.mark.parametrize("level", [0.95, 0.9, 0.5])
@pytest.mark.parametrize("n", [7, 100, 1000])
def test_the_interval_is_torch_quantile_of_the_replicates(level: float, n: int) -> None:
    reps = np.random.default_rng(n).normal(size=n) ** 3
    reps[: n // 3] = reps[0]  # ties among the replicates
    alpha = (1 - level) / 2  # the quantiles asked of torch.quantile: ours
    want = (_torch_quantile(reps, alpha), _torch_quantile(reps, 1 - alpha))
    assert percentile_interval(reps, level) == want  # bit for bit


def test_a_list_replicate_is_the_metric_of_the_index_selected_lists() -> None:
    """BootStrapper's "multinomial" strategy: ``size`` indices drawn uniformly with replacement,
    the inputs index-selected along their first axis, the metric (here the mean over lists)
    computed on them; ours draws the same indices from its seeded generator."""
    values = np.random.default_rng(3).random(23)
    ours = mean_replicates(values, np.random.default_rng(11), 50)
    draw = np.random.default_rng(11)
    theirs = [values[draw.integers(0, values.size, size=values.size)].mean() for _ in range(50)]
    assert ours.tolist() == theirs


def test_an_item_replicate_is_the_index_selected_run() -> None:
    """An item drawn ``n`` times is present ``n`` times: the rows BootStrapper's "poisson"
    index selects for the counts ``n`` (items here: groups of counted outcomes)."""
    rng = np.random.default_rng(5)
    outcomes = Outcomes(np.arange(9), *(rng.integers(0, 20, 9) for _ in range(3)))
    counts = rng.poisson(1.0, size=9)
    expanded = run_draws.expand(outcomes, counts)
    index = _poisson_sample(counts)
    for column in ("tp", "fp", "fn"):
        assert getattr(expanded, column).tolist() == getattr(outcomes, column)[index].tolist()
    pooled = METRICS["iou_micro"]
    tp, fp, fn = (getattr(outcomes, c)[index].sum() for c in ("tp", "fp", "fn"))
    assert run_draws.run_value(pooled, expanded, Params()) == tp / (tp + fp + fn)


# -- each path on tiny data --------------------------------------------------------------------


def _lists(
    store: Store, run: str, n_lists: int, n_items: int, seed: int, *, perfect: bool = False
) -> None:
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(n_lists), n_items)
    labels = np.tile(np.where(np.arange(n_items) % 2 == 0, 1, -1), n_lists)
    scores = (
        labels * 5.0 + rng.random(group.size) if perfect else rng.normal(size=group.size) + labels
    )
    data = {
        "group_id": group,
        "item_id": np.tile(np.arange(n_items), n_lists),
        "score": scores,
        "label": labels,
    }
    store.ingest(data, task="retrieval", run=run, git_commit=None)


@pytest.fixture
def runs(db: Path) -> Path:
    with Store(db) as store:
        _lists(store, "many", 20, 12, 0)
        _lists(store, "few", 3, 30, 1)
        _lists(store, "perfect_many", 12, 6, 2, perfect=True)
        _lists(store, "perfect_few", 2, 10, 3, perfect=True)
        rng = np.random.default_rng(4)
        counts = {c: rng.integers(0, 20, 8) for c in ("tp", "fp", "fn")}
        store.ingest_outcomes({"group_id": np.arange(8), **counts}, run="counts", git_commit=None)
    return db


def _eval(db: Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    result = CliRunner().invoke(app, ["eval", *args, "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_lists_then_items_below_ten_lists(runs: Path) -> None:
    rows, _ = _eval(runs, "many", "few", "-m", "ap", "-m", "precision_at_k", "--ci")
    unit = {(r["run"], r["metric"]): r["ci_unit"] for r in rows}
    assert unit == {
        ("default/many", "map"): "lists", ("default/few", "map"): "items",
        ("default/many", "precision_at_k"): "lists", ("default/few", "precision_at_k"): "items",
    }  # fmt: skip
    for r in rows:
        assert 0 <= r["ci_low"] <= r["value"] <= r["ci_high"] <= 1
        assert (r["ci_level"], r["replicates"], r["seed"]) == (0.95, 1000, 0)
    forced, _ = _eval(runs, "many", "-m", "ap", "--ci", "--resample", "items")
    assert forced[0]["ci_unit"] == "items"


def test_the_list_interval_is_the_bootstrap_of_the_list_values(runs: Path) -> None:
    rows, _ = _eval(runs, "many", "-m", "ap", "--ci", "--n-boot", "500", "--seed", "7")
    per_list, _ = _eval(runs, "many", "-m", "ap", "--by", "list")
    values = np.array([r["value"] for r in per_list if r["slice"] != ""])
    assert values.size == 20
    reps = mean_replicates(values, np.random.default_rng(7), 500)
    assert (rows[0]["ci_low"], rows[0]["ci_high"]) == percentile_interval(reps, 0.95)


def test_the_same_seed_gives_the_same_interval_bit_for_bit(runs: Path) -> None:
    args = ("many", "few", "counts", "-m", "ap", "-m", "fpr95", "-m", "roc_auc", "-m", "iou_micro")
    first, _ = _eval(runs, *args, "--ci")
    again, _ = _eval(runs, *args, "--ci")
    other, _ = _eval(runs, *args, "--ci", "--seed", "1")
    bounds = [(r["ci_low"], r["ci_high"]) for r in first]
    assert bounds == [(r["ci_low"], r["ci_high"]) for r in again]
    assert bounds != [(r["ci_low"], r["ci_high"]) for r in other]


def test_an_ap_of_one_everywhere_gives_one_one(runs: Path) -> None:
    rows, _ = _eval(runs, "perfect_many", "perfect_few", "-m", "ap", "-m", "roc_auc", "--ci")
    assert {r["ci_unit"] for r in rows} == {"lists", "items"}
    assert all((r["value"], r["ci_low"], r["ci_high"]) == (1.0, 1.0, 1.0) for r in rows)


def test_fewer_than_five_lists_warn_in_one_line(runs: Path) -> None:
    _, quiet = _eval(runs, "many", "-m", "ap", "--ci")
    assert quiet == ""
    _, loud = _eval(runs, "many", "few", "-m", "ap", "-m", "fpr95", "--ci")
    assert loud.count("\n") == 1 and loud.startswith("Warning: intervals from fewer than 5 lists")
    assert "default/few map (3 lists, over items)" in loud and "default/few fpr95" in loud
    assert "default/many" not in loud


def test_the_table_shows_the_interval_and_says_what_it_is(runs: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "many", "-m", "ap", "--ci", "--db", str(runs)])
    assert result.exit_code == 0, result.output
    assert (
        "95% percentile bootstrap intervals over lists, 1,000 replicates, seed 0" in result.stdout
    )
    assert "ci_low" in result.stdout and "ci_high" in result.stdout
    latex = CliRunner().invoke(
        app,
        ["eval", "many", "-m", "ap", "--ci", "--n-boot", "200", "-f", "latex", "--db", str(runs)],
    )
    assert (
        r"\caption{95\% percentile bootstrap intervals over lists, 200 replicates" in latex.stdout
    )
    plain = CliRunner().invoke(app, ["eval", "many", "-m", "ap", "--db", str(runs)])
    assert "ci_low" not in plain.stdout and "bootstrap" not in plain.stdout


def test_cached_values_take_the_full_path_with_ci(runs: Path) -> None:
    plain, _ = _eval(runs, "many", "-m", "ap")  # now cached: the light path answers without --ci
    assert "ci_low" not in plain[0]
    rows, _ = _eval(runs, "many", "-m", "ap", "--ci")
    assert {k: v for k, v in rows[0].items() if k in plain[0]} == plain[0]  # every field kept
    assert rows[0]["ci_unit"] == "lists" and rows[0]["ci_low"] < rows[0]["ci_high"]


def test_a_single_value_of_the_run_resamples_its_groups(runs: Path) -> None:
    rows, stderr = _eval(runs, "counts", "--ci")
    unit = {r["metric"]: (r["ci_unit"], r["n_lists"]) for r in rows}
    assert unit == {"iou_macro": ("lists", 8), "iou_micro": ("items", 1)}
    assert stderr == ""  # eight groups: no warning
    for r in rows:
        assert r["ci_low"] < r["value"] < r["ci_high"]


def test_ci_is_refused_with_spark_and_checked(runs: Path) -> None:
    runner = CliRunner()
    spark = runner.invoke(
        app, ["eval", "many", "--ci", "--engine", "spark", "--source", "x", "--db", str(runs)]
    )
    assert spark.exit_code == 1
    assert spark.stderr == "Error: --ci resamples this store's rows: not with --engine spark\n"
    level = runner.invoke(app, ["eval", "many", "--ci", "--ci-level", "95", "--db", str(runs)])
    assert (
        level.exit_code == 1 and level.stderr.count("\n") == 1 and "--ci-level 95" in level.stderr
    )


def test_a_detection_run_value_is_refused(store: Store) -> None:
    with pytest.raises(InvalidInput, match=r"^--ci: tide_ap.s run value"):
        run_draws.read_inputs(store, 1, "detection", METRICS["tide_ap"])
    with pytest.raises(InvalidInput, match=r"^--resample items: a detection run"):
        intervals.interval(
            store, 1, "detection", METRICS["ap"], '{"ties":"grouped"}', CI(resample="items")
        )


def test_python_api_ci(runs: Path) -> None:
    found: list[str] = []
    with Store(runs) as store:
        frame = evaluate(store, ["few"], metrics=["ap"], ci=True, warn=found.append)
        assert frame.columns[-6:] == intervals.CI_COLUMNS
        by_list = evaluate(store, ["many"], metrics=["ap"], by=["list"], ci=CI(replicates=100))
    assert len(found) == 1 and "default/few map" in found[0]
    assert frame["ci_unit"].to_list() == ["items"]
    overall = by_list.filter(by_list["slice"] == "")
    assert overall["ci_unit"].to_list() == ["lists"] and overall["replicates"].to_list() == [100]
    assert by_list.filter(by_list["slice"] != "")["ci_low"].null_count() == 20


# -- a run value recomputed on resampled items, for any twin -------------------------------------


def _pooled_ap(inputs: Any, params: Params) -> Result:
    """A run value that is not a mean over lists: AP of every row pooled (a 'micro' AP)."""
    lists: RankedLists = inputs
    kept = lists.labels != 0
    value = average_precision_score(lists.labels[kept] == 1, lists.scores[kept])
    return Result(np.array([None], dtype=object), np.array([value]))


def test_a_run_row_value_recomputes_the_twin_on_resampled_items(runs: Path) -> None:
    """An item keeps its rows in every list (item ``i`` of each of the 3 lists: one image
    with its 3 class scores); each replicate equals scikit-learn's AP on the drawn items'
    rows; the interval is their percentiles."""
    metric = dataclasses.replace(METRICS["ap"], reference=_pooled_ap, overall="run row")
    with Store(runs) as store:
        run_id = store.resolve("few")
        evaluate(store, ["few"], metrics=["ap"])
        inputs = run_draws.read_inputs(store, run_id, "retrieval", metric)
        got = intervals.interval(
            store, run_id, "retrieval", metric, '{"ties":"grouped"}', CI(seed=3)
        )
    assert isinstance(inputs, RankedLists)
    codes, n = run_draws.item_codes(inputs)
    assert n == 30 and np.bincount(codes).tolist() == [3] * 30
    rng = np.random.default_rng(3)
    reps = run_draws.value_replicates(metric, inputs, Params(), rng, 1000)
    check = np.random.default_rng(3)
    for rep in reps[:20]:
        drawn = check.multinomial(30, np.full(30, 1 / 30))
        rows = np.repeat(np.arange(codes.size), drawn[codes])
        kept = inputs.labels[rows] != 0
        assert rep == average_precision_score(
            inputs.labels[rows][kept] == 1, inputs.scores[rows][kept]
        )
    assert (got.low, got.high, got.unit, got.n_lists) == (
        *percentile_interval(reps, 0.95),
        "items",
        3,
    )


def test_each_copy_of_an_item_is_an_item_of_its_own() -> None:
    lists = RankedLists(
        group=np.array(["a", "a", "b", "b"], dtype=object),
        scores=np.array([0.9, 0.1, 0.8, 0.3]),
        labels=np.array([1, -1, -1, 1]),
        items=np.array(["x", "y", "x", "y"], dtype=object),
        lists=np.array(["a"], dtype=object),
        n_positives=np.array([3]),  # two positives of list a never among its items
    )
    expanded = run_draws.expand(lists, np.array([2, 1]))
    assert isinstance(expanded, RankedLists)
    assert expanded.group.tolist() == ["a", "a", "a", "b", "b", "b"]
    assert expanded.items.tolist() == [0, 1, 2, 0, 1, 2]  # x's copies 0 and 1, y's copy 2
    assert expanded.n_positives.tolist() == [4]  # x drawn twice: 2 positives + 2 never ranked
    docid = run_draws.expand(lists, np.array([2, 1]), ties="docid")
    assert docid.items.tolist()[:3] == [
        "x\x1f000000000000",
        "x\x1f000000000001",
        "y\x1f000000000002",
    ]


# -- coverage by simulation -------------------------------------------------------------------

#: Binormal scores: positives N(D, 1), negatives N(0, 1): the population ROC AUC is
#: P(X+ > X-) = Phi(D / sqrt(2)), and a list's ROC AUC (Mann-Whitney's U / (P N)) is unbiased
#: for it, so the mean over lists has that expectation too.
D = 1.0
TRUTH = float(norm.cdf(D / math.sqrt(2)))
EXPERIMENTS = 300
#: 95% of 300 experiments: the binomial's sd is sqrt(0.95 * 0.05 / 300) = 1.26%; +/- 3 sd.
LOW, HIGH = 0.95 - 3 * 0.0126, 0.95 + 3 * 0.0126


def _binormal(rng: np.random.Generator, n_lists: int, n_pos: int, n_neg: int) -> dict[str, Any]:
    n = n_pos + n_neg
    labels = np.tile(np.r_[np.ones(n_pos, int), -np.ones(n_neg, int)], n_lists)
    scores = rng.normal(size=labels.size) + np.where(labels == 1, D, 0.0)
    group = np.repeat(np.arange(n_lists), n)
    return {"group_id": group, "item_id": np.arange(labels.size), "score": scores, "label": labels}


def _coverage(
    db: Path, n_lists: int, n_pos: int, n_neg: int, seed: int
) -> tuple[float, set[str], list[str]]:
    rng = np.random.default_rng(seed)
    found: list[str] = []
    with Store(db) as store:
        for e in range(EXPERIMENTS):
            store.ingest(
                _binormal(rng, n_lists, n_pos, n_neg),
                task="retrieval",
                run=f"e{e}",
                git_commit=None,
            )
        frame = evaluate(
            store, None, all_runs=True, metrics=["roc_auc"], ci=CI(seed=seed), warn=found.append
        )
    covered = (frame["ci_low"] <= TRUTH) & (frame["ci_high"] >= TRUTH)
    return float(covered.mean()), set(frame["ci_unit"].to_list()), found


@pytest.mark.slow
def test_the_list_interval_covers_the_population_mean(db: Path) -> None:
    """30 lists of 8 positives and 8 negatives each: measured 95.3% (seed 0, 21 s)."""
    rate, units, found = _coverage(db, 30, 8, 8, seed=0)
    assert units == {"lists"} and found == []
    assert LOW <= rate <= HIGH


@pytest.mark.slow
def test_the_item_interval_of_one_list_covers_the_population_auc(db: Path) -> None:
    """One list of 60 positives and 60 negatives, items resampled within their label:
    measured 93.0% (seed 1, 40 s); the warning names the runs."""
    rate, units, found = _coverage(db, 1, 60, 60, seed=1)
    assert units == {"items"}
    assert len(found) == 1 and "default/e0 mean_roc_auc (1 list, over items)" in found[0]
    assert LOW <= rate <= HIGH


def test_a_pair_is_drawn_with_its_matches() -> None:
    """Keypoints: the item is an image pair, with its matches and homographies; each copy is
    a pair of its own, whose per-pair value is the original pair's."""
    rng = np.random.default_rng(2)
    n = 9
    pair = np.array(["p", "p", "p", "q", "q", "r", "r", "r", "r"], dtype=object)
    coords = {c: rng.normal(size=n) * 3 for c in ("x0", "y0", "x1", "y1")}
    truth = {"gt_x1": coords["x1"] + rng.normal(size=n) * 4, "gt_y1": coords["y1"]}
    eye = np.repeat(np.eye(3)[None], 3, axis=0)
    kp = KeypointRun(
        pair=pair, pairs=np.array(["p", "q", "r"], dtype=object), h=eye, e=eye, r=eye,
        width=np.full(3, 640.0), height=np.full(3, 480.0), **coords, **truth,
    )  # fmt: skip
    expanded = run_draws.expand(kp, np.array([0, 2, 1]))
    assert isinstance(expanded, KeypointRun)
    assert expanded.pairs.tolist() == [0, 1, 2] and expanded.pair.tolist() == [
        0,
        0,
        1,
        1,
        2,
        2,
        2,
        2,
    ]
    mma = METRICS["mma"]
    before = mma.reference(kp, Params(at=[5.0])).value.tolist()  # pairs p, q, r
    after = mma.reference(expanded, Params(at=[5.0])).value.tolist()
    assert after == [before[1], before[1], before[2]]
