"""grid.split picks the rows of each facet, series or line in one pass: the same frames, in
the same order, as a filter per value (grid.rows_where), for every column type a chart
groups by, NULL and NaN included."""

from __future__ import annotations

from datetime import date
from typing import Any

import polars as pl
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from evalstore.dashboards.grid import distinct, positions, rows_where, split

KEYS: dict[str, tuple[Any, st.SearchStrategy[Any]]] = {
    "text": (pl.String, st.sampled_from(["a", "b", "", "é"])),
    "int": (pl.Int64, st.integers(-2, 2)),
    "bool": (pl.Boolean, st.booleans()),
    "date": (pl.Date, st.sampled_from([date(2026, 1, 1), date(2026, 1, 2)])),
    "float": (pl.Float64, st.sampled_from([0.0, -0.0, 1.5, float("nan")])),
    "category": (pl.Categorical, st.sampled_from(["x", "y"])),
}


@settings(max_examples=examples(100), deadline=None)
@given(st.sampled_from(sorted(KEYS)), st.data())
def test_split_is_a_filter_per_value(kind: str, data: st.DataObject) -> None:
    dtype, values = KEYS[kind]
    keys = data.draw(st.lists(st.one_of(st.none(), values), max_size=12))
    frame = pl.DataFrame({"k": pl.Series(keys, dtype=dtype), "i": list(range(len(keys)))})
    wanted = [*distinct(frame["k"]), *data.draw(st.lists(st.one_of(st.none(), values), max_size=2))]
    got = split(frame, "k", wanted)
    assert len(got) == len(wanted)
    for value, part in zip(wanted, got, strict=True):
        assert_frame_equal(part, rows_where(frame, "k", value))
    if kind != "float":  # exact keys: found in one pass
        found = positions(frame, "k", wanted)
        assert found is not None
        assert [frame["i"][rows].to_list() for rows in found] == [p["i"].to_list() for p in got]
    assert split(frame, None, wanted) == [frame] * len(wanted)


def test_nan_matches_nan_as_in_a_filter() -> None:
    frame = pl.DataFrame({"k": [float("nan"), 1.0, None, float("nan"), -0.0], "i": range(5)})
    wanted = distinct(frame["k"])
    got = split(frame, "k", wanted)
    assert [p["i"].to_list() for p in got] == [[0, 3], [1], [2], [0, 3], [4]]
    for value, part in zip(wanted, got, strict=True):
        assert_frame_equal(part, rows_where(frame, "k", value))
