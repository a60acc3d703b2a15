"""Every docstring example in the package runs, and says what it shows (doctest)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import evalstore

MODULES = [
    "evalstore",
    *sorted(
        m.name
        for m in pkgutil.walk_packages(evalstore.__path__, "evalstore.")
        if m.name != "evalstore.__main__"  # importing it runs the command line
    ),
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_there_are_examples_to_run() -> None:
    finder = doctest.DocTestFinder()
    examples = {
        name: sum(len(t.examples) for t in finder.find(importlib.import_module(name)))
        for name in (
            "evalstore.db.queries",
            "evalstore.metrics.registry",
            "evalstore.metrics.references",
        )
    }
    assert all(n > 0 for n in examples.values()), examples
