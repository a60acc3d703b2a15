"""The bench/ scripts of a minute or more at their tiny size (tests/test_bench.py: what is
asserted), in a file of their own so that CI's workers share the two files."""

from __future__ import annotations

import pytest

from tests.test_bench import params, run_case


@pytest.mark.slow
@pytest.mark.parametrize(("script", "extra"), params(heavy=True))
def test_heavy_bench_script_runs_at_a_tiny_size(script: str, extra: list[str]) -> None:
    run_case(script, extra)
