"""Metric SQL keeps to the subset that runs the same on DuckDB and on Spark.

Each rule walks the sqlglot syntax tree of every file in sql/metrics/ (includes expanded) and
rejects one known trap; each rule is also shown to catch a bad example.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
import sqlglot
from sqlglot import exp

from evalstore.db import queries
from evalstore.metrics.registry import METRICS

BANNED_FUNCTIONS = {"list_zip", "list_avg", "list_transform", "list_filter", "list_apply"}
TABLE_FUNCTIONS = {"range", "generate_series", "unnest", "read_parquet", "read_csv"}


def _parse(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read="duckdb")


def _name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    return (node.sql_name() if hasattr(node, "sql_name") else type(node).__name__).lower()


def _is_nonzero_literal(node: exp.Expression) -> bool:
    while isinstance(node, (exp.Cast, exp.Paren)):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string and float(node.this) != 0.0


def unguarded_divisions(tree: exp.Expression) -> Iterator[str]:
    """A divisor must be nullif(x, 0) (Spark's ANSI mode raises on division by zero) or a
    non-zero constant."""
    for div in tree.find_all(exp.Div):
        divisor = div.expression
        while isinstance(divisor, exp.Paren):
            divisor = divisor.this
        if isinstance(divisor, exp.Nullif) and _is_zero(divisor.expression):
            continue
        if _is_nonzero_literal(divisor):
            continue
        yield f"divisor without nullif(..., 0): {div.sql(dialect='duckdb')[:80]}"


def _is_zero(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string and float(node.this) == 0.0


def table_functions_in_from(tree: exp.Expression) -> Iterator[str]:
    """No table function in FROM/JOIN (range, generate_series, unnest...): use
    unnest(...) in the select list or a values list."""
    for source in [*tree.find_all(exp.From), *tree.find_all(exp.Join)]:
        target = source.this
        if isinstance(target, (exp.Unnest, exp.TableFromRows)) or (
            isinstance(target, exp.Table) and isinstance(target.this, exp.Func)
        ):
            yield f"table function in FROM: {target.sql(dialect='duckdb')[:80]}"


def banned_functions(tree: exp.Expression) -> Iterator[str]:
    """No list comprehensions, list_zip, list_avg, quantile_* (no Spark twin)."""
    quantiles = (exp.PercentileCont, exp.PercentileDisc, exp.Quantile, exp.ApproxQuantile)
    for func in tree.find_all(exp.Func):
        name = _name(func)
        if name in BANNED_FUNCTIONS or name.startswith("quantile") or isinstance(func, quantiles):
            yield f"function without a safe Spark twin: {name} (quantile_*, list_zip, list_avg...)"
    for _ in [*tree.find_all(exp.Lambda), *tree.find_all(exp.Comprehension)]:
        yield "lambda / list comprehension"


def positional_parameters(sql: str) -> Iterator[str]:
    """Named $name parameters only (they become :name for spark.sql(query, args=...))."""
    for match in re.finditer(r"\$\d+|(?<![:\w])\?(?!\w)", _strip_comments(sql)):
        yield f"positional parameter {match.group(0)}"


def bare_decimals(tree: exp.Expression) -> Iterator[str]:
    """A decimal literal is DECIMAL in both engines: write 0.1::double."""
    for literal in tree.find_all(exp.Literal):
        if literal.is_string or not re.search(r"[.eE]", str(literal.this)):
            continue
        parent = literal.parent
        if isinstance(parent, exp.Cast) and parent.to.this in (
            exp.DataType.Type.DOUBLE,
            exp.DataType.Type.FLOAT,
        ):
            continue
        yield f"bare decimal literal {literal.this} (write {literal.this}::double)"


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


def unpartitioned_windows(tree: exp.Expression) -> Iterator[str]:
    """Every window is partitioned: without PARTITION BY, Spark moves all rows to one task."""
    for select in tree.find_all(exp.Select):
        named = {
            w.this.name: w
            for w in select.args.get("windows") or []
            if isinstance(w.this, exp.Identifier)
        }
        for win in select.find_all(exp.Window):
            if isinstance(win.this, exp.Identifier):
                continue  # a WINDOW-clause definition, checked where it is used
            spec = named.get(win.args["alias"].name) if win.args.get("alias") else win
            if spec is not None and not spec.args.get("partition_by"):
                yield f"window without partition by: {win.sql(dialect='duckdb')[:80]}"


TREE_RULES: list[Callable[[exp.Expression], Iterator[str]]] = [
    unguarded_divisions,
    table_functions_in_from,
    banned_functions,
    bare_decimals,
    unpartitioned_windows,
]


def violations(sql: str) -> list[str]:
    found = list(positional_parameters(sql))
    tree = _parse(sql)
    for rule in TREE_RULES:
        found += list(rule(tree))
    return found


@pytest.mark.parametrize("name", sorted({f for m in METRICS.values() for f in m.sql_files}))
def test_metric_sql_is_portable(name: str) -> None:
    assert violations(queries.load(f"metrics/{name}").text) == []


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("select a / b from t", "divisor without nullif"),
        ("select a / nullif(b, 1) from t", "divisor without nullif"),
        ("select x from range(10) as r(x)", "table function in FROM"),
        ("select x from generate_series(1, 3) as g(x)", "table function in FROM"),
        ("select x from unnest([1, 2]) as u(x)", "table function in FROM"),
        ("select list_zip(a, b) from t", "list_zip"),
        ("select list_avg(a) from t", "list_avg"),
        ("select quantile_cont(a, 0.5::double) from t", "quantile_*"),
        ("select [x * 2 for x in a] from t", "lambda"),
        ("select a from t where b = $1", "positional parameter"),
        ("select a from t where b > 0.1", "bare decimal literal 0.1"),
        ("select sum(x) over (order by y) from t", "window without partition by"),
    ],
)
def test_each_rule_catches_its_trap(sql: str, message: str) -> None:
    assert any(message in v for v in violations(sql)), violations(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "select a / nullif(b, 0) from t",
        "select a / 4 from t",
        "select unnest($sigmas) as sigma",
        "select a from t where b > 0.1::double and c = $name",
        "select * from (values (1, 0), (2, 1)) as c(k, a)",
    ],
)
def test_allowed_forms_pass(sql: str) -> None:
    assert violations(sql) == []
