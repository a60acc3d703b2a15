"""Slow, obviously correct definitions of the multi-label metrics (cp ... of1 and their
``_at_k`` forms), for the parity test: one class and one image at a time, from ML-GCN's
``AveragePrecisionMeter.evaluation`` (megvii-research/ML-GCN ``util.py`` @
311f521031b91c59a8bd65a1afe3e6cf9a97916a) and the rules of docs/metrics.md:

- a row is one (image, class): the image is its item, the class its list; a label of 0 is
  ignored (the row counts nowhere, and takes no place in its image's top k);
- a label is predicted when its score is >= the threshold (never at -inf, NULL stored) and,
  in the top-k form, it is among its image's k highest-scoring labels: under ``grouped`` a
  tie group straddling the cut gives each of its labels the share (k - above) / tied, else
  ties are ordered positives first (optimistic) / negatives first (pessimistic), then by the
  class's first input position; ``input`` by that position; ``docid`` by class id as text,
  the greater first;
- per class: Ng = positives, Np = predicted, Nc = predicted positives; Np = 1 where it is 0;
- OP = sum Nc / sum Np, OR = sum Nc / sum Ng, CP = mean of Nc / Np, CR = mean of Nc / Ng,
  F1 = 2 P R / (P + R); any 0 / 0 is NaN;
- per-class rows: cp the class's Nc / Np, cr its Nc / Ng, cf1 its 2 Nc / (Np + Ng).

>>> from evalstore.metrics.registry import Params, RankedLists
>>> lists = RankedLists(group=np.array(["a", "b", "a", "b"], dtype=object),
...     scores=np.array([0.9, 0.2, 0.6, 0.7]), labels=np.array([1, 1, -1, 1]),
...     items=np.array(["i1", "i1", "i2", "i2"], dtype=object))
>>> SLOW_MULTILABEL["op"](lists, Params()).value.tolist()  # 2 right of 3 predicted
[0.6666666666666666]
>>> SLOW_MULTILABEL["cr_at_k"](lists, Params(k=1)).value.tolist()  # a: 1/1, b: 1/2
[0.75, 1.0, 0.5]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from evalstore.metrics.registry import Params, RankedLists, Result

NAN = float("nan")
NAMES = ("cp", "cr", "cf1", "op", "or", "of1")


def _div(a: float, b: float) -> float:
    return a / b if b != 0 else NAN


def _share(me: tuple[float, int, Any, int, bytes], others: list[Any], k: int, ties: str) -> float:
    """How much of the label ``me`` = (score, label, class, first position, id text) is in
    its image's top k, among ``others`` (its image's scored labels, itself included)."""
    score = me[0]
    if ties == "grouped":
        above = sum(1 for o in others if o[0] > score)
        tied = sum(1 for o in others if o[0] == score)
        return max(0, min(tied, k - above)) / tied
    if ties == "docid":
        ranked = sorted(others, key=lambda o: (-o[0], [-b for b in o[4]] + [1]))
    elif ties == "optimistic":
        ranked = sorted(others, key=lambda o: (-o[0], -o[1], o[3]))
    elif ties == "pessimistic":
        ranked = sorted(others, key=lambda o: (-o[0], o[1], o[3]))
    else:
        ranked = sorted(others, key=lambda o: (-o[0], o[3]))
    return 1.0 if ranked.index(me) < k else 0.0


def _slow(name: str, top_k: bool) -> Any:
    def slow(inputs: RankedLists, params: Params) -> Result:
        at = (0.5,) if params.at is None else tuple(params.at)
        k = 3 if params.k is None else params.k
        group = inputs.group.tolist()
        order = list(range(len(group))) if inputs.order is None else inputs.order.tolist()
        assert inputs.items is not None
        first: dict[Any, int] = {}
        for g, seq in zip(group, order, strict=True):
            first[g] = min(first.get(g, seq), seq)
        classes = sorted(first)
        rows = []
        for i, g in enumerate(group):
            if int(inputs.labels[i]) != 0:
                s, lab = float(inputs.scores[i]), int(inputs.labels[i])
                rows.append((str(inputs.items[i]), (s, lab, g, first[g], str(g).encode())))
        out_groups: list[Any] = []
        out_values: list[float] = []
        out_at: list[float] = []
        for t in at:
            nc = dict.fromkeys(classes, 0.0)
            np_ = dict.fromkeys(classes, 0.0)
            ng = {c: sum(1 for _, r in rows if r[2] == c and r[1] == 1) for c in classes}
            for image in sorted({img for img, _ in rows}):
                scored = [r for img, r in rows if img == image and r[0] != -math.inf]
                for r in scored:
                    if not r[0] >= t:
                        continue
                    w = _share(r, scored, k, params.ties) if top_k else 1.0
                    np_[r[2]] += w
                    nc[r[2]] += w if r[1] == 1 else 0.0
            np1 = {c: 1.0 if np_[c] == 0 else np_[c] for c in classes}
            op = sum(nc.values()) / sum(np1.values())
            o_r = _div(sum(nc.values()), sum(ng.values()))
            cp = sum(nc[c] / np1[c] for c in classes) / len(classes)
            cr = sum(_div(nc[c], ng[c]) for c in classes) / len(classes)
            run = {"op": op, "or": o_r, "of1": _div(2 * op * o_r, op + o_r), "cp": cp, "cr": cr,
                   "cf1": _div(2 * cp * cr, cp + cr)}  # fmt: skip
            out_groups.append(None)
            out_values.append(run[name])
            out_at.append(t)
            for c in classes if name in ("cp", "cr", "cf1") else []:
                each = {"cp": nc[c] / np1[c], "cr": _div(nc[c], ng[c]),
                        "cf1": _div(2 * nc[c], np_[c] + ng[c])}  # fmt: skip
                out_groups.append(c)
                out_values.append(each[name])
                out_at.append(t)
        ids = np.empty(len(out_groups), dtype=object)
        ids[:] = out_groups
        return Result(ids, np.array(out_values, dtype=np.float64), np.array(out_at))

    slow.__doc__ = (
        f"ML-GCN's {name.upper()} {'of each image top k' if top_k else 'at each threshold'}, "
        "one class and one image at a time (the module's rules)."
    )
    return slow


#: Registry name -> slow definition.
SLOW_MULTILABEL = {
    **{name: _slow(name, False) for name in NAMES},
    **{f"{name}_at_k": _slow(name, True) for name in NAMES},
}
