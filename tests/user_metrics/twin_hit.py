"""The Python twin of tests/user_metrics/hit_at_1.sql, as a user's package would ship it
(entry point ``hit_at_1 = twin_hit:reference`` in the group ``evalstore.metrics``)."""

from __future__ import annotations

import math

import numpy as np

from evalstore.metrics.registry import Params, RankedLists, Result


def reference(inputs: RankedLists, params: Params) -> Result:
    """Per list: the share of positives among the items at the top rank (``grouped``: all
    items of the top score; otherwise the one the policy ranks first); NaN without positives."""
    groups = sorted(set(inputs.group.tolist()), key=str)
    values = []
    for g in groups:
        rows = [i for i in range(len(inputs.group)) if inputs.group[i] == g]
        labels = [int(inputs.labels[i]) for i in rows]
        if labels.count(1) == 0:
            values.append(math.nan)
            continue
        live = [i for i in rows if inputs.labels[i] != 0 and inputs.scores[i] != -np.inf]
        if not live:
            values.append(0.0)
            continue
        top = max(inputs.scores[i] for i in live)
        tied = [i for i in live if inputs.scores[i] == top]
        hits = [inputs.labels[i] == 1 for i in tied]
        if params.ties == "grouped":
            values.append(sum(hits) / len(hits))
        elif params.ties == "optimistic":
            values.append(float(any(hits)))
        elif params.ties == "pessimistic":
            values.append(float(all(hits)))
        elif params.ties == "input":
            first = min(tied, key=lambda i: inputs.order[i])
            values.append(float(inputs.labels[first] == 1))
        else:  # docid: the greater id as text first
            first = max(tied, key=lambda i: str(inputs.items[i]).encode())
            values.append(float(inputs.labels[first] == 1))
    out = np.empty(len(groups), dtype=object)
    out[:] = groups
    return Result(out, np.array(values, dtype=np.float64))


def wrong(inputs: RankedLists, params: Params) -> Result:
    """A twin that disagrees: always 1."""
    right = reference(inputs, params)
    return Result(right.group, np.where(np.isnan(right.value), np.nan, 1.0))
