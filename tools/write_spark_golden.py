"""Writes (or checks) tests/golden/spark/<metric>.sql, the Spark SQL of every registered metric
(test goldens: outside sql/, so neither in the wheel nor in the query catalogue):

    python tools/write_spark_golden.py            # rewrite the files
    python tools/write_spark_golden.py --check    # exit 1 with a diff when they are stale
    python tools/write_spark_golden.py --show ap  # print one metric's Spark SQL

Run it after changing a metric's SQL (or sqlglot's pin); tests/test_spark.py fails until then.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from evalstore.db import queries
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.metrics.registry import METRICS
from evalstore.scale.transpile import spark_sql, to_spark_sql

# the golden files: test data, next to the tests that compare them
GOLDEN_DIR = Path(__file__).resolve().parent.parent / "tests" / "golden" / "spark"


def golden_metrics() -> list[str]:
    """The metric SQL files with a golden Spark file: those of every registered per-list
    metric and curve (one per file, where tie policies take different files: ``ap_ranked``)."""
    kinds = ("per_list", "curve")
    return sorted({f for m in METRICS.values() if m.kind in kinds for f in m.sql_files})


def _header(name: str, source: str) -> str:
    doc = []
    for line in source.splitlines():
        if not line.startswith("--"):
            break
        doc.append(line)
    return (
        f"-- GENERATED from sql/metrics/{name}.sql by sqlglot (duckdb -> spark); do not\n"
        "-- edit. Regenerate: python tools/write_spark_golden.py --write-golden\n"
        + "\n".join(doc)
        + "\n"
    )


def golden_text(name: str) -> str:
    """The content of ``tests/golden/spark/<name>.sql``: a header and the transpiled SQL of
    ``sql/metrics/<name>.sql``."""
    source = queries.load(f"metrics/{name}").text
    return _header(name, source) + to_spark_sql(source)


def golden_dir() -> Path:
    return GOLDEN_DIR


def write_golden(directory: str | os.PathLike[str] | None = None) -> list[Path]:
    """(Re)write ``tests/golden/spark/<metric>.sql`` for every metric and remove files of
    metrics that no longer exist; returns the files whose content changed."""
    folder = Path(directory) if directory is not None else golden_dir()
    folder.mkdir(parents=True, exist_ok=True)
    changed = []
    names = golden_metrics()
    for name in names:
        path = folder / f"{name}.sql"
        text = golden_text(name)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    for path in folder.glob("*.sql"):
        if path.stem not in names:
            path.unlink()
            changed.append(path)
    return changed


def golden_diff(directory: str | os.PathLike[str] | None = None) -> str:
    """A unified diff between the committed golden files and the current transpilation
    (empty when they agree)."""
    folder = Path(directory) if directory is not None else golden_dir()
    out = []
    names = golden_metrics()
    for name in names:
        path = folder / f"{name}.sql"
        have = path.read_text() if path.exists() else ""
        want = golden_text(name)
        if have != want:
            out += difflib.unified_diff(
                have.splitlines(keepends=True),
                want.splitlines(keepends=True),
                f"{path} (committed)",
                f"{path} (transpiled now)",
            )
    for path in sorted(folder.glob("*.sql")):
        if path.stem not in names:
            out.append(f"{path}: no registered metric {path.stem!r}\n")
    return "".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/write_spark_golden.py",
        description="The Spark SQL of evalstore's metrics (tests/golden/spark/<metric>.sql).",
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--write-golden",
        action="store_true",
        help="rewrite tests/golden/spark/*.sql from sql/metrics",
    )
    group.add_argument(
        "--check",
        action="store_true",
        help="exit 1 (with a diff) when tests/golden/spark/ is stale",
    )
    group.add_argument("--show", metavar="METRIC", help="print one metric's Spark SQL")
    parser.add_argument("--dir", type=Path, default=None, help="golden folder [tests/golden/spark]")
    args = parser.parse_args(argv)
    try:
        if args.show:
            if args.show not in METRICS:
                raise InvalidInput(f"unknown metric {args.show!r}")
            sys.stdout.write(spark_sql(args.show))
            return 0
        if args.check:
            diff = golden_diff(args.dir)
            sys.stdout.write(diff)
            return 1 if diff else 0
        changed = write_golden(args.dir)
        for path in changed:
            print(f"wrote {path}")
        print(f"{len(golden_metrics())} metric(s), {len(changed)} file(s) changed")
        return 0
    except EvalstoreError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
