"""evalstore: track evaluation runs in DuckDB and compute exact metrics with SQL.

>>> from evalstore import Store, evaluate
>>> with Store("evalstore.duckdb") as store:          # doctest: +SKIP
...     store.ingest("scores.parquet", task="retrieval", run="exp/baseline")
...     print(evaluate(store, ["exp/baseline"]))

The names below load on first use (PEP 562), so that ``import evalstore`` and
``evalstore --help`` do not pay for DuckDB, polars and NumPy.

The package is layered; each sub-package imports only from those below it (the
``[tool.importlinter]`` contract in pyproject.toml checks it):

========================  ==========================================================
``cli``                   the ``evalstore`` command (Typer)
``ui``                    the local web app (``evalstore ui``)
``demo``                  the demo store (digits, HPatches-like patches, matches)
``dashboards``            Plotly pages across runs
``scale``                 Parquet export, import, Spark
``analysis``              evaluate, statistics, comparisons, the gate, leaderboards
``store``                 the ``Store`` facade, staging, users' SQL
``ingest``                reading rows into runs
``runs``                  the run registry, its edits, selection, logged values
``metrics``               the registry, NumPy references, protocols, users' metrics
``db``                    connection, schema, the SQL catalogue, the sandbox
``core`` | ``render``     NumPy reference core | terminal tables
``errors`` | ``version``
========================  ==========================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalstore.errors import (
    EvalstoreError,
    InvalidInput,
    RunExists,
    RunNotFound,
    SchemaError,
    StoreLocked,
)
from evalstore.lazy import attributes
from evalstore.version import __version__

if TYPE_CHECKING:
    from evalstore.analysis.compare import compare, history
    from evalstore.analysis.configurations import groups
    from evalstore.analysis.evaluate import evaluate, stored_metrics
    from evalstore.analysis.gate import check
    from evalstore.analysis.leaderboard import leaderboard
    from evalstore.ingest import IngestResult
    from evalstore.metrics.registry import METRICS
    from evalstore.runs.meta import RunMeta
    from evalstore.store.facade import Store
    from evalstore.store.live import Run, init

__all__ = [
    "METRICS",
    "EvalstoreError",
    "IngestResult",
    "InvalidInput",
    "Run",
    "RunExists",
    "RunMeta",
    "RunNotFound",
    "SchemaError",
    "Store",
    "StoreLocked",
    "__version__",
    "check",
    "compare",
    "evaluate",
    "groups",
    "history",
    "init",
    "leaderboard",
    "stored_metrics",
]

#: public name -> the module that defines it, imported on first access
_LAZY = {
    "METRICS": "evalstore.metrics.registry",
    "IngestResult": "evalstore.ingest",
    "RunMeta": "evalstore.runs.meta",
    "Run": "evalstore.store.live",
    "Store": "evalstore.store.facade",
    "check": "evalstore.analysis.gate",
    "compare": "evalstore.analysis.compare",
    "evaluate": "evalstore.analysis.evaluate",
    "groups": "evalstore.analysis.configurations",
    "history": "evalstore.analysis.compare",
    "init": "evalstore.store.live",
    "leaderboard": "evalstore.analysis.leaderboard",
    "stored_metrics": "evalstore.analysis.evaluate",
}


if not TYPE_CHECKING:  # type checkers read the imports above; a misspelt name stays an error
    __getattr__ = attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
