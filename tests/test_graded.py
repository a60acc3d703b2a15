"""The graded and first-hit metrics' ``grouped`` ties are expectations over a random order of
every tie group: on small lists, the value under ``grouped`` equals the mean, over every order
of every tie group, of the value under ``input`` ties (the plain formula on one ranking); and
hand-worked values of the NumPy core (evalstore.core.graded)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstore.core.graded import GRADED, WITH_K, per_list_graded
from evalstore.errors import InvalidInput


@st.composite
def tied_lists(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 7))  # at most 7! orders of one list
    scores = np.array(draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=n, max_size=n)))
    scores[np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))] = -np.inf
    labels = np.array(draw(st.lists(st.sampled_from([-1, 1, 1, 0]), min_size=n, max_size=n)))
    gains = np.array(
        draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, np.nan]), min_size=n, max_size=n))
    )
    return np.zeros(n, dtype=int), scores, labels, gains


def _orders(scores: np.ndarray) -> list[np.ndarray]:
    """Every input order that keeps the tie groups' ranks: all permutations of each group of
    equal scores, as ``seq`` values."""
    groups = [np.flatnonzero(scores == s) for s in np.unique(scores)]
    out = []
    for perms in itertools.product(*(itertools.permutations(g.tolist()) for g in groups)):
        seq = np.empty(scores.size, dtype=np.int64)
        position = 0
        for perm in perms:
            for i in perm:
                seq[i] = position
                position += 1
        out.append(seq)
    return out


@settings(max_examples=examples(150), deadline=None)
@given(data=tied_lists(), metric=st.sampled_from(GRADED), k=st.sampled_from([1, 2, 3, 5]))
def test_grouped_is_the_mean_over_every_order_of_the_ties(data, metric: str, k: int) -> None:
    group, scores, labels, gains = data
    kk = k if metric in WITH_K else None
    grouped = per_list_graded(metric, group, scores, labels, gains=gains, ties="grouped", k=kk)[1]
    values = [
        per_list_graded(metric, group, scores, labels, gains=gains, ties="input", k=kk, order=seq)[
            1
        ][0]
        for seq in _orders(scores)
    ]
    if math.isnan(grouped[0]):
        assert all(math.isnan(v) for v in values)
    else:
        assert grouped[0] == pytest.approx(float(np.mean(values)), rel=1e-12, abs=1e-15)


def test_hand_worked_values() -> None:
    g = np.zeros(5, dtype=int)
    s = np.array([5.0, 4.0, 4.0, 2.0, -np.inf])  # the last is not retrieved
    lab = np.array([-1, 1, -1, 1, 1])
    gains = np.array([0.0, 3.0, 0.0, 1.0, 2.0])

    def value(metric: str, ties: str = "input", k: int | None = None) -> float:
        return float(per_list_graded(metric, g, s, lab, gains=gains, ties=ties, k=k)[1][0])

    # input order: ranks 1..4 = (-1, 0), (+1, 3), (-1, 0), (+1, 1); ideal gains 3, 2, 1
    dcg = 3 / math.log2(3) + 1 / math.log2(5)
    ideal = 3 + 2 / math.log2(3) + 1 / 2
    assert value("ndcg") == pytest.approx(dcg / ideal, rel=1e-15)
    assert value("ndcg_at_k", k=2) == pytest.approx((3 / math.log2(3)) / (3 + 2 / math.log2(3)))
    assert value("ndcg_exp") == pytest.approx(
        (7 / math.log2(3) + 1 / math.log2(5)) / (7 + 3 / math.log2(3) + 1 / 2), rel=1e-15
    )
    assert value("recip_rank") == 0.5
    assert value("r_precision") == pytest.approx(1 / 3)  # P = 3 (one not retrieved): 1 in top 3
    assert value("hit_at_k", k=1) == 0.0 and value("hit_at_k", k=2) == 1.0
    # grouped: ranks 2 and 3 tie (one positive of two): E[1/rank] = (1/2 + 1/3) / 2
    assert value("recip_rank", "grouped") == pytest.approx(5 / 12, rel=1e-15)
    assert value("hit_at_k", "grouped", k=2) == 0.5


def test_bad_gains_and_k_are_refused() -> None:
    g, s, lab = np.zeros(2, dtype=int), np.array([1.0, 0.0]), np.array([1, -1])
    with pytest.raises(InvalidInput, match="gains are finite numbers >= 0"):
        per_list_graded("ndcg", g, s, lab, gains=np.array([-1.0, 0.0]))
    with pytest.raises(InvalidInput, match="k must be an integer >= 1"):
        per_list_graded("hit_at_k", g, s, lab, k=0)
    with pytest.raises(InvalidInput, match="k applies to"):
        per_list_graded("ndcg", g, s, lab, k=3)
