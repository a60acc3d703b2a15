"""The ``evalstore`` command line: thin commands over the library, one module per noun.

This package is the only code that prints or exits. Errors raised on purpose by the library
(:class:`~evalstore.errors.EvalstoreError`) become one ``Error: ...`` line on stderr and exit
code 1; anything else is a bug and keeps its traceback.
"""

import importlib

from evalstore.cli.common import app

__all__ = ["app", "main"]

# Commands register themselves on import; this order is the order of `evalstore --help`.
for _noun in (
    "ingest",
    "logged",
    "runs",
    "metrics",
    "user_metrics",
    "compare",
    "query",
    "dashboard",
    "scale",
):
    importlib.import_module(f"evalstore.cli.{_noun}")


def main() -> None:
    app()
