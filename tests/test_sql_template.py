"""The SQL template language of evalstore/db/queries.py: holes that nothing fills, values for
holes that do not exist, and the one macro, ``sum_exact(x)``.

A ``{name}`` hole is filled by an include's ``key=value`` or by ``queries.template``; a
``$name`` by a bound value. Each way of getting one wrong is an ``EvalstoreError`` naming the
query and the hole, where it used to pass silently (or reach DuckDB as a parser error).
``sum_exact(x)`` expands, when a query is read, to the fixed-point sum that the metric SQL
wrote out by hand before; the values it gives are compared bit for bit with that text.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import duckdb
import numpy as np
import pytest

from evalstore.db import queries
from evalstore.db.sum_exact import EXACT_BITS, expand_sum_exact
from evalstore.errors import EvalstoreError
from evalstore.metrics.registry import METRICS

# -- {holes} -------------------------------------------------------------------------------------


def test_template_fills_every_hole() -> None:
    text = queries.template("store/table_rows", table='"runs"')
    assert '"runs"' in text
    assert queries.holes(text) == set()


def test_template_refuses_a_part_for_a_hole_it_does_not_have() -> None:
    with pytest.raises(EvalstoreError, match=r"store/table_rows has no hole \{tabel\}"):
        queries.template("store/table_rows", table='"runs"', tabel='"runs"')


def test_template_refuses_a_hole_left_unfilled() -> None:
    with pytest.raises(EvalstoreError, match=r"store/table_rows: its hole \{table\} is not filled"):
        queries.template("store/table_rows")


def test_running_a_query_with_a_hole_left_is_refused() -> None:
    con = duckdb.connect()
    for run in (queries.run, queries.fetch_rows, queries.fetch_columns):
        with pytest.raises(EvalstoreError, match=r"store/table_rows: its hole \{table\}"):
            run(con, "store/table_rows", {})  # type: ignore[operator]


def test_a_value_not_given_is_named_with_its_query() -> None:
    con = duckdb.connect()
    with pytest.raises(EvalstoreError, match=r"SQL query metrics/iou: no value given for \$runs"):
        queries.fetch(con, "metrics/iou", {"task": "outcomes"})
    with pytest.raises(EvalstoreError, match=r"metrics/iou: no value given for \$runs"):
        queries.fetch(con, queries.load("metrics/iou"), None)


def test_a_hole_or_value_in_a_comment_or_string_is_no_hole() -> None:
    text = "select '{a} $b' as x -- {c} $d\n/* {e} $f */"
    assert queries.checked("test/x", text, None) == text


def _user_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "m.sql"
    path.write_text(body)
    return path


def test_an_include_key_without_its_hole_is_refused(tmp_path: Path) -> None:
    body = "with\n-- @include lib/interpolated_ap.sql step=0.1 last=10 n=11 grid=numpy stpe=1\n"
    path = _user_file(tmp_path, "-- a user's metric\n" + body + "select 1")
    with pytest.raises(EvalstoreError, match=r"m\.sql: .*lib/interpolated_ap\.sql sets \{stpe\}"):
        queries.load_file(path, "metrics/m")


@pytest.mark.parametrize(
    "line",
    ["-- @include lib/t975.sql table=t.q975 d2f=s.n", "    -- @include lib/t975.sql table=t df=1"],
)
def test_an_include_the_pattern_does_not_read_is_refused(tmp_path: Path, line: str) -> None:
    """A key with a digit, or an indented line, would else stay a comment: the hole unfilled
    or the fragment silently missing."""
    path = _user_file(tmp_path, f"-- a user's metric\nselect\n{line}\nfrom t")
    with pytest.raises(EvalstoreError, match=r"m\.sql: .*a malformed include: '-- @include"):
        queries.load_file(path, "metrics/m")


def test_an_include_hole_left_unfilled_is_refused_when_run(tmp_path: Path) -> None:
    # lib/match_fraction.sql needs sweep, cmp and lo_cmp: without cmp its text keeps {cmp}
    body = "with\n-- @include lib/match_fraction.sql sweep=sigma lo_cmp=>=\nselect * from per_pair"
    query = queries.load_file(_user_file(tmp_path, body), "metrics/m")
    params = {"runs": [1], "sigmas": [3.0]}
    with pytest.raises(EvalstoreError, match=r"metrics/m: its hole \{cmp\} is not filled"):
        queries.fetch(duckdb.connect(), query, params)


def test_every_query_of_the_catalogue_loads_and_names_its_holes() -> None:
    """Every include sets only holes its fragment has; the metrics run as they are read (no
    hole left, no macro left)."""
    for name in queries.names_with_prefix(""):
        queries.load(name)
    for name in queries.names_with_prefix("metrics/"):
        text = queries.load(name).text
        assert queries.holes(queries.normalized(text)) == set(), name
        assert "sum_exact" not in queries.normalized(text), name


# -- sum_exact -----------------------------------------------------------------------------------


def _fixed_point(term: str, bits: int = 90) -> str:
    """The fixed-point sum as the metric SQL wrote it out by hand before sum_exact."""
    return f"cast(sum(cast({term} * pow(2, {bits}) as decimal(38, 0))) as double) * pow(2, -{bits})"


def test_sum_exact_expands_to_the_hand_written_fixed_point_sum() -> None:
    assert expand_sum_exact("select sum_exact(x) from t") == f"select {_fixed_point('x')} from t"
    assert expand_sum_exact("sum_exact(a * (b + c))") == _fixed_point("(a * (b + c))")
    assert expand_sum_exact("sum_exact( ln(p), 80 )") == _fixed_point("(ln(p))", 80)
    assert EXACT_BITS == 90


def test_sum_exact_over_a_window() -> None:
    got = expand_sum_exact("exp(sum_exact(s, 80) over (partition by l order by j)) as p")
    want = (
        "exp(cast(sum(cast(s * pow(2, 80) as decimal(38, 0))) over (partition by l order by j)"
        " as double) * pow(2, -80)) as p"
    )
    assert got == want


def test_sum_exact_leaves_comments_strings_and_other_names_alone() -> None:
    text = "select 'sum_exact(x)', my_sum_exact(y) -- sum_exact(z)\n/* sum_exact( */ from t"
    assert expand_sum_exact(text) == text
    nested = expand_sum_exact("sum_exact(sum_exact(x) * 'a,)')")
    assert nested == _fixed_point(f"({_fixed_point('x')} * 'a,)')")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("select sum_exact(x from t", "no closing bracket"),
        ("select sum_exact(x, y) from t", r"takes \(expression\) or \(expression, bits\)"),
        ("select sum_exact(x, 80, 1) from t", "got sum_exact"),
        ("select sum_exact() from t", "got sum_exact"),
        ("select sum_exact(x) over (partition by l from t", "no closing bracket"),
    ],
)
def test_sum_exact_refuses_malformed_calls(text: str, message: str) -> None:
    with pytest.raises(EvalstoreError, match=f"metrics/bad: .*{message}"):
        expand_sum_exact(text, "metrics/bad")


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def test_sum_exact_gives_the_bits_of_the_hand_written_sum_in_any_order() -> None:
    """Terms spread over 30 binades (where a float sum depends on its order): the macro's
    expansion and the hand-written text give one value, the same in every order and with
    any number of threads, and it is the exactly rounded sum."""
    rng = np.random.default_rng(3)
    terms = rng.random(20_000) * 2.0 ** rng.integers(-30, 1, 20_000)
    con = duckdb.connect()
    con.execute(
        "create table t as select unnest($x) as x, unnest($o) as o",
        {"x": terms.tolist(), "o": rng.permutation(terms.size).tolist()},
    )
    macro = expand_sum_exact("select sum_exact(x) from (select x from t order by o)")
    hand = f"select {_fixed_point('x')} from (select x from t order by o)"
    seen = set()
    for threads in (1, 2, 4):
        con.execute(f"set threads = {threads}")
        for order in ("o", "x", "-x"):
            for text in (macro, hand):
                (value,) = con.execute(text.replace("order by o", f"order by {order}")).fetchone()
                seen.add(_bits(value))
    assert len(seen) == 1
    scaled = sum(math.floor(float(t) * 2.0**90 + 0.5) for t in terms)  # half up, as the cast
    assert seen == {_bits(float(scaled) * 2.0**-90)}


def test_sum_exact_transpiles_to_spark() -> None:
    from evalstore.scale.transpile import to_spark_sql

    sql = to_spark_sql(
        expand_sum_exact("select l, sum_exact(x / nullif(n, 0)) as s from t group by l")
    )
    assert "DECIMAL(38, 0)" in sql and "POWER(2, 90)" in sql and "POWER(2, -90)" in sql


def test_metric_sql_writes_its_sums_as_sum_exact() -> None:
    """No metric file or shared fragment spells the fixed-point sum out by hand."""
    folder = queries.sql_dir()
    for path in [*(folder / "metrics").glob("*.sql"), *(folder / "lib").glob("*.sql")]:
        text = queries.normalized(path.read_text())
        assert "decimal(38, 0)" not in text and "pow(2, 90)" not in text, path.name
    for name, metric in METRICS.items():
        if metric.path is None:
            assert "sum_exact" not in queries.normalized(metric.query.text), name
