"""The fast loop's markers: ``slow_after(n)`` (tests/conftest.py) leaves the first ``n`` cases
of a parametrized test in the fast loop and marks the others slow."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import pytest_collection_modifyitems

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

pytest_plugins = ["pytester"]

PYPROJECT = Path(__file__).parent.parent / "pyproject.toml"


def test_slow_after_marks_the_cases_after_the_first_n(pytester: pytest.Pytester) -> None:
    markers = tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]["markers"]
    pytester.makeini("[pytest]\nmarkers =\n    " + "\n    ".join(markers))
    items = pytester.getitems(
        """
        import pytest

        @pytest.mark.slow_after(2)
        @pytest.mark.parametrize("case", ["a", "b", "c", "d"])
        def test_family(case):
            pass

        @pytest.mark.parametrize("case", ["a", "b", "c"])
        def test_unsampled(case):
            pass
        """
    )
    pytest_collection_modifyitems(items[0].config, items)
    slow = [item.name for item in items if item.get_closest_marker("slow")]
    assert slow == ["test_family[c]", "test_family[d]"]
    assert len(items) == 7
