"""Metric SQL for two engines: DuckDB's text transpiled to Spark SQL by sqlglot.

The metric SQL in ``sql/metrics/`` is written for DuckDB, in a subset that transpiles safely
(see ``tests/test_sql_portable.py`` and ``docs/scale.md``). ``$name`` parameters become
``:name``, bound by ``spark.sql(query, args=...)``.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from evalstore.errors import EvalstoreError
from evalstore.metrics.registry import METRICS

__all__ = ["INSTALL_HINT", "spark_sql", "to_spark_sql", "without_strings"]

INSTALL_HINT = "pip install 'evalstore[spark]'"
_LEFTOVER_DOLLAR = re.compile(r"\$[A-Za-z_0-9]")


def _sqlglot() -> Any:
    try:
        import sqlglot
    except ImportError:
        raise EvalstoreError(
            f"transpiling metric SQL to Spark needs sqlglot: {INSTALL_HINT}"
        ) from None
    return sqlglot


def to_spark_sql(text: str) -> str:
    """Transpile one DuckDB statement of evalstore's metric SQL to Spark SQL.

    ``$name`` parameters become ``:name`` (bound by ``spark.sql(query, args=...)``); comments
    are dropped. A construct sqlglot cannot express in Spark is an error, not a warning.

    Raises:
        EvalstoreError: sqlglot is missing, or the SQL does not transpile to one statement.
    """
    sqlglot = _sqlglot()
    from sqlglot.errors import ErrorLevel, SqlglotError

    try:
        out = sqlglot.transpile(
            text,
            read="duckdb",
            write="spark",
            pretty=True,
            comments=False,
            unsupported_level=ErrorLevel.RAISE,
        )
    except SqlglotError as exc:
        first = str(exc).strip().splitlines()[0]
        raise EvalstoreError(f"metric SQL does not transpile to Spark: {first}") from None
    statements = [s for s in out if s.strip()]
    if len(statements) != 1:
        raise EvalstoreError(f"expected one SQL statement, got {len(statements)}")
    sql = statements[0]
    if _LEFTOVER_DOLLAR.search(without_strings(sql)):
        raise EvalstoreError("a $parameter was not turned into a Spark :parameter")
    return sql + "\n"


def without_strings(sql: str) -> str:
    """``sql`` with the text of its string literals left out."""
    return re.sub(r"'(?:[^']|'')*'", "''", sql)


@functools.cache
def spark_sql(name: str, ties: str = "grouped") -> str:
    """The Spark SQL of a registered metric under the tie policy ``ties`` (the registry
    names its file), transpiled from its DuckDB source."""
    return to_spark_sql(METRICS[name].query_for(ties).text)
