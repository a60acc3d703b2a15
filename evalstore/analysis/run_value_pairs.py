"""``compare`` of a run value that is not a mean over lists but is recomputed from the run's
image pairs by its NumPy twin: the pose metrics' AUCs, mAAs and median error (from each pair's
pose error) and ``homography_auc`` (from each pair's corner error), ``overall = "run row"``.

The two runs' shared pairs are drawn with replacement, the same draw for both runs
(:func:`~evalstore.analysis.run_draws.expand`, as ``eval --ci`` draws one run's pairs), and each
run's value recomputed by the twin on its draw: the percentile interval of the difference
``B - A`` (``resampled = pairs``). The p-value of two runs is a paired swap test: under the null
the two runs' estimates of a pair are exchangeable, so each pair's two estimates are swapped
between the runs with probability 1/2 and the difference recomputed, ``p = (1 + #{|d*| >= |d|})
/ (B + 1)`` (a swapped difference that is NaN, a value undefined, counts among them: the
p-value is never too small). Configurations (several seeds) are resampled as ``compare``
resamples their items (:func:`~evalstore.analysis.statistics.seed_replicates` over the per-run
replicates of each draw of pairs, and the bootstrap's own p-value; ``seeds+pairs``).
docs/statistics.md gives the scheme and the simulations that check it.

The single-label classification metrics (``top1_accuracy``, ``topk_accuracy``, ``ece``,
``f1_micro``, and ``f1_macro`` and ``balanced_accuracy`` where ``compare`` would resample
items) are tested the same way over the runs' shared *samples* (``resampled = samples``): a
sample is drawn with its scores in every class list, the value recomputed by the twin's own
code on the drawn samples (:func:`~evalstore.metrics.single_label_references.
single_label_result`), and the swap test exchanges a sample's row of scores between the runs
(for top-1 accuracy, the randomisation form of McNemar's test). The runs must hold the same
samples, the same ground truth and the same classes in the same list order, else
:data:`DIFFERENT_SAMPLES`. The
multi-label run values (ML-GCN's ``cp`` ... ``of1`` and their ``_at_k`` forms) are tested over
the shared images the same way (``samples``): each run's rows are counted once as ML-GCN counts
them (:class:`~evalstore.core.multilabel.Rows`), a draw weights each image's rows by how often
it is drawn, and a swap exchanges an image's rows between the runs (their classes matched by
id, their positive labels the same; each run's top k and ties are its own).

Every other metric of ``overall = "run row"`` (TIDE's) keeps :data:`RUN_VALUE`: its values and
their difference, no test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from evalstore.analysis import run_draws, watching
from evalstore.analysis.intervals import twin_params
from evalstore.analysis.pairing import ACROSS_LISTS
from evalstore.analysis.statistics import inversion_p, percentile_interval, seed_replicates
from evalstore.core.multilabel import NAMES as MULTILABEL
from evalstore.core.multilabel import Rows
from evalstore.core.single_label import SampleMatrix, Summary
from evalstore.errors import EvalstoreError
from evalstore.metrics.multilabel_references import multilabel_result, multilabel_rows
from evalstore.metrics.pose_references import PoseRun
from evalstore.metrics.registry import Inputs, KeypointRun, Metric, Params
from evalstore.metrics.single_label_references import single_label_result, summarize

if TYPE_CHECKING:
    from evalstore.analysis.configurations import Unit
    from evalstore.store.facade import Store

__all__ = [
    "DIFFERENT_PAIRS",
    "DIFFERENT_SAMPLES",
    "RUN_VALUE",
    "UNTESTED",
    "Aligned",
    "ImageRows",
    "align",
    "align_images",
    "compared",
    "paired_replicates",
    "pooled",
    "resamples_images",
    "resamples_pairs",
    "resamples_samples",
    "stats",
    "swap_p",
    "swapped",
    "tests_run_value",
]

#: ``resampled`` of a run value without a test (TIDE's): wins counted, no interval or p-value.
RUN_VALUE = "run value: not a mean over lists, no test"
#: ``resampled`` of a run value of runs whose image pairs differ: no paired test.
DIFFERENT_PAIRS = "run value: the runs' pairs differ, no paired test"
#: ``resampled`` of a single-label metric of runs whose samples or classes differ.
DIFFERENT_SAMPLES = "run value: the runs' samples, truth or classes differ, no paired test"
#: The ``resampled`` of rows without a test.
UNTESTED = (RUN_VALUE, DIFFERENT_PAIRS, DIFFERENT_SAMPLES, ACROSS_LISTS)

#: The fields of a run's matches (no run value of :func:`resamples_pairs` reads them: left
#: out, so a draw does not copy them) and of its pair ids.
_MATCHES = {
    PoseRun: ("pair", "x0", "y0", "x1", "y1"),
    KeypointRun: ("pair", "x0", "y0", "x1", "y1", "gt_x1", "gt_y1"),
}
_PAIR_IDS = {PoseRun: ("pairs", "est_pair"), KeypointRun: ("pairs",)}
#: Replicates (and swaps) between two reports to a watching page (the UI's progress).
_BLOCK = 50


@dataclasses.dataclass(frozen=True)
class ImageRows:
    """A multi-label run's rows as ML-GCN counts them (images by shared index), its class ids."""

    rows: Rows
    ids: np.ndarray


#: The inputs of a run value of image pairs, single-label samples or multi-label images.
PairInputs = PoseRun | KeypointRun | Summary | ImageRows


def resamples_pairs(metric: Metric) -> bool:
    """Whether ``compare`` tests ``metric``'s run value here: a run value of image pairs
    (source ``cameras`` or ``pairs``), which its twin computes from each pair's estimate alone
    (the pose errors, the homographies' corner errors), never from the matches."""
    return metric.overall == "run row" and metric.source in ("cameras", "pairs")


def tests_run_value(metric: Metric, resampled: str) -> bool:
    """Whether ``compare`` takes the statistics of ``metric`` from :func:`stats`, not from
    its lists' (``resampled``: how :func:`~evalstore.analysis.pairing.stats` resampled them):
    its run's value is not the lists' mean, or reads a sample across the lists."""
    return metric.overall == "run row" or (resampled == ACROSS_LISTS and resamples_samples(metric))


def resamples_images(metric: Metric) -> bool:
    """Whether ``compare`` tests ``metric`` here over images: a multi-label run value (ML-GCN's
    ``cp`` ... ``of1``, and their ``_at_k`` forms)."""
    return metric.source == "scores" and metric.name.removesuffix("_at_k") in MULTILABEL


def resamples_samples(metric: Metric) -> bool:
    """Whether ``compare`` tests ``metric`` here over samples: a single-label metric, whose
    run value reads each sample's row of scores across the class lists."""
    return run_draws.single_label(metric)


@dataclasses.dataclass(frozen=True)
class Aligned:
    """The inputs of several runs on the same image pairs, their matches left out.

    Attributes:
        runs: each run's inputs (:class:`PoseRun` or :class:`KeypointRun`).
        index: for each run, the shared index ``0..n-1`` of each of its pairs (``pairs``
            order), the first run's order being the shared one.
    """

    runs: list[PairInputs]
    index: list[np.ndarray]

    @property
    def n(self) -> int:
        return int(self.index[0].size)


def _without_matches(inputs: PoseRun | KeypointRun) -> PairInputs:
    empty: dict[str, Any] = {f: getattr(inputs, f)[:0] for f in _MATCHES[type(inputs)]}
    return dataclasses.replace(inputs, **empty)


def align(runs: Sequence[Inputs]) -> Aligned | None:
    """The runs' inputs on their shared pairs, or None when their sets of pairs differ (or
    they are not inputs of image pairs)."""
    pairs = [r for r in runs if isinstance(r, (PoseRun, KeypointRun))]
    if len(pairs) != len(runs):
        return None
    first = pairs[0].pairs.tolist()
    shared = {p: i for i, p in enumerate(first)}
    index = []
    for run in pairs:
        mine = run.pairs.tolist()
        if len(mine) != len(first) or set(mine) != shared.keys():
            return None
        index.append(np.array([shared[p] for p in mine], dtype=np.int64))
    return Aligned([_without_matches(r) for r in pairs], index)


def align_samples(metric: Metric, runs: Sequence[SampleMatrix], call: Params) -> Aligned | None:
    """The summaries (:func:`~evalstore.metrics.single_label_references.summarize`) of the
    single-label runs' samples (:func:`~evalstore.analysis.run_draws.read_samples`) that
    ``metric`` reads under ``call``, each run's in the first run's order of samples; None when
    their samples or their classes (in list order) differ."""
    first = runs[0]
    order = first.samples.tolist()
    out = [first]
    for m in runs[1:]:
        if m.classes.tolist() != first.classes.tolist() or len(m.samples) != len(order):
            return None
        row = {s: i for i, s in enumerate(m.samples.tolist())}
        if row.keys() != set(order):
            return None
        rows = np.fromiter(map(row.__getitem__, order), np.int64, count=len(order))
        if not np.array_equal(m.truth[rows], first.truth):  # another ground truth
            return None
        out.append(SampleMatrix(first.classes, first.samples, m.scores[rows],
                                m.candidate[rows], m.truth[rows]))  # fmt: skip
    summaries: list[PairInputs] = [summarize(metric.name, m, call) for m in out]
    return Aligned(summaries, [np.arange(len(order))] * len(out))


def align_images(metric: Metric, runs: Sequence[run_draws.Cells], call: Params) -> Aligned | None:
    """The rows (:func:`~evalstore.metrics.multilabel_references.multilabel_rows`) of the
    multi-label runs (:func:`~evalstore.analysis.run_draws.read_cells`) that ``metric`` counts
    under ``call``, each run's images and classes numbered as the first run's; None when their
    images or their classes differ."""
    classes, images = runs[0][0].tolist(), runs[0][1].tolist()
    out: list[PairInputs] = []
    positives = np.zeros(0, np.int64)  # the first run's positive (image, class) cells
    for ids, samples, image, cls, scores, labels in runs:
        if sorted(ids.tolist()) != sorted(classes) or len(samples) != len(images):
            return None
        at = {s: i for i, s in enumerate(images)}
        if set(samples.tolist()) != at.keys():
            return None
        to_image = np.fromiter(map(at.__getitem__, samples.tolist()), np.int64, len(images))
        column = {c: j for j, c in enumerate(classes)}
        to_class = np.fromiter(map(column.__getitem__, ids.tolist()), np.int64, len(classes))
        first = np.empty(len(classes), np.int64)  # each class's place in this run's list order
        first[to_class] = np.arange(len(classes))
        rows = multilabel_rows(metric.name, runs[0][0], to_class[cls], to_image[image], scores,
                               labels, first, call)  # fmt: skip
        truth = np.unique(rows.image[rows.positive] * len(classes) + rows.cls[rows.positive])
        if out and not np.array_equal(truth, positives):  # another ground truth
            return None
        positives = truth
        out.append(ImageRows(rows, runs[0][0]))
    return Aligned(out, [np.arange(len(images))] * len(out))


def _value(metric: Metric, inputs: PairInputs, counts: np.ndarray, call: Params) -> float:
    if isinstance(inputs, ImageRows):  # each image's rows counted as often as it is drawn
        result = multilabel_result(metric.name, inputs.rows, inputs.ids, call, counts)
        return run_draws.value_of(result, call)
    if isinstance(inputs, Summary):  # each sample as often as drawn
        drawn = single_label_result(metric.name, inputs.take(counts), call)
        return run_draws.value_of(drawn, call)
    return run_draws.run_value(metric, run_draws.expand(inputs, counts, call.ties), call)


def paired_replicates(
    metric: Metric, aligned: Aligned, call: Params, draws: Sequence[np.ndarray]
) -> np.ndarray:
    """(runs, draws) each run's value recomputed by the twin on each draw of the shared pairs
    (``draw[i]``: how often shared pair ``i`` is drawn; the same draw for every run)."""
    out = np.empty((len(aligned.runs), len(draws)))
    every = list(range(out.shape[0]))
    for j, w in enumerate(draws):
        for r, (run, index) in enumerate(zip(aligned.runs, aligned.index, strict=True)):
            out[r, j] = _value(metric, run, w[index], call)
        if (j + 1) % _BLOCK == 0 or j + 1 == len(draws):
            watching.replicates(out, every, j + 1)
    return out


def pooled(aligned: Aligned) -> PairInputs:
    """One input holding the first run's pairs (numbered by their shared index) then the
    second's (numbered ``n +`` theirs), for the swap test."""
    (a, b), (index_a, index_b) = aligned.runs, aligned.index
    if isinstance(a, Summary) and isinstance(b, Summary):  # aligned: rows in order
        both = {f.name: np.concatenate([getattr(a, f.name), getattr(b, f.name)])
                for f in dataclasses.fields(a) if f.name != "classes"}  # fmt: skip
        both["top_sample"] = np.concatenate([a.top_sample, a.truth.size + b.top_sample])
        return Summary(a.classes, **both)
    if isinstance(a, ImageRows) and isinstance(b, ImageRows):  # B's images after A's
        ra, rb = a.rows, b.rows
        rows = Rows(ra.n_class, np.concatenate([ra.image, aligned.n + rb.image]),
                    np.concatenate([ra.cls, rb.cls]), np.concatenate([ra.predicted, rb.predicted]),
                    np.concatenate([ra.positive, rb.positive]))  # fmt: skip
        return ImageRows(rows, a.ids)
    if not (isinstance(a, (PoseRun, KeypointRun)) and isinstance(b, (PoseRun, KeypointRun))):
        raise EvalstoreError(f"no swap test of {type(a).__name__} with {type(b).__name__}")
    codes_a = dict(zip(a.pairs.tolist(), index_a.tolist(), strict=True))
    codes_b = dict(zip(b.pairs.tolist(), (aligned.n + index_b).tolist(), strict=True))
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name in _PAIR_IDS[type(a)]:
            x = np.array([codes_a.get(p, -1) for p in x.tolist()], dtype=np.int64)
            y = np.array([codes_b.get(p, -1) for p in y.tolist()], dtype=np.int64)
        fields[f.name] = None if x is None else np.concatenate([x, y])
    return type(a)(**fields)


def swapped(aligned: Aligned, swap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The draws of :func:`pooled`'s pairs that make the runs A* and B* of one swap: shared
    pair ``i`` of A* is the second run's where ``swap[i]``, else the first's (and B* the
    other)."""
    keep_a = (~swap[aligned.index[0]]).astype(np.int64)
    take_b = swap[aligned.index[1]].astype(np.int64)
    return np.r_[keep_a, take_b], np.r_[1 - keep_a, 1 - take_b]


def swap_p(
    metric: Metric, aligned: Aligned, call: Params, rng: np.random.Generator, n_perm: int
) -> float:
    """The paired swap test of two runs' values (module docstring); NaN without an observed
    difference."""
    a, b = aligned.runs
    ones = np.ones(aligned.n, dtype=np.int64)
    observed = _value(metric, b, ones, call) - _value(metric, a, ones, call)
    if np.isnan(observed):
        return float("nan")
    both = pooled(aligned)
    # an infinite observed difference (one run's median pose error +inf) is met by an
    # infinite swapped one alone; a relative tolerance of it would be inf - inf
    tol = 0.0 if np.isinf(observed) else 1e-12 * max(1.0, abs(observed))
    hits = 0
    for i in range(n_perm):
        star_a, star_b = swapped(aligned, rng.random(aligned.n) < 0.5)
        diff = _value(metric, both, star_b, call) - _value(metric, both, star_a, call)
        hits += int(not abs(diff) < abs(observed) - tol)  # a NaN one counts: p not too small
        if (i + 1) % _BLOCK == 0 or i + 1 == n_perm:
            watching.swapped(i + 1, hits)
    return (hits + 1) / (n_perm + 1)


def _draws(rng: np.random.Generator, n: int, n_boot: int) -> list[np.ndarray]:
    uniform = np.full(n, 1.0 / n)
    return [rng.multinomial(n, uniform) for _ in range(n_boot)]


def stats(
    store: Store,
    a: Unit,
    b: Unit,
    task: str,
    metric: Metric,
    params: str,
    n_boot: int,
    seed: int,
) -> dict[str, Any]:
    """``ci_low``, ``ci_high``, ``p_value``, ``effect_size`` (None), ``resampled`` and ``n``
    (the pairs) of the difference of unit ``b``'s run value against ``a``'s (module
    docstring, :func:`compared`); the keys of no test (``resampled`` one of
    :data:`UNTESTED`) where the metric is not :func:`resamples_pairs` or the runs' pairs differ."""
    nan = float("nan")
    untested: dict[str, Any] = {"ci_low": nan, "ci_high": nan, "p_value": None,
                                "effect_size": None}  # fmt: skip
    samples, images = resamples_samples(metric), resamples_images(metric)
    if not (samples or images or resamples_pairs(metric)):
        return {**untested, "resampled": RUN_VALUE}
    every = [*a.run_ids, *b.run_ids]
    call, _ = twin_params(metric, params)
    if samples:
        aligned = align_samples(metric, [run_draws.read_samples(store, r, task) for r in every],
                                call)  # fmt: skip
    elif images:
        aligned = align_images(metric, [run_draws.read_cells(store, r, task) for r in every],
                               call)  # fmt: skip
    else:
        aligned = align([run_draws.read_inputs(store, r, task, metric) for r in every])
    if aligned is None:
        differ = DIFFERENT_SAMPLES if samples or images else DIFFERENT_PAIRS
        return {**untested, "resampled": differ}
    grouped = a.group or b.group or len(every) > 2  # configurations, as pairing.stats has them
    watching.begin(a, b, task, metric.name, params, n_boot, seed, swaps=not grouped,
                   n_lists=aligned.n)  # fmt: skip
    return compared(metric, aligned, call, len(a.run_ids), grouped, n_boot, seed)


def compared(
    metric: Metric,
    aligned: Aligned,
    call: Params,
    n_a: int,
    grouped: bool,
    n_boot: int,
    seed: int,
) -> dict[str, Any]:
    """:func:`stats` of the runs ``aligned`` (the first ``n_a`` the baseline's), drawn from a
    generator seeded by ``seed`` for this metric alone: two runs (not ``grouped``) get the
    paired bootstrap's interval and the swap test's p-value (``pairs``), configurations the
    seeds drawn over each draw of pairs and the bootstrap's own p-value (``seeds+pairs``)."""
    nan = float("nan")
    if aligned.n == 0:
        return {"ci_low": nan, "ci_high": nan, "p_value": None, "effect_size": None,
                "resampled": "none", "n": 0}  # fmt: skip
    rng = np.random.default_rng(seed)
    first = aligned.runs[0]
    unit = "pairs" if isinstance(first, (PoseRun, KeypointRun)) else "samples"
    reps = paired_replicates(metric, aligned, call, _draws(rng, aligned.n, n_boot))
    if grouped:
        diffs = seed_replicates(reps[:n_a], reps[n_a:], rng)
        p, resampled = inversion_p(diffs[~np.isnan(diffs)]), f"seeds+{unit}"
    else:
        with np.errstate(invalid="ignore"):  # both runs' values +inf: no difference (NaN)
            diffs = reps[1] - reps[0]
        p, resampled = swap_p(metric, aligned, call, rng, n_boot), unit
    kept = diffs[~np.isnan(diffs)]
    low, high = percentile_interval(kept) if kept.size else (nan, nan)
    return {
        "ci_low": low,
        "ci_high": high,
        "p_value": None if np.isnan(p) or not kept.size else float(p),
        "effect_size": None,
        "resampled": resampled,
        "n": aligned.n,
    }
