"""The Compare page's figures made readable without hovering: the dashboards' per-list bars
and scatter (:mod:`evalstore.dashboards.comparison`, :mod:`evalstore.dashboards.scatter`)
with, on the bars, each list's name under its bar and a legend of both colours (better,
worse), and on the scatter, the metric's parameter in each title and the number of lists at
points that coincide.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from evalstore.dashboards.plot import Figure, trace

__all__ = ["FEW_LISTS", "LABELLED_LISTS", "params_text", "readable_bars", "readable_scatter"]

#: Lists up to which each bar is labelled with its list's name (more: the rank alone).
LABELLED_LISTS = 40
#: Lists under which an interval carries a warning on the page (its coverage is unsure).
FEW_LISTS = 5
_GOOD, _BAD = "#2ca02c", "#d62728"


def params_text(params: str | None) -> str:
    """A row's params as a title says them (``threshold=3``), the default tie policy left
    out; "" for none."""
    try:
        items = json.loads(params or "{}")
    except ValueError:
        return str(params)
    if not isinstance(items, dict):
        return str(params)
    return ", ".join(f"{k}={v}" for k, v in items.items() if (k, v) != ("ties", "grouped"))


def _axis(trace_: dict[str, Any], letter: str) -> str:
    ref = str(trace_.get(f"{letter}axis", letter))
    return f"{letter}axis{ref[1:]}"


def readable_bars(fig: Figure) -> Figure:
    """The per-list bars with each list's name under its bar (up to LABELLED_LISTS lists a
    chart), a warning in the title of a chart whose interval comes from fewer than FEW_LISTS
    lists, and a legend whose swatches are the bars' colours: green better, red worse."""
    notes = fig.layout.get("annotations", [])
    bars = [item for item in fig.data if item.get("type") == "bar"]
    for index, item in enumerate(bars):
        names = [str(c[0]) for c in item.get("customdata") or []]
        if index < len(notes) and len(names) < FEW_LISTS and "[" in notes[index]["text"]:
            notes[index]["text"] += (
                f"<br><b>only {len(names)} list(s): the interval is not to be trusted</b>"
            )
        axis = fig.layout.setdefault(_axis(item, "x"), {})
        if 0 < len(names) <= LABELLED_LISTS:
            axis.update(tickmode="array", tickvals=list(item["x"]), ticktext=names)
            axis.setdefault("tickangle", -45 if len(names) > 8 else 0)
        else:
            axis.update(dtick=max(1, len(names) // 10))
        item["showlegend"] = False
    for name, colour in (("run better than baseline", _GOOD), ("run worse", _BAD)):
        fig.data.append(
            trace(
                "bar", x=[None], y=[None], name=name, marker={"color": colour},
                showlegend=True, hoverinfo="skip",
            )
        )  # fmt: skip
    return fig


def readable_scatter(fig: Figure, params: list[str]) -> Figure:
    """The scatter with each chart's title naming its parameter (``params``, one per chart
    in the figure's order) and one marker per distinct point, sized and labelled with the
    number of lists it stands for where several coincide."""
    notes = fig.layout.get("annotations", [])
    for note, said in zip(notes, params, strict=False):
        text = params_text(said)
        if text:
            note["text"] = f"{note['text']} ({text})"
    for item in fig.data:
        if item.get("mode") != "markers":
            continue
        xs, ys = item.get("x") or [], item.get("y") or []
        counts = Counter(zip(xs, ys, strict=True))
        if all(n == 1 for n in counts.values()):
            continue
        colours = item["marker"]["color"]
        lists = item.get("customdata") or [""] * len(xs)
        seen: dict[tuple[Any, Any], int] = {}
        keep: list[int] = []
        named: list[list[str]] = []
        for i, point in enumerate(zip(xs, ys, strict=True)):
            if point in seen:
                named[seen[point]].append(str(lists[i]))
                continue
            seen[point] = len(keep)
            keep.append(i)
            named.append([str(lists[i])])
        n = [counts[(xs[i], ys[i])] for i in keep]
        item["x"], item["y"] = [xs[i] for i in keep], [ys[i] for i in keep]
        item["marker"] = {
            **item["marker"],
            "color": [colours[i] for i in keep],
            "size": [7 + 4 * (k - 1) ** 0.5 for k in n],
        }
        item["mode"] = "markers+text"
        item["text"] = [str(k) if k > 1 else "" for k in n]
        item["textposition"] = "top center"
        shown = [", ".join(x[:5]) + (" ..." if len(x) > 5 else "") for x in named]
        item["customdata"] = [[s, k] for s, k in zip(shown, n, strict=True)]
        item["hovertemplate"] = (
            "%{customdata[1]} list(s): %{customdata[0]}<br>baseline %{x:.4f}<br>"
            "run %{y:.4f}<extra></extra>"
        )
    return fig
