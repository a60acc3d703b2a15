"""One metric of two units (runs or configurations) side by side: per-list values, items, and
the interval, p-value and win/tie/loss counts of their difference (:func:`stats`).

The resampling is chosen per metric (formulas in docs/statistics.md):

- two runs, enough lists: the paired bootstrap over lists and a sign-flip randomisation test
  (``resampled = lists``);
- configurations: the hierarchical bootstrap (seeds, then lists); the p-value is the larger
  of the sign-flip test of the per-list differences of the seed means and the bootstrap's
  own (``seeds+lists``);
- fewer than :data:`~evalstore.analysis.statistics.MIN_LISTS` lists, ranking metrics: items
  resampled within lists, stratified by label (``items``, or ``seeds+items`` for configurations),
  when the runs ranked the same items; else lists. AP and fpr95 reweight each run's fixed
  order (:mod:`evalstore.analysis.reweighting`) and take the bootstrap's p-value; the other
  metrics re-sort every resample and two runs get the rank-swap test.

A detection run's lists pair by category (the mean over its IoU thresholds), never by items.
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstore.analysis import watching
from evalstore.analysis.resampling import ItemLists, item_replicates, rank_swap_p
from evalstore.analysis.reweighting import fast, reweighted_replicates
from evalstore.analysis.run_draws import one_value
from evalstore.analysis.statistics import (
    MIN_LISTS,
    TIE_TOLERANCE,
    effect_size,
    inversion_p,
    list_replicates,
    paired_stats,
    percentile_interval,
    seed_replicates,
    sign_flip_p,
)
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics import protocols
from evalstore.metrics.registry import Metric, Params

if TYPE_CHECKING:
    from evalstore.analysis.configurations import Unit
    from evalstore.store.facade import Store

__all__ = [
    "ACROSS_LISTS",
    "RESAMPLING",
    "by_category",
    "in_list_order",
    "name",
    "paired_lists",
    "run_items",
    "stats",
]

#: ``--resample``: ``auto`` (items below MIN_LISTS lists for ranking metrics, else lists),
#: ``lists`` or ``items`` (ranking metrics; others resample lists).
RESAMPLING = ("auto", "lists", "items")
#: ``resampled`` where items would be resampled, of a metric reading a sample's rows in every
#: list (single-label) or one value of a whole run (``ece``: always): no test, wins counted.
ACROSS_LISTS = "samples: read across lists, no item test"


def paired_lists(
    store: Store, run_a: int, run_b: int, task: str, metric: str, params: str
) -> pl.DataFrame:
    """Per-list values of two runs side by side: group_id, a, b, diff (= b - a).

    Raises:
        InvalidInput: the runs were scored on different lists (says how many differ).
    """
    keys = {"a": run_a, "b": run_b, "task": task, "metric": metric, "params": params}
    only_a, only_b = queries.fetch_rows(store.con, "compare/unmatched_lists", keys)[0]
    if only_a or only_b:
        raise InvalidInput(
            f"runs {name(store, run_a)} and {name(store, run_b)} were scored on different "
            f"{task} lists for {metric}: {only_a} list(s) only in the first, {only_b} only in "
            "the second"
        )
    return store.query("compare/paired_lists", keys)


def name(store: Store, run_id: int) -> str:
    info = store.run(run_id)
    return f"{info['experiment']}/{info['name']}"


def _list_matrix(
    store: Store, unit: Unit, other: Unit, task: str, metric: Metric, params: str
) -> tuple[list[Any], np.ndarray]:
    """(lists, values (runs x lists)) of both units' runs, runs in unit order.

    Raises:
        InvalidInput: two runs scored on different lists.
    """
    every = [*unit.run_ids, *other.run_ids]
    frame = store.query(
        "compare/unit_lists",
        {"runs": every, "task": task, "metric": metric.name, "params": params},
    )
    by_run = {r: frame.filter(pl.col("run_id") == r) for r in every}
    first = every[0]
    lists = by_run[first]["group_id"].to_list()
    known = set(lists)
    for r in every[1:]:
        mine = set(by_run[r]["group_id"].to_list())
        if mine != known:
            raise InvalidInput(
                f"runs {name(store, first)} and {name(store, r)} were scored on different "
                f"{task} lists for {metric.name}: {len(known - mine)} list(s) only in the "
                f"first, {len(mine - known)} only in the second"
            )
    position = {g: i for i, g in enumerate(lists)}
    values = np.full((len(every), len(lists)), np.nan)
    for row, r in enumerate(every):
        part = by_run[r]
        cols = [position[g] for g in part["group_id"].to_list()]
        values[row, cols] = part["value"].fill_null(np.nan).to_numpy().astype(np.float64)
    if task == "detection" and metric.source == "scores":
        return by_category(lists, values)
    return lists, values


def by_category(lists: list[Any], values: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """A detection run's ranked lists ("<category>@<IoU>": analysis/det_lists.py) as one unit
    per category, the mean over its thresholds: the lists of a category hold the same
    detections, so they are not independent draws, and the category is what is resampled.
    A category has a value at every threshold or at none (it has objects or not), so the mean
    over categories is the mean over lists."""
    category = np.array([str(g).rsplit("@", 1)[0] for g in lists])
    units, index = np.unique(category, return_inverse=True)
    sums = np.zeros((values.shape[0], units.size))
    np.add.at(sums.T, index, values.T)
    return units.tolist(), sums / np.bincount(index, minlength=units.size)


def stats(
    store: Store,
    a: Unit,
    b: Unit,
    task: str,
    metric: Metric,
    params: str,
    n_boot: int,
    resample: str,
    seed: int,
) -> dict[str, Any]:
    """Interval, p-value, effect size and win/tie/loss counts of unit ``b`` against ``a``.
    The resampling draws from a generator seeded by ``seed`` for this metric alone, so a
    metric's numbers do not depend on the other metrics or units of the call."""
    rng = np.random.default_rng(seed)
    lists, values = _list_matrix(store, a, b, task, metric, params)
    n_a = len(a.run_ids)
    kept = ~np.isnan(values).any(axis=0)
    va, vb = values[:n_a, kept], values[n_a:, kept]
    d = vb.mean(axis=0) - va.mean(axis=0)
    n = int(d.size)
    out: dict[str, Any] = {
        "n": n,
        "positive": int((d > TIE_TOLERANCE).sum()),
        "zero": int((np.abs(d) <= TIE_TOLERANCE).sum()),
        "negative": int((d < -TIE_TOLERANCE).sum()),
        "effect_size": effect_size(d),
    }
    nan = float("nan")
    if n == 0:
        return {**out, "ci_low": nan, "ci_high": nan, "p_value": None, "resampled": "none"}
    grouped = a.group or b.group or n_a > 1 or len(b.run_ids) > 1
    if resample == "items" and task == "detection":
        raise InvalidInput(
            "--resample items: a detection run's lists hold its own detections, which another "
            "run does not share; resample lists (categories)"
        )
    by_items = (metric.source == "scores" and task != "detection") and (
        resample == "items" or (resample == "auto" and n < MIN_LISTS)
    )
    across = bool(metric.checks) or metric.overall == "run row"  # the run's value, not lists'
    if by_items and (across or one_value(store, a.run_ids[0], task, metric, lists)):
        return {**out, "ci_low": nan, "ci_high": nan, "p_value": None, "resampled": ACROSS_LISTS}
    items = None
    p_json = json.loads(params)
    call = Params(ties=p_json.get("ties", "grouped"), k=p_json.get("k"))
    reweighted = fast(metric, call)
    if by_items:
        kept_lists = [g for g, k in zip(lists, kept, strict=True) if k]
        try:
            items = _items(
                store, a, b, task, kept_lists, as_given=reweighted,
                ids=not reweighted or call.ties == "docid",
            )  # fmt: skip
        except InvalidInput:
            if resample == "items":
                raise
            # auto: the runs ranked different items (retrieval runs that return their own
            # candidates), which cannot be resampled in pairs: resample lists
    if items is not None:
        swaps = not (reweighted or grouped)  # the rank-swap test after the replicates
        watching.begin(a, b, task, metric.name, params, n_boot, seed, swaps=swaps, n_lists=n)
        proto = p_json.get("protocol")
        zero = proto is not None and protocols.get(proto).no_positives == "zero"
        if all(np.array_equal(row, items.scores[0]) for row in items.scores[1:]):
            # every run ranked every item alike: each resample's difference is exactly 0
            diffs, p = np.zeros(n_boot), 1.0
        elif reweighted:  # each run ranked once, a replicate reweights its items
            reps = reweighted_replicates(metric, items, call, rng, n_boot, zero)
            diffs = seed_replicates(reps[:n_a], reps[n_a:], rng) if grouped else reps[1] - reps[0]
            p = inversion_p(diffs)
        elif grouped:
            reps = item_replicates(metric, items, call, rng, n_boot, zero)
            diffs = seed_replicates(reps[:n_a], reps[n_a:], rng)
            p = inversion_p(diffs)
        else:
            reps = item_replicates(metric, items, call, rng, n_boot, zero)
            diffs = reps[1] - reps[0]
            p = rank_swap_p(metric, items, call, rng, n_boot, zero)
        low, high = percentile_interval(diffs)
        resampled = "seeds+items" if grouped else "items"
    elif grouped:
        diffs = list_replicates(va, vb, rng, n_boot)
        low, high = percentile_interval(diffs)
        # the sign-flip test of the per-list differences of the seed means sees no seed
        # variance (with it, its false alarms reach 27-88% at 5%: docs/statistics.md); the
        # larger of it and the bootstrap's own p-value is valid whenever either is
        p = max(sign_flip_p(d, rng), inversion_p(diffs))
        resampled = "seeds+lists"
    else:  # two runs: exactly the paired statistics of earlier versions (and the dashboards)
        st = paired_stats(d, n_boot=n_boot, seed=seed)
        low, high, p = st.ci_low, st.ci_high, st.p_value
        resampled = "lists"
    return {
        **out,
        "ci_low": low,
        "ci_high": high,
        "p_value": None if np.isnan(p) else p,
        "resampled": resampled,
    }


_NULL_LIST = "\x00"  # the key of a task's single unnamed list (group_id NULL)


def _items(
    store: Store,
    a: Unit,
    b: Unit,
    task: str,
    lists: list[Any],
    *,
    as_given: bool = False,
    ids: bool = True,
) -> ItemLists:
    """The items of ``lists`` of every run of both units (:func:`run_items`)."""
    return run_items(store, [*a.run_ids, *b.run_ids], task, lists, as_given=as_given, ids=ids)


def run_items(
    store: Store,
    every: list[int],
    task: str,
    lists: list[Any],
    *,
    as_given: bool = False,
    ids: bool = True,
) -> ItemLists:
    """The items of ``lists`` of the runs ``every``, aligned by (list, item id, or position
    when the items have no ids). With ``as_given``, runs that hold the same items in the same
    input order are aligned as they are (no sort; the order of the items then differs from
    the sorted one, which changes no metric); ``ids``: keep the item ids (the ``docid`` tie
    policy reads them).

    Raises:
        InvalidInput: two runs ranked different items, or labelled them differently.
    """
    frame = in_list_order(store.query("compare/unit_items", {"runs": every, "task": task}))
    wanted = [_NULL_LIST if g is None else g for g in lists]
    if wanted == [_NULL_LIST] and frame["group_id"].null_count() == frame.height:
        frame = frame.with_columns(list=pl.lit(_NULL_LIST))  # one unnamed list: every row
    else:
        frame = frame.with_columns(list=pl.col("group_id").fill_null(_NULL_LIST)).filter(
            pl.col("list").is_in(wanted)
        )
    parts = _as_given(frame, every, ids) if as_given else None
    if parts is None:
        parts = _by_key(store, frame, every, task)
    first = parts[0]
    code = {g: i for i, g in enumerate(wanted)}
    codes = first["list"].replace_strict(code, return_dtype=pl.Int64).to_numpy()
    labels = first["label"].to_numpy().astype(np.int64)
    scores = np.stack([p["score"].fill_null(-np.inf).to_numpy().astype(np.float64) for p in parts])
    given = store.query("compare/unit_positives", {"runs": [every[0]], "task": task})
    n_pos = np.full(len(wanted), -1, dtype=np.int64)
    missed = np.zeros(len(wanted), dtype=np.int64)
    for g, count in zip(given["group_id"].to_list(), given["n_positives"].to_list(), strict=True):
        c = code.get(_NULL_LIST if g is None else g)
        if c is not None:
            n_pos[c] = int(count)
            missed[c] = max(0, int(count) - int(np.sum((codes == c) & (labels == 1))))
    return ItemLists(
        codes=codes,
        labels=labels,
        order=first["seq"].to_numpy().astype(np.int64),
        items=np.array(first["key"].to_list(), dtype=object) if ids else None,
        scores=scores,
        missed=missed,
        n_positives=n_pos,
    )


def in_list_order(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (run_id, group_id, seq, ...) ordered by (run_id, group_id, seq), group_id
    NULL last, as an ``ORDER BY`` of those columns gives it. DuckDB returns a scan's rows in
    stretches, each in stored order (a list's rows in input order), the stretches in any
    order (DuckDB's row groups): the stretches (one pass finds where ``run_id`` or
    ``group_id`` changes or ``seq`` does not step by 1) are put in order and laid end to end,
    no row sorted; the rows are sorted when the stretches are many or overlap (an order of
    another kind). The query leaves the sort out: at 2.4e6 rows it was half of reading them."""
    if frame.height < 2:
        return frame
    run, seq = frame["run_id"].to_numpy(), frame["seq"].to_numpy()
    group = frame["group_id"]
    new = np.empty(frame.height, dtype=bool)
    new[0] = True
    np.not_equal(seq[1:], seq[:-1] + 1, out=new[1:])
    new[1:] |= run[1:] != run[:-1]
    if group.null_count() < group.len():  # the lists have names
        new[1:] |= group.ne_missing(group.shift(1)).to_numpy()[1:]
    starts = np.flatnonzero(new)
    if starts.size > MAX_STRETCHES:
        return frame.sort(["run_id", "group_id", "seq"], nulls_last=True, maintain_order=True)
    ends = np.r_[starts[1:], frame.height]
    runs, groups, seqs = run[starts].tolist(), group.gather(starts).to_list(), seq[starts].tolist()
    last = seq[ends - 1].tolist()
    starts, ends = starts.tolist(), ends.tolist()
    stretch = sorted(
        (r, g is None, g or "", first, stop, start, end)
        for r, g, first, stop, start, end in zip(
            runs, groups, seqs, last, starts, ends, strict=True
        )
    )
    if any(x[:3] == y[:3] and x[4] >= y[3] for x, y in itertools.pairwise(stretch)):
        # the stretches of a list overlap: the rows are sorted
        return frame.sort(["run_id", "group_id", "seq"], nulls_last=True, maintain_order=True)
    if all(x[5] < y[5] for x, y in itertools.pairwise(stretch)):
        return frame
    return pl.concat([frame[s[5] : s[6]] for s in stretch], rechunk=False)


#: More stretches than this (:func:`in_list_order`): the rows are sorted.
MAX_STRETCHES = 4096


def _key(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (rows in input order within each run and list) with ``key``: the item id,
    or the item's position in its list when it has none."""
    pos = pl.col("seq").rank("ordinal").over(["run_id", "group_id"])
    return frame.with_columns(
        key=pl.when(pl.col("item_id").is_null()).then(pos.cast(pl.String)).otherwise("item_id")
    )


def _as_given(frame: pl.DataFrame, every: list[int], ids: bool) -> list[pl.DataFrame] | None:
    """Each run's rows as the query gives them (by list, then input order; with ``key`` if
    ``ids``), when every run holds the same items with the same labels in that order; else
    None."""
    parts = [frame.filter(pl.col("run_id") == r) for r in every]
    cols = ["list", "item_id", "label"]
    first = parts[0].select(cols)
    if any(p.height != first.height or not p.select(cols).equals(first) for p in parts[1:]):
        return None
    return [_key(p) for p in parts] if ids else parts


def _by_key(store: Store, frame: pl.DataFrame, every: list[int], task: str) -> list[pl.DataFrame]:
    """Each run's rows sorted by (list, key).

    Raises:
        InvalidInput: two runs ranked different items, or labelled them differently.
    """
    frame = _key(frame).sort(["run_id", "list", "key"])
    parts = [frame.filter(pl.col("run_id") == r) for r in every]
    first = parts[0]
    for r, part in zip(every[1:], parts[1:], strict=True):
        same = part.height == first.height and (
            part.select("list", "key", "label").equals(first.select("list", "key", "label"))
        )
        if not same:
            raise InvalidInput(
                f"runs {name(store, every[0])} and {name(store, r)} ranked different items "
                f"(or labelled them differently) in their {task} lists: their items cannot be "
                "resampled together; compare them with --resample lists"
            )
    return parts
