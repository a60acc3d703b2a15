"""The built wheel ships the query catalogue (sql/ as evalstore/sql/) and no test data: the
Spark goldens of tests/golden/spark/ stay out of it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # builds a wheel with pip (a few seconds; fetches hatchling when not cached)
def test_the_wheel_has_the_sql_catalogue_and_no_spark_goldens(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("evalstore-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    sql = [n for n in names if n.endswith(".sql")]
    # every metric's DuckDB SQL is there, under the package
    shipped = {n.removeprefix("evalstore/sql/") for n in sql}
    assert {f"metrics/{p.name}" for p in (ROOT / "sql" / "metrics").glob("*.sql")} <= shipped
    assert "metrics/ap.sql" in shipped
    # no Spark SQL anywhere in it, and no test data
    assert [n for n in sql if "spark" in n] == []
    assert [n for n in names if n.startswith(("tests/", "evalstore/tests/"))] == []
    assert [n for n in names if "golden" in n] == []
