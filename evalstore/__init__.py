"""evalstore: track evaluation runs in DuckDB and compute exact metrics with SQL.

>>> from evalstore import Store, evaluate
>>> with Store("evalstore.duckdb") as store:          # doctest: +SKIP
...     store.ingest("scores.parquet", task="retrieval", run="exp/baseline")
...     print(evaluate(store, ["exp/baseline"]))
"""

from evalstore.compare import compare, history
from evalstore.errors import (
    EvalstoreError,
    InvalidInput,
    RunExists,
    RunNotFound,
    SchemaError,
    StoreLocked,
)
from evalstore.evaluate import evaluate, stored_metrics
from evalstore.gate import check
from evalstore.groups import groups
from evalstore.ingest import IngestResult
from evalstore.leaderboard import leaderboard
from evalstore.metrics import METRICS
from evalstore.store import Store
from evalstore.version import __version__

__all__ = [
    "METRICS",
    "EvalstoreError",
    "IngestResult",
    "InvalidInput",
    "RunExists",
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
    "leaderboard",
    "stored_metrics",
]
