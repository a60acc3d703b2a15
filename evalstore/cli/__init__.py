"""The ``evalstore`` command line: thin commands over the library, one module per noun.

This package is the only code that prints or exits. Errors raised on purpose by the library
(:class:`~evalstore.errors.EvalstoreError`) become one ``Error: ...`` line on stderr and exit
code 1; anything else is a bug and keeps its traceback.
"""

import copy
import importlib
from collections.abc import Sequence

import typer

from evalstore.cli.common import app
from evalstore.cli.numpy_sort import prefer_avx2_sort

__all__ = ["app", "app_for", "main"]

# Commands register themselves on import; this order is the order of `evalstore --help`.
for _noun in (
    "ingest", "logged", "live", "runs", "metrics", "user_metrics", "compare", "query", "dashboard",
    "ui", "scale",
):  # fmt: skip
    importlib.import_module(f"evalstore.cli.{_noun}")


def app_for(argv: Sequence[str]) -> typer.Typer:
    """The app that runs ``evalstore ARGV``: for ``COMMAND ...`` the app with that command
    alone (Typer builds the click objects of every command it holds at each start, 50 ms, a
    quarter of an `evalstore runs`); else (global options first, a group, ``--help``, an
    unknown command) the whole app, with its usage and its errors."""
    chosen = [c for c in app.registered_commands if argv and c.name == argv[0]]
    if len(chosen) != 1:
        return app
    lean = copy.copy(app)
    lean.registered_commands = chosen
    lean.registered_groups = []
    return lean


def main(argv: Sequence[str] | None = None) -> None:
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    prefer_avx2_sort(args)
    app_for(args)(args=args, prog_name="evalstore")
