"""evalstore: track evaluation runs in DuckDB and compute exact metrics with SQL.

>>> from evalstore import Store, evaluate
>>> with Store("evalstore.duckdb") as store:          # doctest: +SKIP
...     store.ingest("scores.parquet", task="retrieval", run="exp/baseline")
...     print(evaluate(store, ["exp/baseline"]))

The names below load on first use (PEP 562), so that ``import evalstore`` and
``evalstore --help`` do not pay for DuckDB, polars and NumPy. Four public functions share
their module's name (``compare``, ``evaluate``, ``groups``, ``leaderboard``): the package
attribute is always the function, also after ``import evalstore.compare`` has run somewhere;
the module itself is ``sys.modules["evalstore.compare"]`` (or ``from evalstore.compare import
...``).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from evalstore.errors import (
    EvalstoreError,
    InvalidInput,
    RunExists,
    RunNotFound,
    SchemaError,
    StoreLocked,
)
from evalstore.version import __version__

if TYPE_CHECKING:
    from evalstore.compare import compare, history
    from evalstore.evaluate import evaluate, stored_metrics
    from evalstore.gate import check
    from evalstore.groups import groups
    from evalstore.ingest import IngestResult
    from evalstore.leaderboard import leaderboard
    from evalstore.metrics import METRICS
    from evalstore.store import Store

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

#: public name -> the module that defines it, imported on first access
_LAZY = {
    "METRICS": "evalstore.metrics",
    "IngestResult": "evalstore.ingest",
    "Store": "evalstore.store",
    "check": "evalstore.gate",
    "compare": "evalstore.compare",
    "evaluate": "evalstore.evaluate",
    "groups": "evalstore.groups",
    "history": "evalstore.compare",
    "leaderboard": "evalstore.leaderboard",
    "stored_metrics": "evalstore.evaluate",
}


if not TYPE_CHECKING:  # type checkers read the imports above; a misspelt name stays an error

    def __getattr__(name: str) -> Any:
        try:
            module = _LAZY[name]
        except KeyError:
            # not ours: lets ``from evalstore import queries`` import the submodule instead
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        # Importing evalstore.compare binds the submodule as the package's ``compare``; the
        # public function of that name keeps the attribute, as when __init__ imported it.
        if isinstance(value, types.ModuleType) and _LAZY.get(name) == value.__name__:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
