"""evalstore: track evaluation runs in DuckDB and compute exact metrics with SQL."""

from evalstore.errors import (
    EvalstoreError,
    InvalidInput,
    RunExists,
    RunNotFound,
    SchemaError,
    StoreLocked,
)
from evalstore.ingest import IngestResult
from evalstore.store import Store

__all__ = [
    "EvalstoreError",
    "IngestResult",
    "InvalidInput",
    "RunExists",
    "RunNotFound",
    "SchemaError",
    "Store",
    "StoreLocked",
]

__version__ = "0.1.0"
