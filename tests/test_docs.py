"""Every docstring example in the package runs, and says what it shows (doctest)."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import pkgutil
from pathlib import Path

import pytest

import evalstore


def _has_examples(name: str) -> bool:
    """Whether the module's source holds a ``>>>`` (read, not imported)."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, name
    return ">>>" in Path(spec.origin).read_text(encoding="utf-8")


#: The modules with examples: doctest has nothing to run in the others.
MODULES = [
    name
    for name in (
        "evalstore",
        *sorted(
            m.name
            for m in pkgutil.walk_packages(evalstore.__path__, "evalstore.")
            if m.name != "evalstore.__main__"  # importing it runs the command line
        ),
    )
    if _has_examples(name)
]

#: The modules of the metrics' NumPy twins: every public function they define shows a
#: hand-checkable example (CONTRIBUTING, "Adding a metric").
TWINS = (
    "evalstore.core.ranking",
    "evalstore.core.point_metrics",
    "evalstore.core.graded",
    "evalstore.core.matching.accuracy",
    "evalstore.core.matching.homographies",
    "evalstore.core.matching.overlap",
    "evalstore.core.pose.auc",
    "evalstore.core.pose.epipolar",
    "evalstore.core.pose.homography",
    "evalstore.core.pose.imc",
    "evalstore.metrics.references",
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} writes >>> where doctest finds no example to run"


def test_every_numpy_twin_has_an_example() -> None:
    finder = doctest.DocTestFinder(recurse=False)
    missing = []
    for name in TWINS:
        module = importlib.import_module(name)
        for key, value in vars(module).items():
            if not inspect.isfunction(value) or value.__module__ != name or key.startswith("_"):
                continue  # imported, or private
            if not any(t.examples for t in finder.find(value, key, module=module)):
                missing.append(f"{name}.{key}")
    assert not missing, f"no >>> example: {', '.join(missing)}"


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
    # and test_docstring_examples_hold runs them: the modules it is parametrized over hold
    # these and every twin module (an empty or short list would pass in silence)
    assert {*examples, *TWINS} <= set(MODULES), sorted({*examples, *TWINS} - set(MODULES))
