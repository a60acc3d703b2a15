"""One run's stored rows as its metric's NumPy twin reads them, and their bootstrap over items:
the replicates of a run value that is not a mean over lists (``evalstore eval --ci``).

An *item* keeps every row it has: of ranked lists, an item id with its rows in every list (an
image with all its class scores; a row without an id is an item of its own); of keypoints, an
image pair with its matches (and its cameras and pose estimates); of counted outcomes, a group
with its counts. A replicate draws the run's ``n`` items with replacement (multinomial,
uniform), lays each drawn copy out as an item of its own (its own item id, pair or group) and
recomputes the metric by its twin.
docs/statistics.md gives the scheme.

>>> lists = RankedLists(group=np.array(["c1", "c1"], dtype=object),
...                     scores=np.array([0.9, 0.2]), labels=np.array([1, -1]),
...                     items=np.array(["a", "b"], dtype=object))
>>> expanded = expand(lists, np.array([2, 0]))
>>> expanded.labels.tolist(), expanded.items.tolist()
([1, 1], [0, 1])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstore.core.single_label import SampleMatrix, sample_cells
from evalstore.errors import InvalidInput
from evalstore.metrics.pose_references import PoseRun, expand_pose_run, read_pose_run
from evalstore.metrics.references import Result
from evalstore.metrics.registry import Inputs, KeypointRun, Metric, Outcomes, Params, RankedLists
from evalstore.metrics.single_label_catalogue import SINGLE_LABEL
from evalstore.metrics.single_label_references import single_label_result, summarize

if TYPE_CHECKING:
    from evalstore.store.facade import Store

__all__ = [
    "Cells", "expand", "item_codes", "one_value", "read_cells", "read_inputs", "read_ranked",
    "read_samples", "run_value", "sample_replicates", "single_label", "value_of",
    "value_replicates",
]  # fmt: skip

#: :func:`read_cells`' arrays: class ids, sample ids, then each row's sample, class, score
#: and label.
Cells = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: The homographies of a pair, row-major: true, estimated, inverse (table ``pairs``).
_HOMOGRAPHY = [f"{m}{i}{j}" for m in "her" for i in (1, 2, 3) for j in (1, 2, 3)]


def _ids(values: list[object]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def one_value(store: Store, run_id: int, task: str, metric: Metric, lists: list[Any]) -> bool:
    """Whether the metric's only value (``lists``: its values' groups) is a row of group NULL
    of a run whose rows are in several lists or groups (``iou_micro``, ``ece``): a value of
    the whole run, not of one unnamed list (a verification run's)."""
    if lists != [None]:
        return False
    if metric.source != "scores":
        return True
    named = store.query("eval/ci_named_lists", {"run_id": run_id, "task": task})
    return int(named["n"][0]) > 0


def read_ranked(store: Store, run_id: int, task: str) -> RankedLists:
    """The ranked lists of run ``run_id`` in ``task`` as a metric's twin reads them: its rows
    in input order, and the lists whose number of positives was given."""
    key = {"run_id": run_id, "task": task}
    rows = store.query("eval/ci_ranked_rows", key)
    over = store.query("eval/ci_positives", key)
    return RankedLists(
        group=_ids(rows["group_id"].to_list()),
        scores=rows["score"].fill_null(-np.inf).to_numpy().astype(np.float64),
        labels=rows["label"].to_numpy().astype(np.int64),
        order=rows["seq"].to_numpy().astype(np.int64),
        items=_ids(rows["item_id"].to_list()),
        lists=_ids(over["group_id"].to_list()) if over.height else None,
        n_positives=over["n_positives"].to_numpy().astype(np.int64) if over.height else None,
        gains=rows["gain"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
    )


def read_samples(store: Store, run_id: int, task: str) -> SampleMatrix:
    """The single-label run ``run_id`` as the sample x class matrix that
    :func:`~evalstore.metrics.single_label_references.single_label_samples` makes of
    :func:`read_ranked`'s rows, read as cells (no Python object per row).

    Raises:
        InvalidInput: a run unfit for single-label metrics (as its evaluation says).
    """
    return sample_cells(*read_cells(store, run_id, task))


def read_cells(store: Store, run_id: int, task: str) -> Cells:
    """A classification run's rows as cells: its class ids and its sample (image) ids, each
    in order of their first rows, then each row's sample code, class code, score (-inf for
    NULL) and label (``eval/ci_sample_cells``: numbered in SQL, no Python object a row)."""
    key = {"run_id": run_id, "task": task}
    cells = store.query("eval/ci_sample_cells", key)
    return (
        _ids(store.query("eval/ci_class_ids", key)["group_id"].to_list()),
        _ids(store.query("eval/ci_sample_ids", key)["item_id"].to_list()),
        cells["sample"].to_numpy().astype(np.int64),
        cells["class"].to_numpy().astype(np.int64),
        cells["score"].fill_null(-np.inf).to_numpy().astype(np.float64),
        cells["label"].to_numpy().astype(np.int64),
    )


def read_inputs(store: Store, run_id: int, task: str, metric: Metric) -> Inputs:
    """The stored rows of run ``run_id`` that ``metric`` reads (its ``source``).

    Raises:
        InvalidInput: a detection metric (its run value is not resampled by image).
    """
    key = {"run_id": run_id}
    if metric.source == "scores":
        return read_ranked(store, run_id, task)
    if metric.source == "outcomes":
        rows = store.query("eval/ci_outcomes", key)
        counts = {c: rows[c].to_numpy().astype(np.int64) for c in ("tp", "fp", "fn")}
        return Outcomes(group=_ids(rows["group_id"].to_list()), **counts)
    if metric.source == "cameras":
        return read_pose_run(store.con, run_id)
    if metric.source == "pairs":
        m = store.query("eval/ci_matches", key)
        p = store.query("eval/ci_pairs", key)
        stack = p.select([pl.col(c).cast(pl.Float64) for c in _HOMOGRAPHY]).to_numpy()
        h, e, r = (stack[:, 9 * i : 9 * i + 9].reshape(-1, 3, 3) for i in range(3))
        coords = {c: m[c].to_numpy().astype(np.float64) for c in m.columns if c != "pair_id"}
        return KeypointRun(
            pair=_ids(m["pair_id"].to_list()),
            pairs=_ids(p["pair_id"].to_list()),
            h=h,
            e=e,
            r=r,
            width=p["width"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
            height=p["height"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
            **coords,
        )
    raise InvalidInput(
        f"--ci: {metric.name}'s run value is computed from a detection run's images, which are "
        "not resampled; evaluate it without --ci"
    )


def item_codes(inputs: Inputs) -> tuple[np.ndarray, int]:
    """(code of each row's item, number of items): the unit a replicate draws."""
    if isinstance(inputs, RankedLists):
        ids = inputs.items
        n = inputs.scores.size
        if ids is None:
            return np.arange(n), n
        keys = [f"\x00{i}" if v is None else str(v) for i, v in enumerate(ids.tolist())]
        _, codes = np.unique(np.array(keys, dtype=object), return_inverse=True)
        codes = codes.reshape(-1).astype(np.int64)
        return codes, int(codes.max()) + 1 if n else 0
    if isinstance(inputs, Outcomes):
        return np.arange(inputs.group.size), int(inputs.group.size)
    if isinstance(inputs, (KeypointRun, PoseRun)):
        return np.arange(inputs.pairs.size), int(inputs.pairs.size)
    raise InvalidInput(f"--ci: no item bootstrap of {type(inputs).__name__}")


def _copies(codes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, new item id of each): each row repeated as often as its item was drawn, the
    ``k``-th copy of item ``u`` numbered ``offset[u] + k`` (the same in every list)."""
    rep = counts[codes]
    rows = np.repeat(np.arange(codes.size), rep)
    offset = np.cumsum(counts) - counts
    k = np.arange(rows.size) - np.repeat(np.cumsum(rep) - rep, rep)
    return rows, offset[codes[rows]] + k


def expand(
    inputs: Inputs, counts: np.ndarray, ties: str = "grouped", codes: np.ndarray | None = None
) -> Inputs:
    """``inputs`` with item ``u`` present ``counts[u]`` times, each copy an item of its own
    (its rows laid out in input order, copies side by side); ``codes``: :func:`item_codes`'s,
    when the caller has them.

    Raises:
        InvalidInput: inputs of a kind that is not resampled by item (detection runs).
    """
    if codes is None:
        codes, _ = item_codes(inputs)
    if isinstance(inputs, RankedLists):
        rows, new = _copies(codes, counts)
        items: np.ndarray = new
        if ties == "docid" and inputs.items is not None:  # trec_eval's order of the ids' text
            old = inputs.items[rows].tolist()
            items = _ids([f"{o}\x1f{c:012d}" for o, c in zip(old, new.tolist(), strict=True)])
        lists, n_pos = inputs.lists, inputs.n_positives
        if lists is not None and n_pos is not None:
            n_pos = _positives(inputs, rows, lists, n_pos)
        return RankedLists(
            group=inputs.group[rows],
            scores=inputs.scores[rows],
            labels=inputs.labels[rows],
            order=np.arange(rows.size, dtype=np.int64),
            lists=lists,
            n_positives=n_pos,
            items=items,
            gains=None if inputs.gains is None else inputs.gains[rows],
        )
    if isinstance(inputs, Outcomes):
        rows = np.repeat(np.arange(codes.size), counts)
        return Outcomes(
            np.arange(rows.size), inputs.tp[rows], inputs.fp[rows], inputs.fn[rows]
        )  # fmt: skip
    if isinstance(inputs, KeypointRun):
        index = {p: i for i, p in enumerate(inputs.pairs.tolist())}
        pair_code = np.array([index[p] for p in inputs.pair.tolist()], dtype=np.int64)
        rows, new = _copies(pair_code, counts)
        by_pair = np.argsort(new, kind="stable")  # each copy's matches together, in input order
        rows, new = rows[by_pair], new[by_pair]
        kept = np.repeat(np.arange(codes.size), counts)
        coords = {c: getattr(inputs, c)[rows] for c in ("x0", "y0", "x1", "y1", "gt_x1", "gt_y1")}
        return KeypointRun(
            pair=new,
            pairs=np.arange(kept.size),
            h=inputs.h[kept],
            e=inputs.e[kept],
            r=inputs.r[kept],
            width=inputs.width[kept],
            height=inputs.height[kept],
            **coords,
        )
    if isinstance(inputs, PoseRun):
        return expand_pose_run(inputs, counts)
    raise InvalidInput(f"--ci: no item bootstrap of {type(inputs).__name__}")


def _positives(
    inputs: RankedLists, rows: np.ndarray, lists: np.ndarray, n_pos: np.ndarray
) -> np.ndarray:
    """The given ``P`` of each list in a resample: its positives drawn, plus those counted
    in ``n_positives`` but never among its items (which no draw reaches)."""
    out = n_pos.copy()
    positive = inputs.labels == 1
    for i, g in enumerate(lists.tolist()):
        mine = inputs.group == g
        missed = max(0, int(n_pos[i]) - int(np.sum(mine & positive)))
        out[i] = int(np.sum(mine[rows] & positive[rows])) + missed
    return out


def run_value(metric: Metric, inputs: Inputs, params: Params) -> float:
    """The run's value as the twin gives it, at the sweep value of ``params`` (if any): its
    row of group None where it has one (``overall = "run row"``, or a single value of the
    whole run), else the mean of its lists' values (NaN left out); NaN where it has none."""
    return value_of(metric.reference(inputs, params), params)


def value_of(result: Result, params: Params) -> float:
    """:func:`run_value` of the twin's rows ``result``."""
    at = np.ones(result.group.size, dtype=bool)
    if result.at is not None and params.at:
        at = np.isclose(np.asarray(result.at, dtype=np.float64), float(params.at[0]))
    run = np.array([g is None for g in result.group.tolist()], dtype=bool)
    values = np.asarray(result.value, dtype=np.float64)
    picked = values[run & at]
    if picked.size:
        return float(picked[0])
    lists = values[~run & at]
    lists = lists[~np.isnan(lists)]
    return float(lists.mean()) if lists.size else float("nan")


def _draws(rng: np.random.Generator, n: int, n_boot: int) -> Iterator[np.ndarray]:
    uniform = np.full(n, 1.0 / n)
    for _ in range(n_boot):
        yield rng.multinomial(n, uniform)


def single_label(metric: Metric) -> bool:
    """Whether ``metric`` is a single-label metric, read from a run's per-sample summary
    (:func:`sample_replicates`)."""
    return metric.name in SINGLE_LABEL and metric.source == "scores"


def sample_replicates(
    metric: Metric, s: SampleMatrix, params: Params, rng: np.random.Generator, n_boot: int
) -> np.ndarray:
    """:func:`value_replicates` of a single-label run (:func:`read_samples`), each replicate
    computed from the drawn samples' summaries (:func:`~evalstore.metrics.
    single_label_references.summarize`) instead of the twin on the expanded lists, in time
    linear in the samples: the same draws of :func:`item_codes`' numbering (the samples' ids
    as text, sorted). The classes keep the run's list order in every replicate; the expanded
    lists took it from the drawn rows, which differs when the run's rows do not come sample
    by sample in one order of classes (then ``input`` and ``pessimistic`` ties could break
    otherwise than in the run's own value). Elsewhere the replicates are the same."""
    n = int(s.samples.size)
    if n == 0:
        return np.full(n_boot, np.nan)
    keys = np.empty(n, dtype=object)
    keys[:] = [str(v) for v in s.samples.tolist()]
    code = np.unique(keys, return_inverse=True)[1].reshape(-1)
    u = summarize(metric.name, s, params)
    return np.array(
        [
            value_of(single_label_result(metric.name, u.take(w[code]), params), params)
            for w in _draws(rng, n, n_boot)
        ]
    )


def value_replicates(
    metric: Metric, inputs: Inputs, params: Params, rng: np.random.Generator, n_boot: int
) -> np.ndarray:
    """(n_boot,) the run value of ``metric`` recomputed by its twin on ``n_boot`` resamples
    of the run's items (NaN where a resample has none)."""
    codes, n = item_codes(inputs)
    if n == 0:
        return np.full(n_boot, np.nan)
    return np.array(
        [
            run_value(metric, expand(inputs, w, params.ties, codes), params)
            for w in _draws(rng, n, n_boot)
        ]
    )
